"""Where the code leans on a library's internals: each seam has a contract test, CI runs it against the
library's newest release, and `pyproject.toml` bounds the library to the releases it passed with."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _contracts() -> dict[str, tuple[list[str], list[str]]]:
    """`.ci/run`'s contract lines: the first library of each line -> (what pip installs, the test files)."""
    text = (ROOT / ".ci" / "run").read_text()
    block = re.search(r"<<'CONTRACTS'\n(.*?)\nCONTRACTS\n", text, re.DOTALL)
    assert block is not None, ".ci/run has no CONTRACTS block"
    lines: dict[str, tuple[list[str], list[str]]] = {}
    for line in block.group(1).splitlines():
        specs, _, tests = line.partition("|")
        lines[_name(specs.split()[0])] = (specs.split(), tests.split())
    return lines


def _name(requirement: str) -> str:
    return re.split(r"[\[<>=!~;, ]", requirement, maxsplit=1)[0].lower()


def _pinned() -> dict[str, str]:
    """Every requirement in `pyproject.toml` (dependencies and extras) by its distribution name."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    found: dict[str, str] = {}
    extras = [requirement for extra in project["optional-dependencies"].values() for requirement in extra]
    for requirement in [*project["dependencies"], *extras]:
        found.setdefault(_name(requirement), requirement)
    return found


def test_contracts_every_contract_test_runs_against_the_newest_release_in_ci():
    listed = {test for _, tests in _contracts().values() for test in tests}
    found = {str(path.relative_to(ROOT)) for path in (ROOT / "tests").rglob("test_*contract.py")}

    assert {"tests/api/test_uvicorn_contract.py", "tests/tool_system/mcp/test_httpx2_contract.py"} <= found
    assert sorted(found - listed) == []
    assert sorted(test for test in listed if not (ROOT / test).is_file()) == []
    for library, (_, tests) in _contracts().items():
        named = {m.group(1) for test in tests if (m := re.search(r"test_(\w+?)_contract\.py$", test))}
        assert named <= {library.replace("-", "_"), "store"}, f"{library}: {sorted(named)}"


def test_contracts_every_library_leaned_on_is_bounded_below_the_newest_release_ci_tries():
    pinned = _pinned()
    for library, (specs, _) in _contracts().items():
        assert library in pinned, f"{library} has a contract but no requirement in pyproject.toml"
        assert "<" in pinned[library], f"pyproject.toml: {pinned[library]!r} has no upper bound"
        assert specs[0] != pinned[library].split(";")[0].split("#")[0].strip(), (
            f".ci/run tries {library} as pinned, not its newest release"
        )


def _private_modules(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    names = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 0]
    names += [alias.name for n in ast.walk(tree) if isinstance(n, ast.Import) for alias in n.names]
    return [
        name
        for name in names
        if any(part.startswith("_") for part in name.split(".")[1:])
        and name.split(".")[0] not in ("mindroom", *sys.stdlib_module_names)
    ]


def test_contracts_a_private_module_of_a_library_is_imported_only_where_a_contract_test_pins_it():
    used = {
        f"{path.relative_to(ROOT)}: {module}"
        for path in sorted((ROOT / "mindroom").rglob("*.py"))
        for module in _private_modules(path)
    }

    assert used == {"mindroom/tool_system/mcp/http_client.py: mcp.shared._httpx_utils"}
    pinned_by = (ROOT / "tests" / "tool_system" / "mcp" / "test_mcp_contract.py").read_text()
    assert "from mcp.shared import _httpx_utils" in pinned_by
