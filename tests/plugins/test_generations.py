"""Plugins of both API generations, loaded side by side from real folders; the manifest's `api_version`."""

import json
import textwrap

import pytest
from structlog.testing import capture_logs

from mindroom.errors import ManifestError
from mindroom.hooks import (
    EVENT_MESSAGE_ENRICH,
    EVENT_MESSAGE_RECEIVED,
    HookRegistry,
    MessageEnvelope,
    MessageReceivedContext,
    append_enrichment,
    strip_enrichment_blocks,
)
from mindroom.hooks.context import MessageEnrichContext
from mindroom.hooks.execution import emit, emit_collect
from mindroom.plugin_api import PLUGIN_API_VERSION
from mindroom.plugins import load_plugin_dir
from mindroom.plugins.manifest import PluginApiVersionError


def make_plugin(root, name, hooks_source, **manifest_extra):
    folder = root / name
    folder.mkdir(parents=True)
    manifest = {"name": name, "hooks_module": "hooks.py", **manifest_extra}
    (folder / "mindroom.plugin.json").write_text(json.dumps(manifest))
    (folder / "hooks.py").write_text(textwrap.dedent(hooks_source))
    return folder


# Written against the hooks spec: the flat envelope names, enrichment without `persist`.
OLDER_HOOKS = """
from mindroom.constants import ROUTER_AGENT_NAME
from mindroom.hooks import EnrichmentItem, MessageEnrichContext, MessageReceivedContext, hook


@hook("message:received", agents=(ROUTER_AGENT_NAME,))
async def ping(ctx: MessageReceivedContext) -> None:
    if ctx.envelope.body.strip() == "ping":
        await ctx.send_message(ctx.envelope.room_id, "pong", thread_id=ctx.envelope.resolved_thread_id)
        ctx.suppress = True


@hook("message:enrich")
async def location(ctx: MessageEnrichContext) -> EnrichmentItem:
    return EnrichmentItem(key="location", text="User is in Berlin")
"""

# Written against the 2026 API: `envelope.target`, `origin`, explicit `persist`, the stable import surface.
NEWER_HOOKS = """
from mindroom.plugin_api import EVENT_MESSAGE_ENRICH, EVENT_MESSAGE_RECEIVED, TurnIntent, hook


@hook(EVENT_MESSAGE_RECEIVED, agents=("router",))
async def note_target(ctx):
    if ctx.envelope.origin.intent is TurnIntent.USER_MESSAGE:
        target = ctx.envelope.target
        await ctx.send_message(target.room_id, f"session {target.session_id}", thread_id=target.resolved_thread_id)


@hook(EVENT_MESSAGE_ENRICH)
async def goal(ctx):
    ctx.add_metadata("thread_goal", "Ship the release", cache_policy="stable", persist=True)
    ctx.add_metadata("clock", "It is 09:00", persist=False)
"""


def envelope(body):
    return MessageEnvelope(
        source_event_id="$e",
        room_id="!room:localhost",
        thread_id=None,
        resolved_thread_id="$e",
        requester_id="@alice:localhost",
        sender_id="@alice:localhost",
        body=body,
        attachment_ids=(),
        mentioned_agents=(),
        agent_name="router",
        source_kind="message",
    )


@pytest.mark.asyncio
async def test_plugins_of_both_generations_run_side_by_side(tmp_path):
    older = load_plugin_dir(make_plugin(tmp_path, "ping-hook", OLDER_HOOKS))
    newer = load_plugin_dir(make_plugin(tmp_path, "thread-goal", NEWER_HOOKS, api_version="2026.10"))
    registry = HookRegistry.from_plugins([older, newer])
    sent = []

    async def sender(room_id, text, thread_id=None, extra_content=None):
        sent.append((text, thread_id))
        return "$sent"

    ctx = MessageReceivedContext(envelope=envelope("ping"), message_sender=sender)
    await emit(registry, EVENT_MESSAGE_RECEIVED, ctx)
    items = await emit_collect(registry, EVENT_MESSAGE_ENRICH, MessageEnrichContext(envelope=envelope("hi")))

    assert ctx.suppress is True
    assert sent == [("pong", "$e"), ("session !room:localhost:$e", "$e")]
    assert [(item.key, item.persist) for item in items] == [
        ("location", None),
        ("thread_goal", True),
        ("clock", False),
    ]
    stored = strip_enrichment_blocks(append_enrichment("hi", items))
    assert "Ship the release" in stored
    assert "Berlin" not in stored and "09:00" not in stored


def test_a_plugin_needing_a_newer_api_fails_naming_both_versions(tmp_path):
    folder = make_plugin(tmp_path, "future", OLDER_HOOKS, api_version="2027.03")

    with pytest.raises(PluginApiVersionError) as info:
        load_plugin_dir(folder)

    assert isinstance(info.value, ManifestError)
    assert "2027.03" in info.value.cause
    assert PLUGIN_API_VERSION in info.value.cause
    assert info.value.plugin == "future"


@pytest.mark.parametrize("version", ["2026.10", "2026.10.589", "2025.01", "2026.1"])
def test_a_plugin_needing_this_or_an_older_api_loads(tmp_path, version):
    plugin = load_plugin_dir(make_plugin(tmp_path, "fits", OLDER_HOOKS, api_version=version))

    assert plugin.manifest.api_version == version


@pytest.mark.parametrize("version", ["next", "2026", "2026.13", "26.10", ""])
def test_a_malformed_api_version_is_a_manifest_error(tmp_path, version):
    with pytest.raises(ManifestError, match="api_version"):
        load_plugin_dir(make_plugin(tmp_path, "odd", OLDER_HOOKS, api_version=version))


def test_an_oauth_module_is_accepted_and_ignored_with_a_warning(tmp_path):
    with capture_logs() as logs:
        plugin = load_plugin_dir(make_plugin(tmp_path, "oauthy", OLDER_HOOKS, oauth_module="oauth.py"))

    assert plugin.manifest.oauth_module == "oauth.py"
    assert any(entry["event"].startswith("plugin oauth_module ignored") for entry in logs)
    with pytest.raises(ManifestError, match="inside the plugin folder"):
        load_plugin_dir(make_plugin(tmp_path, "escaping", OLDER_HOOKS, oauth_module="../x.py"))
