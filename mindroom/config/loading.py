"""Read `config.yaml`: YAML with line numbers, `${VAR}` / `${VAR:-default}` substitution, validation.

Every failure becomes one `ConfigError` naming the file, the key path, the problem and, where known,
the line, so an operator never sees a bare traceback.

The file is capped in size, and its YAML in how far anchors and aliases expand and how deeply it nests,
before anything walks it: a "billion laughs" file composes in microseconds (aliases share one node), but
every later walk (line index, `${VAR}` substitution, validation) would visit each use of each alias.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from mindroom.config.environment import process_environ, resolve_storage_root
from mindroom.config.includes import IncludingLoader
from mindroom.config.main import Config
from mindroom.config.notices import ConfigNotice, collecting
from mindroom.config.overrides import Override, apply_config_overrides, parse_key_path
from mindroom.config.unused_keys import SetAside, model_key_paths, set_aside
from mindroom.errors import ConfigError
from mindroom.logging_config import get_logger

__all__ = [
    "MAX_CONFIG_BYTES",
    "MAX_CONFIG_DEPTH",
    "MAX_CONFIG_NODES",
    "MAX_CONFIG_SCALAR_CHARS",
    "KeyPath",
    "format_key_path",
    "load_config",
    "parse_config_text",
    "read_config_text",
    "substitute_env",
]

MAX_CONFIG_BYTES = 1024 * 1024
MAX_CONFIG_NODES = 200_000
"""Nodes after alias expansion: every use of an alias counts all the nodes it stands for."""
MAX_CONFIG_SCALAR_CHARS = 8 * 1024 * 1024
"""Characters of all scalars after alias expansion."""
MAX_CONFIG_DEPTH = 64

logger = get_logger(__name__)

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


_TOO_LARGE = f"the file is larger than {MAX_CONFIG_BYTES // (1024 * 1024)} MiB"


def _compose(text: str, source: Path, data_dir: Path) -> tuple[yaml.Node | None, Any, tuple[Path, ...]]:
    """The YAML node tree (for line numbers), the Python value built from it (after the expansion check) and the
    files and folders included; MindRoom's file tags (`!include`, `!expand`, ...) are resolved against the folder
    of `source`, and never into `data_dir`."""
    loader = IncludingLoader(text, source, data_dir=data_dir)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, None, loader.included
        _check_expansion(node, source)
        return node, loader.construct_document(node), loader.included
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise ConfigError(source, [f"{where}YAML syntax error: {exc.problem or exc}"]) from None
    except yaml.YAMLError as exc:
        raise ConfigError(source, [f"YAML error: {exc}"]) from None
    except RecursionError:
        raise ConfigError(source, [f"YAML nests deeper than {MAX_CONFIG_DEPTH} levels"]) from None
    finally:
        loader.dispose()


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _check_expansion(root: yaml.Node, source: Path) -> None:
    """`ConfigError` when aliases expand beyond the caps, nesting is too deep, or an alias refers to itself.

    Each distinct node is measured once (iteratively, so the check itself cannot exhaust the stack).
    """
    sizes: dict[int, tuple[int, int, int]] = {}  # id -> (expanded nodes, expanded scalar chars, depth)
    visiting: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if key in sizes:
            continue
        children = _children(node)
        if not children_done:
            if key in visiting:
                raise ConfigError(source, ["an alias refers to the node that contains it"])
            visiting.add(key)
            stack.append((node, True))
            for child in children:
                if id(child) in visiting:
                    raise ConfigError(source, ["an alias refers to the node that contains it"])
                stack.append((child, False))
            continue
        visiting.discard(key)
        nodes = 1 + sum(sizes[id(child)][0] for child in children)
        chars = sum(sizes[id(child)][1] for child in children)
        chars += len(node.value) if isinstance(node, yaml.ScalarNode) else 0
        depth = 1 + max((sizes[id(child)][2] for child in children), default=0)
        if nodes > MAX_CONFIG_NODES or chars > MAX_CONFIG_SCALAR_CHARS:
            problem = (
                f"anchors and aliases expand to more than {MAX_CONFIG_NODES} values"
                f" or {MAX_CONFIG_SCALAR_CHARS} characters"
            )
            raise ConfigError(source, [f"line {node.start_mark.line + 1}: {problem}"])
        if depth > MAX_CONFIG_DEPTH:
            raise ConfigError(source, [f"YAML nests deeper than {MAX_CONFIG_DEPTH} levels"])
        sizes[key] = (nodes, chars, depth)


def parse_config_text(
    text: str,
    source: Path | str,
    env: Mapping[str, str] | None = None,
    overrides: Sequence[Override] = (),
    *,
    strict: bool = True,
) -> Config:
    """Parse and validate config text; `source` only names the file in errors.

    `overrides` (settings changed from chat) are set into the document before it is validated, so each is
    checked as if it were written in the file. `strict`: an override that does not fit is an error; without
    it, one that no longer fits the file is passed over (and logged), and the file's own errors still raise.
    """
    source = Path(source)
    environment = process_environ() if env is None else dict(env)
    if len(text) > MAX_CONFIG_BYTES or len(text.encode("utf-8", errors="replace")) > MAX_CONFIG_BYTES:
        raise ConfigError(source, [_TOO_LARGE])
    # The data directory as the daemon finds it (`MINDROOM_STORAGE_PATH`, else `mindroom_data` beside the config).
    node, raw, included = _compose(text, source, resolve_storage_root(source, None, environment))
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(source, [f"<root>: expected a mapping of keys, got {type(raw).__name__}"])
    lines: dict[KeyPath, int] = {}
    _line_index(node, (), lines)
    substituted, problems = substitute_env(raw, environment)
    if problems:
        raise ConfigError(source, problems)
    aside = set_aside(substituted, _declared(), lambda path: _line_for(lines, path))
    config = _fitted(aside, source, lines, overrides, strict=strict)
    config.attach_included(included)
    return config


def _fitted(
    aside: SetAside, source: Path, lines: dict[KeyPath, int], overrides: Sequence[Override], *, strict: bool
) -> Config:
    """The validated config with `overrides`; without `strict`, those that no longer fit passed over."""
    document = aside.document
    if strict or not overrides:
        return _validated(_overridden(document, overrides, source), source, lines, overrides, aside)
    try:
        return _validated(_overridden(document, overrides, source), source, lines, overrides, aside)
    except ConfigError:
        pass
    fitting: list[Override] = []
    for override in overrides:  # one by one: only those that no longer fit are passed over
        try:
            _validated(_overridden(document, [*fitting, override], source), source, lines, [*fitting, override], aside)
        except ConfigError as error:
            logger.warning("config override no longer fits; ignored", key=override.key, problems=error.problems)
            continue
        fitting.append(override)
    return _validated(_overridden(document, fitting, source), source, lines, fitting, aside)


_DECLARED: list[frozenset[str]] = []


def _declared() -> frozenset[str]:
    """The key paths `Config` declares (a MindRoom key not used here but declared keeps its value)."""
    if not _DECLARED:
        _DECLARED.append(model_key_paths(Config))
    return _DECLARED[0]


def _overridden(document: dict[str, Any], overrides: Sequence[Override], source: Path) -> dict[str, Any]:
    if not overrides:
        return document
    try:
        return apply_config_overrides(document, overrides)
    except ValueError as exc:
        raise ConfigError(source, [str(exc)]) from None


def _line_of_key(lines: dict[KeyPath, int], key: str) -> int | None:
    try:
        return _line_for(lines, parse_key_path(key))
    except ValueError:  # a key with characters a key path cannot spell (a room id): no line
        return None


def _set_from_chat(loc: KeyPath, overrides: Sequence[Override]) -> bool:
    paths = [parse_key_path(override.key) for override in overrides if override.scope == "config"]
    return any(loc[: len(path)] == path for path in paths)


def _validated(
    document: dict[str, Any],
    source: Path,
    lines: dict[KeyPath, int],
    overrides: Sequence[Override] = (),
    aside: SetAside | None = None,
) -> Config:
    set_aside_problems = aside.problems if aside is not None else []
    try:
        with collecting() as found:
            config = Config.model_validate(document)
    except ValidationError as exc:
        messages = list(set_aside_problems)
        for error in exc.errors():
            if "str" in error["loc"] and isinstance(error.get("input"), dict):
                continue  # the object form was meant; the plain-string alternative's complaint is noise
            loc = _clean_loc(tuple(error["loc"]))
            # A value set from chat has no line in the file (its key's, or a parent's, would mislead).
            line = None if _set_from_chat(loc, overrides) else _line_for(lines, loc)
            at = f" (line {line})" if line else ""
            message = str(error["msg"]).removeprefix("Value error, ")
            messages.append(f"{format_key_path(loc)}{at}: {message}")
        raise ConfigError(source, list(dict.fromkeys(messages))) from None
    if set_aside_problems:
        raise ConfigError(source, list(set_aside_problems))
    keyed = [ConfigNotice(item.key, item.message, _line_of_key(lines, item.key)) for item in found]
    config.attach_notices((*(aside.notices if aside is not None else ()), *keyed))
    return config


def load_config(
    path: Path, env: Mapping[str, str] | None = None, overrides: Sequence[Override] = (), *, strict: bool = True
) -> Config:
    """Load and validate `path` (with `overrides`, as `parse_config_text` applies them); raises `ConfigError`
    naming the file, key path and problem."""
    return parse_config_text(read_config_text(path), path, env, overrides, strict=strict)


def read_config_text(path: Path) -> str:
    """The text of the config file at `path` (within `MAX_CONFIG_BYTES`, UTF-8); `ConfigError` naming the file."""
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_CONFIG_BYTES + 1)
    except FileNotFoundError:
        raise ConfigError(path, ["file not found"]) from None
    except OSError as exc:
        raise ConfigError(path, [f"cannot read: {exc.strerror}"]) from None
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(path, [_TOO_LARGE])
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(path, [f"not UTF-8 text (invalid byte at offset {exc.start})"]) from None
    return text
