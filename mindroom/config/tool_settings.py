"""Settings of the built-in tool groups under `tools:` (shell, file, MCP sandbox, files sent with answers)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from mindroom.config.mcp import MCPSandboxConfig, ReadonlyPaths, SandboxNetworkSetting
from mindroom.config.strict import StrictModel

__all__ = ["FileToolConfig", "ShellToolConfig", "ToolsConfig"]


class ShellToolConfig(StrictModel):
    """The built-in `shell` tool: which executables it may run (none unless listed), for how long, and how confined.

    `sandbox`: `auto` and `bwrap` run commands in a bubblewrap sandbox (refused when it cannot run), `none`
    without one. `readonly_paths` are host folders shown read-only inside the sandbox besides the system
    ones; `network`: `true` gives sandboxed commands a network of their own (through slirp4netns, without
    the host's loopback services), `host` the host's network itself, `false` none.
    """

    allowed_commands: list[str] = Field(default_factory=list)
    timeout_s: float = Field(default=30.0, gt=0, le=3600)
    max_output_chars: int = Field(default=20000, ge=100)
    sandbox: Literal["auto", "bwrap", "none"] = "auto"
    readonly_paths: ReadonlyPaths = Field(default_factory=list)
    network: SandboxNetworkSetting = False


class FileToolConfig(StrictModel):
    """The built-in `file` tool: size limits for reads and writes, and the size quota of an agent's workspace."""

    max_read_bytes: int = Field(default=256 * 1024, ge=1)
    max_write_bytes: int = Field(default=1024 * 1024, ge=1)
    workspace_quota_bytes: int = Field(default=100 * 1024 * 1024, ge=1)


class ToolsConfig(StrictModel):
    """Settings of the built-in tool groups (plugin tools read their plugin's `settings`)."""

    shell: ShellToolConfig = Field(default_factory=ShellToolConfig)
    file: FileToolConfig = Field(default_factory=FileToolConfig)
    mcp: MCPSandboxConfig = Field(default_factory=MCPSandboxConfig)
    max_file_bytes: int = Field(default=50 * 1024 * 1024, ge=1)
    """The largest file or image a tool may send with an answer (larger ones are left out, and the model told)."""
