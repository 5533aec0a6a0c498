"""The built-in `shell` tool: run one allowlisted executable in the agent's workspace, sandboxed, with a timeout.

The command line is split with `shlex` and executed directly (no shell: no pipes, globs, `$VARS` or
`;`). Only executables named in `tools.shell.allowed_commands` run; a bare name is looked up on the PATH
commands get, an absolute path allows exactly that file. The allowlist confines which program starts,
not what it does: many programs run anything they are told to (see docs/configuration.md), so the
command runs in a sandbox (`mindroom.tool_system.sandbox.launch`): a clean environment, a private empty HOME,
and with bubblewrap no view of the data directory or the daemon's processes. When the timeout passes,
the command and everything it started are killed.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import shlex
import shutil
import signal
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mindroom.config.environment import process_environ
from mindroom.config.main import ShellToolConfig
from mindroom.tool_system.environment import current_tool_environment
from mindroom.tool_system.sandbox.containment import CommandHold
from mindroom.tool_system.sandbox.launch import (
    DEFAULT_PATH,
    Launch,
    Sandbox,
    choose_sandbox,
    prepare_launch,
    start_launch,
)
from mindroom.tool_system.spec import AgentToolEnvironment, ToolError, ToolSpec
from mindroom.tool_system.workspace_layout import data_root_of
from mindroom.tools import shell as shell_environment

__all__ = ["SHELL_TOOL_NAMES", "STOP_GRACE_S", "run_command", "shell_tools"]

SHELL_TOOL_NAMES = ("run_shell_command",)
STOP_GRACE_S = 2.0
_READ_CHUNK = 65536


def _check_allowed(program: str, settings: ShellToolConfig) -> None:
    allowed = settings.allowed_commands
    if not allowed:
        raise ToolError("no commands are allowed (the operator lists them under tools.shell.allowed_commands)")
    if program not in allowed:
        raise ToolError(f"{program!r} is not an allowed command (allowed: {', '.join(allowed)})")


def _executable(program: str, settings: ShellToolConfig, sandbox: Sandbox, search_path: str) -> str:
    if os.sep in program:
        if not sandbox.shows(program, settings):
            raise ToolError(f"{program!r} is allowed but not inside the sandbox (see tools.shell.readonly_paths)")
        return program
    found = shutil.which(program, path=search_path)
    if found is None:
        raise ToolError(f"{program!r} is allowed but not installed")
    return found


async def _read_capped(stream: asyncio.StreamReader, limit: int, sink: bytearray) -> None:
    """Keep the last `limit` bytes of the output (the end tells most: the error, the result) and read all of it,
    so the child never blocks on a full pipe; `sink` starts with a NUL byte once earlier output was dropped."""
    dropped = False
    while chunk := await stream.read(_READ_CHUNK):
        sink.extend(chunk)
        if len(sink) > limit:
            del sink[: len(sink) - limit]
            dropped = True
    if dropped:
        sink[:0] = b"\0"


def _signal_group(process: asyncio.subprocess.Process, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signum)


async def _exited(process: asyncio.subprocess.Process) -> int:
    # Not process.wait(): that also waits for the output pipe to close, which anything left holding it
    # (a detached grandchild, before this change) could put off forever.
    while process.returncode is None:  # noqa: ASYNC110 - no public exit event but wait()
        await asyncio.sleep(0.02)
    return process.returncode


async def _stop(process: asyncio.subprocess.Process, launch: Launch) -> None:
    """Stop the command and all it started: the launcher's stop signal, then SIGKILL for the group if it lingers."""
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(launch.stop_signal)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(STOP_GRACE_S):
                await _exited(process)
    _signal_group(process, signal.SIGKILL)
    await _exited(process)


