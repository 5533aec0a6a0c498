"""What published MindRoom plugins' code and their own test suites build and compare, written as they write it.

Each test stands for one plugin's use (named in its docstring): the shapes are MindRoom 2026.10's.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from mindroom.constants import RuntimePaths, resolve_config_relative_path
from mindroom.hooks import (
    EVENT_MESSAGE_ENRICH,
    EnrichmentItem,
    HookRegistry,
    MessageEnrichContext,
    MessageEnvelope,
    hook,
)
from mindroom.hooks.decorators import get_hook_metadata
from mindroom.hooks.execution import emit_collect
from mindroom.matrix.credentials import BotCredentials
from mindroom.plugins import load_plugin_dir
from mindroom.tool_system.skills import list_skill_listings
from tests.hooks.support import stub_plugin

DOC = (Path(__file__).resolve().parents[2] / "docs" / "plugins.md").read_text(encoding="utf-8")


def _envelope() -> MessageEnvelope:
    return MessageEnvelope(
        source_event_id="$event",
        room_id="r1",
        thread_id="t1",
        resolved_thread_id="t1",
        requester_id="@user:localhost",
        sender_id="@user:localhost",
        body="hi",
        attachment_ids=(),
        mentioned_agents=(),
        agent_name="code",
        source_kind="message",
    )


def test_published_runtime_paths_built_with_mindroom_keywords(tmp_path):
    """openviking's, thread-export's and agent-vault-bridge's tests build `RuntimePaths` so."""
    paths = RuntimePaths(
        config_path=tmp_path / "conf" / "config.yaml",
        config_dir=tmp_path / "elsewhere",
        env_path=tmp_path / "secrets.env",
        storage_root=tmp_path / "mindroom_data",
        process_env={"REGION": "from-process"},
        env_file_values={"REGION": "from-file", "BUCKET": "from-file"},
    )

    assert paths.storage_root == tmp_path / "mindroom_data"
    assert (paths.config_dir, paths.env_path, paths.control_state_root) == (
        tmp_path / "elsewhere",
        tmp_path / "secrets.env",
        None,
    )
    # The process's environment wins over the .env file's, as in MindRoom.
    assert (paths.env("REGION"), paths.env("BUCKET")) == ("from-process", "from-file")
    assert resolve_config_relative_path("notes/${BUCKET}", paths) == (tmp_path / "elsewhere/notes/from-file").resolve()


def test_published_runtime_paths_keep_this_daemons_shape(tmp_path):
    config = tmp_path / "config.yaml"
    paths = RuntimePaths(config, tmp_path / "data", {"A": "1"})

    assert (paths.config_dir, paths.env_path, paths.env("A")) == (tmp_path, tmp_path / ".env", "1")
    assert (dict(paths.process_env), dict(paths.env_file_values)) == ({}, {})
    assert paths == RuntimePaths(config_path=config, storage_root=tmp_path / "data", env_values={"A": "1"})


@pytest.mark.asyncio
async def test_published_enrich_context_takes_target_member_names():
    """openviking's tests build `MessageEnrichContext(..., target_member_names=None)`."""
    seen = []

    @hook(EVENT_MESSAGE_ENRICH)
    async def members(ctx):
        seen.append(ctx.target_member_names)
        return EnrichmentItem(key="k", text="t")

    single = MessageEnrichContext(envelope=_envelope(), target_entity_name="code", target_member_names=None)
    team = MessageEnrichContext(envelope=_envelope(), target_entity_name="team", target_member_names=("a", "b"))
    registry = HookRegistry.from_plugins([stub_plugin("p", [members])])

    await emit_collect(registry, EVENT_MESSAGE_ENRICH, single)
    await emit_collect(registry, EVENT_MESSAGE_ENRICH, team)

    assert seen == [None, ("a", "b")]
    assert MessageEnrichContext(envelope=_envelope()).target_member_names is None


