"""Enrichment items: rendering them into the user turn, their stable digest, and stripping them from history."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal
from xml.sax.saxutils import escape, quoteattr

__all__ = [
    "ENRICHMENT_TAG",
    "CachePolicy",
    "EnrichmentItem",
    "append_enrichment",
    "enrichment_digest",
    "render_enrichment_block",
    "strip_enrichment_blocks",
]

CachePolicy = Literal["volatile", "stable"]
ENRICHMENT_TAG = "mindroom_hook_context"
_BLOCK = re.compile(rf"\s*<{ENRICHMENT_TAG}\b[^>]*>.*?</{ENRICHMENT_TAG}>\s*", re.DOTALL)


@dataclass(frozen=True, slots=True)
class EnrichmentItem:
    """One piece of live context a `message:enrich` hook contributes to the model's view of the turn."""

    key: str
    text: str
    cache_policy: CachePolicy = "volatile"

    def __post_init__(self) -> None:
        if self.cache_policy not in ("volatile", "stable"):
            msg = f"cache_policy must be 'volatile' or 'stable', not {self.cache_policy!r}"
            raise ValueError(msg)


def enrichment_digest(items: Iterable[EnrichmentItem]) -> str:
    """A stable sha256 over the merged items (same items in the same order give the same digest)."""
    canonical = json.dumps(
        [[item.key, item.text, item.cache_policy] for item in items], ensure_ascii=False, separators=(",", ":")
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def render_enrichment_block(items: Sequence[EnrichmentItem]) -> str:
    """Render items as the XML block appended to the user turn ("" when there are none)."""
    if not items:
        return ""
    lines = [f"<{ENRICHMENT_TAG} digest={quoteattr(enrichment_digest(items)[:16])}>"]
    lines.extend(
        f"<item key={quoteattr(item.key)} cache_policy={quoteattr(item.cache_policy)}>{escape(item.text)}</item>"
        for item in items
    )
    lines.append(f"</{ENRICHMENT_TAG}>")
    return "\n".join(lines)


def append_enrichment(body: str, items: Sequence[EnrichmentItem]) -> str:
    """The user turn the model sees: the message body followed by the enrichment block."""
    block = render_enrichment_block(items)
    return f"{body}\n\n{block}" if block else body


def strip_enrichment_blocks(text: str) -> str:
    """Remove every enrichment block from a stored message, leaving the user's own words."""
    if ENRICHMENT_TAG not in text:
        return text
    return _BLOCK.sub("\n\n", text).strip()
