"""The config in force, value by value, with where each comes from: `config.yaml`, a change from chat, or a default.

Config is changed three ways (editing the file, the REST API writing the file, `!config set` keeping an
override in the state), and the running config is all of them at once. `effective_config` lays it out for
`!config show`, `GET /api/config/effective` and the dashboard: each leaf of the running config (a value that
is not a mapping; a list is one value, as chat sets it whole) with its source. A leaf comes from chat when a
`config`-scope override the daemon applies sets it; from `config.yaml` when the file sets it (written out,
or through a short form: `memory: mem0` sets `memory.backend`); else it is a default. The room and thread
settings from chat are listed beside it, and so are the kept changes the daemon passes over, with why
(`passed_over`, which `mindroom doctor` asks too). Values are shown with secrets hidden, by the leaf's name
as the logs hide them.
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
    "NOT_SETTABLE",
    "NO_LONGER_FITS",
    "EffectiveConfig",
    "EffectiveValue",
    "Source",
    "effective_config",
    "format_leaf_path",
    "hidden",
    "passed_over",
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


NOT_SETTABLE = "chat may not change this key; edit config.yaml"
NO_LONGER_FITS = "no longer fits config.yaml"
_ABSENT = object()


def _at(node: Any, path: _Path) -> Any:
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return _ABSENT
        node = node[part]
    return node


def passed_over(
    override: Override, config: Config, text: str, source: Path | str, env: _Env | None = None
) -> str | None:
    """Why the daemon passes a kept `override` over (`NOT_SETTABLE`, `NO_LONGER_FITS`), or None when it applies.

    A `config` key must be one chat may set, and config.yaml (`text`) with it must still validate; a room or
    thread setting must name a model or an agent `config` still has.
    """
    if override.scope == "config":
        if chat_refusal(override.key, override.value) is not None:
            return NOT_SETTABLE
        try:
            parse_config_text(text, source, env, [override], strict=True)
        except ConfigError:
            return NO_LONGER_FITS
        return None
    if override.key == "model":
        stale = override.value not in config.models
    else:
        entity = override.key.partition(":")[2]
        stale = override.key.startswith("instructions:") and entity not in config.responders()
    return NO_LONGER_FITS if stale else None


def effective_config(
    config: Config, settings: ChatSettings, text: str, source: Path | str, env: _Env | None = None
) -> EffectiveConfig:
    """The running `config` laid out value by value against `text` (config.yaml as it is now) and `settings`.

    `ConfigError` when the text does not load (the sources cannot be told until it is fixed).
    """
    # What the file sets, short forms expanded (`memory: mem0` sets `memory.backend`): pydantic's unset fields.
    written = parse_config_text(text, source, env).model_dump(mode="json", exclude_unset=True)
    from_chat: dict[_Path, Override] = {}  # applied in order: a later override of the same key wins
    scoped: list[Override] = []
    not_in_effect: list[tuple[Override, str]] = []
    for override in settings.overrides:
        why = passed_over(override, config, text, source, env)
        if why is not None:
            not_in_effect.append((override, why))
        elif override.scope != "config":
            scoped.append(override)
        else:
            from_chat.update(dict.fromkeys((path for path, _ in chat_leaves(override.key, override.value)), override))
    values = []
    for path, value in _leaves(config.model_dump(mode="json")):
        shown = hidden(value, str(path[-1]))
        chat = from_chat.get(path)
        if chat is not None:
            values.append(EffectiveValue(format_leaf_path(path), shown, "chat", chat.set_by, chat.set_at))
        else:
            where: Source = "default" if _at(written, path) is _ABSENT else "config.yaml"
            values.append(EffectiveValue(format_leaf_path(path), shown, where))
    return EffectiveConfig(tuple(values), tuple(scoped), tuple(not_in_effect))


def read_effective_config(
    config: Config, settings: ChatSettings, path: Path, env: _Env | None = None
) -> EffectiveConfig:
    """`effective_config` against the config file at `path` as it is now (blocking: run it in a worker thread)."""
    return effective_config(config, settings, read_config_text(path), path, env)
