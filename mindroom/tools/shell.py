"""MindRoom's shell-tool module, for plugins that change the environment of the commands the shell tool runs.

The `shell` tool (`mindroom.tool_system.shell`) builds each command's environment (the sandbox's clean `PATH`,
`LANG` and `HOME`, with the `tool:environment` hooks' changes), then passes it through
`_shell_subprocess_env` of this module, looked up at every command: a plugin that replaces the function here
(as MindRoom's agent-vault-bridge does, to drop `GITHUB_TOKEN` and `GH_TOKEN`) changes what every later command
gets. `HOME` stays the sandbox's own whatever the replacement returns.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__: list[str] = []


def _shell_subprocess_env(
    runtime_env: Mapping[str, str],
    *,
    base_process_env: Mapping[str, str] | None = None,
    **options: object,
) -> dict[str, str]:
    """The environment a shell command gets: `runtime_env` as given (the daemon's own variables never pass).

    MindRoom adds variables of its process listed for pass-through; here a command gets nothing of the daemon's
    environment, so `base_process_env` and MindRoom's other options (`shell_path_prepend`, `workspace_dir`, ...)
    change nothing.
    """
    del base_process_env, options
    return dict(runtime_env)
