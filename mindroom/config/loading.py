"""Read `config.yaml`: YAML with line numbers, `${VAR}` / `${VAR:-default}` substitution, validation.

Every failure becomes one `ConfigError` naming the file, the key path, the problem and, where known,
the line, so an operator never sees a bare traceback.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from mindroom.config.environment import process_environ
from mindroom.config.main import Config
from mindroom.errors import ConfigError

__all__ = ["KeyPath", "format_key_path", "load_config", "parse_config_text", "substitute_env"]

_ENV_PATTERN = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")

KeyPath = tuple[str | int, ...]
_UNION_TAGS = frozenset({"str", "PluginEntryConfig"})


def format_key_path(path: KeyPath) -> str:
    """`("agents", "a", "rooms", 0)` -> `agents.a.rooms[0]`."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "<root>"


def substitute_env(value: Any, env: Mapping[str, str], path: KeyPath = ()) -> tuple[Any, list[str]]:
    """Replace `${VAR}` and `${VAR:-default}` in every string; returns the new value and the problems."""
    problems: list[str] = []

    def replace_in(text: str, where: KeyPath) -> str:
        def one(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            if name in env:
                return env[name]
            if default is not None:
                return default
            problems.append(f"{format_key_path(where)}: environment variable {name} is not set")
            return ""

        return _ENV_PATTERN.sub(one, text)

    def walk(node: Any, where: KeyPath) -> Any:
        if isinstance(node, str):
            return replace_in(node, where)
        if isinstance(node, dict):
            return {key: walk(item, (*where, str(key))) for key, item in node.items()}
        if isinstance(node, list):
            return [walk(item, (*where, index)) for index, item in enumerate(node)]
        return node

    return walk(value, path), problems


def _line_index(node: yaml.Node | None, path: KeyPath, out: dict[KeyPath, int]) -> None:
    if node is None:
        return
    out[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = str(key_node.value)
            out[(*path, key)] = key_node.start_mark.line + 1
            _line_index(value_node, (*path, key), out)
            out[(*path, key)] = key_node.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _line_index(item, (*path, index), out)


def _line_for(lines: dict[KeyPath, int], loc: KeyPath) -> int | None:
    probe = loc
    while probe:
        if probe in lines:
            return lines[probe]
        probe = probe[:-1]
    return None


def _clean_loc(loc: tuple[Any, ...]) -> KeyPath:
    # pydantic adds union-member tags such as `PluginEntryConfig` or `str` to locations; drop them.
    return tuple(
        part
        for part in loc
        if isinstance(part, int) or (part not in _UNION_TAGS and not part.startswith(("function-", "json-or-python")))
    )


def parse_config_text(text: str, source: Path | str, env: Mapping[str, str] | None = None) -> Config:
    """Parse and validate config text; `source` only names the file in errors."""
    source = Path(source)
    environment = process_environ() if env is None else dict(env)
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        raw = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise ConfigError(source, [f"{where}YAML syntax error: {exc.problem or exc}"]) from None
    except yaml.YAMLError as exc:
        raise ConfigError(source, [f"YAML error: {exc}"]) from None
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(source, [f"<root>: expected a mapping of keys, got {type(raw).__name__}"])
    lines: dict[KeyPath, int] = {}
    _line_index(node, (), lines)
    substituted, problems = substitute_env(raw, environment)
    if problems:
        raise ConfigError(source, problems)
    try:
        return Config.model_validate(substituted)
    except ValidationError as exc:
        messages = []
        for error in exc.errors():
            if "str" in error["loc"] and isinstance(error.get("input"), dict):
                continue  # the object form was meant; the plain-string alternative's complaint is noise
            loc = _clean_loc(tuple(error["loc"]))
            line = _line_for(lines, loc)
            at = f" (line {line})" if line else ""
            message = str(error["msg"]).removeprefix("Value error, ")
            messages.append(f"{format_key_path(loc)}{at}: {message}")
        raise ConfigError(source, list(dict.fromkeys(messages))) from None


def load_config(path: Path, env: Mapping[str, str] | None = None) -> Config:
    """Load and validate `path`; raises `ConfigError` naming the file, key path and problem."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(path, ["file not found"]) from None
    except OSError as exc:
        raise ConfigError(path, [f"cannot read: {exc.strerror}"]) from None
    return parse_config_text(text, path, env)
