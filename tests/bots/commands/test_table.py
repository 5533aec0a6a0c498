"""Chat commands: what counts as a command, the command table, `!help`, and answering in the thread."""

from dataclasses import dataclass, field, replace
from typing import Any

import pytest
from structlog.testing import capture_logs

from mindroom.bots.commands.table import Command, CommandTable, handle_command, is_administrator, is_command
from mindroom.bots.runtime import LiveState
from mindroom.config.main import Config
from mindroom.hooks.context import MessageEnvelope
from mindroom.hooks.registry import HookRegistry

COMMANDS = [
    pytest.param("!help", True, id="bare"),
    pytest.param("!help me please", True, id="with-arguments"),
    pytest.param("  !help", True, id="leading-spaces"),
    pytest.param("\n\t!help", True, id="leading-newline-and-tab"),
    pytest.param("!HELP", True, id="upper-case"),
    pytest.param("!reload-plugins", True, id="hyphenated"),
    pytest.param("!x", True, id="one-letter"),
    pytest.param("!é", True, id="non-ascii-letter"),
    pytest.param("!", False, id="bang-only"),
    pytest.param("  !  ", False, id="bang-in-spaces"),
    pytest.param("!!", False, id="double-bang"),
    pytest.param("!!help", False, id="double-bang-then-name"),
    pytest.param("!1", False, id="digit"),
    pytest.param("! help", False, id="space-after-bang"),
    pytest.param("!?", False, id="punctuation"),
    pytest.param("hello !help", False, id="bang-mid-text"),
    pytest.param("help!", False, id="bang-at-end"),
    pytest.param("?help", False, id="other-prefix"),
    pytest.param("", False, id="empty"),
    pytest.param("   ", False, id="blank"),
]


def no_room_managed(room_id: str) -> bool:
    """The directory's answer for a daemon whose config names no room."""
    return False


@pytest.mark.parametrize(("body", "expected"), COMMANDS)
def test_is_command(body: str, expected: bool) -> None:
    assert is_command(body) is expected


async def _reply(entity: Any, live: LiveState, envelope: MessageEnvelope, args: str) -> str:
    return f"args={args!r}"


def command(name: str, description: str = "does a thing") -> Command:
    return Command(name, description, _reply)


def names(table: CommandTable) -> list[str]:
    return [entry.name for entry in table]


# -- CommandTable -------------------------------------------------------------------------------------


def test_command_table_register_then_get() -> None:
    table = CommandTable()
    deploy = command("deploy")
    table.register(deploy)
    assert table.get("deploy") is deploy


def test_command_table_starts_empty() -> None:
    table = CommandTable()
    assert names(table) == []
    assert table.get("help") is None


def test_command_table_duplicate_registration_raises() -> None:
    table = CommandTable()
    first = command("deploy", "first")
    table.register(first)
    with pytest.raises(ValueError, match="!deploy is registered twice"):
        table.register(command("deploy", "second"))
    assert table.get("deploy") is first


@pytest.mark.parametrize("name", ["help", "hooks", "plugins"])
def test_command_table_builtin_cannot_be_registered_again(name: str) -> None:
    table = CommandTable.with_builtins(is_managed=no_room_managed)
    with pytest.raises(ValueError, match=f"!{name} is registered twice"):
        table.register(command(name))


@pytest.mark.parametrize("name", ["deploy", "DEPLOY", "Deploy", "dEpLoY"])
def test_command_table_get_is_case_insensitive(name: str) -> None:
    table = CommandTable()
    deploy = command("deploy")
    table.register(deploy)
    assert table.get(name) is deploy


@pytest.mark.parametrize("name", ["", "!deploy", "deploy ", "dep", "deploys", "reload"])
def test_command_table_get_unknown_is_none(name: str) -> None:
    table = CommandTable()
    table.register(command("deploy"))
    assert table.get(name) is None


def test_command_table_finds_a_command_registered_with_capitals() -> None:
    table = CommandTable()
    deploy = command("Deploy")
    table.register(deploy)
    assert table.get("Deploy") is deploy


def test_command_table_duplicate_in_another_case_raises() -> None:
    table = CommandTable.with_builtins(is_managed=no_room_managed)
    with pytest.raises(ValueError, match="registered twice"):
        table.register(command("HELP"))


@pytest.mark.parametrize(
    "registered",
    [
        pytest.param(["zeta", "alpha", "mid"], id="reverse-ish"),
        pytest.param(["b", "a"], id="two"),
        pytest.param(["schedule", "reload-plugins", "reload"], id="shared-prefix"),
    ],
)
def test_command_table_iterates_sorted_by_name(registered: list[str]) -> None:
    table = CommandTable()
    for name in registered:
        table.register(command(name))
    assert names(table) == sorted(registered)


def test_command_table_with_builtins() -> None:
    assert names(CommandTable.with_builtins(is_managed=no_room_managed)) == ["help", "hooks", "leave", "plugins"]


def test_command_table_with_builtins_tables_are_independent() -> None:
    one = CommandTable.with_builtins(is_managed=no_room_managed)
    two = CommandTable.with_builtins(is_managed=no_room_managed)
    one.register(command("schedule"))
    assert one.get("schedule") is not None
    assert two.get("schedule") is None


# -- the built-in commands ----------------------------------------------------------------------------


def make_live(**agents: dict[str, Any]) -> LiveState:
    config = Config.model_validate({"agents": agents})
    return LiveState(config=config, registry=HookRegistry.from_plugins([]))


