"""The table of MindRoom's config keys (`mindroom.config.mindroom_keys`, `key_notes`) against MindRoom itself.

The reference is `data/mindroom-2026.10-keys.txt`: MindRoom 2026.10's key paths, read once from its config
models and kept here, so the table is checked on every machine. Where MindRoom's install is present, its
models are read again (imported when that works without its dependencies, else from its source with
`tests.config.reference_keys`) and must match the file; `python -m tests.config.test_mindroom_keys` rewrites
the file from them.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from mindroom.config.key_notes import NOT_USED, USED, note_for
from mindroom.config.main import Config
from mindroom.config.mindroom_keys import is_mindroom_key, mindroom_key_paths, mindroom_keys_under
from mindroom.config.unused_keys import model_key_paths
from tests.config.reference_keys import reference_key_paths

_WORK = Path(__file__).resolve().parents[3]
_REFERENCE = Path(os.environ["MINDROOM_REFERENCE"]) if os.environ.get("MINDROOM_REFERENCE") else None
"""A MindRoom install (a venv) to compare with, when `MINDROOM_REFERENCE` names one."""
_SITE = next(iter(sorted(_REFERENCE.glob("lib/python3*/site-packages/mindroom"))), None) if _REFERENCE else None
RECORDED = Path(__file__).with_name("data") / "mindroom-2026.10-keys.txt"
_HEADER = (
    "# MindRoom 2026.10.589: every key path of its config.yaml (`*` a mapping key, `[]` a list item).\n"
    "# Read from its config models by tests/config/reference_keys.py; regenerate with\n"
    "# `python -m tests.config.test_mindroom_keys` where MindRoom's install is present.\n"
)
_SPEC = Path(os.environ.get("MINDROOM_SPEC", _WORK / "shared" / "spec" / "mindroom-config-2026.md"))

_IMPORT_WALK = """
import json, typing
from pydantic import BaseModel
from mindroom.config.main import Config
found = set()
def walk(model, prefix, seen):
    for name, info in model.model_fields.items():
        path = f"{prefix}.{info.alias or name}" if prefix else info.alias or name
        found.add(path)
        inner(info.annotation, path, seen)
def inner(tp, level, seen):
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        if tp not in seen:
            walk(tp, level, seen | {tp})
        return
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is dict:
        for arg in args[1:]:
            inner(arg, level + ".*", seen)
    elif origin in (list, tuple):
        for arg in args:
            inner(arg, level + "[]", seen)
    else:
        for arg in args:
            inner(arg, level, seen)
walk(Config, "", frozenset({Config}))
print(json.dumps(sorted(found)))
"""


def _imported_reference() -> set[str] | None:
    """MindRoom's key paths from its imported models, or None when it does not import without its dependencies."""
    if _REFERENCE is None or _SITE is None or not (python := _REFERENCE / "bin" / "python").exists():
        return None
    done = subprocess.run([str(python), "-c", _IMPORT_WALK], capture_output=True, text=True, timeout=120, check=False)
    return set(json.loads(done.stdout)) if done.returncode == 0 else None


def recorded_key_paths() -> set[str]:
    """MindRoom 2026.10's key paths as recorded in the repository."""
    lines = RECORDED.read_text(encoding="utf-8").splitlines()
    return {line.strip() for line in lines if line.strip() and not line.startswith("#")}


def _live_reference() -> set[str] | None:
    imported = _imported_reference()
    if imported is not None:
        return imported
    return None if _SITE is None else reference_key_paths(_SITE)


def test_mindroom_keys_are_mindroom_s_own():
    reference = recorded_key_paths()
    ours = mindroom_key_paths()

    assert len(reference) > 600
    assert sorted(reference - ours) == [], "MindRoom keys missing from the table"
    assert sorted(ours - reference) == [], "keys in the table that MindRoom does not have"


def test_mindroom_keys_recorded_match_mindroom_s_install():
    live = _live_reference()
    if live is None:
        pytest.skip("no MindRoom install to compare with (MINDROOM_REFERENCE names one, a venv)")

    assert sorted(live ^ recorded_key_paths()) == [], f"{RECORDED.name} is out of date: python -m {__name__}"


def test_mindroom_keys_the_spec_names_are_in_the_table():
    if not _SPEC.exists():
        pytest.skip(f"the specification is not at {_SPEC} (set MINDROOM_SPEC)")
    text = _SPEC.read_text(encoding="utf-8")
    named = set()
    for raw in re.findall(r"`([a-z_]+(?:\.(?:<[a-z_]+>|[a-z_]+))+)`", text):
        path = re.sub(r"<[a-z_]+>", "*", raw)
        if path.split(".")[0] in mindroom_keys_under(""):
            named.add(path)

    every = mindroom_key_paths()
    missing = sorted(
        path
        for path in named
        if not path.endswith((".py", ".md")) and not any(key == path or key.startswith(f"{path}.") for key in every)
    )

    assert len(named) > 20
    assert missing == []


def test_mindroom_keys_each_has_a_note_used_or_not():
    unnoted = []
    for path in sorted(mindroom_key_paths()):
        try:
            note_for(path)
        except KeyError:
            unnoted.append(path)

    assert unnoted == []
    assert all(is_mindroom_key(path) for path in (*USED, *NOT_USED)), "notes for keys MindRoom does not have"


def test_mindroom_keys_used_here_are_read_by_the_config_models():
    declared = model_key_paths(Config)
    used = [path for path in mindroom_key_paths() if note_for(path).used]
    sections = {path.removesuffix("[]") for path in declared} | {path.split("[]", 1)[0] for path in declared}

    # A used key is declared by the models, or lies within a value they take whole (a tool entry, a mapping).
    undeclared = [
        path
        for path in used
        if path not in declared and not any(path.startswith(f"{section}[]") for section in sections)
        if not path.startswith(("agents.*.tools[]", "defaults.tools[]", "plugins[]"))
    ]

    assert undeclared == []


def test_mindroom_keys_not_used_here_are_not_declared_unless_kept():
    declared = model_key_paths(Config)
    # Declared and not used: accepted with their notice, their value kept only so the model can check it.
    kept = {path for path in NOT_USED if path in declared}

    assert kept == {
        "memory.auto_flush",
        "memory.file.path",
        "memory.search",
        "memory.team_reads_member_memory",
        "agents.*.memory_search",
        "agents.*.worker_scope",
    }


if __name__ == "__main__":
    paths = _live_reference()
    if paths is None:
        raise SystemExit(f"MindRoom's install is not at {_REFERENCE} (set MINDROOM_REFERENCE)")
    RECORDED.write_text(_HEADER + "".join(f"{path}\n" for path in sorted(paths)), encoding="utf-8")