def test_published_hook_metadata_compares_with_tuples():
    """thread-export's and openviking's tests compare `get_hook_metadata(fn).agents` with a tuple."""

    @hook("bot:ready", agents=["router"])
    async def queue_initial_full_pass(ctx):
        pass

    @hook("message:received")
    async def queue_room_on_message(ctx):
        pass

    assert get_hook_metadata(queue_initial_full_pass).agents == ("router",)
    assert get_hook_metadata(queue_room_on_message).agents is None


def test_published_skill_listings_of_a_plugins_skill_folder(tmp_path):
    """workloop's tests list the skills of its `skills/` folder."""
    skills = tmp_path / "skills"
    for folder, text in {
        "workloop-templates": "---\nname: workloop-templates\ndescription: Templates for work plans.\n---\nUse them.\n",
        "Beta": "# Beta skill\nbody\n",
        "broken": "---\nname: has spaces\n---\n",
    }.items():
        (skills / folder).mkdir(parents=True)
        (skills / folder / "SKILL.md").write_text(text)
    override = tmp_path / "override" / "workloop-templates"
    override.mkdir(parents=True)
    (override / "SKILL.md").write_text("---\nname: workloop-templates\ndescription: Mine.\n---\n")

    listings = list_skill_listings([skills])
    overridden = list_skill_listings([skills, tmp_path / "override"])

    assert [(listing.name, listing.path) for listing in listings] == [
        ("Beta", skills / "Beta" / "SKILL.md"),
        ("workloop-templates", skills / "workloop-templates" / "SKILL.md"),
    ]
    assert [(listing.description, listing.origin) for listing in listings] == [
        ("Beta skill", "custom"),
        ("Templates for work plans.", "custom"),
    ]
    assert [listing.description for listing in overridden] == ["Beta skill", "Mine."]
    assert list_skill_listings() == list_skill_listings([]) == []


@pytest.mark.skipif(sys.version_info < (3, 12), reason="the `type` statement is Python 3.12 syntax")
def test_published_plugin_with_type_statements_loads_on_python_312(tmp_path):
    """thread-goal's helper module declares its callable types with `type` statements."""
    folder = tmp_path / "thread-goal"
    folder.mkdir()
    (folder / "mindroom.plugin.json").write_text(json.dumps({"name": "thread-goal", "hooks_module": "hooks.py"}))
    (folder / "state.py").write_text(
        textwrap.dedent(
            """
            from collections.abc import Awaitable, Callable
            from typing import Any

            type RoomStateQuerier = Callable[[str, str, str | None], Awaitable[dict[str, Any] | None]]
            """
        )
    )
    (folder / "hooks.py").write_text(
        textwrap.dedent(
            """
            from mindroom.hooks import EnrichmentItem, MessageEnrichContext, hook
            from .state import RoomStateQuerier

            @hook(event="message:enrich", name="thread-goal-context", priority=40, timeout_ms=1000)
            async def inject_thread_goal(ctx: MessageEnrichContext) -> list[EnrichmentItem]:
                return [EnrichmentItem(key="thread_goal", text=RoomStateQuerier.__name__, cache_policy="stable")]
            """
        )
    )

    plugin = load_plugin_dir(folder)

    (callback,) = plugin.discovered_hooks
    assert get_hook_metadata(callback).hook_name == "thread-goal-context"


@pytest.mark.parametrize("module", ["mindroom.config.entity_view"])
def test_published_modules_left_out_are_named_with_the_reason_in_the_docs(module):
    listed = DOC.split("### Compatibility list", 1)[1]
    reasons = listed.split("Not provided, because", 1)[1].split("Not provided either", 1)[0]
    (entry,) = [item for item in reasons.split("\n- ") if item.startswith(f"`{module}`: ")]
    assert len(entry.split()) > 30  # a reason, not a name


