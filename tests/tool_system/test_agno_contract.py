"""What the toolkit settings (`mindroom/tool_system/toolkits.py`) lean on in agno: the layout of its source.

A toolkit's settings are its constructor's keyword arguments, read from agno's source files with `ast`, so
the daemon checks an agent's settings at load without importing the toolkit (an import costs its
optional packages and, in a fresh process, about 0.2 s for agno's tool base alone). Here every toolkit
whose packages are installed is imported, and the `ast` reading must give what `inspect.signature` gives
for the class: the same names, in order, of the same kinds. `.ci/run` runs this file against the newest
agno 3.x too, so a release whose source the reading no longer follows is seen before the pin moves.
"""

from __future__ import annotations

import importlib
import inspect
import types
import typing
from typing import Any

import pytest

from mindroom.tool_system.toolkit_table import AGNO_TOOLKITS, AgnoToolkit
from mindroom.tool_system.toolkits import toolkit_parameters, toolkit_status

_KINDS: dict[Any, str] = {bool: "boolean", int: "number", float: "number", str: "text"}


def _kind(annotation: Any) -> str:
    """The settings kind of an evaluated annotation, as the daemon's config check names it."""
    if annotation is inspect.Parameter.empty:
        return "any"
    union = typing.get_origin(annotation) in (typing.Union, types.UnionType)
    members = [a for a in (typing.get_args(annotation) if union else (annotation,)) if a is not type(None)]
    if len(members) == 1:
        [member] = members
        if typing.get_origin(member) is list and typing.get_args(member) == (str,):
            return "string[]"
        return _KINDS.get(member, "any")
    return "number" if set(members) <= {int, float} else "any"


def _from_signature(toolkit: AgnoToolkit) -> dict[str, str]:
    cls = getattr(importlib.import_module(f"agno.tools.{toolkit.module}"), toolkit.class_name)
    keywords = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    parameters = inspect.signature(cls, eval_str=True).parameters.values()
    return {p.name: _kind(p.annotation) for p in parameters if p.kind in keywords}


INSTALLED = sorted(name for name, t in AGNO_TOOLKITS.items() if toolkit_status(t, {}).state != "missing_package")


def test_contract_enough_toolkits_are_installed_here_to_compare() -> None:
    # Else the comparison below holds for too few: every kind and a re-exported class must be among them.
    assert len(INSTALLED) >= 20
    kinds = {kind for name in INSTALLED for kind in (toolkit_parameters(AGNO_TOOLKITS[name]) or {}).values()}
    assert kinds == {"boolean", "number", "text", "string[]", "any"}
    assert "file_generation" in INSTALLED  # its module re-exports the class from another agno module


@pytest.mark.parametrize("name", INSTALLED)
def test_contract_source_reading_gives_the_constructors_signature(name: str) -> None:
    toolkit = AGNO_TOOLKITS[name]

    read = toolkit_parameters(toolkit)

    assert read is not None, f"{toolkit.target}: constructor not found in agno's source"
    assert list(read.items()) == list(_from_signature(toolkit).items())
