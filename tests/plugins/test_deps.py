"""A plugin's declared requirements, and the rules that refuse a package clashing with the daemon's own."""

import importlib.metadata
import json

import pytest

from mindroom.plugins.deps import daemon_pins, declared_requirements, pin_conflicts
from mindroom.plugins.lock import PluginInstallError

PINS = {"pydantic": "2.9.2", "pydantic-core": "2.23.4", "pyyaml": "6.0.2"}


def test_deps_pydantic_below_2_is_refused_naming_the_conflict():
    problems = pin_conflicts("sizes", ["pydantic<2"], PINS)

    assert problems == [
        "plugin 'sizes' needs pydantic<2, but the daemon runs pydantic 2.9.2"
        " (one process holds one version of a package)"
    ]


@pytest.mark.parametrize("requirement", ["Pydantic_Core==2.23.3", "PyYAML>=7", "pydantic>=2,!=2.9.2"])
def test_deps_names_are_compared_normalized_and_every_specifier_counts(requirement):
    assert len(pin_conflicts("sizes", [requirement], PINS)) == 1


@pytest.mark.parametrize(
    "requirement",
    ["pydantic>=2", "pydantic~=2.9", "pydantic-settings<2", "humanize<1", "pydantic<2; python_version < '3'"],
)
def test_deps_satisfied_unpinned_or_inapplicable_requirements_pass(requirement):
    assert pin_conflicts("sizes", [requirement], PINS) == []


def test_deps_daemon_pins_are_what_the_daemon_requires_as_installed():
    pins = daemon_pins()

    assert pins["pydantic"] == importlib.metadata.version("pydantic")
    assert pins["pydantic-core"] == importlib.metadata.version("pydantic-core")  # required by a requirement
    assert pins["mindroom"] == importlib.metadata.version("mindroom")
    assert "pytest" not in pins  # installed here (tests), but the daemon does not require it


def test_deps_manifest_wins_over_pyproject_and_requirements(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\ndependencies = ["tabulate==0.9.0"]\n')
    (tmp_path / "requirements.txt").write_text("humanize==4.9.0\n")

    assert declared_requirements("x", tmp_path, ["humanize==4.10.0"]) == ["humanize==4.10.0"]
    assert declared_requirements("x", tmp_path, []) == ["tabulate==0.9.0"]
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert declared_requirements("x", tmp_path, []) == ["humanize==4.9.0"]


def test_deps_requirements_txt_comments_are_skipped_and_options_refused_naming_the_line(tmp_path):
    (tmp_path / "requirements.txt").write_text("# pinned\nhumanize==4.9.0  # sizes\n\n")
    assert declared_requirements("x", tmp_path, []) == ["humanize==4.9.0"]

    (tmp_path / "requirements.txt").write_text("humanize==4.9.0\n--index-url https://evil.example/simple\n")
    with pytest.raises(PluginInstallError) as caught:
        declared_requirements("x", tmp_path, [])
    assert caught.value.path == tmp_path / "requirements.txt"
    assert caught.value.cause.startswith("line 2: pip options")


def test_deps_invalid_requirement_is_refused_naming_the_file(tmp_path):
    (tmp_path / "mindroom.plugin.json").write_text(json.dumps({"name": "x"}))

    with pytest.raises(PluginInstallError) as caught:
        declared_requirements("x", tmp_path, ["humanize===", "ok"])

    assert caught.value.path == tmp_path / "mindroom.plugin.json"
    assert "requirement 1 ('humanize===')" in caught.value.cause


@pytest.mark.parametrize("requirement", ["humanize @ https://files.example.org/humanize-4.9.0-py3-none-any.whl"])
def test_deps_direct_url_requirement_is_refused(tmp_path, requirement):
    with pytest.raises(PluginInstallError, match=r"requirement 1 .* names a URL"):
        declared_requirements("x", tmp_path, [requirement])