def test_published_skill_listings_are_in_the_compatibility_list():
    listed = DOC.split("### Compatibility list", 1)[1].split("Not provided, because", 1)[0]
    assert "- `mindroom.tool_system.skills`: `list_skill_listings(roots)`" in listed


def test_published_thread_export_plugin_finds_each_agents_account_and_workspace(tmp_path):
    """thread-export's hooks and tests: accounts saved as MindRoom's state, read back per agent, each agent's
    workspace folder, and the targets it builds from them."""
    from mindroom.config.agent import AgentConfig
    from mindroom.config.main import Config
    from mindroom.matrix.credentials import CredentialStore
    from mindroom.matrix.identity import managed_account_key, managed_account_user_id
    from mindroom.matrix.state import MatrixState
    from mindroom.thread_export import ThreadExportTarget
    from mindroom.tool_system.worker_routing import (
        agent_workspace_root_path,
        private_instance_state_root_for_requester,
    )
    from mindroom.workspaces import resolve_agent_workspace_from_state_path

    config = Config(agents={name: AgentConfig(display_name=name.title()) for name in ("code", "research")})
    paths = RuntimePaths(
        config_path=tmp_path / "config.yaml", config_dir=tmp_path, env_path=tmp_path / ".env", storage_root=tmp_path
    )
    store = CredentialStore(tmp_path)
    store.save("research", BotCredentials("@mindroom_research:localhost", "DEV1", "token-research", "old"))
    state = MatrixState()
    state.add_account(managed_account_key("code"), "mindroom_code", "pw-code", domain="localhost")
    state.add_account(managed_account_key("research"), "mindroom_research", "pw-research", domain="localhost")
    before = managed_account_user_id(managed_account_key("code"), config.get_domain(paths), paths)
    state.save(paths)

    domain = config.get_domain(paths)
    code = managed_account_user_id(managed_account_key("code"), domain, paths)
    workspace = agent_workspace_root_path(paths.storage_root, "code")
    target = ThreadExportTarget(output_dir=workspace / "thread_exports", required_member_user_id=code)

    assert managed_account_key("code") == "agent_code" and domain == "localhost"
    assert before is None and code == "@mindroom_code:localhost"
    for near_miss in ("agent_", "agents_code", "code", "agent_writer"):  # no account of the daemon's bots
        assert managed_account_user_id(near_miss, domain, paths) is None
    assert store.load("research") == BotCredentials(
        "@mindroom_research:localhost", "DEV1", "token-research", "pw-research"
    )
    assert MatrixState.load(paths).get_account("agent_code").user_id == "@mindroom_code:localhost"
    assert workspace == (tmp_path / "agents" / "code" / "workspace").resolve()  # MindRoom's folder, the file tools'
    assert (target.output_dir, target.include_invited_rooms) == (workspace / "thread_exports", True)
    assert config.agents["code"].private is None  # a shared agent: no private copies
    assert (
        private_instance_state_root_for_requester(
            tmp_path, requester_id="@alice:hs", agent_name="code", worker_scope=None, runtime_paths=paths
        )
        is None
    )
    resolved = resolve_agent_workspace_from_state_path(
        "code", config, runtime_paths=paths, state_storage_path=tmp_path / "x", use_state_storage_path=True
    )
    assert resolved is not None and resolved.root == workspace
    assert (
        resolve_agent_workspace_from_state_path(
            "ghost", config, runtime_paths=paths, state_storage_path=tmp_path, use_state_storage_path=False
        )
        is None
    )


def test_published_matrix_state_refuses_a_key_of_no_bot(tmp_path):
    from mindroom.matrix.state import MatrixState

    with pytest.raises(ValueError, match="'user'"):
        MatrixState().add_account("user", "alice", "pw", domain="localhost")


