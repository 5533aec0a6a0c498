"""One tiny call to a configured model, to tell an operator whether it works and, if not, why."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from agno.models.message import Message

from mindroom.ai.errors import ModelConfigError
from mindroom.ai.failures import CALL_POLICY_ATTRIBUTE, generation_error
from mindroom.ai.models import build_model, close_model
from mindroom.ai.resilience import CallPolicy
from mindroom.config.main import ModelConfig

__all__ = ["PROBE_PROMPT", "ModelProbe", "ProbeStatus", "probe_model"]

PROBE_PROMPT = "Reply with the single word OK."
ProbeStatus = Literal[
    "ok", "key_missing", "package_missing", "misconfigured", "unreachable", "model_unknown", "rejected", "failed"
]
_KEY_WORDS = ("API key", "credentials", "login", "project", "endpoint")


@dataclass(frozen=True, slots=True)
class ModelProbe:
    """How a model answered one short prompt: its status, a secret-free detail, and how long it took."""

    status: ProbeStatus
    detail: str
    seconds: float = 0.0
    answer: str = ""


def _config_problem(error: ModelConfigError) -> ModelProbe:
    if "package" in error.problem:
        return ModelProbe("package_missing", error.problem)
    if any(word in error.problem for word in _KEY_WORDS):
        return ModelProbe("key_missing", error.problem)
    return ModelProbe("misconfigured", error.problem)


async def probe_model(
    model: ModelConfig, env: Mapping[str, str], *, name: str, call: bool = True, timeout_s: float = 60.0
) -> ModelProbe:
    """Send `PROBE_PROMPT` once (no retries) and say what happened; without `call`, only check that the model
    can be built (its key, package and options)."""
    try:
        built = build_model(model, env=env, name=name)
    except ModelConfigError as error:
        return _config_problem(error)
    if not call:
        await close_model(built)
        return ModelProbe("ok", "configured (not called)")
    setattr(built, CALL_POLICY_ATTRIBUTE, CallPolicy(max_retries=0))
    started = time.monotonic()
    try:
        async with asyncio.timeout(timeout_s):
            response = await built.aresponse(messages=[Message(role="user", content=PROBE_PROMPT)])
    except TimeoutError:
        return ModelProbe("unreachable", f"no answer within {timeout_s:g} s", time.monotonic() - started)
    except Exception as error:
        failure = generation_error(error)
        seconds = time.monotonic() - started
        if failure.status_code == 404:
            return ModelProbe("model_unknown", f"the provider does not know model {model.id!r} (HTTP 404)", seconds)
        if failure.kind in ("unreachable", "timeout"):
            return ModelProbe("unreachable", str(failure), seconds)
        if failure.kind == "rejected":
            return ModelProbe("rejected", str(failure), seconds)
        return ModelProbe("failed", str(failure), seconds)
    finally:
        await close_model(built)
    text = response.content if isinstance(response.content, str) else ""
    return ModelProbe("ok", "answered", time.monotonic() - started, text)
