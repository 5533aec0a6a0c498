"""MindRoom's config key paths, read from its source with `ast` (nothing of it is imported or run).

`reference_key_paths(package_dir)` walks the pydantic models from `Config` down: a field whose type is a model
(directly, in a union, in an `Annotated`, through a type alias) gets its fields as children; `dict[str, Model]`
adds a `*` level, `list[Model]` a `[]` level. A field typed otherwise (a scalar, a free-form mapping) is a leaf.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

__all__ = ["reference_key_paths"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TYPE_STATEMENT = re.compile(r"^(\s*)type (\w+)(?:\[[^\]]*\])? = ", re.MULTILINE)


class _Source:
    def __init__(self, package_dir: Path) -> None:
        self.fields: dict[str, dict[str, str]] = {}
        self.bases: dict[str, list[str]] = {}
        self.aliases: dict[str, str] = {}
        for path in sorted(package_dir.rglob("*.py")):
            if "_bundled" in path.parts:
                continue
            for node in _statements(path.read_text(encoding="utf-8")):
                self._read(node)

    def _read(self, node: ast.stmt) -> None:
        if isinstance(node, ast.ClassDef) and node.name not in self.fields:
            self.bases[node.name] = [ast.unparse(base) for base in node.bases]
            self.fields[node.name] = {
                _alias(statement) or statement.target.id: ast.unparse(statement.annotation)
                for statement in node.body
                if isinstance(statement, ast.AnnAssign)
                and isinstance(statement.target, ast.Name)
                and not statement.target.id.startswith("_")
                and not statement.target.id.isupper()
                and not ast.unparse(statement.annotation).startswith("ClassVar")
            }
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            self.aliases.setdefault(node.targets[0].id, ast.unparse(node.value))

    def model_fields(self, name: str, seen: frozenset[str] = frozenset()) -> dict[str, str]:
        out: dict[str, str] = {}
        for base in self.bases.get(name, []):
            if base in self.fields and base not in seen:
                out.update(self.model_fields(base, seen | {name}))
        out.update(self.fields.get(name, {}))
        return out

    def expand(self, annotation: str, seen: frozenset[str] = frozenset()) -> str:
        """The annotation with type aliases replaced by what they stand for."""

        def one(match: re.Match[str]) -> str:
            word = match.group(0)
            if word in self.aliases and word not in seen and word not in self.fields:
                return self.expand(self.aliases[word], seen | {word})
            return word

        return _NAME.sub(one, annotation)


def _statements(text: str) -> list[ast.stmt]:
    """The module's top-level statements that this Python parses, each on its own (MindRoom targets 3.12: a
    function using newer syntax is skipped, the classes around it are still read)."""
    # `type X = ...` (3.12) read as the assignment it amounts to.
    text = _TYPE_STATEMENT.sub(r"\1\2 = ", text)
    chunks: list[list[str]] = [[]]
    decorated = False
    for line in text.splitlines():
        starts = bool(line) and not line[0].isspace() and line[0] not in ")]}#"
        if starts and not decorated and chunks[-1]:
            chunks.append([])
        if starts:
            decorated = line.startswith("@")
        chunks[-1].append(line)
    statements: list[ast.stmt] = []
    for chunk in chunks:
        try:
            statements.extend(ast.parse("\n".join(chunk)).body)
        except SyntaxError:
            continue
    return statements


def _alias(statement: ast.AnnAssign) -> str | None:
    if isinstance(statement.value, ast.Call):
        for keyword in statement.value.keywords:
            if keyword.arg in {"alias", "validation_alias"} and isinstance(keyword.value, ast.Constant):
                return str(keyword.value.value)
    return None


def reference_key_paths(package_dir: Path, root: str = "Config") -> set[str]:
    """Every key path of MindRoom's `Config`, as `agents.*.tools[].name` (a `*` per mapping key, `[]` per item)."""
    source = _Source(package_dir)
    paths: set[str] = set()

    def walk(model: str, prefix: str, seen: frozenset[str]) -> None:
        for key, annotation in source.model_fields(model).items():
            path = f"{prefix}.{key}" if prefix else key
            paths.add(path)
            expanded = source.expand(annotation)
            models = [
                name
                for name in dict.fromkeys(_NAME.findall(expanded))
                if name in source.fields and name not in seen and source.model_fields(name) and name != "BaseModel"
            ]
            if not models:
                continue
            head = expanded.split("[", 1)[0].strip()
            level = path + (".*" if "dict[" in expanded or head in {"dict", "Mapping"} else "")
            if "list[" in expanded and "dict[" not in expanded:
                level += "[]"
            for name in models:
                walk(name, level, seen | {name})

    walk(root, "", frozenset({root}))
    return paths