def test_published_get_domain_is_the_server_name_of_the_daemons_accounts(tmp_path):
    from mindroom.config.main import Config

    def domain(env):
        return Config().get_domain(RuntimePaths(tmp_path / "config.yaml", tmp_path, env))

    assert domain({}) == "localhost"  # the embedded homeserver
    assert domain({"MATRIX_HOMESERVER": "https://matrix.example.org:8448"}) == "matrix.example.org"
    assert domain({"MATRIX_HOMESERVER": "https://m.example.org", "MATRIX_SERVER_NAME": "example.org"}) == "example.org"


def test_published_thread_export_plugin_loads(tmp_path):
    """thread-export's hooks module imports these names at its top."""
    folder = tmp_path / "thread-export"
    folder.mkdir()
    (folder / "mindroom.plugin.json").write_text(json.dumps({"name": "thread-export", "hooks_module": "hooks.py"}))
    (folder / "hooks.py").write_text(
        textwrap.dedent(
            """
            import threading

            import mindroom.thread_export as thread_export_pkg
            from mindroom.constants import ROUTER_AGENT_NAME
            from mindroom.hooks import AgentLifecycleContext, hook
            from mindroom.matrix.identity import managed_account_key, managed_account_user_id
            from mindroom.thread_export import ThreadExportTarget, export_threads_to_targets_once
            from mindroom.tool_system.worker_routing import (
                agent_workspace_root_path,
                private_instance_state_root_for_requester,
            )
            from mindroom.workspaces import resolve_agent_workspace_from_state_path

            LOCK = thread_export_pkg.__dict__.setdefault("_thread_export_plugin_pass_lock", threading.Lock())

            @hook(event="bot:ready", name="thread-export-startup", agents=(ROUTER_AGENT_NAME,))
            async def queue_initial_full_pass(ctx: AgentLifecycleContext) -> None:
                pass
            """
        )
    )

    plugin = load_plugin_dir(folder)

    (callback,) = plugin.discovered_hooks
    assert get_hook_metadata(callback).agents == ("router",)


def test_published_agent_vault_bridge_plugin_loads_and_patches_the_shell_tools_environment(tmp_path, monkeypatch):
    """agent-vault-bridge's hooks module wraps `tool_hooks._call_tool`, `sandbox_proxy._call_proxy_sync` and
    `mindroom.tools.shell._shell_subprocess_env` at import, each only once."""
    from mindroom.tool_system import sandbox_proxy, tool_hooks
    from mindroom.tools import shell

    for module, name in (
        (tool_hooks, "_call_tool"),
        (sandbox_proxy, "_call_proxy_sync"),
        (shell, "_shell_subprocess_env"),
    ):
        monkeypatch.setattr(module, name, getattr(module, name))  # put back after the test
    folder = tmp_path / "agent-vault-bridge"
    folder.mkdir()
    (folder / "mindroom.plugin.json").write_text(json.dumps({"name": "agent-vault-bridge", "hooks_module": "hooks.py"}))
    (folder / "hooks.py").write_text(
        textwrap.dedent(
            """
            from mindroom.hooks import EVENT_TOOL_BEFORE_CALL, ToolBeforeCallContext, hook

            def _wrap(module, name, make):
                original = getattr(module, name)
                if not getattr(original, "_bridge", False):
                    wrapper = make(original)
                    wrapper._bridge = True
                    setattr(module, name, wrapper)

            def _install():
                from mindroom.tool_system import sandbox_proxy, tool_hooks
                from mindroom.tools import shell

                def call_tool(original):
                    async def wrapper(func, args, *, tool_name, agent_name):
                        return await original(func, args, tool_name=tool_name, agent_name=agent_name)
                    return wrapper

                def proxy(original):
                    def wrapper(*, tool_name, function_name, kwargs, execution_env=None, **rest):
                        return original(tool_name=tool_name, function_name=function_name, kwargs=kwargs, **rest)
                    return wrapper

                def subprocess_env(original):
                    def wrapper(runtime_env, **kwargs):
                        env = original(runtime_env, **kwargs)
                        for name in ("GITHUB_TOKEN", "GH_TOKEN"):
                            env.pop(name, None)
                        return env
                    return wrapper

                _wrap(tool_hooks, "_call_tool", call_tool)
                _wrap(sandbox_proxy, "_call_proxy_sync", proxy)
                _wrap(shell, "_shell_subprocess_env", subprocess_env)

            @hook(EVENT_TOOL_BEFORE_CALL, name="agent-vault-bridge-before", priority=20, timeout_ms=5000)
            async def prepare_brokered_tool_call(ctx: ToolBeforeCallContext) -> None:
                pass

            _install()
            """
        )
    )

    load_plugin_dir(folder)

    assert shell._shell_subprocess_env({"GITHUB_TOKEN": "t", "GH_TOKEN": "t", "GITHUB_TOKEN_PATH": "/p", "A": "1"}) == {
        "GITHUB_TOKEN_PATH": "/p",
        "A": "1",
    }
    assert all(
        getattr(getattr(module, name), "_bridge", False)
        for module, name in (
            (tool_hooks, "_call_tool"),
            (sandbox_proxy, "_call_proxy_sync"),
            (shell, "_shell_subprocess_env"),
        )
    )


