"""The config in force, value by value, with where each comes from: `config.yaml`, a change from chat, or a default.

Config is changed three ways (editing the file, the REST API writing the file, `!config set` keeping an
override in the state), and the running config is all of them at once. `effective_config` lays it out for
`!config show`, `GET /api/config/effective` and the dashboard: each leaf of the running config (a value that
is not a mapping; a list is one value, as chat sets it whole) with its source. A leaf comes from chat when a
`config`-scope override sets it and the running config holds the override's value; from `config.yaml` when
the file sets it (written out, or through a short form: `memory: mem0` sets `memory.backend`); else it is a
default.
The room and thread settings from chat are listed beside it, and so are the config overrides not in effect,
with why. Values are shown with secrets hidden, by the leaf's name as the logs hide them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from mindroom.config.chat_settable import chat_leaves, chat_refusal
from mindroom.config.loading import parse_config_text, read_config_text
from mindroom.config.main import Config
from mindroom.config.overrides import ChatSettings, Override
from mindroom.errors import ConfigError
from mindroom.logging_config import redact_value

__all__ = [
    "EffectiveConfig",
    "EffectiveValue",
    "Source",
    "effective_config",
    "format_leaf_path",
    "hidden",
    "read_effective_config",
]

Source = Literal["config.yaml", "chat", "default"]
_Path = tuple[str | int, ...]
_Env = Mapping[str, str]


def format_leaf_path(path: _Path) -> str:
    """`("agents", "helper", "model")` -> `agents.helper.model` (the dot path `!config` takes)."""
    return ".".join(map(str, path))


def hidden(value: Any, name: str) -> Any:
    """`value` as shown: secrets hidden, and text blanked whole under a name like `api_key` or `password`."""
    if value is None or isinstance(value, bool | int | float):
        return value  # a count under a name like `max_tokens` is no secret
    return redact_value({name: value})[name]


@dataclass(frozen=True, slots=True)
class EffectiveValue:
    """One value of the running config: its dot path, the value (secrets hidden), and where it comes from."""

    path: str
    value: Any
    source: Source
    set_by: str = ""
    set_at: float | None = None

    def describe(self) -> str:
        """One line for chat: `path = value (source)`."""
        where = f"chat, by {self.set_by}" if self.source == "chat" else self.source
        return f"{self.path} = {json.dumps(self.value, ensure_ascii=False, default=str)} ({where})"


@dataclass(frozen=True, slots=True)
class EffectiveConfig:
    """The running config value by value, the room and thread settings from chat, and overrides not in effect."""

    values: tuple[EffectiveValue, ...]
    scoped: tuple[Override, ...]
    not_in_effect: tuple[tuple[Override, str], ...]
    """A kept `config` override that does not apply, with why."""

    def under(self, prefix: str) -> tuple[EffectiveValue, ...]:
        """The values at `prefix` or below it, by whole key names (`agents.help` is not `agents.helper`)."""
        prefix = prefix.strip().strip(".")
        if not prefix:
            return self.values
        return tuple(item for item in self.values if item.path == prefix or item.path.startswith(prefix + "."))


def _leaves(node: Any, path: _Path = ()) -> Iterator[tuple[_Path, Any]]:
    if isinstance(node, dict) and node:
        for key, item in node.items():
            yield from _leaves(item, (*path, key))
    elif path:
        yield path, node


_ABSENT = object()


def _at(node: Any, path: _Path) -> Any:
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return _ABSENT
        node = node[part]
    return node


def _why_not_in_effect(
    override: Override, running: dict[str, Any], text: str, source: Path, env: _Env | None
) -> str | None:
    """Why a kept `config` override does not apply (None when it does).

    Its leaves are compared as config.yaml with this override alone validates them (so a value the config
    normalises, such as one instruction given as text, still counts as in effect).
    """
    if chat_refusal(override.key, override.value) is not None:
        return f"passed over: chat may not change this key (`!config reset {override.key}` removes it)"
    try:
        alone = parse_config_text(text, source, env, [override], strict=True).model_dump(mode="json")
    except ConfigError:
        return "not in effect: it no longer fits config.yaml"
    if any(_at(alone, path) != _at(running, path) for path, _value in chat_leaves(override.key, override.value)):
        return "not in effect: a later change sets the same key"
    return None


def effective_config(
    config: Config, settings: ChatSettings, text: str, source: Path | str, env: _Env | None = None
) -> EffectiveConfig:
    """The running `config` laid out value by value against `text` (config.yaml as it is now) and `settings`.

    `ConfigError` when the text does not load (the sources cannot be told until it is fixed).
    """
    source = Path(source)
    # What the file sets, short forms expanded (`memory: mem0` sets `memory.backend`): pydantic's unset fields.
    written = parse_config_text(text, source, env).model_dump(mode="json", exclude_unset=True)
    running = config.model_dump(mode="json")
    from_chat: dict[_Path, Override] = {}
    not_in_effect: list[tuple[Override, str]] = []
    for override in settings.overrides:
        if override.scope != "config":
            continue
        why = _why_not_in_effect(override, running, text, source, env)
        if why is not None:
            not_in_effect.append((override, why))
            continue
        for path, _value in chat_leaves(override.key, override.value):
            from_chat[path] = override
    values = []
    for path, value in _leaves(running):
        shown = hidden(value, str(path[-1]))
        chat = from_chat.get(path)
        if chat is not None:
            values.append(EffectiveValue(format_leaf_path(path), shown, "chat", chat.set_by, chat.set_at))
        else:
            where: Source = "default" if _at(written, path) is _ABSENT else "config.yaml"
            values.append(EffectiveValue(format_leaf_path(path), shown, where))
    scoped = tuple(override for override in settings.overrides if override.scope != "config")
    return EffectiveConfig(tuple(values), scoped, tuple(not_in_effect))


def read_effective_config(
    config: Config, settings: ChatSettings, path: Path, env: _Env | None = None
) -> EffectiveConfig:
    """`effective_config` against the config file at `path` as it is now (blocking: run it in a worker thread)."""
    return effective_config(config, settings, read_config_text(path), path, env)
