"""Settings from chat on the bench: administrators change a thread's or room's model, a room's thread mode and an
agent's instructions, and config keys with `!config`; everyone else is refused and nothing changes. Each change
lands in the override store and the live state, and the next turn runs with it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from structlog.testing import capture_logs

from mindroom.bots.commands.settings import REFUSED
from mindroom.bots.voice_reply import voice_replies_on
from mindroom.config.overrides import Override
from mindroom.constants import HOOK_DISPATCH_KEY, ORIGINAL_SENDER_KEY, SYNTHETIC_DEPTH_KEY
from mindroom.daemon.chat_settings import register_settings_commands, with_chat_settings
from mindroom.daemon.live import build_live_state
from mindroom.daemon.reload import ReloadCoordinator
from mindroom.state.sqlite.overrides import SqliteOverrideStore
from mindroom.testing.model_server import ScriptedModelServer, Text
from tests.bots.bench import ALICE, BOB, LOBBY

pytestmark = pytest.mark.asyncio


def models(server: ScriptedModelServer) -> dict[str, Any]:
    return {
        name: {"provider": "openai", "id": f"id-{name}", "extra_kwargs": {"base_url": server.base_url}}
        for name in ("default", "fast")
    }


async def settings_bench(make_bench: Any, server: ScriptedModelServer, tmp_path: Path, **config: Any) -> Any:
    """A bench whose command table has the settings commands, on a real override store and reload coordinator."""
    agents = {"helper": {"display_name": "Helper", "rooms": ["lobby"]}, "other": {"display_name": "Other"}}
    config.setdefault("models", models(server))
    bench = await make_bench(agents, administrators=[ALICE], **config)
    daemon = bench.daemon
    daemon.paths.config_path.write_text(yaml.safe_dump(daemon.live.config.model_dump(mode="json", exclude_unset=True)))
    store = SqliteOverrideStore(tmp_path / "overrides.db")

    async def no_restarts(old: Any, changes: Any) -> None:
        return None

    coordinator = ReloadCoordinator(
        daemon.cell,
        daemon.directory,
        build=lambda previous: build_live_state(daemon.paths, previous=previous),
        apply=no_restarts,
    )
    register_settings_commands(bench.commands, store, coordinator, daemon.paths)
    bench.store = store
    return bench


async def say(bench: Any, text: str, sender: str = ALICE, thread_root: str | None = None) -> str:
    """Send `text` to the lobby and return the router's reply to it."""
    event = bench.server.message(LOBBY, sender, text, thread_root=thread_root)
    await bench.deliver(event)
    await bench.settle()
    return bench.client("router").messages[-1].body


def models_asked(server: ScriptedModelServer) -> list[str]:
    return [request["model"] for request in server.requests]


async def test_room_and_thread_models_apply_to_the_next_turns_there(make_bench, model_server, tmp_path):
    bench = await settings_bench(make_bench, model_server, tmp_path)
    model_server.set_default(Text("ok"))
    first = bench.server.message(LOBBY, ALICE, "@helper hi")
    await bench.deliver(first)
    await bench.settle()

    reply = await say(bench, "!room_model fast")
    await bench.deliver(bench.server.message(LOBBY, ALICE, "@helper again"))
    await bench.settle()
    thread_reply = await say(bench, "!model default", thread_root=first.event_id)
    await bench.deliver(bench.server.message(LOBBY, ALICE, "@helper in the thread", thread_root=first.event_id))
    await bench.settle()

    assert reply.startswith("✅ This room now uses `fast` (openai id-fast)")
    assert thread_reply.startswith("✅ This thread now uses `default`")
    assert models_asked(model_server) == ["id-default", "id-fast", "id-default"]
    assert [(o.scope, o.key, o.value, o.set_by) for o in bench.store.all()] == [
        ("room", "model", "fast", ALICE),
        ("thread", "model", "default", ALICE),
    ]
    assert await say(bench, "!room_model reset") == "✅ This room uses the configured models again."
    assert [o.scope for o in bench.daemon.live.settings.overrides] == ["thread"]


