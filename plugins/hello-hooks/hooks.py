"""Example plugin: one hook for each of the four execution modes, plus a custom event.

Copy this folder, rename it in `mindroom.plugin.json`, and edit. The daemon picks up folders in
`plugins/` beside `config.yaml` on start and reloads them when they change.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

from mindroom.hooks import (
    AfterResponseContext,
    BeforeResponseContext,
    EnrichmentItem,
    MessageEnrichContext,
    MessageReceivedContext,
    ToolBeforeCallContext,
    hook,
)


@hook("message:received", priority=50)
async def ignore_muted(ctx: MessageReceivedContext) -> None:
    """Observer: messages starting with `//` are notes to self; no agent answers them."""
    if ctx.envelope.body.lstrip().startswith("//"):
        ctx.suppress = True


@hook("message:enrich")
async def current_time(ctx: MessageEnrichContext) -> EnrichmentItem:
    """Collector: tell the model what time it is (volatile: stripped from history afterwards)."""
    return EnrichmentItem(key="time", text=f"Current UTC time: {datetime.now(UTC):%Y-%m-%d %H:%M}")


@hook("message:before_response")
async def footer(ctx: BeforeResponseContext) -> None:
    """Transformer: append a footer when the plugin settings ask for one."""
    text = ctx.settings.get("footer")
    if text:
        ctx.draft.response_text = f"{ctx.draft.response_text}\n\n{text}"


@hook("message:after_response")
async def count_answers(ctx: AfterResponseContext) -> None:
    """Observer: keep a per-agent answer count in the plugin's state directory."""
    counts_file = ctx.state_root / "answers.json"
    counts = json.loads(counts_file.read_text()) if counts_file.exists() else {}
    counts[ctx.envelope.agent_name] = counts.get(ctx.envelope.agent_name, 0) + 1
    counts_file.write_text(json.dumps(counts))


@hook("tool:before_call")
async def no_secret_files(ctx: ToolBeforeCallContext) -> None:
    """Gate: refuse to read files whose path mentions a secret."""
    if "secret" in str(ctx.arguments.get("path", "")).lower():
        ctx.decline("Files with 'secret' in their path stay unread.")