def _with_hook_environment(launch: Launch) -> Launch:
    """The command's environment with the `tool:environment` hooks' changes, then as `mindroom.tools.shell`'s
    `_shell_subprocess_env` gives it; HOME stays the sandbox's own."""
    changes = current_tool_environment()
    if changes is None or changes.is_empty:
        env = dict(launch.env)
    else:
        env = changes.apply(launch.env, process_environ())
        env.setdefault("PATH", launch.env["PATH"])
    # Looked up at every command: MindRoom plugins replace this function to change what commands get.
    env = shell_environment._shell_subprocess_env(env, base_process_env=process_environ())
    if env == launch.env:
        return launch
    if "--clearenv" not in launch.argv:
        env["HOME"] = launch.env["HOME"]
        return dataclasses.replace(launch, env=env)
    # bwrap clears the environment inside the sandbox and sets its own from its arguments: the hooks'
    # changes go there too, before the `--` that ends bwrap's options (HOME is the sandbox's).
    options: list[str] = []
    for name in sorted(set(launch.env) - set(env)):
        options += ["--unsetenv", name]
    for name, value in sorted(env.items()):
        if name != "HOME" and launch.env.get(name) != value:
            options += ["--setenv", name, value]
    end = launch.argv.index("--")
    return dataclasses.replace(launch, argv=(*launch.argv[:end], *options, *launch.argv[end:]))


async def run_command(
    command: str | Sequence[str],
    workspace: Path,
    settings: ShellToolConfig,
    *,
    hidden: Sequence[Path] = (),
    tail: int = 0,
    timeout_s: float | None = None,
) -> str:
    """Run one command (a line, or the program and its arguments) and return its exit code and combined output;
    `ToolError` if refused or timed out.

    `hidden` are host folders (the data directory) the sandbox must not show even below a visible folder;
    `tail`: the output's last lines shown (0: all that is kept); `timeout_s`: a shorter limit than the configured
    one (never a longer one).
    """
    argv = _argv(command)
    limit_s = min(timeout_s, settings.timeout_s) if timeout_s is not None and timeout_s > 0 else settings.timeout_s
    _check_allowed(argv[0], settings)
    host_path = process_environ().get("PATH") or DEFAULT_PATH
    sandbox = await choose_sandbox(settings, host_path)
    search_path = sandbox.search_path(host_path, settings)
    executable = _executable(argv[0], settings, sandbox, search_path)
    os.makedirs(workspace, mode=0o700, exist_ok=True)
    launch = prepare_launch(sandbox, settings, [executable, *argv[1:]], workspace, hidden, search_path)
    launch = _with_hook_environment(launch)
    try:
        return await _run(launch, argv[0], settings, _Shown(limit_s, settings.max_output_chars, max(0, tail)))
    finally:
        if launch.scratch is not None:
            await asyncio.to_thread(shutil.rmtree, launch.scratch, True)


def _set_private_umask() -> None:
    os.umask(0o077)


def _private_umask() -> dict[str, Any]:
    """Spawn options giving the command umask 077: `umask` on asyncio's loop; uvloop's spawn has no such
    option, so there a function sets it in the child before exec (it makes one system call, nothing else)."""
    if isinstance(asyncio.get_running_loop(), asyncio.BaseEventLoop):
        return {"umask": 0o077}
    return {"preexec_fn": _set_private_umask}


def _argv(command: str | Sequence[str]) -> list[str]:
    if isinstance(command, str):
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise ToolError(f"cannot parse the command: {exc}") from None
    elif all(isinstance(part, str) for part in command):
        argv = list(command)
    else:
        raise ToolError("the command's program and arguments must all be text")
    if not argv or not argv[0]:
        raise ToolError("the command is empty")
    return argv


@dataclasses.dataclass(frozen=True, slots=True)
class _Shown:
    """How long a command may run and how much of its output the model gets."""

    timeout_s: float
    max_chars: int
    tail: int

    def text(self, output: bytearray) -> str:
        """The output's end: its last `tail` lines (when set), at most `max_chars` characters, marked when cut."""
        cut = output[:1] == b"\0"
        text = output[1 if cut else 0 :].decode("utf-8", errors="replace")
        if self.tail:
            lines = text.splitlines(keepends=True)
            if len(lines) > self.tail:
                text, cut = "".join(lines[-self.tail :]), True
        if len(text) > self.max_chars:
            text, cut = text[-self.max_chars :], True
        return f"[earlier output cut; the last {len(text)} characters follow]\n{text}" if cut else text