async def test_a_non_administrator_is_refused_and_nothing_changes(make_bench, model_server, tmp_path):
    bench = await settings_bench(make_bench, model_server, tmp_path, authorization={"config_command_enabled": True})
    live = bench.daemon.live

    replies = [
        await say(bench, text, sender=BOB)
        for text in ("!room_model fast", "!thread_mode room", "!instructions helper Shout.", "!config show")
    ]

    assert replies == [REFUSED] * 4
    assert bench.store.all() == [] and bench.daemon.live is live
    assert (await say(bench, "!room_model", sender=BOB)).startswith("This room: the configured models.")


def relayed(bench: Any, text: str, person: str) -> Any:
    """`text` as a plugin's hook posts it through the router for `person` (the message it reacted to was theirs)."""
    content = {HOOK_DISPATCH_KEY: True, SYNTHETIC_DEPTH_KEY: 1, ORIGINAL_SENDER_KEY: person}
    return bench.server.message(LOBBY, bench.user_id("router"), text, extra_content=content)


async def test_a_relayed_administrator_keeps_the_right_and_the_change_names_them(make_bench, model_server, tmp_path):
    bench = await settings_bench(make_bench, model_server, tmp_path)

    await bench.deliver(relayed(bench, "!room_model fast", ALICE))
    await bench.settle()

    assert bench.client("router").messages[-1].body.startswith("✅ This room now uses `fast`")
    assert [(o.key, o.value, o.set_by) for o in bench.store.all()] == [("model", "fast", ALICE)]


async def test_a_relaying_account_listed_as_administrator_gives_no_right_to_the_person_relayed(
    make_bench, model_server, tmp_path
):
    bench = await settings_bench(make_bench, model_server, tmp_path)
    router = bench.user_id("router")
    config = bench.daemon.live.config
    bench.daemon.cell.swap(replace(bench.daemon.live, config=config.model_copy(update={"administrators": [router]})))

    await bench.deliver(relayed(bench, "!room_model fast", BOB))
    await bench.settle()

    assert bench.client("router").messages[-1].body == REFUSED
    assert bench.store.all() == []


async def test_thread_mode_and_instructions_set_for_the_room_shape_the_next_answer(make_bench, model_server, tmp_path):
    bench = await settings_bench(make_bench, model_server, tmp_path)
    model_server.set_default(Text("ok"))

    assert (await say(bench, "!thread_mode room")).startswith("✅ Agents and teams now answer in the main timeline")
    assert (await say(bench, "!instructions helper Answer like a pirate.")).startswith("✅ helper follows")
    question = bench.server.message(LOBBY, ALICE, "@helper hello")
    await bench.deliver(question)
    await bench.settle()

    answer = bench.client("helper").messages[-1]
    assert answer.thread_root is None  # the main timeline
    assert "Answer like a pirate." in str(model_server.requests[-1]["messages"][0]["content"])
    assert (await say(bench, "!thread_mode sideways")).startswith("❌ Not changed: thread_mode: 'sideways'")


async def test_config_command_sets_validates_lists_and_resets_a_key(make_bench, model_server, tmp_path):
    bench = await settings_bench(make_bench, model_server, tmp_path, authorization={"config_command_enabled": True})

    changed = await say(bench, "!config set agents.helper.model fast")
    shown = await say(bench, "!config show")
    refused = await say(bench, "!config set defaults.num_history_runs -1")
    unknown = await say(bench, "!config set agents.helper.model huge")

    assert changed == (
        '✅ `agents.helper.model`: "default" → "fast" (overrides config.yaml; `!config reset agents.helper.model`'
        " undoes it)."
    )
    assert bench.daemon.live.config.agents["helper"].model == "fast"
    assert '- agents.helper.model = "fast" (chat, by @alice:localhost at ' in shown
    assert refused.startswith("❌ Not changed: defaults.num_history_runs: Input should be greater than or equal to 0")
    assert "unknown model 'huge'" in unknown
    assert bench.daemon.live.config.defaults.num_history_runs == 10
    assert await say(bench, "!config reset agents.helper.model") == "✅ `agents.helper.model` is config.yaml's again."
    assert bench.daemon.live.config.agents["helper"].model == "default" and bench.store.all() == []


async def test_config_command_is_off_unless_enabled(make_bench, model_server, tmp_path):
    bench = await settings_bench(make_bench, model_server, tmp_path)

    assert await say(bench, "!config show") == "❌ `!config` is off (`authorization.config_command_enabled`)."


