"""Work-plan templates of the `todo` tool: YAML files in the agent's workspace, `todo/templates/<name>.yaml`.

```yaml
name: release            # defaults to the file's name
version: "1"
description: Ship a release
params: {VERSION: "", CHANNEL: stable}   # parameters and their defaults ("" : required)
todos:
  - title: "Tag {{ VERSION }}"
    priority: high                      # low, medium (default), high, critical
  - title: "Announce {{ VERSION }} on {{ CHANNEL }}"
    depends_on: [1]                      # 1-based positions in this list
    assigned_agent: writer
```

`{{ NAME }}` is replaced by the parameter's value, nothing else is evaluated. Files are read through the
confined walk (no link is followed), at most `MAX_TEMPLATE_BYTES` each and `MAX_TEMPLATE_TODOS` items.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from mindroom.tool_system.builtin.todo_store import PRIORITIES
from mindroom.tool_system.path_confinement import PathConfinementError, read_regular_file_within_root
from mindroom.tool_system.spec import ToolError

__all__ = ["MAX_TEMPLATE_BYTES", "MAX_TEMPLATE_TODOS", "TEMPLATES_DIR", "Template", "load_template", "templates"]

TEMPLATES_DIR = Path("todo/templates")
MAX_TEMPLATE_BYTES = 64 * 1024
MAX_TEMPLATE_TODOS = 100
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


@dataclass(frozen=True, slots=True)
class Template:
    """A work-plan template as its file describes it."""

    name: str
    version: str
    description: str
    params: dict[str, str]
    todos: list[dict[str, Any]]


def _parse(name: str, raw: bytes) -> Template:
    try:
        data = yaml.safe_load(raw.decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ToolError(f"template {name!r} is not valid YAML: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("todos"), list) or not data["todos"]:
        raise ToolError(f"template {name!r} needs a non-empty `todos` list")
    if len(data["todos"]) > MAX_TEMPLATE_TODOS:
        raise ToolError(f"template {name!r} has more than {MAX_TEMPLATE_TODOS} todos")
    params = data.get("params") or {}
    if not isinstance(params, dict):
        raise ToolError(f"template {name!r}: `params` must map each parameter to its default")
    for index, todo in enumerate(data["todos"], 1):
        if not isinstance(todo, dict) or not isinstance(todo.get("title"), str) or not todo["title"].strip():
            raise ToolError(f"template {name!r}: todo {index} needs a title")
        if str(todo.get("priority", "medium")) not in PRIORITIES:
            raise ToolError(f"template {name!r}: todo {index} has an unknown priority")
        deps = todo.get("depends_on", [])
        if not isinstance(deps, list) or any(not isinstance(d, int) or not 0 < d < index for d in deps):
            raise ToolError(f"template {name!r}: todo {index} may depend only on earlier todos (by position)")
    return Template(
        name=str(data.get("name") or name),
        version=str(data.get("version", "1")),
        description=str(data.get("description", "")),
        params={str(key): "" if value is None else str(value) for key, value in params.items()},
        todos=[dict(todo) for todo in data["todos"]],
    )


def _read(workspace: Path, name: str) -> Template | None:
    for suffix in (".yaml", ".yml"):
        relative = TEMPLATES_DIR / f"{name}{suffix}"
        try:
            raw = read_regular_file_within_root(workspace, relative, max_bytes=MAX_TEMPLATE_BYTES)
        except FileNotFoundError:
            continue
        except (PathConfinementError, OSError) as exc:
            raise ToolError(f"template {name!r} cannot be read: {exc}") from None
        return _parse(name, raw)
    return None


def templates(workspace: Path) -> list[Template]:
    """The templates in the workspace that can be read, by name."""
    folder = workspace / TEMPLATES_DIR
    if folder.is_symlink() or not folder.is_dir():
        return []
    found: list[Template] = []
    for path in sorted(folder.iterdir()):
        if path.suffix in (".yaml", ".yml") and _NAME.match(path.stem):
            try:
                template = _read(workspace, path.stem)
            except ToolError:
                continue  # a broken file is named when it is applied, not in the listing
            if template is not None:
                found.append(template)
    return found


def load_template(workspace: Path, name: str, given: dict[str, Any]) -> tuple[Template, dict[str, str]]:
    """The template `name` with its parameters resolved from `given` and its defaults; `ToolError` if any is wrong."""
    if not _NAME.match(name):
        raise ToolError(f"{name!r} is not a template name")
    template = _read(workspace, name)
    if template is None:
        raise ToolError(f"no template {name!r} in your workspace's {TEMPLATES_DIR}/")
    unknown = sorted(set(given) - set(template.params))
    if unknown:
        raise ToolError(f"template {name!r} has no parameters {unknown} (it takes {sorted(template.params)})")
    values = {key: str(given.get(key, default)) for key, default in template.params.items()}
    missing = sorted(key for key, value in values.items() if value == "")
    if missing:
        raise ToolError(f"template {name!r} needs the parameters {missing}")

    def fill(text: str) -> str:
        return _PLACEHOLDER.sub(lambda match: values.get(match.group(1), match.group(0)), text)

    todos = [{**todo, "title": fill(todo["title"]).strip()} for todo in template.todos]
    return Template(template.name, template.version, template.description, template.params, todos), values
