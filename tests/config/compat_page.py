"""`docs/mindroom-compat.md`, written from the daemon's own tables: what each MindRoom config key and tool name
does here.

The keys come from `data/mindroom-2026.10-keys.txt` with their notes (`mindroom.config.key_notes`); the tool
names from `data/mindroom-2026.10-tools.txt`, each looked up in the built-in groups, the agno toolkit table
and `mindroom.tool_system.tool_names`. `python -m tests.config.compat_page` rewrites the page;
`--record` first rewrites the tool list from MindRoom's install. `test_compat_page.py` fails while the page
is out of date.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from mindroom.config.key_notes import PROMPTS_USED, note_for
from mindroom.tool_system.builtin_groups import BUILTIN_PROVIDERS
from mindroom.tool_system.tool_names import LATER, NOT_OFFERED
from mindroom.tool_system.toolkit_table import AGNO_TOOLKITS, AgnoToolkit

DATA = Path(__file__).with_name("data")
KEYS = DATA / "mindroom-2026.10-keys.txt"
TOOLS = DATA / "mindroom-2026.10-tools.txt"
PAGE = Path(__file__).resolve().parents[2] / "docs" / "mindroom-compat.md"
_REFERENCE = Path(os.environ.get("MINDROOM_REFERENCE") or ".")
"""A MindRoom install (a venv) to record its tool names from (`--record`): `MINDROOM_REFERENCE`."""
_TOOLS_HEADER = (
    "# MindRoom 2026.10.589: every name of its tool catalogue (tools_metadata.json), one a line.\n"
    "# Regenerate with `python -m tests.config.compat_page --record` where MindRoom's install is present.\n"
)

_INTRO = """\
# MindRoom compatibility

A `config.yaml` written for MindRoom 2026.10 starts here. This page lists every key of MindRoom's config and
every name of its tool catalogue with what it does in this daemon. It is generated from the daemon's own
tables (`python -m tests.config.compat_page`); a test fails when it is out of date.

- **meaning**: the key does here what it does in MindRoom (differences are said in its line).
- **notice**: the key is accepted and not acted on; `mindroom config validate`, the start log, `mindroom
  doctor` and the dashboard's config page name it with the reason given here. Its value is not used.
- A key in neither MindRoom's config nor this daemon's is an error, with its path and line.

A key's line is its own note, or "as `section`" when the note of the section above it covers it. MindRoom's
file tags (`!include`, `!expand`, `!include_text` and the `!include_dir_*` tags) work here too (see
[configuration](configuration.md#splitting-the-config-across-files)).
"""


def recorded(path: Path) -> list[str]:
    """The non-comment lines of a recorded list, in order."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _key_rows(paths: list[str]) -> list[str]:
    out: list[str] = []
    section = None
    for path in sorted(paths):
        top = path.split(".", 1)[0].split("[", 1)[0]
        if top != section:
            section = top
            out += ["", f"### `{top}`", "", "| key | here | what it does here, or why not |", "|---|---|---|"]
        note = note_for(path)
        kind = "meaning" if note.used else "notice"
        text = note.note if note.path == path else f"as `{note.path}`"
        out.append(f"| `{path}` | {kind} | {_cell(text)} |")
    return out


def _toolkit_text(toolkit: AgnoToolkit) -> str:
    parts = [f"agno's `{toolkit.class_name}`"]
    if toolkit.packages:
        packages = ", ".join(f"`{name}`" for name in dict.fromkeys(package.pip for package in toolkit.packages))
        parts.append(f"needs {packages} (`mindroom tools install {toolkit.name}`)")
    needed = [credential.env for credential in toolkit.credentials if credential.required]
    if needed:
        parts.append("credential " + ", ".join(f"`{env}`" for env in needed))
    if toolkit.connection is not None:
        parts[-1] += f" (for everyone), else each person's `{toolkit.connection.provider}` connection"
    return "; ".join(parts)


def _tool_rows(names: list[str]) -> list[str]:
    groups = {provider.name: provider for provider in BUILTIN_PROVIDERS}
    out = ["| name | here | what it is here |", "|---|---|---|"]
    for name in sorted(names):
        if name in groups:
            functions = ", ".join(f"`{function}`" for function in groups[name].tool_names)
            kind, text = "built in", f"functions {functions}" if functions else "built in"
        elif name in AGNO_TOOLKITS:
            kind, text = "agno toolkit", _toolkit_text(AGNO_TOOLKITS[name])
        elif name in LATER:
            later = LATER[name]
            meanwhile = f"; meanwhile: {later.meanwhile}" if later.meanwhile else ""
            kind, text = "later", f"known; the agent runs without it: it needs {later.capability}{meanwhile}"
        elif name in NOT_OFFERED:
            kind, text = "not offered", f"a config error: {NOT_OFFERED[name]}"
        else:
            kind, text = "unknown", "not known here"
        out.append(f"| `{name}` | {kind} | {_cell(text)} |")
    return out


def render() -> str:
    """The page, from the recorded lists and the daemon's tables."""
    keys, tools = recorded(KEYS), recorded(TOOLS)
    used = sum(note_for(path).used for path in keys)
    kinds: dict[str, int] = {}
    for row in _tool_rows(tools)[2:]:
        kind = row.split(" | ")[1]
        kinds[kind] = kinds.get(kind, 0) + 1
    prompts = ", ".join(f"`{name}`" for name in sorted(PROMPTS_USED))
    lines = [
        _INTRO,
        "## Config keys",
        "",
        f"{len(keys)} key paths (`*` stands for any name, `[]` for a list item): {used} with their meaning,"
        f" {len(keys) - used} accepted with a notice. Of MindRoom's `prompts`, this daemon uses {prompts};"
        " a replacement of another is accepted with a notice.",
        *_key_rows(keys),
        "",
        "## Tool names",
        "",
        f"{len(tools)} names: " + ", ".join(f"{count} {kind}" for kind, count in sorted(kinds.items())) + ".",
        "A built-in tool or an agno toolkit runs here; an agno toolkit whose package or credential is missing"
        " leaves the agent running without it, and `mindroom tools list` says what to install or set.",
        "",
        *_tool_rows(tools),
    ]
    return "\n".join(lines) + "\n"


def _record_tools() -> None:
    metadata = next(iter(sorted(_REFERENCE.glob("lib/python3*/site-packages/mindroom/tools_metadata.json"))), None)
    if metadata is None:
        raise SystemExit(f"MindRoom's install is not at {_REFERENCE} (set MINDROOM_REFERENCE)")
    names = sorted(tool["name"] for tool in json.loads(metadata.read_text(encoding="utf-8"))["tools"])
    TOOLS.write_text(_TOOLS_HEADER + "".join(f"{name}\n" for name in names), encoding="utf-8")


if __name__ == "__main__":
    if "--record" in sys.argv[1:]:
        _record_tools()
    PAGE.write_text(render(), encoding="utf-8")
