"""Install hints name this project, never `mindroom[...]` on the package index (that is MindRoom itself)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from mindroom.config import project_extras
from mindroom.tool_system.tool_packages import (
    checkout,
    checkout_root,
    declared_extras,
    extra_requirements,
    extras_from_requires,
    install_fix,
    pip_hint,
    tool_requirements,
)
from mindroom.tool_system.toolkit_table import AGNO_TOOLKITS

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = '[project]\nname = "{name}"\nversion = "1"\n[project.optional-dependencies]\ntools-web = ["ddgs"]\n'


def source_tree(tmp_path: Path, name: str = "mindroom", *, package: bool = True) -> Path:
    root = tmp_path / "tree"
    (root / "mindroom").mkdir(parents=True)
    if package:
        (root / "mindroom" / "__init__.py").write_text("")
    (root / "pyproject.toml").write_text(PYPROJECT.format(name=name))
    return root


def test_tool_packages_a_source_tree_of_this_project_is_a_checkout(tmp_path: Path):
    assert checkout_root(source_tree(tmp_path) / "mindroom") == tmp_path / "tree"
    assert checkout() == ROOT  # the test environment installs this checkout editable


@pytest.mark.parametrize(
    "tree",
    [
        lambda tmp: source_tree(tmp, "mindroom-extras"),  # another project's tree
        lambda tmp: source_tree(tmp, "mindroom2"),
        lambda tmp: source_tree(tmp, package=False),  # a folder named mindroom, no package in it
    ],
)
def test_tool_packages_other_trees_are_not_a_checkout(tmp_path: Path, tree):
    assert checkout_root(tree(tmp_path) / "mindroom") is None


def test_tool_packages_an_installed_copy_is_not_a_checkout(tmp_path: Path):
    site = tmp_path / "site-packages"
    (site / "mindroom").mkdir(parents=True)
    (site / "mindroom" / "__init__.py").write_text("")

    assert checkout_root(site / "mindroom") is None


def test_tool_packages_extras_come_from_the_checkout_or_the_installed_metadata():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    requires = [
        'uvloop>=0.19; sys_platform != "win32"',  # a dependency of every install, in no extra
        'ddgs; extra == "tools-web"',
        "psycopg[binary]>=3.1 ; extra == 'postgres'",
        'anthropic[bedrock,vertex]>=0.77; extra == "all-models"',
        'newspaper4k; extra == "tools-web-more"',  # an extra whose name starts like another's
    ]

    assert extra_requirements("tools-web") == tuple(declared["tools-web"])
    assert extras_from_requires(requires) == {
        "tools-web": ("ddgs",),
        "postgres": ("psycopg[binary]>=3.1",),
        "all-models": ("anthropic[bedrock,vertex]>=0.77",),
        "tools-web-more": ("newspaper4k",),
    }
    assert "test" in declared_extras(None)  # an installed copy reads its distribution's metadata


def test_tool_packages_hints_name_the_checkouts_extra_or_the_packages(monkeypatch):
    tavily, moviepy = AGNO_TOOLKITS["tavily"], AGNO_TOOLKITS["moviepy_video_tools"]

    assert pip_hint(tavily) == f"pip install -e '{ROOT}[tools-search]'"
    assert pip_hint(moviepy) == "pip install moviepy"  # no extra: its packages
    assert install_fix(tavily) == f"mindroom tools install tavily (or: pip install -e '{ROOT}[tools-search]')"

    monkeypatch.setattr(project_extras, "checkout", lambda: None)  # as an installed copy runs

    assert pip_hint(tavily) == "pip install " + " ".join(extra_requirements("tools-search"))
    assert tool_requirements(tavily) == extra_requirements("tools-search")
    for toolkit in AGNO_TOOLKITS.values():
        assert "mindroom[" not in install_fix(toolkit), toolkit.name
