"""The built-in `shell` tool: run one allowlisted executable in the agent's workspace, with a timeout.

The command line is split with `shlex` and executed directly (no shell: no pipes, globs, `$VARS` or
`;`). Only executables named in `tools.shell.allowed_commands` run; a bare name there is looked up on
`PATH`, an absolute path allows exactly that file. The process starts in the agent's workspace with a
minimal environment (the daemon's secrets are not passed on), and its whole process group is killed
when the timeout passes. Arguments are not confined: allow only executables that are safe with any.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import shutil
import signal
from pathlib import Path

from mindroom.config.environment import process_environ
from mindroom.config.main import ShellToolConfig
from mindroom.tool_system.spec import AgentToolEnvironment, ToolError, ToolSpec

__all__ = ["SHELL_TOOL_NAMES", "run_command", "shell_tools"]

SHELL_TOOL_NAMES = ("run_shell_command",)
_DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
_READ_CHUNK = 65536


def _executable(program: str, settings: ShellToolConfig, search_path: str) -> str:
    allowed = settings.allowed_commands
    if not allowed:
        raise ToolError("no commands are allowed (the operator lists them under tools.shell.allowed_commands)")
    if program not in allowed:
        raise ToolError(f"{program!r} is not an allowed command (allowed: {', '.join(allowed)})")
    if os.sep in program:
        return program
    found = shutil.which(program, path=search_path)
    if found is None:
        raise ToolError(f"{program!r} is allowed but not installed")
    return found


async def _read_capped(stream: asyncio.StreamReader, limit: int, sink: bytearray) -> None:
    """Keep at most `limit` bytes of the output and drain the rest, so the child never blocks on a full pipe."""
    while chunk := await stream.read(_READ_CHUNK):
        room = limit - len(sink)
        if room > 0:
            sink.extend(chunk[:room])


def _kill_group(process: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


async def run_command(command: str, workspace: Path, settings: ShellToolConfig) -> str:
    """Run one command line and return its exit code and combined output; `ToolError` if refused or timed out."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise ToolError(f"cannot parse the command: {exc}") from None
    if not argv:
        raise ToolError("the command is empty")
    search_path = process_environ().get("PATH") or _DEFAULT_PATH
    executable = _executable(argv[0], settings, search_path)
    os.makedirs(workspace, mode=0o700, exist_ok=True)
    env = {"PATH": search_path, "HOME": str(workspace), "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
    try:
        process = await asyncio.create_subprocess_exec(
            executable,
            *argv[1:],
            cwd=workspace,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as exc:
        raise ToolError(f"cannot run {argv[0]!r}: {exc.strerror}") from None
    assert process.stdout is not None
    limit = settings.max_output_chars * 4
    output = bytearray()
    reader = asyncio.ensure_future(_read_capped(process.stdout, limit, output))
    try:
        async with asyncio.timeout(settings.timeout_s):
            await asyncio.shield(reader)
            code = await process.wait()
    except TimeoutError:
        _kill_group(process)
        await process.wait()
        reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)
        shown = _shown(output, settings.max_output_chars)
        raise ToolError(f"{argv[0]!r} timed out after {settings.timeout_s:g} s and was stopped\n{shown}") from None
    except BaseException:
        _kill_group(process)
        await asyncio.shield(process.wait())
        reader.cancel()
        raise
    finally:
        _kill_group(process)  # children left behind in the group
    return f"exit code: {code}\n{_shown(output, settings.max_output_chars)}"


def _shown(output: bytearray, max_chars: int) -> str:
    text = output.decode("utf-8", errors="replace")
    if len(text) > max_chars:
        return text[:max_chars] + f"\n[output truncated to {max_chars} characters]"
    return text


def shell_tools(env: AgentToolEnvironment) -> tuple[ToolSpec, ...]:
    """The `shell` group: `run_shell_command(command)` in the agent's workspace."""
    settings = env.settings.shell
    workspace = env.workspace
    allowed = ", ".join(settings.allowed_commands) or "none"

    async def run_shell_command(command: str) -> str:
        """Run one command in your workspace folder and return its exit code and output.

        The command is not run by a shell: pipes, redirects, globs and variables do not work.

        Args:
            command: The program and its arguments, for example "ls -la notes".
        """
        return await run_command(command, workspace, settings)

    description = (
        "Run one command in your workspace folder and return its exit code and output. "
        "The command is not run by a shell: pipes, redirects, globs and variables do not work. "
        f"Allowed programs: {allowed}. Time limit: {settings.timeout_s:g} s."
    )
    return (ToolSpec(name="run_shell_command", function=run_shell_command, description=description),)