async def _run(launch: Launch, program: str, settings: ShellToolConfig, shown: _Shown) -> str:
    hold = CommandHold() if launch.under_reaper else None
    try:
        process, network = await start_launch(
            launch,
            stdin=asyncio.subprocess.DEVNULL if hold is None else asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
            **_private_umask(),  # what a command writes into the workspace is private to the daemon's user
        )
    except OSError as exc:
        if hold is not None:
            await hold.release()
        raise ToolError(f"cannot run {program!r}: {exc.strerror}") from None
    try:
        if hold is not None:
            assert process.stdin is not None
            await hold.start(process.pid, process.stdin)
        return await _collect(process, launch, program, shown)
    finally:
        if hold is not None:
            if process.returncode is None:  # stopped while the reaper still waited for its go
                await asyncio.shield(_stop(process, launch))
            # Whatever the command did to its reaper, nothing it started outlives the call.
            await asyncio.shield(hold.release())
        # All it started is dead now, so the output pipe closes at once: let its transport close while the
        # loop runs (bounded, should a process have escaped even so).
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), STOP_GRACE_S)
        if network is not None:
            await asyncio.shield(network.close())


async def _collect(process: asyncio.subprocess.Process, launch: Launch, program: str, shown: _Shown) -> str:
    assert process.stdout is not None
    limit = shown.max_chars * 4
    output = bytearray()
    reader = asyncio.ensure_future(_read_capped(process.stdout, limit, output))
    try:
        async with asyncio.timeout(shown.timeout_s):
            await asyncio.shield(reader)
            code = await process.wait()
    except TimeoutError:
        await _stop(process, launch)
        reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)
        so_far = shown.text(output)
        raise ToolError(f"{program!r} timed out after {shown.timeout_s:g} s and was stopped\n{so_far}") from None
    except BaseException:
        await asyncio.shield(_stop(process, launch))
        reader.cancel()
        raise
    finally:
        _signal_group(process, signal.SIGKILL)  # children left behind in the group
    return f"exit code: {code}\n{shown.text(output)}"


def shell_tools(env: AgentToolEnvironment) -> tuple[ToolSpec, ...]:
    """The `shell` group: `run_shell_command(args, tail, timeout)` (MindRoom's parameters) in the agent's
    workspace."""
    settings = env.settings.shell
    workspace = env.workspace
    # The workspace is <data>/agents/<agent>/workspace: the sandbox hides the rest of the data directory.
    data_root = data_root_of(workspace)
    hidden = (data_root,) if data_root is not None else ()
    allowed = ", ".join(settings.allowed_commands) or "none"

    async def run_shell_command(args: list[str] | str, tail: int = 100, timeout: int | None = None) -> str:  # noqa: ASYNC109 - the model's limit
        """Run one command in your workspace folder and return its exit code and the end of its output.

        The command is not run by a shell: pipes, redirects, globs and variables do not work.

        Args:
            args: The program and its arguments, as a list (["ls", "-la", "notes"]) or one line ("ls -la notes").
            tail: How many of the output's last lines to return (0: as much as fits).
            timeout: Seconds after which the command is stopped (at most the configured limit).
        """
        return await run_command(args, workspace, settings, hidden=hidden, tail=tail, timeout_s=timeout)

    description = (
        "Run one command in your workspace folder and return its exit code and the end of its output. "
        "The command is not run by a shell: pipes, redirects, globs and variables do not work. "
        f"Allowed programs: {allowed}. Time limit: {settings.timeout_s:g} s."
    )
    return (ToolSpec(name="run_shell_command", function=run_shell_command, description=description),)
