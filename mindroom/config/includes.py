"""MindRoom's YAML file tags in `config.yaml`: a config split across files reads as one document.

`!include FILE` stands for the YAML of that file; `!expand FILE`, as a list item, for the items of the list in
that file; `!include_text FILE` for the file's text (one final newline dropped). `!include_dir_list DIR`,
`!include_dir_named DIR`, `!include_dir_merge_list DIR` and `!include_dir_merge_named DIR` take the `.yaml`
and `.yml` files under a folder (recursively, sorted by path, names starting with `.` or `_` skipped): a list
of their documents, a mapping from file stem to document, their lists joined, their mappings merged (a name
twice is an error). Paths are relative to the file holding the tag and must stay in the config's folder;
absolute paths and hidden parts (`.env`) are refused, and so is anything that resolves (links followed) into the
daemon's data directory (crypto stores, tokens, the API key), which sits in that folder by default: whoever may
write the config must not be able to read a secret into an agent's instructions.

Tags are resolved while the YAML is composed (a tag that cannot be is a `ConfigError` naming it and its
line), so the whole document, included parts and all, passes the same size, alias and nesting caps; an
included node carries the line of its tag, so a problem within it is reported at the `!include` line of
`config.yaml`. A document without these tags costs nothing more.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NoReturn

import yaml

from mindroom.errors import ConfigError

__all__ = ["INCLUDE_TAGS", "MAX_INCLUDED_BYTES", "MAX_INCLUDED_FILES", "IncludingLoader"]

INCLUDE_TAGS = frozenset(
    {
        "!include",
        "!expand",
        "!include_text",
        "!include_dir_list",
        "!include_dir_named",
        "!include_dir_merge_list",
        "!include_dir_merge_named",
    }
)
MAX_INCLUDED_FILES = 512
MAX_INCLUDED_BYTES = 4 * 1024 * 1024
"""All included files together; `config.yaml` itself has its own cap."""

_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
_STR = "tag:yaml.org,2002:str"


class _Budget:
    def __init__(self) -> None:
        self.files = 0
        self.bytes = 0
        self.read: list[Path] = []
        self.folders: list[Path] = []


class IncludingLoader(yaml.SafeLoader):
    """`yaml.SafeLoader` that resolves MindRoom's file tags against the folder of `source`."""

    def __init__(
        self,
        text: str,
        source: Path,
        *,
        root: Path | None = None,
        chain: tuple[Path, ...] = (),
        budget: _Budget | None = None,
        data_dir: Path | None = None,
        key_path: tuple[str | int, ...] = (),
    ) -> None:
        super().__init__(text)
        self._source = source.resolve()
        self._root = root or self._source.parent
        self._chain = chain or (self._source,)
        self._budget = budget or _Budget()
        self._data_dir = data_dir.resolve() if data_dir is not None else None
        self._key_path: list[str | int] = list(key_path)

    @property
    def included(self) -> tuple[Path, ...]:
        """The files read and the folders walked so far (resolved), for a watcher to follow."""
        return tuple(dict.fromkeys((*self._budget.read, *self._budget.folders)))

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        """The node, with a file tag (other than `!expand`, which only a list resolves) replaced by its content."""
        # `index` is the key node of a mapping value or the position of a list item: the key path, for errors.
        step = index if isinstance(index, int) else getattr(index, "value", None)
        if isinstance(step, (str, int)):
            self._key_path.append(step)
        try:
            node: yaml.Node | None = super().compose_node(parent, index)  # type: ignore[misc]
            if node is None:
                return None
            if node.tag in INCLUDE_TAGS and node.tag != "!expand":
                return self._resolve(node)
            return node
        finally:
            if isinstance(step, (str, int)):
                self._key_path.pop()

    def compose_sequence_node(self, anchor: Any) -> yaml.SequenceNode:
        """The list, with each `!expand` item replaced by the items of its file."""
        node = super().compose_sequence_node(anchor)
        if any(child.tag == "!expand" for child in node.value):
            node.value[:] = [item for child in node.value for item in self._expanded(child)]
        return node

    def _expanded(self, child: yaml.Node) -> list[yaml.Node]:
        if child.tag != "!expand":
            return [child]
        content = self._document(self._target(child, folder=False), child)
        if not isinstance(content, yaml.SequenceNode):
            self._fail(child, f"{_shown(self._target(child, folder=False), self._root)} holds no YAML list")
        return list(content.value)

    def _resolve(self, node: yaml.Node) -> yaml.Node:
        tag = node.tag
        if tag == "!include":
            return self._document(self._target(node, folder=False), node) or _scalar("null", node)
        if tag == "!include_text":
            path = self._target(node, folder=False)
            return yaml.ScalarNode(_STR, self._read(path, node).removesuffix("\n"), node.start_mark, node.end_mark)
        documents = [
            (path, document)
            for path in self._folder_files(node)
            if (document := self._document(path, node)) is not None
        ]
        if tag == "!include_dir_list":
            return yaml.SequenceNode(_SEQ, [doc for _, doc in documents], node.start_mark, node.end_mark)
        if tag == "!include_dir_merge_list":
            items: list[yaml.Node] = []
            for path, document in documents:
                if not isinstance(document, yaml.SequenceNode):
                    self._fail(node, f"{_shown(path, self._root)} holds no YAML list")
                items.extend(document.value)
            return yaml.SequenceNode(_SEQ, items, node.start_mark, node.end_mark)
        pairs: list[tuple[yaml.Node, yaml.Node]] = []
        named: dict[str, Path] = {}
        for path, document in documents:
            if tag == "!include_dir_named":
                entries = [(_scalar(path.stem, node), document)]
            elif isinstance(document, yaml.MappingNode):
                entries = list(document.value)
            else:
                self._fail(node, f"{_shown(path, self._root)} holds no YAML mapping")
            for key, value in entries:
                name = str(key.value)
                if name in named:
                    self._fail(
                        node,
                        f"{name!r} comes from both {_shown(named[name], self._root)} and {_shown(path, self._root)}",
                    )
                named[name] = path
                pairs.append((key, value))
        return yaml.MappingNode(_MAP, pairs, node.start_mark, node.end_mark)

    def _target(self, node: yaml.Node, *, folder: bool) -> Path:
        raw = node.value if isinstance(node, yaml.ScalarNode) else None
        if not isinstance(raw, str) or not raw.strip():
            self._fail(node, "needs a path relative to the file it is in")
        relative = Path(raw.strip())
        if relative.is_absolute():
            self._fail(node, f"{raw!r} is absolute; give a path relative to the file it is in")
        if any(part.startswith(".") and part not in {".", ".."} for part in relative.parts):
            self._fail(node, f"{raw!r} has a hidden part (a name starting with '.')")
        path = (self._chain[-1].parent / relative).resolve()
        if not path.is_relative_to(self._root):
            self._fail(node, f"{raw!r} is outside the config's folder {self._root}")
        self._refuse_data_dir(node, path, raw)
        if folder and not path.is_dir():
            self._fail(node, f"{raw!r}: no such folder")
        if not folder and not path.is_file():
            self._fail(node, f"{raw!r}: no such file")
        return path

    def _folder_files(self, node: yaml.Node) -> list[Path]:
        folder = self._target(node, folder=True)
        found = []
        for path in sorted(folder.rglob("*")):
            inside = path.relative_to(folder).parts
            if path.suffix not in {".yaml", ".yml"} or any(part.startswith((".", "_")) for part in inside):
                continue
            resolved = path.resolve()
            if not resolved.is_relative_to(self._root):
                self._fail(node, f"{_shown(path, self._root)} leads outside the config's folder")
            self._refuse_data_dir(node, resolved, _shown(path, self._root))
            if path.is_file():
                found.append(resolved)
        self._budget.folders.append(folder)
        self._budget.folders.extend(path.parent for path in found)
        return found

    def _refuse_data_dir(self, node: yaml.Node, path: Path, raw: str) -> None:
        """`ConfigError` when the resolved `path` is the data directory or inside it (naming the key and file)."""
        if self._data_dir is None or not path.is_relative_to(self._data_dir):
            return
        key = _key_text(self._key_path)
        self._fail(node, f"{key}: {raw!r} resolves into the daemon's data directory {self._data_dir}, which is refused")

    def _read(self, path: Path, node: yaml.Node) -> str:
        self._budget.files += 1
        if self._budget.files > MAX_INCLUDED_FILES:
            self._fail(node, f"more than {MAX_INCLUDED_FILES} files are included")
        try:
            data = path.read_bytes()
        except OSError as exc:
            self._fail(node, f"cannot read {_shown(path, self._root)}: {exc.strerror}")
        self._budget.read.append(path)
        self._budget.bytes += len(data)
        if self._budget.bytes > MAX_INCLUDED_BYTES:
            self._fail(node, f"the included files hold more than {MAX_INCLUDED_BYTES // (1024 * 1024)} MiB")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            self._fail(node, f"{_shown(path, self._root)} is not UTF-8 text")

    def _document(self, path: Path, node: yaml.Node) -> yaml.Node | None:
        if path in self._chain:
            cycle = " -> ".join(_shown(step, self._root) for step in (*self._chain, path))
            self._fail(node, f"files include each other: {cycle}")
        loader = IncludingLoader(
            self._read(path, node),
            path,
            root=self._root,
            chain=(*self._chain, path),
            budget=self._budget,
            data_dir=self._data_dir,
            key_path=tuple(self._key_path),
        )
        try:
            document = loader.get_single_node()
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            where = f" line {mark.line + 1}" if mark else ""
            self._fail(node, f"{_shown(path, self._root)}{where}: {exc.problem or exc}")
        finally:
            loader.dispose()
        if document is not None:
            _carry_mark(document, node.start_mark)
        return document

    def _fail(self, node: yaml.Node, problem: str) -> NoReturn:
        where = _shown(self._chain[-1], self._root)
        raise ConfigError(self._chain[0], [f"{where} line {node.start_mark.line + 1}: {node.tag}: {problem}"])


def _shown(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)


def _key_text(path: list[str | int]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text or "<root>"


def _scalar(value: str, at: yaml.Node) -> yaml.ScalarNode:
    tag = "tag:yaml.org,2002:null" if value == "null" else _STR
    return yaml.ScalarNode(tag, value, at.start_mark, at.end_mark)


def _carry_mark(root: yaml.Node, mark: yaml.Mark) -> None:
    """Give every node of an included document the mark of its tag: lines are the including file's."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        node.start_mark = mark
        if isinstance(node, yaml.MappingNode):
            stack.extend(part for pair in node.value for part in pair)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)


def _misplaced_expand(loader: IncludingLoader, node: yaml.Node) -> NoReturn:
    loader._fail(node, "only a list item may be expanded")


IncludingLoader.add_constructor("!expand", _misplaced_expand)
