"""`HookRegistry.from_plugins`: ordering, duplicates, overrides, filters, allowlists, carried-over stats."""

import pytest
from structlog.testing import capture_logs

from mindroom.config.plugin import HookOverrideConfig, PluginEntryConfig
from mindroom.constants import ROUTER_AGENT_NAME
from mindroom.hooks import EVENT_MESSAGE_RECEIVED, HookRegistry, MessageReceivedContext, hook
from mindroom.hooks.execution import emit
from tests.hooks.support import stub_plugin


def make_hook(name, event=EVENT_MESSAGE_RECEIVED, calls=None, **kwargs):
    @hook(event, name=name, **kwargs)
    async def callback(ctx):
        if calls is not None:
            calls.append(name)

    return callback


def names(registry, event=EVENT_MESSAGE_RECEIVED):
    return [(h.plugin_name, h.hook_name) for h in registry.hooks_for(event)]


def test_registry_orders_by_priority_first():
    registry = HookRegistry.from_plugins(
        [stub_plugin("p", [make_hook("late", priority=50), make_hook("early", priority=10), make_hook("default")])]
    )

    assert names(registry) == [("p", "early"), ("p", "late"), ("p", "default")]


def test_registry_orders_equal_priority_by_plugin_order():
    registry = HookRegistry.from_plugins(
        [
            stub_plugin("second", [make_hook("a")], plugin_order=2),
            stub_plugin("first", [make_hook("b")], plugin_order=1),
        ]
    )

    assert names(registry) == [("first", "b"), ("second", "a")]


def test_registry_orders_equal_priority_and_plugin_order_by_definition_order():
    registry = HookRegistry.from_plugins([stub_plugin("p", [make_hook("zeta"), make_hook("alpha"), make_hook("mid")])])

    assert names(registry) == [("p", "zeta"), ("p", "alpha"), ("p", "mid")]


def test_registry_equal_plugin_order_keeps_list_order():
    registry = HookRegistry.from_plugins([stub_plugin("z", [make_hook("a")]), stub_plugin("a", [make_hook("b")])])

    assert names(registry) == [("z", "a"), ("a", "b")]


@pytest.mark.asyncio
async def test_registry_execution_follows_order():
    calls = []
    registry = HookRegistry.from_plugins(
        [
            stub_plugin(
                "p2",
                [make_hook("p2-default", calls=calls), make_hook("p2-first", calls=calls, priority=1)],
                plugin_order=2,
            ),
            stub_plugin("p1", [make_hook("p1-default", calls=calls)], plugin_order=1),
        ]
    )

    await emit(registry, EVENT_MESSAGE_RECEIVED, MessageReceivedContext())

    assert calls == ["p2-first", "p1-default", "p2-default"]


@pytest.mark.asyncio
async def test_registry_duplicate_hook_name_first_wins_with_warning():
    calls = []
    first = make_hook("same", calls=calls)

    @hook(EVENT_MESSAGE_RECEIVED, name="same")
    async def second(ctx):
        calls.append("second")

    with capture_logs() as logs:
        registry = HookRegistry.from_plugins([stub_plugin("p", [first, second])])
    await emit(registry, EVENT_MESSAGE_RECEIVED, MessageReceivedContext())

    assert len(registry) == 1
    assert calls == ["same"]
    warnings = [entry for entry in logs if entry["log_level"] == "warning"]
    assert len(warnings) == 1
    assert warnings[0]["plugin"] == "p"
    assert warnings[0]["hook"] == "same"


def test_registry_duplicate_name_across_events_in_one_plugin_is_still_a_duplicate():
    with capture_logs() as logs:
        registry = HookRegistry.from_plugins(
            [stub_plugin("p", [make_hook("x"), make_hook("x", event="message:after_response")])]
        )

    assert names(registry) == [("p", "x")]
    assert registry.hooks_for("message:after_response") == ()
    assert any(entry["log_level"] == "warning" and entry["hook"] == "x" for entry in logs)


@pytest.mark.asyncio
async def test_registry_same_name_in_two_plugins_gives_two_hooks():
    calls = []
    with capture_logs() as logs:
        registry = HookRegistry.from_plugins(
            [stub_plugin("a", [make_hook("same", calls=calls)]), stub_plugin("b", [make_hook("same", calls=calls)])]
        )
    await emit(registry, EVENT_MESSAGE_RECEIVED, MessageReceivedContext())

    assert names(registry) == [("a", "same"), ("b", "same")]
    assert calls == ["same", "same"]
    assert not [entry for entry in logs if entry["log_level"] == "warning"]


