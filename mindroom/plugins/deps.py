"""A plugin's Python packages: what it declares, what clashes with the daemon, and installing them with pip.

A plugin declares requirements in its manifest (`dependencies`), else in its `pyproject.toml`
(`[project] dependencies`), else in `requirements.txt` (plain requirement lines). The daemon's own
packages (every distribution `mindroom` requires, followed through their requirements) are pinned at the
versions installed: one process has one copy of each, so a plugin asking for another version of one is
refused, and a plugin asking for one the daemon's version satisfies uses the daemon's. The rest is
resolved by pip against those pins, downloaded as wheels only, recorded with sha256 hashes and installed
with `--require-hashes` into the plugin's own folder.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename

from mindroom.logging_config import get_logger
from mindroom.plugins.lock import LockedDependency, PluginInstallError
from mindroom.private_files import private_dir

__all__ = [
    "PIP_TIMEOUT_S",
    "daemon_pins",
    "declared_requirements",
    "install_locked",
    "pin_conflicts",
    "resolve",
]

logger = get_logger(__name__)

PIP_TIMEOUT_S = 600.0
_PIP = (sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input", "--quiet")


def _parsed(plugin: str, lines: list[str], where: Path) -> list[str]:
    found: list[str] = []
    for number, raw in enumerate(lines, 1):
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        try:
            requirement = Requirement(line)
        except InvalidRequirement as exc:
            raise PluginInstallError(plugin, where, f"requirement {number} ({line!r}) is not valid: {exc}") from None
        if requirement.url is not None:
            cause = f"requirement {number} ({line!r}) names a URL; only packages from the index can be locked by hash"
            raise PluginInstallError(plugin, where, cause)
        found.append(line)
    return found


def declared_requirements(plugin: str, folder: Path, manifest_dependencies: list[str] | None) -> list[str]:
    """The requirements the plugin declares (manifest, pyproject.toml, requirements.txt: the first that has them)."""
    if manifest_dependencies:
        return _parsed(plugin, manifest_dependencies, folder / "mindroom.plugin.json")
    pyproject = folder / "pyproject.toml"
    if pyproject.is_file():
        try:
            project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise PluginInstallError(plugin, pyproject, f"unreadable: {exc}") from None
        listed = project.get("dependencies", []) if isinstance(project, dict) else []
        if not isinstance(listed, list) or not all(isinstance(item, str) for item in listed):
            raise PluginInstallError(plugin, pyproject, "[project] dependencies: expected a list of strings")
        if listed:
            return _parsed(plugin, listed, pyproject)
    requirements = folder / "requirements.txt"
    if requirements.is_file():
        lines = requirements.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines, 1):
            if line.strip().startswith("-"):
                cause = f"line {number}: pip options ({line.strip()!r}) are not accepted, only requirements"
                raise PluginInstallError(plugin, requirements, cause)
        return _parsed(plugin, lines, requirements)
    return []


def daemon_pins() -> dict[str, str]:
    """The distributions the daemon runs on (mindroom and all it requires, installed), by name: version."""
    pins: dict[str, str] = {}
    waiting: list[tuple[str, frozenset[str]]] = [("mindroom", frozenset())]
    seen: set[tuple[str, frozenset[str]]] = set()
    while waiting:
        name, extras = waiting.pop()
        if (name, extras) in seen:
            continue
        seen.add((name, extras))
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        pins[canonicalize_name(name)] = dist.version
        for line in dist.requires or []:
            requirement = Requirement(line)
            marker = requirement.marker
            if marker is not None and not any(marker.evaluate({"extra": extra}) for extra in (*extras, "")):
                continue
            waiting.append((requirement.name, frozenset(requirement.extras)))
    return pins


def pin_conflicts(plugin: str, requirements: list[str], pins: dict[str, str]) -> list[str]:
    """Each requirement the daemon's installed version of that package does not satisfy, as a sentence."""
    problems: list[str] = []
    for line in requirements:
        requirement = Requirement(line)
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue
        installed = pins.get(canonicalize_name(requirement.name))
        if installed is not None and not requirement.specifier.contains(installed, prereleases=True):
            problems.append(
                f"plugin {plugin!r} needs {line}, but the daemon runs {requirement.name} {installed} "
                "(one process holds one version of a package)"
            )
    return problems


def _run_pip(plugin: str, folder: Path, args: list[str]) -> None:
    try:
        done = subprocess.run(
            [*_PIP, *args], capture_output=True, text=True, timeout=PIP_TIMEOUT_S, check=False, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired:
        raise PluginInstallError(plugin, folder, f"pip did not finish within {PIP_TIMEOUT_S:g} s") from None
    if done.returncode != 0:
        lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
        raise PluginInstallError(plugin, folder, "pip failed: " + (" | ".join(lines[-6:]) or f"exit {done.returncode}"))


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def resolve(
    plugin: str, folder: Path, requirements: list[str], pins: dict[str, str], wheels: Path
) -> list[LockedDependency]:
    """Resolve `requirements` against the daemon's pins, download the wheels into `wheels`, and lock them.

    The packages the daemon has are left out of the result: the plugin imports the daemon's copy.
    """
    problems = pin_conflicts(plugin, requirements, pins)
    if problems:
        raise PluginInstallError(plugin, folder, "; ".join(problems))
    if not requirements:
        return []
    with tempfile.TemporaryDirectory(prefix="mindroom-pins-") as scratch:
        constraints = Path(scratch) / "constraints.txt"
        constraints.write_text("".join(f"{name}=={version}\n" for name, version in sorted(pins.items())))
        _run_pip(
            plugin,
            folder,
            ["download", "--only-binary", ":all:", "--dest", str(wheels), "-c", str(constraints), *requirements],
        )
    locked: list[LockedDependency] = []
    for wheel in sorted(wheels.glob("*.whl")):
        name, version, _, _ = parse_wheel_filename(wheel.name)
        if name in pins:
            continue
        locked.append(LockedDependency(str(name), str(version), wheel.name, _sha256(wheel)))
    logger.info("plugin dependencies resolved", plugin=plugin, packages=[d.requirement_line() for d in locked])
    return locked


def install_locked(plugin: str, dependencies: tuple[LockedDependency, ...], target: Path, wheels: Path | None) -> None:
    """Install exactly `dependencies` into `target`, each checked against its hash (`wheels`: files already here).

    The folder is filled beside its final place and renamed into it, so a folder that exists is complete.
    """
    if target.is_dir() or not dependencies:
        return
    private_dir(target.parent)  # it may create the data directory itself, which holds credentials
    with tempfile.TemporaryDirectory(prefix=".installing-", dir=target.parent) as scratch:
        listed = Path(scratch) / "requirements.txt"
        listed.write_text("".join(dep.requirement_line() + "\n" for dep in dependencies))
        staged = Path(scratch) / "packages"
        args = ["install", "--no-deps", "--only-binary", ":all:", "--require-hashes", "--no-compile"]
        args += ["--target", str(staged), "-r", str(listed)]
        if wheels is not None:
            args += ["--find-links", str(wheels)]
        _run_pip(plugin, target, args)
        (staged / ".mindroom-packages.json").write_text(
            json.dumps([dep.requirement_line() for dep in dependencies], indent=2) + "\n"
        )
        staged.rename(target)
