"""Tool-call contexts: the `tool:before_call` gate, the `tool:after_call` observer, and `tool:environment`.

A gate may ask a person: `await ctx.request_approval(prompt, timeout_s=...)` goes to the bound
`approval_requester` (the daemon posts a card in the thread and waits for a reaction or reply). The wait
does not count against the hook's timeout. Unbound, it logs a warning and answers False (denied).

`tool:environment` (2026 API) collects, per tool call, changes to the environment of the commands the
`shell` tool runs. Each hook's changes stay its own (`ToolEnvironmentChanges`); `merge_tool_environment`
combines them in hook order: for one variable the later hook wins, pass-through patterns add up, and a
variable any hook sets or unsets explicitly is never taken from pass-through. A failing hook adds nothing.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from types import MappingProxyType
from typing import Any, ClassVar

from mindroom.hooks.hook_context import HookContext, HookContextBase
from mindroom.hooks.invocation import hook_timeout_paused
from mindroom.hooks.types import EVENT_TOOL_AFTER_CALL, EVENT_TOOL_BEFORE_CALL, EVENT_TOOL_ENVIRONMENT

__all__ = [
    "DEFAULT_APPROVAL_TIMEOUT_S",
    "ApprovalRequest",
    "ApprovalRequester",
    "ToolAfterCallContext",
    "ToolBeforeCallContext",
    "ToolEnvironment",
    "ToolEnvironmentChanges",
    "ToolEnvironmentContext",
    "merge_tool_environment",
    "snapshot_value",
]


DEFAULT_APPROVAL_TIMEOUT_S = 600.0


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """A gate's question to a person: may this tool call run? (`prompt` says why it asks.)"""

    prompt: str
    timeout_s: float
    tool_name: str
    arguments: Mapping[str, Any]
    agent_name: str
    room_id: str | None
    thread_id: str | None
    requester_id: str | None
    correlation_id: str
    plugin_name: str
    hook_name: str


ApprovalRequester = Callable[[ApprovalRequest], Awaitable[bool]]
"""What answers `request_approval`: True when a person allowed the call."""


@dataclass(slots=True, kw_only=True)
class ToolBeforeCallContext(HookContext):
    """`tool:before_call`: call `decline(reason)` to replace the tool call with a declined result."""

    DEFAULT_EVENT: ClassVar[str] = EVENT_TOOL_BEFORE_CALL
    MUTABLE_FIELDS: ClassVar[tuple[str, ...]] = ("declined", "decline_reason")

    tool_name: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    agent_name: str = ""
    room_id: str | None = None
    thread_id: str | None = None
    requester_id: str | None = None
    session_id: str | None = None
    declined: bool = False
    decline_reason: str = ""
    message_received_depth: int = 0
    approval_requester: ApprovalRequester | None = field(default=None, repr=False, compare=False)

    def decline(self, reason: str) -> None:
        """Refuse this tool call; the model sees `reason` instead of the tool's result."""
        self.declined = True
        self.decline_reason = str(reason)

    async def request_approval(self, prompt: str, *, timeout_s: float = DEFAULT_APPROVAL_TIMEOUT_S) -> bool:
        """Ask a person in the conversation to allow this call; True once allowed, False when denied or expired.

        The hook's timeout stops while it waits. Without a bound requester it logs a warning and returns False.
        """
        requester = self.approval_requester
        if requester is None:
            self.logger.warning("approval requested but nobody can be asked; denied", tool=self.tool_name)
            return False
        if not timeout_s > 0:
            msg = f"timeout_s must be positive, got {timeout_s!r}"
            raise ValueError(msg)
        request = ApprovalRequest(
            prompt=str(prompt),
            timeout_s=float(timeout_s),
            tool_name=self.tool_name,
            arguments=snapshot_value(self.arguments),
            agent_name=self.agent_name,
            room_id=self.room_id,
            thread_id=self.thread_id,
            requester_id=self.requester_id,
            correlation_id=self.correlation_id,
            plugin_name=self.plugin_name,
            hook_name=self.hook_name,
        )
        with hook_timeout_paused():
            return bool(await requester(request))

    def hook_scope(self) -> tuple[str | None, str | None]:
        """The calling agent and its room."""
        return self.agent_name, self.room_id

    def _original_sender(self) -> str | None:
        return self.requester_id

    def _synthetic_depth(self) -> int:
        return self.message_received_depth + 1


@dataclass(slots=True, kw_only=True)
class ToolAfterCallContext(HookContext):
    """`tool:after_call`: a snapshot of one finished, failed or declined tool call."""

    DEFAULT_EVENT: ClassVar[str] = EVENT_TOOL_AFTER_CALL
    FROZEN: ClassVar[bool] = True

    tool_name: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    agent_name: str = ""
    room_id: str | None = None
    thread_id: str | None = None
    requester_id: str | None = None
    session_id: str | None = None
    result: object | None = None
    error: BaseException | None = None
    blocked: bool = False
    duration_ms: float = 0.0
    message_received_depth: int = 0

    def hook_scope(self) -> tuple[str | None, str | None]:
        """The calling agent and its room."""
        return self.agent_name, self.room_id

    def _original_sender(self) -> str | None:
        return self.requester_id

    def _synthetic_depth(self) -> int:
        return self.message_received_depth + 1

    def hook_copy(self) -> ToolAfterCallContext:
        """A copy with its own `arguments` and `result`, so one observer's edits reach no other."""
        view = self.clone()
        assert isinstance(view, ToolAfterCallContext)
        view.arguments = snapshot_value(self.arguments)
        view.result = snapshot_value(self.result)
        return view


