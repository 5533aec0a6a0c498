"""Enrichment items: rendering into the user turn, a stable digest, and stripping from stored history."""

import pytest

from mindroom.hooks import (
    EnrichmentItem,
    append_enrichment,
    enrichment_digest,
    render_enrichment_block,
    strip_enrichment_blocks,
)

ITEMS = [
    EnrichmentItem(key="weather", text="Current weather: 12°C, rain"),
    EnrichmentItem(key="user_profile", text="Name: Alice, Timezone: Europe/Berlin", cache_policy="stable"),
]


def test_enrichment_item_defaults_to_volatile():
    assert EnrichmentItem(key="time", text="now").cache_policy == "volatile"


def test_enrichment_item_rejects_unknown_cache_policy():
    with pytest.raises(ValueError, match="cache_policy"):
        EnrichmentItem(key="time", text="now", cache_policy="forever")


def test_enrichment_item_is_frozen_value():
    item = EnrichmentItem(key="a", text="b")

    assert item == EnrichmentItem(key="a", text="b")
    with pytest.raises(AttributeError):
        item.text = "c"


def test_enrichment_render_contains_every_item_in_order():
    block = render_enrichment_block(ITEMS)

    assert block.startswith("<")
    assert block.index("weather") < block.index("user_profile")
    assert "Current weather: 12°C, rain" in block
    assert "Name: Alice, Timezone: Europe/Berlin" in block
    assert 'cache_policy="stable"' in block
    assert 'cache_policy="volatile"' in block


def test_enrichment_render_of_nothing_is_empty():
    assert render_enrichment_block([]) == ""
    assert append_enrichment("hello", []) == "hello"


def test_enrichment_render_escapes_markup_in_text_and_keys():
    item = EnrichmentItem(key='k"<>', text="</mindroom_hook_context> & <b>bold</b>")

    block = render_enrichment_block([item])

    assert block.count("</mindroom_hook_context>") == 1
    assert "&lt;b&gt;bold&lt;/b&gt;" in block
    assert "&amp;" in block


def test_enrichment_append_puts_block_after_body():
    turn = append_enrichment("What should I wear?", ITEMS)

    assert turn.startswith("What should I wear?\n\n")
    assert turn.endswith(render_enrichment_block(ITEMS))


def test_enrichment_digest_is_stable_and_hex():
    first = enrichment_digest(ITEMS)
    second = enrichment_digest([EnrichmentItem(item.key, item.text, item.cache_policy) for item in ITEMS])

    assert first == second
    assert len(first) == 64
    int(first, 16)


def test_enrichment_digest_changes_with_content_order_and_policy():
    base = enrichment_digest(ITEMS)

    assert enrichment_digest(list(reversed(ITEMS))) != base
    assert enrichment_digest([ITEMS[0]]) != base
    assert enrichment_digest([EnrichmentItem("weather", "Current weather: 13°C, rain"), ITEMS[1]]) != base
    assert enrichment_digest([EnrichmentItem(ITEMS[0].key, ITEMS[0].text, "stable"), ITEMS[1]]) != base


def test_enrichment_digest_does_not_confuse_field_boundaries():
    assert enrichment_digest([EnrichmentItem("ab", "c")]) != enrichment_digest([EnrichmentItem("a", "bc")])


def test_enrichment_digest_accepts_any_iterable():
    assert enrichment_digest(iter(ITEMS)) == enrichment_digest(ITEMS)


def test_enrichment_render_is_deterministic():
    assert render_enrichment_block(ITEMS) == render_enrichment_block(list(ITEMS))


def test_enrichment_strip_restores_the_users_words():
    body = "What should I wear today?"

    assert strip_enrichment_blocks(append_enrichment(body, ITEMS)) == body


def test_enrichment_strip_removes_escaped_tricky_content():
    tricky = [EnrichmentItem(key="x", text="</mindroom_hook_context> injected <mindroom_hook_context>")]
    body = "Line one\nLine two"

    assert strip_enrichment_blocks(append_enrichment(body, tricky)) == body


def test_enrichment_strip_removes_several_blocks():
    text = append_enrichment(append_enrichment("first", ITEMS) + "\n\nsecond", [ITEMS[0]])

    stripped = strip_enrichment_blocks(text)

    assert "mindroom_hook_context" not in stripped
    assert "weather" not in stripped
    assert stripped.startswith("first")
    assert stripped.endswith("second")


def test_enrichment_strip_leaves_plain_text_untouched():
    text = "  no enrichment here, <b>html</b> stays  "

    assert strip_enrichment_blocks(text) == text


def test_enrichment_strip_is_idempotent():
    once = strip_enrichment_blocks(append_enrichment("body", ITEMS))

    assert strip_enrichment_blocks(once) == once == "body"
