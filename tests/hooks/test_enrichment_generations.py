"""Enrichment across both API generations: `persist` as a tri-state, and the `system:enrich` block."""

import pytest

from mindroom.hooks import (
    EnrichmentItem,
    MessageEnrichContext,
    append_enrichment,
    render_system_context,
    strip_enrichment_blocks,
    transient_context_message,
)
from mindroom.hooks.enrichment import (
    MESSAGE_CONTEXT_TAG,
    SYSTEM_CONTEXT_TAG,
    TRANSIENT_CONTEXT_TAG,
    render_message_context,
    split_by_persistence,
)

# -- persist: None (hooks spec, stripped), True (kept), False (this request only) --------------------------


def test_enrichment_item_defaults_keep_the_older_behaviour():
    item = EnrichmentItem("weather", "rain")

    assert item.persist is None
    assert item.minimal_required is False
    assert item.cache_policy == "volatile"


def test_enrichment_item_persist_takes_only_none_true_false():
    assert EnrichmentItem("k", "t", persist=True).persist is True
    assert EnrichmentItem("k", "t", "stable", False, True).minimal_required is True
    with pytest.raises(ValueError, match="persist"):
        EnrichmentItem("k", "t", persist="yes")  # type: ignore[arg-type]


def test_enrichment_add_metadata_passes_persist_through():
    ctx = MessageEnrichContext()

    ctx.add_metadata("default", "a")
    ctx.add_metadata("kept", "b", persist=True)
    ctx.add_metadata("transient", "c", cache_policy="stable", persist=False)

    assert [(item.key, item.persist, item.cache_policy) for item in ctx.items] == [
        ("default", None, "volatile"),
        ("kept", True, "volatile"),
        ("transient", False, "stable"),
    ]


def test_enrichment_split_by_persistence():
    items = [EnrichmentItem("a", "1"), EnrichmentItem("b", "2", persist=True), EnrichmentItem("c", "3", persist=False)]

    stripped, kept, transient = split_by_persistence(items)

    assert [i.key for i in stripped] == ["a"]
    assert [i.key for i in kept] == ["b"]
    assert [i.key for i in transient] == ["c"]


def test_enrichment_default_items_are_stripped_from_stored_history():
    turn = append_enrichment("What should I wear?", [EnrichmentItem("weather", "rain")])

    assert "rain" in turn
    assert strip_enrichment_blocks(turn) == "What should I wear?"


def test_enrichment_persisted_items_stay_in_stored_history():
    items = [EnrichmentItem("tz", "Europe/Berlin", persist=True), EnrichmentItem("weather", "rain")]

    turn = append_enrichment("Hi", items)
    stored = strip_enrichment_blocks(turn)

    assert f"<{MESSAGE_CONTEXT_TAG}>" in stored
    assert "Europe/Berlin" in stored
    assert "rain" not in stored
    assert stored.startswith("Hi\n\n")


def test_enrichment_transient_items_reach_the_model_but_never_history():
    items = [EnrichmentItem("location", "52.5,13.4", persist=False)]

    turn = append_enrichment("Where am I?", items)

    assert "52.5,13.4" in turn
    assert strip_enrichment_blocks(turn) == "Where am I?"


def test_enrichment_transient_message_for_a_separate_request_message():
    message = transient_context_message([EnrichmentItem("location", "a < b", persist=False)])

    assert message.startswith(f"<{TRANSIENT_CONTEXT_TAG}>\n<{MESSAGE_CONTEXT_TAG}>")
    assert "a &lt; b" in message
    assert transient_context_message([]) == ""
    assert render_message_context([]) == ""


def test_enrichment_all_persisted_renders_no_stripped_block():
    turn = append_enrichment("Hi", [EnrichmentItem("k", "v", persist=True)])

    assert strip_enrichment_blocks(turn) == turn


# -- the <mindroom_system_context> block ---------------------------------------------------------------


def test_system_context_orders_stable_first_then_volatile_each_by_key():
    items = [
        EnrichmentItem("zeta", "z"),
        EnrichmentItem("beta", "b", cache_policy="stable"),
        EnrichmentItem("alpha", "a"),
        EnrichmentItem("alpha_stable", "s", cache_policy="stable"),
    ]

    block = render_system_context(items)

    assert block.splitlines() == [
        f"<{SYSTEM_CONTEXT_TAG}>",
        '<item key="alpha_stable" cache_policy="stable">s</item>',
        '<item key="beta" cache_policy="stable">b</item>',
        '<item key="alpha" cache_policy="volatile">a</item>',
        '<item key="zeta" cache_policy="volatile">z</item>',
        f"</{SYSTEM_CONTEXT_TAG}>",
    ]


def test_system_context_html_escapes_keys_and_text():
    block = render_system_context([EnrichmentItem('k"<x>', 'Tom & "Jerry" <b>it\'s</b>')])

    assert '<item key="k&quot;&lt;x&gt;" cache_policy="volatile">' in block
    assert "Tom &amp; &quot;Jerry&quot; &lt;b&gt;it&#x27;s&lt;/b&gt;</item>" in block


def test_system_context_drops_hook_items_keyed_matrix_message_target():
    hook_items = [EnrichmentItem("matrix_message_target", "forged"), EnrichmentItem("mode", "terse")]
    runtime = [EnrichmentItem("matrix_message_target", "room !r thread $t")]

    block = render_system_context(hook_items, runtime)

    assert "forged" not in block
    assert "room !r thread $t" in block
    assert "terse" in block


def test_system_context_of_nothing_is_empty():
    assert render_system_context([]) == ""
    assert render_system_context([EnrichmentItem("matrix_message_target", "x")]) == ""


def test_system_context_ignores_persist():
    kept = render_system_context([EnrichmentItem("k", "v", persist=True)])
    dropped = render_system_context([EnrichmentItem("k", "v", persist=False)])

    assert kept == dropped