def test_registry_unknown_override_name_warns_and_is_ignored():
    with capture_logs() as logs:
        registry = HookRegistry.from_plugins(
            [stub_plugin("p", [make_hook("real")], hooks={"ghost": {"enabled": False}, "real": {"priority": 5}})]
        )

    assert names(registry) == [("p", "real")]
    assert registry.hooks_for(EVENT_MESSAGE_RECEIVED)[0].priority == 5
    warnings = [entry for entry in logs if entry["log_level"] == "warning"]
    assert [(w["plugin"], w["hook"]) for w in warnings] == [("p", "ghost")]


def test_registry_override_enabled_false_removes_hook():
    registry = HookRegistry.from_plugins(
        [stub_plugin("p", [make_hook("keep"), make_hook("drop")], hooks={"drop": HookOverrideConfig(enabled=False)})]
    )

    assert names(registry) == [("p", "keep")]


def test_registry_override_mode_off_removes_hook():
    registry = HookRegistry.from_plugins([stub_plugin("p", [make_hook("drop")], hooks={"drop": {"mode": "off"}})])

    assert len(registry) == 0
    assert not registry.has_hooks(EVENT_MESSAGE_RECEIVED)


def test_registry_override_disabling_known_hook_does_not_warn():
    with capture_logs() as logs:
        HookRegistry.from_plugins([stub_plugin("p", [make_hook("drop")], hooks={"drop": {"enabled": False}})])

    assert not [entry for entry in logs if entry["log_level"] == "warning"]


def test_registry_override_priority_reorders():
    registry = HookRegistry.from_plugins(
        [stub_plugin("p", [make_hook("a", priority=10), make_hook("b", priority=20)], hooks={"b": {"priority": 1}})]
    )

    assert names(registry) == [("p", "b"), ("p", "a")]


def test_registry_override_timeout_beats_decorator_and_event_default():
    registry = HookRegistry.from_plugins(
        [
            stub_plugin(
                "p",
                [make_hook("decorated", timeout_ms=700), make_hook("default"), make_hook("overridden", timeout_ms=700)],
                hooks={"overridden": {"timeout_ms": 50}},
            )
        ]
    )

    timeouts = {h.hook_name: (h.timeout_ms, h.timeout_s) for h in registry.hooks_for(EVENT_MESSAGE_RECEIVED)}
    assert timeouts == {"decorated": (700, 0.7), "default": (15000, 15.0), "overridden": (50, 0.05)}


def test_registry_null_overrides_keep_decorator_values():
    registry = HookRegistry.from_plugins(
        [
            stub_plugin(
                "p", [make_hook("a", priority=7, timeout_ms=70)], hooks={"a": {"priority": None, "timeout_ms": None}}
            )
        ]
    )

    (compiled,) = registry.hooks_for(EVENT_MESSAGE_RECEIVED)
    assert (compiled.priority, compiled.timeout_ms) == (7, 70)


def test_registry_override_fail_closed_and_mode():
    registry = HookRegistry.from_plugins(
        [
            stub_plugin(
                "p",
                [make_hook("gate", event="tool:before_call"), make_hook("watch", event="tool:before_call")],
                hooks={"gate": {"fail_closed": True}, "watch": {"mode": "monitor"}},
            )
        ]
    )

    compiled = {h.hook_name: h for h in registry.hooks_for("tool:before_call")}
    assert compiled["gate"].fail_closed is True
    assert compiled["gate"].mode == "enforce"
    assert compiled["watch"].monitor is True
    assert compiled["watch"].mode == "monitor"


def test_registry_settings_are_shared_by_every_hook_of_the_plugin():
    registry = HookRegistry.from_plugins(
        [
            stub_plugin("p", [make_hook("a"), make_hook("b")], settings={"url": "http://x"}),
            stub_plugin("q", [make_hook("c")]),
        ]
    )

    settings = {h.hook_name: h.settings for h in registry.hooks_for(EVENT_MESSAGE_RECEIVED)}
    assert settings == {"a": {"url": "http://x"}, "b": {"url": "http://x"}, "c": {}}


