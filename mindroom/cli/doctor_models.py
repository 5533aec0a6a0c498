"""`mindroom doctor`'s model checks: every configured model has its key and package, and answers a short prompt.

Each model gets one line: ok, or what is wrong (key missing, package missing, unreachable, model unknown,
key rejected) with the fix.
"""

from __future__ import annotations

from collections.abc import Mapping

from mindroom.cli.doctor_result import CheckResult
from mindroom.cli.doctor_result import check_fail as _fail
from mindroom.cli.doctor_result import check_ok as _ok
from mindroom.cli.doctor_result import check_warn as _warn
from mindroom.config.main import Config, ModelConfig
from mindroom.config.project_extras import install_extra_command
from mindroom.config.providers import PROVIDER_ENV_VARS, PROVIDERS, missing_packages

__all__ = ["check_models"]

_MODEL_TIMEOUT_S = 60.0
_BUILTIN = {
    "offline": "the offline model answers by repeating the message",
    "synthetic": "the synthetic model writes filler text",
}


def _fix(model: ModelConfig, status: str) -> str:
    provider = PROVIDERS[model.provider]
    if status == "key_missing":
        return f"set {provider.key_env} (or `api_key` on the model)" if provider.key_env else "see its provider in docs"
    if status == "package_missing":
        return install_extra_command(provider.extra or "", missing_packages(model.provider))
    if status == "unreachable":
        where = provider.endpoint_env or "`host`"
        return f"check that the server runs and {where} points at it, and the network"
    if status == "model_unknown":
        return f"check the model id (for Ollama: `ollama pull {model.id}`)"
    if status == "rejected":
        return f"check the key ({provider.key_env or '`api_key`'})"
    return "check the model's options, the key and the network"


async def check_models(config: Config, env: Mapping[str, str], *, call_models: bool) -> list[CheckResult]:
    """Each configured model can be built and (unless `call_models` is False) answers a short prompt."""
    from mindroom.ai import close_caches, probe_model  # agno loads only when models are checked

    results = []
    for model_name, model in config.models.items():
        name = f"model {model_name}"
        what = f"{model.provider}:{model.id}"
        if model.provider in _BUILTIN:
            fix = f"set {', '.join(PROVIDER_ENV_VARS[:-1])} or {PROVIDER_ENV_VARS[-1]} for a real model"
            results.append(_warn(name, _BUILTIN[model.provider], fix))
            continue
        probe = await probe_model(model, env, name=model_name, call=call_models, timeout_s=_MODEL_TIMEOUT_S)
        if probe.status != "ok":
            label = probe.status.replace("_", " ")
            results.append(_fail(name, f"{what}: {label}: {probe.detail}", _fix(model, probe.status)))
        elif not call_models:
            results.append(_ok(name, f"{what} is configured (not called)"))
        elif not probe.answer.strip():
            results.append(_warn(name, f"{what} answered with nothing", "check the model id"))
        else:
            results.append(_ok(name, f"{what} answered in {probe.seconds:.1f} s"))
    await close_caches()
    return results
