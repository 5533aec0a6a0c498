"""`hidden_while_importing`: a package fails to import inside the block and imports as usual afterwards."""

from __future__ import annotations

import importlib
import secrets
import sys
from pathlib import Path

import pytest

from mindroom.hidden_imports import hidden_while_importing


def _module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str = "VALUE = 1\n") -> str:
    name = f"probe_{secrets.token_hex(4)}"
    (tmp_path / f"{name}.py").write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def test_a_hidden_package_fails_inside_the_block_and_imports_after(tmp_path, monkeypatch):
    hidden = _module(tmp_path, monkeypatch)
    library = _module(tmp_path, monkeypatch, f"try:\n    import {hidden}\nexcept ImportError:\n    {hidden} = None\n")

    with hidden_while_importing(hidden):
        loaded = importlib.import_module(library)

    assert getattr(loaded, hidden) is None
    assert importlib.import_module(hidden).VALUE == 1


def test_a_package_imported_before_stays_visible(tmp_path, monkeypatch):
    name = _module(tmp_path, monkeypatch)
    module = importlib.import_module(name)

    with hidden_while_importing(name):
        assert importlib.import_module(name) is module

    assert sys.modules[name] is module


def test_the_package_comes_back_when_the_block_raises(tmp_path, monkeypatch):
    name = _module(tmp_path, monkeypatch)

    with pytest.raises(RuntimeError), hidden_while_importing(name):
        raise RuntimeError("import failed")

    assert name not in sys.modules
    assert importlib.import_module(name).VALUE == 1