def test_registry_skips_undecorated_callbacks_with_warning():
    async def plain(ctx):
        pass

    with capture_logs() as logs:
        registry = HookRegistry.from_plugins([stub_plugin("p", [plain, make_hook("real")])])

    assert names(registry) == [("p", "real")]
    assert any(entry["log_level"] == "warning" and entry["plugin"] == "p" for entry in logs)


def test_registry_plugin_without_entry_config_uses_defaults():
    plugin = type(
        "Bare", (), {"name": "bare", "discovered_hooks": (make_hook("a"),), "entry_config": None, "plugin_order": 0}
    )()

    registry = HookRegistry.from_plugins([plugin])

    (compiled,) = registry.hooks_for(EVENT_MESSAGE_RECEIVED)
    assert compiled.settings == {}
    assert compiled.timeout_ms == 15000


def test_registry_groups_hooks_by_event():
    registry = HookRegistry.from_plugins(
        [stub_plugin("p", [make_hook("a"), make_hook("b", event="message:enrich"), make_hook("c", event="todo:done")])]
    )

    assert registry.events == ("message:enrich", "message:received", "todo:done")
    assert len(registry) == 3
    assert registry.has_hooks("todo:done")
    assert not registry.has_hooks("message:after_response")
    assert registry.hooks_for("message:after_response") == ()
    assert registry.plugin_names == ("p",)
    assert [h.event_name for h in registry.all_hooks()] == ["message:enrich", "message:received", "todo:done"]


def test_registry_empty_has_no_hooks():
    registry = HookRegistry.empty()

    assert len(registry) == 0
    assert registry.matching(EVENT_MESSAGE_RECEIVED, "code", "!room:localhost") == ()


def test_registry_agents_filter():
    registry = HookRegistry.from_plugins(
        [stub_plugin("p", [make_hook("router-only", agents=(ROUTER_AGENT_NAME,)), make_hook("everyone")])]
    )

    assert [h.hook_name for h in registry.matching(EVENT_MESSAGE_RECEIVED, "router", "!r:l")] == [
        "router-only",
        "everyone",
    ]
    assert [h.hook_name for h in registry.matching(EVENT_MESSAGE_RECEIVED, "code", "!r:l")] == ["everyone"]
    assert [h.hook_name for h in registry.matching(EVENT_MESSAGE_RECEIVED, None, "!r:l")] == ["everyone"]


def test_registry_rooms_filter():
    registry = HookRegistry.from_plugins([stub_plugin("p", [make_hook("lab", rooms=["!lab:localhost"])])])

    assert len(registry.matching(EVENT_MESSAGE_RECEIVED, "code", "!lab:localhost")) == 1
    assert registry.matching(EVENT_MESSAGE_RECEIVED, "code", "!bench:localhost") == ()
    assert registry.matching(EVENT_MESSAGE_RECEIVED, "code", None) == ()


def test_registry_keeps_filters_as_the_decorator_wrote_them():
    registry = HookRegistry.from_plugins(
        [stub_plugin("p", [make_hook("both", agents=["research", "code", "code"], rooms=["!b:l", "!a:l"])])]
    )

    (compiled,) = registry.all_hooks()
    assert (compiled.agents, compiled.rooms) == (("research", "code"), ("!b:l", "!a:l"))
    assert len(registry.matching(EVENT_MESSAGE_RECEIVED, "code", "!a:l")) == 1
    assert registry.matching(EVENT_MESSAGE_RECEIVED, "other", "!a:l") == ()


def test_registry_agents_and_rooms_filters_combine():
    registry = HookRegistry.from_plugins([stub_plugin("p", [make_hook("both", agents=["code"], rooms=["!lab:l"])])])

    assert len(registry.matching(EVENT_MESSAGE_RECEIVED, "code", "!lab:l")) == 1
    assert registry.matching(EVENT_MESSAGE_RECEIVED, "other", "!lab:l") == ()
    assert registry.matching(EVENT_MESSAGE_RECEIVED, "code", "!bench:l") == ()


@pytest.mark.asyncio
async def test_registry_filters_apply_at_emit(hook_context_factory):
    calls = []
    registry = HookRegistry.from_plugins(
        [
            stub_plugin(
                "p",
                [
                    make_hook("code-only", calls=calls, agents=["code"]),
                    make_hook("lab-only", calls=calls, rooms=["!lab:l"]),
                ],
            )
        ]
    )

    await emit(registry, EVENT_MESSAGE_RECEIVED, hook_context_factory(MessageReceivedContext, agent_name="code"))
    await emit(
        registry, EVENT_MESSAGE_RECEIVED, hook_context_factory(MessageReceivedContext, agent_name="x", room_id="!lab:l")
    )
    await emit(registry, EVENT_MESSAGE_RECEIVED, hook_context_factory(MessageReceivedContext, agent_name="x"))

    assert calls == ["code-only", "lab-only"]


