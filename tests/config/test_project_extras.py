"""Every install hint names this project's extra (the checkout's, else its requirements), never `mindroom[...]`
on the package index, which is MindRoom itself."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import mindroom
from mindroom.config import project_extras
from mindroom.config.loading import parse_config_text
from mindroom.config.project_extras import extra_requirements, install_extra_command
from mindroom.config.providers import PROVIDERS, missing_packages
from mindroom.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = Path(mindroom.__file__).resolve().parent
# `pip install 'mindroom[x]'`, `pip install mindroom[x]`, `pip install -e "mindroom[x]"`: MindRoom's distribution.
_NAMES_MINDROOM = re.compile(r"""pip install (-e )?['"]?mindroom\[""")


def _messages(tree: ast.AST) -> list[tuple[int, str]]:
    """Every string of a module that is not a docstring (of a module, class, function or attribute: a string
    standing as a statement), f-strings' literal parts too, with its line."""
    docstrings = {
        id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


def _package_messages_naming_mindroom_on_the_index(package: Path) -> list[str]:
    found = []
    for path in sorted(package.rglob("*.py")):
        for line, text in _messages(ast.parse(path.read_text(encoding="utf-8"))):
            if _NAMES_MINDROOM.search(text):
                found.append(f"{path.relative_to(package.parent)}:{line}")
    return found


def test_project_extras_no_message_of_the_package_names_mindroom_on_the_index():
    assert _package_messages_naming_mindroom_on_the_index(PACKAGE) == []


def test_project_extras_the_scan_finds_an_f_string_hint_and_passes_over_a_docstring(tmp_path: Path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "a.py").write_text(
        '"""Never `pip install \'mindroom[x]\'`."""\n'
        "def hint(extra):\n"
        '    """Not `pip install mindroom[x]` either."""\n'
        "    return f\"pip install 'mindroom[{extra}]'\"\n"
    )
    (package / "b.py").write_text("HINT = 'pip install -e \"mindroom[postgres]\"'\nOK = 'pip install -e .[x]'\n")

    assert _package_messages_naming_mindroom_on_the_index(package) == ["pkg/a.py:4", "pkg/b.py:1"]


def test_project_extras_a_hint_names_the_checkout_or_else_the_extras_requirements(monkeypatch):
    assert install_extra_command("postgres") == f"pip install -e '{ROOT}[postgres]'"

    monkeypatch.setattr(project_extras, "checkout", lambda: None)  # as an installed copy runs

    assert install_extra_command("postgres") == "pip install " + " ".join(
        f"'{requirement}'" if "[" in requirement or ">" in requirement else requirement
        for requirement in extra_requirements("postgres")
    )
    assert install_extra_command("no-such-extra", ["groq"]) == "pip install groq"
    assert "mindroom[" not in install_extra_command("no-such-extra")


def test_project_extras_a_model_whose_package_is_missing_names_the_checkouts_extra():
    absent = [name for name, provider in PROVIDERS.items() if provider.extra and missing_packages(name)]
    if not absent:
        pytest.skip("every provider's package is installed here")
    provider = absent[0]
    with pytest.raises(ConfigError) as raised:
        parse_config_text(f"models:\n  fast: {{provider: {provider}, id: x}}\n", "config.yaml", {})

    (problem,) = raised.value.problems
    assert problem.endswith(f"package: pip install -e '{ROOT}[{PROVIDERS[provider].extra}]'"), problem