async def test_a_non_administrator_cannot_change_a_thread_room_mode_or_instructions(make_bench, model_server, tmp_path):
    bench = await settings_bench(make_bench, model_server, tmp_path)
    model_server.set_default(Text("ok"))
    first = bench.server.message(LOBBY, BOB, "@helper hi")
    await bench.deliver(first)
    await bench.settle()
    live = bench.daemon.live

    replies = [
        await say(bench, text, sender=BOB, thread_root=first.event_id)
        for text in ("!model fast", "!room_model fast", "!thread_mode room", "!instructions helper Shout.")
    ]
    await bench.deliver(bench.server.message(LOBBY, BOB, "@helper again", thread_root=first.event_id))
    await bench.settle()

    assert replies == [REFUSED] * 4
    assert bench.store.all() == [] and bench.daemon.live is live and live.settings.overrides == ()
    assert models_asked(model_server) == ["id-default", "id-default"]
    assert "Shout." not in str(model_server.requests[-1]["messages"])
    assert bench.client("helper").messages[-1].thread_root == first.event_id


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("models.default.host", "http://127.0.0.1:9/v1"),
        ("models.default.extra_kwargs", "{base_url: 'http://127.0.0.1:9/v1'}"),
        ("models.stolen", "{provider: openai, id: x, host: 'http://10.0.0.7/v1'}"),
        ("tools.mcp.sandbox", "none"),
        ("mcp_servers.x", "{transport: stdio, command: /bin/true}"),
        ("agents.helper", "{instructions: [Be brief.], tools: [shell]}"),
        ("agents.helper.rooms[0]", "den"),
    ],
)
async def test_config_set_of_an_endpoint_program_or_sandbox_is_refused_and_stores_nothing(
    make_bench, model_server, tmp_path, key, value
):
    bench = await settings_bench(make_bench, model_server, tmp_path, authorization={"config_command_enabled": True})
    live = bench.daemon.live

    reply = await say(bench, f"!config set {key} {value}")

    assert reply.startswith(f"❌ Not changed: `{key}` cannot be changed from chat:")
    assert reply.endswith(
        "endpoints, paths, commands, plugins, sandboxes and credentials are the operator's; edit config.yaml"
    )
    assert bench.store.all() == [] and bench.daemon.live is live


async def test_config_set_of_a_parent_changes_only_its_allowed_leaves(make_bench, model_server, tmp_path):
    bench = await settings_bench(make_bench, model_server, tmp_path, authorization={"config_command_enabled": True})

    reply = await say(bench, "!config set agents.helper {instructions: [Be brief.], model: fast}")
    shown = await say(bench, "!config show")

    helper = bench.daemon.live.config.agents["helper"]
    assert reply.startswith("✅ `agents.helper`:")
    assert (helper.instructions, helper.model, helper.rooms) == (["Be brief."], "fast", ["lobby"])
    assert "not in effect" not in shown and "passed over" not in shown
    assert '- agents.helper.instructions = ["Be brief."] (chat, by @alice:localhost at ' in shown


async def test_a_stored_override_chat_may_not_make_is_passed_over_at_start(make_bench, model_server, tmp_path):
    bench = await settings_bench(make_bench, model_server, tmp_path, authorization={"config_command_enabled": True})
    bench.store.put(Override("config", "models.default.host", "http://127.0.0.1:9/v1", "@old:hs", 1.0))
    bench.store.put(Override("config", "defaults.num_history_runs", 4, "@old:hs", 2.0))

    with capture_logs() as logs:
        live = await with_chat_settings(bench.daemon.live, bench.store, bench.daemon.paths)
    bench.daemon.cell.swap(live)
    shown = await say(bench, "!config show")

    assert live.config.models["default"].host is None and live.config.defaults.num_history_runs == 4
    passed = [entry for entry in logs if entry["event"] == "chat setting passed over: chat may not change this key"]
    assert [(entry["log_level"], entry["key"]) for entry in passed] == [("warning", "models.default.host")]
    assert (
        "- models.default.host = 'http://127.0.0.1:9/v1' (config.yaml; set by @old:hs) — passed over: chat may not"
        " change this key; edit config.yaml"
    ) in shown
    assert "- defaults.num_history_runs = 4 (chat, by @old:hs at 1970-01-01 00:00 UTC)\n" in shown
    assert await say(bench, "!config reset models.default.host") == "✅ `models.default.host` is config.yaml's again."
    assert [o.key for o in bench.store.all()] == ["defaults.num_history_runs"]