def test_registry_agent_plugin_allowlist_restricts_plugins_per_agent():
    registry = HookRegistry.from_plugins(
        [stub_plugin("allowed", [make_hook("a")]), stub_plugin("other", [make_hook("b")])],
        agent_plugins={"code": ["allowed"], "nobody": []},
    )

    assert [h.plugin_name for h in registry.matching(EVENT_MESSAGE_RECEIVED, "code", "!r:l")] == ["allowed"]
    assert registry.matching(EVENT_MESSAGE_RECEIVED, "nobody", "!r:l") == ()
    # Entities without a list get every plugin that no entity lists: `allowed` is `code`'s alone.
    assert [h.plugin_name for h in registry.matching(EVENT_MESSAGE_RECEIVED, "free", "!r:l")] == ["other"]


def test_registry_a_plugin_one_agent_lists_runs_neither_for_the_router_nor_for_events_of_no_entity():
    registry = HookRegistry.from_plugins(
        [stub_plugin("private", [make_hook("a")]), stub_plugin("shared", [make_hook("b")])],
        agent_plugins={"helper": ["private"]},
    )

    def plugins_for(agent: str | None) -> list[str]:
        return [h.plugin_name for h in registry.matching(EVENT_MESSAGE_RECEIVED, agent, "!r:l")]

    assert plugins_for("helper") == ["private"]
    assert plugins_for("router") == ["shared"]
    assert plugins_for("helperx") == ["shared"]  # a name with a suffix is another entity
    assert plugins_for(None) == ["shared"]  # `config:reloaded` runs with the router's capabilities


def test_registry_events_of_no_entity_follow_the_routers_own_list():
    registry = HookRegistry.from_plugins(
        [stub_plugin("ops", [make_hook("a")]), stub_plugin("other", [make_hook("b")])],
        agent_plugins={"router": ["ops"]},
    )

    assert [h.plugin_name for h in registry.matching(EVENT_MESSAGE_RECEIVED, None, None)] == ["ops"]
    assert [h.plugin_name for h in registry.matching(EVENT_MESSAGE_RECEIVED, "helper", None)] == ["other"]


def test_registry_without_any_list_every_plugin_runs_for_everyone():
    registry = HookRegistry.from_plugins([stub_plugin("p", [make_hook("a")]), stub_plugin("q", [make_hook("b")])])

    for agent in ("helper", "router", None):
        assert [h.plugin_name for h in registry.matching(EVENT_MESSAGE_RECEIVED, agent, None)] == ["p", "q"]


def test_registry_matching_is_stable_across_repeated_calls():
    registry = HookRegistry.from_plugins([stub_plugin("p", [make_hook("a", agents=["code"])])])

    first = registry.matching(EVENT_MESSAGE_RECEIVED, "code", "!r:l")
    second = registry.matching(EVENT_MESSAGE_RECEIVED, "code", "!r:l")

    assert first == second
    assert len(first) == 1


def test_registry_is_immutable_snapshot():
    callbacks = [make_hook("a")]
    plugin = stub_plugin("p", callbacks)
    registry = HookRegistry.from_plugins([plugin])

    plugin.discovered_hooks = (*callbacks, make_hook("b"))

    assert names(registry) == [("p", "a")]
    with pytest.raises(TypeError):
        registry._by_event["message:received"] = ()


@pytest.mark.asyncio
async def test_registry_from_plugins_previous_carries_stats():
    @hook(EVENT_MESSAGE_RECEIVED, name="flaky")
    async def flaky(ctx):
        raise RuntimeError("boom")

    old = HookRegistry.from_plugins([stub_plugin("p", [flaky])])
    await emit(old, EVENT_MESSAGE_RECEIVED, MessageReceivedContext())
    await emit(old, EVENT_MESSAGE_RECEIVED, MessageReceivedContext())

    new = HookRegistry.from_plugins([stub_plugin("p", [flaky])], previous=old)
    await emit(new, EVENT_MESSAGE_RECEIVED, MessageReceivedContext())

    (compiled,) = new.hooks_for(EVENT_MESSAGE_RECEIVED)
    assert compiled.stats.calls == 3
    assert compiled.stats.failures == 3
    assert compiled.stats.consecutive_failures == 3