@pytest.mark.parametrize(
    "sandbox",
    [pytest.param("bwrap", marks=pytest.mark.skipif(shutil.which("bwrap") is None, reason="no bubblewrap")), "none"],
)
@pytest.mark.asyncio
async def test_published_shell_subprocess_env_is_what_the_shell_tools_commands_get(tmp_path, monkeypatch, sandbox):
    """agent-vault-bridge drops GitHub tokens by wrapping `mindroom.tools.shell._shell_subprocess_env`."""
    from types import MappingProxyType

    from mindroom.config.main import ShellToolConfig
    from mindroom.hooks.context import ToolEnvironment
    from mindroom.tool_system.shell import run_command
    from mindroom.tool_system.tool_hooks import bind_tool_environment
    from mindroom.tools import shell

    original = shell._shell_subprocess_env
    given = []

    def without_github_tokens(runtime_env, **kwargs):
        given.append(dict(runtime_env))
        env = original(runtime_env, **kwargs)
        for name in ("GITHUB_TOKEN", "GH_TOKEN"):
            env.pop(name, None)
        return {**env, "HTTPS_PROXY": "https://127.0.0.1:14322", "HOME": "/elsewhere"}

    settings = ShellToolConfig(allowed_commands=["env"], sandbox=sandbox, readonly_paths=sorted({sys.prefix}))
    hook_env = {"GITHUB_TOKEN": "ghp_secret", "GH_TOKEN": "ghp_secret", "GITHUB_TOKENS": "kept", "X_GH_TOKEN": "kept"}
    monkeypatch.setattr(shell, "_shell_subprocess_env", without_github_tokens)

    with bind_tool_environment(ToolEnvironment(MappingProxyType(hook_env))):
        output = await run_command("env", tmp_path / "ws", settings)
    seen = dict(line.split("=", 1) for line in output.split("\n", 1)[1].splitlines() if "=" in line)

    assert given[0]["GITHUB_TOKEN"] == "ghp_secret"  # it gets what the hooks gave the command
    assert "GITHUB_TOKEN" not in seen and "GH_TOKEN" not in seen
    assert (seen["GITHUB_TOKENS"], seen["X_GH_TOKEN"], seen["HTTPS_PROXY"]) == (
        "kept",
        "kept",
        "https://127.0.0.1:14322",
    )
    assert seen["HOME"] != "/elsewhere"  # HOME stays the sandbox's own


