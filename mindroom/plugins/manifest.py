"""`mindroom.plugin.json`: the plugin manifest."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from mindroom.constants import PLUGIN_MANIFEST_FILENAME
from mindroom.errors import ManifestError, PluginStateError
from mindroom.hooks.state import validate_plugin_name

__all__ = ["PluginManifest", "read_manifest"]


class PluginManifest(BaseModel):
    """A plugin's name, its tools and hooks modules, and its skill folders."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    tools_module: str | None = None
    hooks_module: str | None = None
    skills: list[str] = Field(default_factory=list)
    description: str = ""
    version: str | None = None

    @field_validator("name")
    @classmethod
    def _safe_name(cls, value: str) -> str:
        try:
            return validate_plugin_name(value)
        except PluginStateError as exc:
            raise ValueError(str(exc)) from None

    @field_validator("tools_module", "hooks_module")
    @classmethod
    def _inside_plugin(cls, value: str | None) -> str | None:
        if value is not None and (Path(value).is_absolute() or ".." in Path(value).parts):
            msg = f"module path {value!r} must be relative and stay inside the plugin folder"
            raise ValueError(msg)
        return value


def read_manifest(folder: Path) -> PluginManifest:
    """Read and validate `<folder>/mindroom.plugin.json`; raises `ManifestError` naming the folder."""
    path = folder / PLUGIN_MANIFEST_FILENAME
    label = folder.name
    if not path.is_file():
        raise ManifestError(label, folder, f"no {PLUGIN_MANIFEST_FILENAME} in the plugin folder")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ManifestError(label, path, f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    except OSError as exc:
        raise ManifestError(label, path, f"cannot read manifest: {exc.strerror}") from None
    if isinstance(raw, dict) and isinstance(raw.get("name"), str):
        label = raw["name"]
    try:
        return PluginManifest.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in error['loc']) or '<root>'}: {str(error['msg']).removeprefix('Value error, ')}"
            for error in exc.errors()
        )
        raise ManifestError(label, path, problems) from None