_ATOMS = (str, int, float, bool, bytes, type(None))


def snapshot_value(value: Any) -> Any:
    """A deep copy; JSON-shaped data (what models send and most tools return) is copied without `deepcopy`."""
    if isinstance(value, _ATOMS):
        return value
    if type(value) is dict:
        return {key: snapshot_value(item) for key, item in value.items()}
    if type(value) is list:
        return [snapshot_value(item) for item in value]
    try:
        return copy.deepcopy(value)
    except Exception:  # an uncopyable object (a lock, a socket): hooks share it, as they would share its text
        return value


_BAD_NAME = re.compile(r"[\s=,\x00]")


def _variable_name(name: object) -> str:
    if not isinstance(name, str) or not name or _BAD_NAME.search(name):
        msg = f"invalid environment variable name {name!r}: it must be non-empty, without whitespace, '=', ',' or NUL"
        raise ValueError(msg)
    return name


@dataclass(frozen=True, slots=True)
class ToolEnvironmentChanges:
    """One hook's changes: variables set (a string) or unset (None), in call order, and pass-through patterns."""

    env: tuple[tuple[str, str | None], ...] = ()
    pass_through: tuple[str, ...] = ()


@dataclass(slots=True, kw_only=True)
class ToolEnvironmentContext(HookContextBase):
    """`tool:environment`: change the environment of the commands this one tool call runs.

    It has no state folder, message or room-state helpers, thread or session: only what the call is.
    """

    DEFAULT_EVENT: ClassVar[str] = EVENT_TOOL_ENVIRONMENT

    function_name: str = ""
    registered_toolkit: str | None = None
    arguments: dict[str, Any] = field(default_factory=dict)
    agent_name: str = ""
    room_id: str | None = None
    requester_id: str | None = None
    # This hook's own changes; the engine gives every hook fresh ones and collects them.
    _env: dict[str, str | None] = field(default_factory=dict, init=False, repr=False, compare=False)
    _pass_through: list[str] = field(default_factory=list, init=False, repr=False, compare=False)

    def set_env(self, name: str, value: str) -> None:
        """Set a variable for this call's commands (`value` a string without NUL)."""
        _variable_name(name)
        if not isinstance(value, str):
            msg = f"the value of {name} must be a str, got {type(value).__name__}"
            raise TypeError(msg)
        if "\x00" in value:
            msg = f"the value of {name} holds a NUL character"
            raise ValueError(msg)
        self._env.pop(name, None)  # the last change of a name is the one that counts, in call order
        self._env[name] = value

    def unset_env(self, name: str) -> None:
        """Remove a variable from this call's commands (not `PATH`: set it instead)."""
        _variable_name(name)
        if name == "PATH":
            msg = "PATH cannot be unset; set it to the value the command should see"
            raise ValueError(msg)
        self._env.pop(name, None)
        self._env[name] = None

    def pass_through(self, name_or_glob: str) -> None:
        """Also copy the daemon's own variables matching this name or glob (e.g. `AWS_*`)."""
        self._pass_through.append(_variable_name(name_or_glob))

    def hook_scope(self) -> tuple[str | None, str | None]:
        """The calling agent and its room."""
        return self.agent_name, self.room_id

    def collector_copy(self) -> ToolEnvironmentContext:
        """One hook's copy: its own arguments and no changes yet."""
        copy_ = self.clone()
        assert isinstance(copy_, ToolEnvironmentContext)
        copy_.arguments = snapshot_value(self.arguments)
        copy_._env = {}
        copy_._pass_through = []
        return copy_

    def changes(self) -> ToolEnvironmentChanges:
        """What this context's hook changed."""
        return ToolEnvironmentChanges(tuple(self._env.items()), tuple(self._pass_through))


@dataclass(frozen=True, slots=True)
class ToolEnvironment:
    """The merged changes for one tool call's commands."""

    set_values: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    unset: frozenset[str] = frozenset()
    pass_through: tuple[str, ...] = ()

    @property
    def is_empty(self) -> bool:
        """True when no hook changed anything."""
        return not (self.set_values or self.unset or self.pass_through)

    def apply(self, base: Mapping[str, str], process_env: Mapping[str, str]) -> dict[str, str]:
        """The environment a command gets: `base`, plus matching daemon variables, then the sets and unsets.

        Values the runtime owns (its PATH additions, workspace, HOME) are the shell tool's to apply after this.
        """
        result = dict(base)
        explicit = self.unset | self.set_values.keys()
        for pattern in self.pass_through:
            result.update(
                (name, value)
                for name, value in process_env.items()
                if name not in explicit and fnmatchcase(name, pattern)
            )
        result.update(self.set_values)
        for name in self.unset:
            result.pop(name, None)
        return result


def merge_tool_environment(contributions: Iterable[ToolEnvironmentChanges]) -> ToolEnvironment:
    """Combine the hooks' changes in hook order: later hooks win per variable, pass-through patterns add up."""
    values: dict[str, str] = {}
    unset: set[str] = set()
    patterns: dict[str, None] = {}
    for changes in contributions:
        for name, value in changes.env:
            if value is None:
                values.pop(name, None)
                unset.add(name)
            else:
                values[name] = value
                unset.discard(name)
        patterns.update(dict.fromkeys(changes.pass_through))
    return ToolEnvironment(MappingProxyType(values), frozenset(unset), tuple(patterns))
