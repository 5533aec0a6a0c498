"""`@hook`: annotation only, validated when applied, metadata readable through `get_hook_metadata`."""

import pytest

from mindroom.constants import ROUTER_AGENT_NAME
from mindroom.hooks import EVENT_MESSAGE_ENRICH, EVENT_TOOL_BEFORE_CALL, HookMetadata, get_hook_metadata, hook
from mindroom.hooks.decorators import get_hook_metadata as get_hook_metadata_from_module


def test_hook_returns_the_same_function_unchanged():
    async def callback(ctx):
        return "ran"

    decorated = hook("message:received")(callback)

    assert decorated is callback
    assert decorated.__name__ == "callback"


def test_hook_records_spec_defaults():
    @hook("message:enrich")
    async def enrich_weather(ctx):
        pass

    meta = get_hook_metadata(enrich_weather)

    assert meta == HookMetadata(event_name="message:enrich", hook_name="enrich_weather")
    assert meta.priority == 100
    assert meta.timeout_ms is None
    assert meta.agents is None
    assert meta.rooms is None


def test_hook_records_every_spec_parameter():
    @hook(
        "message:enrich",
        name="enrich_weather",
        priority=20,
        timeout_ms=500,
        agents=["code", "research"],
        rooms=["!room:localhost"],
    )
    async def enrich(ctx):
        pass

    meta = get_hook_metadata(enrich)

    assert meta.event_name == EVENT_MESSAGE_ENRICH
    assert meta.hook_name == "enrich_weather"
    assert meta.priority == 20
    assert meta.timeout_ms == 500
    assert meta.agents == ("code", "research")
    assert meta.rooms == ("!room:localhost",)


def test_hook_accepts_event_as_keyword_like_mindroom_plugins():
    @hook(event="tool:before_call", name="shell-guard", timeout_ms=1000)
    async def guard(ctx):
        pass

    metadata = get_hook_metadata_from_module(guard)

    assert metadata.event_name == EVENT_TOOL_BEFORE_CALL
    assert metadata.hook_name == "shell-guard"
    assert metadata.timeout_ms == 1000


def test_hook_accepts_router_agent_tuple():
    @hook("message:received", agents=(ROUTER_AGENT_NAME,))
    async def router_only(ctx):
        pass

    assert get_hook_metadata(router_only).agents == ("router",)  # a tuple, as MindRoom plugins' tests compare it


def test_hook_filters_are_tuples_in_the_order_written_each_name_once():
    @hook("message:received", agents=["research", "code", "research"], rooms=["!b:l", "!a:l", "!b:l"])
    async def filtered(ctx):
        pass

    meta = get_hook_metadata(filtered)
    assert meta.agents == ("research", "code")
    assert meta.rooms == ("!b:l", "!a:l")
    assert type(meta.agents) is tuple and type(meta.rooms) is tuple


def test_hook_accepts_any_iterable_for_filters():
    @hook("message:received", agents=(name for name in ["a", "b"]), rooms={"!x:localhost"})
    async def filtered(ctx):
        pass

    meta = get_hook_metadata(filtered)
    assert meta.agents == ("a", "b")
    assert meta.rooms == ("!x:localhost",)


def test_hook_single_string_filter_is_one_name_not_characters():
    @hook("message:received", agents="code")
    async def filtered(ctx):
        pass

    assert get_hook_metadata(filtered).agents == ("code",)


def test_hook_accepts_custom_event():
    @hook("todo:item_completed")
    async def audit(ctx):
        pass

    assert get_hook_metadata(audit).event_name == "todo:item_completed"


@pytest.mark.parametrize(
    "event",
    [
        "noColon",
        "Upper:case",
        "todo:",
        ":todo",
        "todo item:done",
        "todo::done",
        "",
        "todo:done!",
    ],
)
def test_hook_invalid_event_name_raises_value_error(event):
    with pytest.raises(ValueError, match="event"):

        @hook(event)
        async def callback(ctx):
            pass


@pytest.mark.parametrize(
    "event",
    [
        "message:unknown",
        "agent:custom",
        "bot:thing",
        "schedule:other",
        "reaction:removed",
        "config:changed",
        "tool:custom",
    ],
)
def test_hook_reserved_namespace_raises_value_error(event):
    with pytest.raises(ValueError, match="reserved"):

        @hook(event)
        async def callback(ctx):
            pass


def test_hook_multi_segment_custom_event_is_valid():
    @hook("my-plugin.v2:items:done")
    async def callback(ctx):
        pass

    assert get_hook_metadata(callback).event_name == "my-plugin.v2:items:done"


def test_hook_sync_callback_raises_type_error():
    with pytest.raises(TypeError, match="async"):

        @hook("message:received")
        def sync_callback(ctx):
            pass


def test_hook_async_generator_is_rejected():
    with pytest.raises(TypeError, match="async"):

        @hook("message:received")
        async def agen(ctx):
            yield


@pytest.mark.parametrize("timeout_ms", [0, -5])
def test_hook_non_positive_timeout_raises(timeout_ms):
    with pytest.raises(ValueError, match="timeout_ms"):
        hook("message:received", timeout_ms=timeout_ms)


@pytest.mark.parametrize("priority", ["10", 1.5, True])
def test_hook_non_int_priority_raises(priority):
    with pytest.raises(TypeError, match="priority"):
        hook("message:received", priority=priority)


def test_hook_non_string_agent_raises():
    with pytest.raises(TypeError, match="agents"):
        hook("message:received", agents=["code", 3])


def test_hook_fail_closed_only_on_gate_events():
    @hook("tool:before_call", fail_closed=True)
    async def guard(ctx):
        pass

    assert get_hook_metadata(guard).fail_closed is True
    with pytest.raises(ValueError, match="fail_closed"):
        hook("message:received", fail_closed=True)


def test_hook_has_no_side_effect_on_import():
    @hook("message:received")
    async def one(ctx):
        pass

    assert get_hook_metadata(one) is not None
    # Decorating does not register anywhere: an unrelated function stays undecorated.

    async def other(ctx):
        pass

    assert get_hook_metadata(other) is None


@pytest.mark.asyncio
async def test_hook_decorated_function_can_be_called_directly():
    @hook("tool:before_call", name="shell-guard")
    async def guard(ctx):
        ctx.seen = True
        return 42

    class Ctx:
        seen = False

    ctx = Ctx()
    assert await guard(ctx) == 42
    assert ctx.seen is True


def test_get_hook_metadata_ignores_foreign_attribute_values():
    def fake():
        pass

    fake.__mindroom_hook__ = {"event_name": "message:received"}

    assert get_hook_metadata(fake) is None
    assert get_hook_metadata(42) is None


def test_hook_metadata_is_frozen():
    @hook("message:received")
    async def callback(ctx):
        pass

    with pytest.raises(AttributeError):
        get_hook_metadata(callback).priority = 1


def test_decorator_drops_blank_filter_entries_and_an_empty_filter_is_none():
    @hook("message:received", agents=["", " ", "code"], rooms=["", "!r:l"])
    async def some(ctx):
        pass

    @hook("message:received", agents=[""], rooms=[])
    async def everywhere(ctx):
        pass

    assert get_hook_metadata(some).agents == ("code",)
    assert get_hook_metadata(some).rooms == ("!r:l",)
    assert get_hook_metadata(everywhere).agents is None
    assert get_hook_metadata(everywhere).rooms is None