@pytest.mark.asyncio
async def test_published_agent_vault_bridge_routing_finds_the_shell_command_in_args(tmp_path, monkeypatch):
    """agent-vault-bridge's `_call_tool` wrapper plans a shell call's routing from its `args`, MindRoom's parameter
    (a list or one line): the shell tool here takes the same, so the wrapper sees the program and arguments."""
    from mindroom.config.main import ShellToolConfig, ToolsConfig
    from mindroom.tool_system import tool_hooks
    from mindroom.tool_system.calls import call_tool
    from mindroom.tool_system.shell import shell_tools
    from mindroom.tool_system.spec import AgentToolEnvironment

    seen: list[dict] = []
    original = tool_hooks._call_tool

    async def planning(func, args, *, tool_name, agent_name):
        seen.append(dict(args))  # where the plugin reads `args` to find a GitHub call
        return await original(func, args, tool_name=tool_name, agent_name=agent_name)

    monkeypatch.setattr(tool_hooks, "_call_tool", planning)
    shell = ShellToolConfig(allowed_commands=["echo"], sandbox="none")
    env = AgentToolEnvironment("helper", tmp_path / "ws", ToolsConfig(shell=shell))
    (spec,) = shell_tools(env)

    listed = await call_tool(spec, "helper", {"args": ["echo", "gh api /user"]})
    line = await call_tool(spec, "helper", {"args": "echo gh api /user"})

    assert [call["args"] for call in seen] == [["echo", "gh api /user"], "echo gh api /user"]
    assert listed == "exit code: 0\ngh api /user\n" and line == "exit code: 0\ngh api /user\n"


def test_published_sandbox_proxy_is_never_called_here_and_the_docs_say_so(tmp_path):
    """agent-vault-bridge wraps `sandbox_proxy._call_proxy_sync`; no call goes through a sandbox proxy here."""
    from mindroom.tool_system import sandbox_proxy

    paths = RuntimePaths(tmp_path / "config.yaml", tmp_path, {})

    with pytest.raises(RuntimeError, match=r"'run_shell_command'.*no sandbox proxy"):
        sandbox_proxy._call_proxy_sync(tool_name="run_shell_command", function_name="run_shell_command", kwargs={})
    assert sandbox_proxy.sandbox_proxy_enabled_for_tool("shell", runtime_paths=paths) is False
    (row,) = [line for line in DOC.splitlines() if line.startswith("| agent-vault-bridge |")]
    assert "`sandbox_proxy._call_proxy_sync`" in row and "no effect" in row


def test_published_workloop_plugin_loads(tmp_path):
    """workloop's modules import these names at their tops (its hooks module and its tools module)."""
    folder = tmp_path / "workloop"
    folder.mkdir()
    (folder / "mindroom.plugin.json").write_text(json.dumps({"name": "workloop", "hooks_module": "hooks.py"}))
    (folder / "hooks.py").write_text(
        textwrap.dedent(
            """
            from mindroom.constants import STREAM_STATUS_KEY, STREAM_STATUS_STREAMING
            from mindroom.hooks import AgentLifecycleContext, hook
            from mindroom.matrix.cache import AgentMessageSnapshotUnavailable as Unavailable
            from mindroom.matrix.cache.agent_message_snapshot import AgentMessageSnapshotUnavailable
            from mindroom.matrix.identity import MatrixID
            from mindroom.runtime_resolution import resolve_agent_runtime
            from mindroom.tool_system.worker_routing import agent_workspace_root_path

            assert Unavailable is AgentMessageSnapshotUnavailable

            @hook(event="agent:started", name="workloop-auto-poke-start")
            async def start_auto_poke(ctx: AgentLifecycleContext) -> None:
                pass
            """
        )
    )

    plugin = load_plugin_dir(folder)

    (callback,) = plugin.discovered_hooks
    assert get_hook_metadata(callback).hook_name == "workloop-auto-poke-start"


