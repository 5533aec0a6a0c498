"""Models for plugin code, published as `mindroom.model_loading`: `get_model_instance` and the 2026 API's helpers.

- `get_model_instance(config, runtime_paths, model_name="default")`: the agno model a `models:` entry
  of the config describes, built by `mindroom.ai` exactly as agents get theirs.
- `build_model_provider(config, runtime_paths, model_name="default", *, execution_identity=None)` and
  `await complete_prompt(provider, prompt, ...)`: one request to that model, no tools, no history.

agno and the model builders are imported only when a model is built or prompted, so importing this module
(and with it `mindroom.model_loading` or `mindroom.plugin_api`) stays light.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mindroom.constants import RuntimePaths

__all__ = ["HelperResult", "ModelProvider", "build_model_provider", "complete_prompt", "get_model_instance"]

_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


class _PathsEnvironment(Mapping[str, str]):
    """The environment as `runtime_paths` saw it (the daemon's snapshot, else the process's)."""

    def __init__(self, runtime_paths: RuntimePaths | None) -> None:
        self._paths = runtime_paths

    def __getitem__(self, key: str) -> str:
        value = self._paths.env(key) if self._paths is not None else None
        if value is None:
            raise KeyError(key)
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths.env_values if self._paths is not None else ())

    def __len__(self) -> int:
        return len(self._paths.env_values) if self._paths is not None else 0


def get_model_instance(config: Any, runtime_paths: RuntimePaths | None, model_name: str = "default") -> Any:
    """The agno model of `config.models[model_name]`; `ValueError` naming the known models if there is none."""
    from mindroom.ai.models import build_model  # here, not at the top: importing plugin_api must not load agno

    models = getattr(config, "models", None) or {}
    model = models.get(model_name)
    if model is None:
        known = ", ".join(sorted(models)) or "none"
        msg = f"no model named {model_name!r} is configured (known: {known})"
        raise ValueError(msg)
    return build_model(model, env=_PathsEnvironment(runtime_paths), name=model_name)


@dataclass(frozen=True, slots=True)
class ModelProvider:
    """One configured model, ready for `complete_prompt`."""

    model_name: str
    model: Any = field(repr=False)
    execution_identity: Any = field(default=None, repr=False)


def build_model_provider(
    config: Any, runtime_paths: RuntimePaths | None, model_name: str = "default", *, execution_identity: Any = None
) -> ModelProvider:
    """The model of `config.models[model_name]` as a provider (built now, so config errors show at once)."""
    return ModelProvider(model_name, get_model_instance(config, runtime_paths, model_name), execution_identity)


@dataclass(frozen=True, slots=True)
class HelperResult:
    """What `complete_prompt` got: `content` (the parsed `schema` instance, else the text) and the raw text."""

    content: Any
    text: str
    model_name: str
    run_id: str | None = None


def _system_text(role: str | None, instructions: Sequence[str], schema: Any) -> str:
    parts = [role] if role else []
    parts.extend(instruction for instruction in instructions if instruction)
    if schema is not None:
        parts.append(
            "Answer with one JSON object and nothing else. It must match this JSON schema:\n"
            + json.dumps(schema.model_json_schema(), ensure_ascii=False)
        )
    return "\n\n".join(parts)


async def complete_prompt(
    provider: ModelProvider,
    prompt: str,
    *,
    role: str | None = None,
    instructions: Sequence[str] = (),
    schema: Any = None,
    overrides: Mapping[str, Any] | None = None,
    run_id: str | None = None,
) -> HelperResult:
    """Send one prompt (with `role` and `instructions` as the system message) and return the answer.

    `schema` is a pydantic model class: the answer is parsed into it (`ValueError` if it does not fit).
    `overrides` set model attributes (for example `temperature`) for this request only.
    """
    from agno.models.message import Message  # here, not at the top: importing plugin_api must not load agno

    model = provider.model
    if overrides:
        model = copy.copy(model)
        for name, value in overrides.items():
            setattr(model, name, value)
    messages = []
    system = _system_text(role, instructions, schema)
    if system:
        messages.append(Message(role="system", content=system))
    messages.append(Message(role="user", content=prompt))
    response = await model.aresponse(messages=messages)
    text = response.content if isinstance(response.content, str) else str(response.content or "")
    content: Any = text
    if schema is not None:
        fenced = _FENCE.match(text)
        content = schema.model_validate_json(fenced.group(1) if fenced else text)
    return HelperResult(content, text, provider.model_name, run_id)