@pytest.mark.asyncio
async def test_registry_from_plugins_without_previous_starts_fresh():
    calls = []
    old = HookRegistry.from_plugins([stub_plugin("p", [make_hook("a", calls=calls)])])
    await emit(old, EVENT_MESSAGE_RECEIVED, MessageReceivedContext())

    new = HookRegistry.from_plugins([stub_plugin("p", [make_hook("a", calls=calls)])])

    assert new.hooks_for(EVENT_MESSAGE_RECEIVED)[0].stats.calls == 0


@pytest.mark.asyncio
async def test_registry_previous_stats_are_per_plugin_hook_and_event():
    old = HookRegistry.from_plugins([stub_plugin("p", [make_hook("a")])])
    await emit(old, EVENT_MESSAGE_RECEIVED, MessageReceivedContext())

    new = HookRegistry.from_plugins(
        [stub_plugin("p", [make_hook("a", event="message:after_response")]), stub_plugin("q", [make_hook("a")])],
        previous=old,
    )

    assert [h.stats.calls for h in new.all_hooks()] == [0, 0]


def test_registry_repr_names_plugins_and_count():
    registry = HookRegistry.from_plugins([stub_plugin("p", [make_hook("a"), make_hook("b")])])

    assert repr(registry) == "HookRegistry(plugins=['p'], hooks=2)"


def test_registry_stub_plugin_accepts_override_models():
    entry = PluginEntryConfig(path="./plugins/p", hooks={"a": {"priority": 3}})

    assert isinstance(entry.hooks["a"], HookOverrideConfig)
    assert entry.hooks["a"].enabled is True
    assert entry.hooks["a"].timeout_ms is None


# -- the blocking threshold, from config to the registry to execution ----------------------------------------


def test_registry_blocking_threshold_default_is_the_config_default():
    from mindroom.config.main import Config
    from mindroom.hooks.registry import DEFAULT_BLOCKING_THRESHOLD_MS

    assert Config().defaults.hooks_blocking_threshold_ms == DEFAULT_BLOCKING_THRESHOLD_MS == 100
    assert HookRegistry.empty().blocking_threshold_ms == 100
    assert HookRegistry.from_plugins([]).blocking_threshold_ms == 100


def test_registry_blocking_threshold_config_key_is_validated():
    from pydantic import ValidationError

    from mindroom.config.main import Config

    config = Config.model_validate({"defaults": {"hooks_blocking_threshold_ms": 250}})

    assert config.defaults.hooks_blocking_threshold_ms == 250
    with pytest.raises(ValidationError, match="hooks_blocking_threshold_ms"):
        Config.model_validate({"defaults": {"hooks_blocking_threshold_ms": 0}})


@pytest.mark.parametrize(("threshold_ms", "reported"), [(10, 1), (500, 0)])
@pytest.mark.asyncio
async def test_registry_blocking_threshold_from_config_reaches_execution(threshold_ms, reported):
    import time

    from mindroom.config.main import Config

    @hook(EVENT_MESSAGE_RECEIVED, name="busy")
    async def busy(ctx):
        time.sleep(0.03)
        ctx.suppress = True

    config = Config.model_validate({"defaults": {"hooks_blocking_threshold_ms": threshold_ms}})
    registry = HookRegistry.from_plugins(
        [stub_plugin("p", [busy])], blocking_threshold_ms=config.defaults.hooks_blocking_threshold_ms
    )
    ctx = MessageReceivedContext()
    with capture_logs() as logs:
        await emit(registry, EVENT_MESSAGE_RECEIVED, ctx)

    stats = registry.hooks_for(EVENT_MESSAGE_RECEIVED)[0].stats
    assert (stats.blocked_loop, stats.failures) == (reported, 0)
    assert ctx.suppress is True
    assert sum(entry["event"] == "hook blocked the event loop" for entry in logs) == reported


def test_registry_blocking_threshold_survives_without_plugin():
    registry = HookRegistry.from_plugins([stub_plugin("a", [make_hook("x")])], blocking_threshold_ms=42)

    assert registry.without_plugin("a").blocking_threshold_ms == 42
