"""Checked plugin settings: a plugin may declare the shape of its `settings`, and a config that does not fit it is
refused (at `mindroom config validate`, at start and at reload, which then keeps the last good state).

A plugin declares the shape in one of two ways: `settings_schema` in its manifest (a JSON Schema for the whole
`settings` object), or a pydantic model named `settings_model` in its hooks or tools module. The hooks then get
the validated values: the model's fields (defaults filled in, values converted) or, with a schema, the settings
as written plus the defaults the schema's top-level properties give. A plugin that declares nothing gets its
settings as written, unchecked.

Problems name the key path (`plugins[2].settings.limit`, or the drop-in folder for a plugin found under
`plugins/`) and the plugin; they never quote a value, which may be a secret.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from mindroom.errors import ConfigError, PluginError
from mindroom.plugins.loader import Plugin

__all__ = ["SETTINGS_MODEL_ATTRIBUTE", "PluginSettingsError", "checked_settings", "settings_model"]

SETTINGS_MODEL_ATTRIBUTE = "settings_model"
"""The module attribute that names a plugin's pydantic settings model."""


class PluginSettingsError(ConfigError):
    """A plugin entry's `settings` do not fit the shape its plugin declares; names each key path and plugin."""


def settings_model(plugin: Plugin) -> type[BaseModel] | None:
    """The pydantic model the plugin's hooks or tools module names as `settings_model`, or None.

    Raises `PluginError` when it names something else, or when the manifest declares a schema too.
    """
    for module in (plugin.hooks_module, plugin.tools_module):
        found = getattr(module, SETTINGS_MODEL_ATTRIBUTE, None) if module is not None else None
        if found is None:
            continue
        if not (isinstance(found, type) and issubclass(found, BaseModel)):
            cause = f"{SETTINGS_MODEL_ATTRIBUTE} must be a pydantic model class, not {type(found).__name__}"
            raise PluginError(plugin.name, plugin.path, cause)
        if plugin.manifest.settings_schema is not None:
            cause = f"its settings are declared twice: settings_schema in the manifest and {SETTINGS_MODEL_ATTRIBUTE}"
            raise PluginError(plugin.name, plugin.path, cause)
        return found
    return None


def _path(parts: Iterable[Any]) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text


def _schema_problem(error: Any) -> str:
    """What a JSON Schema error says, without the value it found (a setting may be a secret)."""
    keyword, expected = error.validator, error.validator_value
    if keyword in ("required", "additionalProperties", "dependentRequired"):
        return str(error.message)  # these name keys, never values
    if keyword == "type":
        return f"must be of type {expected}"
    if keyword == "enum":
        return f"must be one of {', '.join(repr(value) for value in expected)}"
    return f"does not satisfy {keyword}: {expected!r}"


def _schema_defaults(schema: Mapping[str, Any], settings: dict[str, Any]) -> dict[str, Any]:
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return settings
    filled = dict(settings)
    for name, spec in properties.items():
        if name not in filled and isinstance(spec, Mapping) and "default" in spec:
            filled[name] = spec["default"]
    return filled


def checked_settings(plugin: Plugin, settings: Mapping[str, Any], where: str) -> tuple[dict[str, Any], list[str]]:
    """The settings the plugin's hooks get, and the problems found (`where` prefixes each key path)."""
    given = dict(settings)
    named = f"(plugin {plugin.name!r})"
    model = settings_model(plugin)
    if model is not None:
        try:
            return model.model_validate(given).model_dump(), []
        except ValidationError as exc:
            problems = [
                f"{where}{_path(error['loc'])}: {str(error['msg']).removeprefix('Value error, ')} {named}"
                for error in exc.errors(include_input=False, include_url=False)
            ]
            return given, problems
    schema = plugin.manifest.settings_schema
    if schema is None:
        return given, []
    from jsonschema import Draft202012Validator  # only a plugin that declares a schema pays for jsonschema

    errors = sorted(Draft202012Validator(schema).iter_errors(given), key=lambda error: list(error.absolute_path))
    problems = [f"{where}{_path(error.absolute_path)}: {_schema_problem(error)} {named}" for error in errors]
    return (_schema_defaults(schema, given), problems) if not problems else (given, problems)