async def test_config_get_blanks_a_value_kept_under_a_secret_name(make_bench, model_server, tmp_path):
    listed = models(model_server)
    listed["default"]["api_key"] = "operator-key-0123456789"
    bench = await settings_bench(
        make_bench, model_server, tmp_path, models=listed, authorization={"config_command_enabled": True}
    )

    replies = [await say(bench, "!config get models.default.api_key"), await say(bench, "!config get models.default")]

    assert replies[0] == '`models.default.api_key` = "[redacted]"'
    assert all("operator-key" not in reply for reply in replies)


async def test_config_show_under_a_path_lists_defaults_too_and_names_each_source(make_bench, model_server, tmp_path):
    bench = await settings_bench(make_bench, model_server, tmp_path, authorization={"config_command_enabled": True})

    await say(bench, "!config set agents.helper.instructions Be brief.")  # text: the config keeps it as a list
    shown = await say(bench, "!config show agents.helper")
    near = await say(bench, "!config show agents.help")

    lines = shown.splitlines()
    assert lines[0].startswith("Config in force at `agents.helper` (") and "defaults)" in lines[0]
    assert '- agents.helper.instructions = ["Be brief."] (chat, by @alice:localhost at ' in shown
    assert '- agents.helper.display_name = "Helper" (config.yaml)' in lines
    assert any(line.startswith("- agents.helper.num_history_runs = ") and line.endswith("(default)") for line in lines)
    assert all(line.startswith("- agents.helper.") for line in lines[1:])
    assert near == "No config key at or below `agents.help`."


async def test_voice_command_turns_voice_replies_on_and_off_for_the_room(make_bench, model_server, tmp_path):
    bench = await settings_bench(make_bench, model_server, tmp_path, voice={"tts": {"host": model_server.url}})

    assert not voice_replies_on(bench.daemon.live, "helper", LOBBY)
    assert (await say(bench, "!voice on")).startswith("✅ Agents here now answer voice messages in text, then in voice")
    assert voice_replies_on(bench.daemon.live, "helper", LOBBY)
    assert (await say(bench, "!voice")) == f"Voice replies in this room: on (set from chat by {ALICE})."
    assert [(o.scope, o.room_id, o.key, o.value) for o in bench.store.all()] == [("room", LOBBY, "voice_replies", True)]
    assert not voice_replies_on(bench.daemon.live, "helper", "!elsewhere:localhost")

    assert (await say(bench, "!voice off")).startswith("✅ Agents here now answer voice messages in text only")
    assert not voice_replies_on(bench.daemon.live, "helper", LOBBY)
    assert (await say(bench, "!voice reset")) == "✅ Voice replies here follow config.yaml again."
    assert bench.store.all() == [] and (await say(bench, "!voice")).endswith("as config.yaml says (`voice.replies`).")


async def test_voice_command_off_wins_over_config_replies_in_that_room(make_bench, model_server, tmp_path):
    voice = {"tts": {"host": model_server.url}, "replies": True}
    bench = await settings_bench(make_bench, model_server, tmp_path, voice=voice)

    await say(bench, "!voice off")

    assert not voice_replies_on(bench.daemon.live, "helper", LOBBY)
    assert voice_replies_on(bench.daemon.live, "helper", "!elsewhere:localhost")


@pytest.mark.parametrize(
    ("text", "sender", "reply"),
    [
        pytest.param("!voice on", BOB, REFUSED, id="not-an-administrator"),
        pytest.param("!voice onn", ALICE, "Usage: `!voice on`", id="a-word-with-a-suffix"),
        pytest.param("!voice yes", ALICE, "Usage: `!voice on`", id="another-word"),
    ],
)
async def test_voice_command_refuses_and_changes_nothing(make_bench, model_server, tmp_path, text, sender, reply):
    bench = await settings_bench(make_bench, model_server, tmp_path, voice={"tts": {"host": model_server.url}})

    assert (await say(bench, text, sender=sender)).startswith(reply)
    assert bench.store.all() == [] and not voice_replies_on(bench.daemon.live, "helper", LOBBY)


async def test_voice_command_on_needs_a_speech_service(make_bench, model_server, tmp_path):
    bench = await settings_bench(make_bench, model_server, tmp_path)

    assert (await say(bench, "!voice on")).startswith("❌ No text-to-speech service is set up: `voice.tts`")
    assert bench.store.all() == []