def test_published_matrix_id_of_an_agent_is_the_account_the_daemon_keeps(tmp_path, monkeypatch):
    """workloop finds each agent's messages by `MatrixID.from_agent(name, domain, runtime_paths).full_id`."""
    from mindroom.matrix.credentials import CredentialStore
    from mindroom.matrix.identity import MatrixID

    monkeypatch.delenv("MINDROOM_ACCOUNT_PREFIX", raising=False)
    paths = RuntimePaths(tmp_path / "config.yaml", tmp_path, {})
    prefixed = RuntimePaths(tmp_path / "config.yaml", tmp_path, {"MINDROOM_ACCOUNT_PREFIX": "team1_"})
    CredentialStore(tmp_path).save("code", BotCredentials("@renamed_code:hs.example", "D", "token", "pw"))

    assert MatrixID.from_agent("code", "localhost", paths).full_id == "@renamed_code:hs.example"  # its stored account
    assert MatrixID.from_agent("research", "localhost", paths).full_id == "@mindroom_research:localhost"
    assert str(MatrixID.from_agent("research", "localhost", prefixed)) == "@team1_research:localhost"
    assert MatrixID.from_agent("Research", "hs.example").full_id == "@mindroom_research:hs.example"
    assert MatrixID.parse("@alice:example.org:8448") == MatrixID.from_username("alice", "example.org:8448")
    for bad in ("alice:example.org", "@alice", "@:example.org", "@alice:", ""):
        with pytest.raises(ValueError, match="is not a Matrix user id"):
            MatrixID.parse(bad)
    with pytest.raises(ValueError, match=r"'\.\./code'"):
        MatrixID.from_agent("../code", "localhost", paths)


def test_published_runtime_resolution_gives_a_shared_agents_folders(tmp_path):
    """workloop resolves the workspace of a private agent with `resolve_agent_runtime`; every agent here is
    resolved as MindRoom resolves a shared one: the same folders whoever asks."""
    from mindroom.config.agent import AgentConfig
    from mindroom.config.main import Config
    from mindroom.runtime_resolution import resolve_agent_runtime, resolve_agent_storage
    from mindroom.tool_system.runtime_context import ToolExecutionIdentity

    config = Config(
        agents={
            "code": AgentConfig(display_name="Code"),
            "notes": AgentConfig(display_name="Notes", memory_backend="file"),
        }
    )
    paths = RuntimePaths(tmp_path / "config.yaml", tmp_path / "data", {})
    alice = ToolExecutionIdentity("matrix", "code", "@alice:hs", "!r", "$t", "$t", "s1")
    bob = ToolExecutionIdentity("matrix", "code", "@bob:hs", "!r", "$t", "$t", "s2")

    runtime = resolve_agent_runtime("code", config, paths, execution_identity=alice, create=True)
    notes = resolve_agent_runtime("notes", config, paths, None)

    workspace = (tmp_path / "data" / "agents" / "code" / "workspace").resolve()
    assert runtime.workspace is not None and runtime.workspace.root == workspace == runtime.tool_base_dir
    assert workspace.is_dir() and workspace.stat().st_mode & 0o777 == 0o700
    assert runtime.file_memory_root is None
    assert (runtime.execution.is_private, runtime.execution.worker_key, runtime.execution.execution_identity) == (
        False,
        None,
        alice,
    )
    assert resolve_agent_runtime("code", config, paths, bob).workspace == runtime.workspace  # whoever asks
    assert runtime.state_root == runtime.session_state_root == (tmp_path / "data" / "sessions").resolve()
    assert notes.file_memory_root == notes.tool_base_dir and not notes.tool_base_dir.exists()  # not created
    for ghost in ("ghost", "Code", "code "):
        with pytest.raises(ValueError, match=re.escape(repr(ghost))):
            resolve_agent_storage(ghost, config, paths, None)


