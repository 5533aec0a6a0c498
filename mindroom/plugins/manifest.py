"""`mindroom.plugin.json`: the plugin manifest.

A manifest is foreign input: whatever its bytes are, reading it either yields a valid manifest or raises
`ManifestError` naming the plugin (its folder, when the manifest cannot be read) and the cause. Size and
nesting are capped before the JSON parser sees the text, so no file can exhaust memory or the stack.

`settings_schema` (optional, the daemon's own key) is a JSON Schema for the plugin's `settings` (see
`mindroom.plugins.settings`); one that is not a valid schema fails the manifest.

`dependencies` (optional, the daemon's own key) lists the Python requirements `mindroom plugins install`
installs for the plugin (see `mindroom.plugins.deps`).

`api_version` (optional, `YYYY.MM`) is the plugin API the plugin needs; a plugin needing a newer one than
`PLUGIN_API_VERSION` fails to load with `PluginApiVersionError` naming both. `oauth_module` (a 2026 API
key) is accepted so such manifests load, and ignored: this daemon runs no OAuth providers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from mindroom.constants import PLUGIN_MANIFEST_FILENAME
from mindroom.errors import ManifestError, PluginStateError
from mindroom.hooks.state import PLUGIN_NAME_PATTERN, validate_plugin_name
from mindroom.plugins.api_version import PLUGIN_API_VERSION, api_version_key, supports_api_version

__all__ = [
    "MAX_MANIFEST_BYTES",
    "MAX_MANIFEST_DEPTH",
    "PluginApiVersionError",
    "PluginManifest",
    "check_api_version",
    "read_manifest",
]


class PluginApiVersionError(ManifestError):
    """The plugin needs a newer plugin API than this daemon provides."""


MAX_MANIFEST_BYTES = 64 * 1024
MAX_MANIFEST_DEPTH = 16
_MAX_PATH_CHARS = 255


class PluginManifest(BaseModel):
    """A plugin's name, its tools and hooks modules, and its skill folders."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    tools_module: str | None = Field(default=None, max_length=_MAX_PATH_CHARS)
    hooks_module: str | None = Field(default=None, max_length=_MAX_PATH_CHARS)
    skills: list[str] = Field(default_factory=list, max_length=64)
    description: str = Field(default="", max_length=4096)
    version: str | None = Field(default=None, max_length=64)
    api_version: str | None = Field(default=None, max_length=32)
    oauth_module: str | None = Field(default=None, max_length=_MAX_PATH_CHARS)
    settings_schema: dict[str, Any] | None = None
    dependencies: list[str] = Field(default_factory=list, max_length=256)
    """Python requirements `mindroom plugins install` installs for the plugin (this daemon's own key)."""

    @field_validator("settings_schema")
    @classmethod
    def _valid_schema(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None:
            from jsonschema import Draft202012Validator, SchemaError  # only a plugin with a schema pays for it

            try:
                Draft202012Validator.check_schema(value)
            except SchemaError as exc:
                msg = f"not a valid JSON Schema: {exc.message}"
                raise ValueError(msg) from None
        return value

    @field_validator("api_version")
    @classmethod
    def _version_format(cls, value: str | None) -> str | None:
        if value is not None:
            api_version_key(value)
        return value

    @field_validator("name")
    @classmethod
    def _safe_name(cls, value: str) -> str:
        try:
            return validate_plugin_name(value)
        except PluginStateError as exc:
            raise ValueError(str(exc)) from None

    @field_validator("tools_module", "hooks_module", "oauth_module")
    @classmethod
    def _inside_plugin(cls, value: str | None) -> str | None:
        if value is not None and (Path(value).is_absolute() or ".." in Path(value).parts):
            msg = f"module path {value!r} must be relative and stay inside the plugin folder"
            raise ValueError(msg)
        return value

    @field_validator("skills")
    @classmethod
    def _short_skill_paths(cls, value: list[str]) -> list[str]:
        if any(len(skill) > _MAX_PATH_CHARS for skill in value):
            msg = f"skill folder paths must be at most {_MAX_PATH_CHARS} characters"
            raise ValueError(msg)
        return value


def _nesting_depth(text: str) -> int:
    """How deeply the JSON text nests arrays and objects (brackets inside strings ignored), without parsing it."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def _bad_string(value: Any) -> str | None:
    """Why a string in the parsed manifest cannot be used as a name or a path (NUL, lone surrogate), or None."""
    texts: list[Any] = [value]
    while texts:
        item = texts.pop()
        if isinstance(item, dict):
            texts.extend(item.keys())
            texts.extend(item.values())
        elif isinstance(item, list):
            texts.extend(item)
        elif isinstance(item, str):
            if "\x00" in item:
                return "a string holds a NUL character"
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return "a string holds an unpaired surrogate escape"
    return None


def _read_text(path: Path, label: str) -> str:
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_MANIFEST_BYTES + 1)
    except OSError as exc:
        raise ManifestError(label, path, f"cannot read manifest: {exc.strerror}") from None
    if len(data) > MAX_MANIFEST_BYTES:
        raise ManifestError(label, path, f"manifest is larger than {MAX_MANIFEST_BYTES // 1024} KiB")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ManifestError(label, path, f"manifest is not UTF-8 text (invalid byte at offset {exc.start})") from None
    if "\x00" in text:
        raise ManifestError(label, path, "manifest holds a NUL character")
    if _nesting_depth(text) > MAX_MANIFEST_DEPTH:
        raise ManifestError(label, path, f"manifest nests deeper than {MAX_MANIFEST_DEPTH} levels")
    return text


def read_manifest(folder: Path) -> PluginManifest:
    """Read and validate `<folder>/mindroom.plugin.json`; raises `ManifestError` naming the plugin or folder."""
    path = folder / PLUGIN_MANIFEST_FILENAME
    label = folder.name
    if not path.is_file():
        raise ManifestError(label, folder, f"no {PLUGIN_MANIFEST_FILENAME} in the plugin folder")
    text = _read_text(path, label)
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ManifestError(label, path, f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    problem = _bad_string(raw)
    if problem is not None:
        raise ManifestError(label, path, problem)
    # The manifest's own name labels its errors only when it is a valid name: anything else could be huge or odd.
    if isinstance(raw, dict) and isinstance(raw.get("name"), str) and PLUGIN_NAME_PATTERN.fullmatch(raw["name"]):
        label = raw["name"]
    try:
        return PluginManifest.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in error['loc']) or '<root>'}: {str(error['msg']).removeprefix('Value error, ')}"
            for error in exc.errors()
        )
        raise ManifestError(label, path, problems) from None


def check_api_version(manifest: PluginManifest, folder: Path) -> None:
    """Raise `PluginApiVersionError` when the plugin needs a newer plugin API than `PLUGIN_API_VERSION`."""
    required = manifest.api_version
    if required is not None and not supports_api_version(required):
        cause = f"needs plugin API {required}, but this daemon provides plugin API {PLUGIN_API_VERSION}"
        raise PluginApiVersionError(manifest.name, folder / PLUGIN_MANIFEST_FILENAME, cause)
