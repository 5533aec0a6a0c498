"""Enrichment items: rendering them into the user turn or the system prompt, their digest, and stripping.

Where a `message:enrich` item goes depends on its `persist`:

- `None` (the default, the hooks spec's behaviour): rendered into the user turn inside
  `<mindroom_hook_context>`, which is stripped from stored history after the answer;
- `True` (2026 API, asked for explicitly): rendered inside `<mindroom_message_context>`, which stays in
  stored history, so later turns see it as it was;
- `False` (2026 API, asked for explicitly): sent with this request only and never stored. The pipeline
  sends `transient_context_message(items)` as a separate user-role message when it can; rendered into the
  user turn instead, such items go into the stripped block, so they are not stored either way.

`system:enrich` items are rendered by `render_system_context` into one `<mindroom_system_context>` block
for the system prompt: stable items first, then volatile, each group sorted by key.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from html import escape as html_escape
from typing import Literal
from xml.sax.saxutils import escape, quoteattr

__all__ = [
    "ENRICHMENT_TAG",
    "MESSAGE_CONTEXT_TAG",
    "RUNTIME_TARGET_KEY",
    "SYSTEM_CONTEXT_TAG",
    "TRANSIENT_CONTEXT_TAG",
    "CachePolicy",
    "EnrichmentItem",
    "append_enrichment",
    "enrichment_digest",
    "render_enrichment_block",
    "render_message_context",
    "render_system_context",
    "split_by_persistence",
    "strip_enrichment_blocks",
    "transient_context_message",
    "without_runtime_keys",
]

CachePolicy = Literal["volatile", "stable"]
ENRICHMENT_TAG = "mindroom_hook_context"
MESSAGE_CONTEXT_TAG = "mindroom_message_context"
TRANSIENT_CONTEXT_TAG = "mindroom_transient_context"
SYSTEM_CONTEXT_TAG = "mindroom_system_context"
RUNTIME_TARGET_KEY = "matrix_message_target"
"""A key the runtime owns in `system:enrich`: hook items with it are dropped."""
_BLOCK = re.compile(rf"\s*<{ENRICHMENT_TAG}\b[^>]*>.*?</{ENRICHMENT_TAG}>\s*", re.DOTALL)


@dataclass(frozen=True, slots=True)
class EnrichmentItem:
    """One piece of live context a `message:enrich` or `system:enrich` hook contributes.

    `persist`: None keeps the hooks spec's behaviour (stripped from stored history), True keeps the item
    in history, False sends it with this request only. `minimal_required` marks an item a minimal-mode
    agent must still see in its prompt.
    """

    key: str
    text: str
    cache_policy: CachePolicy = "volatile"
    persist: bool | None = None
    minimal_required: bool = False

    def __post_init__(self) -> None:
        if self.cache_policy not in ("volatile", "stable"):
            msg = f"cache_policy must be 'volatile' or 'stable', not {self.cache_policy!r}"
            raise ValueError(msg)
        if self.persist not in (None, True, False):
            msg = f"persist must be None, True or False, not {self.persist!r}"
            raise ValueError(msg)


def enrichment_digest(items: Iterable[EnrichmentItem]) -> str:
    """A stable sha256 over the merged items (same items in the same order give the same digest)."""
    canonical = json.dumps(
        [[item.key, item.text, item.cache_policy] for item in items], ensure_ascii=False, separators=(",", ":")
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _item_lines(items: Iterable[EnrichmentItem]) -> list[str]:
    return [
        f"<item key={quoteattr(item.key)} cache_policy={quoteattr(item.cache_policy)}>{escape(item.text)}</item>"
        for item in items
    ]


def render_enrichment_block(items: Sequence[EnrichmentItem]) -> str:
    """Render items as the stripped XML block appended to the user turn ("" when there are none)."""
    if not items:
        return ""
    lines = [f"<{ENRICHMENT_TAG} digest={quoteattr(enrichment_digest(items)[:16])}>"]
    lines.extend(_item_lines(items))
    lines.append(f"</{ENRICHMENT_TAG}>")
    return "\n".join(lines)


def render_message_context(items: Sequence[EnrichmentItem]) -> str:
    """Render items as the `<mindroom_message_context>` block, which stored history keeps ("" for none)."""
    if not items:
        return ""
    return "\n".join([f"<{MESSAGE_CONTEXT_TAG}>", *_item_lines(items), f"</{MESSAGE_CONTEXT_TAG}>"])


def transient_context_message(items: Sequence[EnrichmentItem]) -> str:
    """The separate, never-stored user message for `persist=False` items ("" for none)."""
    block = render_message_context(items)
    return f"<{TRANSIENT_CONTEXT_TAG}>\n{block}\n</{TRANSIENT_CONTEXT_TAG}>" if block else ""


def split_by_persistence(
    items: Iterable[EnrichmentItem],
) -> tuple[list[EnrichmentItem], list[EnrichmentItem], list[EnrichmentItem]]:
    """(stripped after the answer, kept in history, this request only): `persist` None, True, False."""
    stripped: list[EnrichmentItem] = []
    kept: list[EnrichmentItem] = []
    transient: list[EnrichmentItem] = []
    for item in items:
        (stripped if item.persist is None else kept if item.persist else transient).append(item)
    return stripped, kept, transient


def append_enrichment(body: str, items: Sequence[EnrichmentItem]) -> str:
    """The user turn the model sees: the body, the kept block, then the stripped block.

    Items with `persist=False` join the stripped block here, so they never reach stored history; a
    pipeline that sends `transient_context_message` leaves them out of `items`.
    """
    if not items:
        return body
    stripped, kept, transient = split_by_persistence(items)
    blocks = [render_message_context(kept), render_enrichment_block([*stripped, *transient])]
    text = "\n\n".join(block for block in blocks if block)
    return f"{body}\n\n{text}" if text else body


def strip_enrichment_blocks(text: str) -> str:
    """Remove every stripped enrichment block from a stored message (kept `persist=True` blocks stay)."""
    if ENRICHMENT_TAG not in text:
        return text
    return _BLOCK.sub("\n\n", text).strip()


def without_runtime_keys(items: Iterable[EnrichmentItem]) -> list[EnrichmentItem]:
    """The items minus any keyed `matrix_message_target`, which only the runtime may set."""
    return [item for item in items if item.key != RUNTIME_TARGET_KEY]


def _system_item(item: EnrichmentItem) -> str:
    key = html_escape(item.key, quote=True)
    policy = html_escape(item.cache_policy, quote=True)
    return f'<item key="{key}" cache_policy="{policy}">{html_escape(item.text, quote=True)}</item>'


def render_system_context(items: Iterable[EnrichmentItem], runtime_items: Iterable[EnrichmentItem] = ()) -> str:
    """The `<mindroom_system_context>` block for the system prompt ("" when there is nothing to say).

    Hook `items` keyed `matrix_message_target` are dropped; `runtime_items` (the daemon's own) are not.
    Stable items come first, then volatile ones, each group sorted by key; `persist` plays no part.
    """
    merged = [*without_runtime_keys(items), *runtime_items]
    if not merged:
        return ""
    ordered = sorted(merged, key=lambda item: (item.cache_policy != "stable", item.key))
    return "\n".join([f"<{SYSTEM_CONTEXT_TAG}>", *(_system_item(item) for item in ordered), f"</{SYSTEM_CONTEXT_TAG}>"])