def test_published_tool_execution_identity_is_the_running_calls(tmp_path):
    from mindroom.hooks import HookRegistry
    from mindroom.tool_system.runtime_context import ToolRuntimeContext, tool_runtime_context
    from mindroom.tool_system.worker_routing import get_tool_execution_identity

    context = ToolRuntimeContext(HookRegistry.empty(), "code", "!r", "$t", requester_id="@alice:hs")

    with tool_runtime_context(context):
        identity = get_tool_execution_identity()

    assert identity is not None and (identity.agent_name, identity.requester_id, identity.room_id) == (
        "code",
        "@alice:hs",
        "!r",
    )
    assert get_tool_execution_identity() is None


def test_published_stream_status_is_mindrooms_and_the_workloop_row_names_it():
    """workloop skips an agent whose latest message has `io.mindroom.stream_status: streaming`."""
    from mindroom.constants import STREAM_STATUS_KEY, STREAM_STATUS_STREAMING
    from mindroom.hooks import AgentMessageSnapshot
    from mindroom.matrix.cache import AgentMessageSnapshot as CacheSnapshot
    from mindroom.matrix.cache import AgentMessageSnapshotUnavailable

    assert (STREAM_STATUS_KEY, STREAM_STATUS_STREAMING) == ("io.mindroom.stream_status", "streaming")
    assert CacheSnapshot is AgentMessageSnapshot and issubclass(AgentMessageSnapshotUnavailable, RuntimeError)
    (row,) = [line for line in DOC.splitlines() if line.startswith("| workloop |")]
    assert "`io.mindroom.stream_status`" in row


def test_published_workloop_toolkit_taking_agnos_agent_is_accepted_beside_the_todo_group(tmp_path):
    """workloop's toolkit methods take agno's injected `agent` (typed `Agent | Team`) before their own arguments,
    and are named as the built-in `todo` group's tools (as MindRoom's own `todo` toolkit's are): an agent may have
    one of the two."""
    from mindroom.cli.plugin_check import check_plugin

    folder = tmp_path / "workloop"
    folder.mkdir()
    manifest = {"name": "workloop", "hooks_module": "hooks.py", "tools_module": "tools.py"}
    (folder / "mindroom.plugin.json").write_text(json.dumps(manifest))
    (folder / "hooks.py").write_text(
        "from mindroom.hooks import hook\n\n@hook('message:received')\nasync def x(ctx):\n    pass\n"
    )
    (folder / "tools.py").write_text(
        textwrap.dedent(
            """
            from agno.agent import Agent
            from agno.team.team import Team
            from agno.tools import Toolkit
            from mindroom.tool_system.metadata import (
                SetupType, ToolCategory, ToolManagedInitArg, ToolStatus, register_tool_with_metadata,
            )

            class WorkloopTodoManager(Toolkit):
                def __init__(self, runtime_paths=None):
                    self._runtime_paths = runtime_paths
                    super().__init__(name="workloop_todo_manager", tools=[self.plan, self.list_todos])

                def plan(self, agent: Agent | Team, tasks: str) -> str:
                    \"\"\"Create a plan.\"\"\"
                    return tasks

                def list_todos(self, agent: Agent | Team) -> str:
                    \"\"\"List the plan.\"\"\"
                    return ""

            @register_tool_with_metadata(
                name="workloop_todo_manager",
                display_name="Workloop Todo Manager",
                description="Plans.",
                category=ToolCategory.PRODUCTIVITY,
                status=ToolStatus.AVAILABLE,
                setup_type=SetupType.NONE,
                managed_init_args=(ToolManagedInitArg.RUNTIME_PATHS,),
            )
            def workloop_todo_manager_factory():
                return WorkloopTodoManager
            """
        )
    )

    findings = [(finding.level, finding.message) for finding in check_plugin(folder)]

    assert [message for level, message in findings if level == "error"] == []
    assert [message for level, message in findings if "is defined by" in message] == [
        f"tool {name!r} is defined by built-in group 'todo' and by plugin toolkit 'workloop_todo_manager': "
        "an agent may have one of them"
        for name in ("plan", "list_todos")
    ]