def make_envelope(body: str) -> MessageEnvelope:
    return MessageEnvelope(
        source_event_id="$cmd",
        room_id="!lobby:localhost",
        thread_id=None,
        resolved_thread_id="$cmd",
        requester_id="@alice:localhost",
        sender_id="@alice:localhost",
        body=body,
        attachment_ids=(),
        mentioned_agents=(),
        agent_name="router",
        source_kind="message",
    )


async def run_command(table: CommandTable, name: str, live: LiveState, args: str = "") -> str:
    entry = table.get(name)
    assert entry is not None
    return await entry.run(None, live, make_envelope(f"!{name} {args}"), args)  # type: ignore[arg-type]


@pytest.mark.asyncio
async def test_command_help_lists_every_registered_command() -> None:
    table = CommandTable.with_builtins(is_managed=no_room_managed)
    table.register(command("schedule", "post a message later"))
    table.register(command("reload-plugins", "reload the plugins"))
    text = await run_command(table, "help", make_live())
    listed = [line for line in text.splitlines() if line.startswith("- !")]
    assert listed == [f"- !{entry.name}: {entry.description}" for entry in table]
    assert len(listed) == 6
    assert "- !schedule: post a message later" in listed


@pytest.mark.asyncio
async def test_command_help_sees_commands_registered_later() -> None:
    table = CommandTable.with_builtins(is_managed=no_room_managed)
    before = await run_command(table, "help", make_live())
    table.register(command("deploy", "ship it"))
    after = await run_command(table, "help", make_live())
    assert "!deploy" not in before
    assert "- !deploy: ship it" in after


@pytest.mark.asyncio
async def test_command_help_lists_agents() -> None:
    live = make_live(
        helper={"display_name": "Helper", "role": "answers questions"},
        coder={"display_name": "Code Smith"},
    )
    text = await run_command(CommandTable.with_builtins(is_managed=no_room_managed), "help", live)
    assert "- Helper (helper): answers questions" in text
    assert "- Code Smith (coder): no role given" in text


@pytest.mark.asyncio
async def test_command_plugins_without_plugins() -> None:
    assert (
        await run_command(CommandTable.with_builtins(is_managed=no_room_managed), "plugins", make_live())
        == "No plugins are loaded."
    )


# -- handle_command -----------------------------------------------------------------------------------


@dataclass
class RecordingClient:
    """The one client call `handle_command` makes: it records what would be sent."""

    sent: list[tuple[str, str, str | None, str | None]] = field(default_factory=list)

    async def send_message(
        self, room_id: str, text: str, *, thread_root: str | None = None, reply_to: str | None = None
    ) -> str:
        self.sent.append((room_id, text, thread_root, reply_to))
        return "$reply"


@dataclass
class CommandEntity:
    name: str = "router"
    client: RecordingClient = field(default_factory=RecordingClient)


@pytest.mark.parametrize(
    ("body", "reply"),
    [
        pytest.param("!echo", "args=''", id="no-arguments"),
        pytest.param("!echo a b", "args='a b'", id="arguments"),
        pytest.param("  !echo   a b  ", "args='a b'", id="arguments-stripped"),
        pytest.param("!ECHO x", "args='x'", id="upper-case-name"),
        pytest.param("!nope", "Unknown command !nope. Try !help.", id="unknown"),
        pytest.param("!nope with args", "Unknown command !nope. Try !help.", id="unknown-with-arguments"),
    ],
)
@pytest.mark.asyncio
async def test_handle_command_answers_in_the_thread(body: str, reply: str) -> None:
    table = CommandTable()
    table.register(command("echo"))
    entity = CommandEntity()
    await handle_command(entity, make_live(), make_envelope(body), table)  # type: ignore[arg-type]
    assert entity.client.sent == [("!lobby:localhost", reply, "$cmd", "$cmd")]


RELAY = "@mindroom_router:localhost"


@pytest.mark.parametrize(
    ("sender", "requester", "administrators", "allowed"),
    [
        pytest.param("@alice:localhost", "@alice:localhost", ["@alice:localhost"], True, id="an-administrator"),
        pytest.param(RELAY, "@alice:localhost", ["@alice:localhost"], True, id="relayed-administrator-stays-one"),
        pytest.param(RELAY, "@bob:localhost", ["@alice:localhost", RELAY], False, id="relay-gains-nothing"),
        pytest.param("@bob:localhost", "@bob:localhost", ["@alice:localhost"], False, id="someone-else"),
        pytest.param("@alice:localhost.evil", "@alice:localhost.evil", ["@alice:localhost"], False, id="server-suffix"),
        pytest.param("@Alice:localhost", "@Alice:localhost", ["@alice:localhost"], False, id="other-case"),
        pytest.param("@alice:localhost", "@alice:localhost", [], False, id="nobody-listed"),
    ],
)
def test_is_administrator_asks_about_the_person_a_message_speaks_for(sender, requester, administrators, allowed):
    live = LiveState(config=Config(administrators=administrators), registry=HookRegistry.from_plugins([]))
    envelope = replace(make_envelope("!config show"), sender_id=sender, requester_id=requester)

    with capture_logs() as logs:
        assert is_administrator(live, envelope, "config") is allowed

    refusals = [entry for entry in logs if entry["event"] == "command refused: not an administrator"]
    assert [(entry["requester"], entry["sender"]) for entry in refusals] == ([] if allowed else [(requester, sender)])
