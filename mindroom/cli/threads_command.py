"""`mindroom threads export ROOM [THREAD]`: have the running daemon write a thread (or a room's latest threads)
as Markdown and JSON into its data directory (`thread_exports/`, files 0600), and print where.

The export goes through the daemon's API (`POST /api/threads/export`, with `MINDROOM_API_KEY`), because only the
running daemon's accounts hold the keys that read an encrypted room; the decrypted text stays in its private
files.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Annotated

import typer

from mindroom.cli.common import ConfigOption, StorageOption, fail, locate, new_console

__all__ = ["EXPORT_TIMEOUT_S", "export", "threads_app"]

EXPORT_TIMEOUT_S = 120.0
"""How long the command waits for the daemon to write the files."""

threads_app = typer.Typer(help="Threads of the daemon's rooms.", no_args_is_help=True)


@threads_app.command("export")
def export(
    room: Annotated[str, typer.Argument(help="The room: its key in config.yaml, an alias or its id.")],
    thread: Annotated[str | None, typer.Argument(help="A thread's root event id (default: the latest).")] = None,
    config: ConfigOption = None,
    storage_path: StorageOption = None,
) -> None:
    """Write a thread (messages, authors, times, attachments, summary, tags) as Markdown and JSON."""
    from mindroom.api.settings import DEFAULT_API_HOST, DEFAULT_API_PORT
    from mindroom.logging_config import configure_logging

    configure_logging("CRITICAL")
    values = locate(config, storage_path).environment.values
    key = (values.get("MINDROOM_API_KEY") or "").strip()
    if not key:
        fail("MINDROOM_API_KEY is not set: the export asks the running daemon's API, which needs it")
    host = (values.get("MINDROOM_API_HOST") or DEFAULT_API_HOST).strip()
    host = "127.0.0.1" if host in {"0.0.0.0", "::", ""} else host
    port = (values.get("MINDROOM_API_PORT") or str(DEFAULT_API_PORT)).strip()
    url = f"http://{host}:{port}/api/threads/export"
    body = json.dumps({"room": room, "thread": thread}).encode()
    request = urllib.request.Request(url, data=body, method="POST")
    request.add_header("Authorization", f"Bearer {key}")
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=EXPORT_TIMEOUT_S) as response:  # noqa: S310
            answer = json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:
        detail = json.loads(error.read() or b"{}").get("detail", error.reason)
        fail(f"the daemon refused the export ({error.code}): {detail}", code=1)
    except (urllib.error.URLError, OSError) as error:
        fail(f"the daemon's API at {url} did not answer ({error}); is `mindroom run` running?", code=1)
    console = new_console()
    for files in answer.get("files", []):
        console.print(f"{files['thread_id']}: {files['markdown']} {files['json']}")
