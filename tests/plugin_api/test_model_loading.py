"""Models for plugin code: `get_model_instance` (older path) and `build_model_provider` + `complete_prompt`."""

import pytest
from pydantic import BaseModel

from mindroom.config.main import Config
from mindroom.constants import RuntimePaths
from mindroom.model_loading import HelperResult, get_model_instance
from mindroom.plugin_api import build_model_provider, complete_prompt
from mindroom.testing.model_server import Text, model_server

__all__ = ["model_server"]


def config(model_server=None):
    models = {"default": {"provider": "offline", "id": "offline"}}
    if model_server is not None:
        models["scripted"] = {
            "provider": "openai",
            "id": "scripted-model",
            "extra_kwargs": {"base_url": model_server.base_url, "max_retries": 0},
        }
    return Config.model_validate({"models": models})


def test_get_model_instance_builds_the_configured_model(tmp_path):
    from mindroom.ai.offline import OfflineModel

    model = get_model_instance(config(), RuntimePaths.for_directory(tmp_path))

    assert isinstance(model, OfflineModel)


def test_get_model_instance_names_the_known_models_for_an_unknown_one(tmp_path):
    with pytest.raises(ValueError, match=r"'missing'.*default"):
        get_model_instance(config(), RuntimePaths.for_directory(tmp_path), "missing")


def test_get_model_instance_reads_keys_from_the_runtime_paths_environment(tmp_path):
    cfg = Config.model_validate({"models": {"default": {"provider": "openai", "id": "gpt-x"}}})
    paths = RuntimePaths(tmp_path / "config.yaml", tmp_path / "data", {"OPENAI_API_KEY": "sk-from-paths"})

    model = get_model_instance(cfg, paths)

    assert model.api_key == "sk-from-paths"


@pytest.mark.asyncio
async def test_complete_prompt_sends_one_request_without_history(tmp_path):
    provider = build_model_provider(config(), RuntimePaths.for_directory(tmp_path))

    result = await complete_prompt(provider, "ping", role="You are terse.", instructions=["No emoji."])

    assert isinstance(result, HelperResult)
    assert result.content == result.text == "(offline model) You said: ping"
    assert result.model_name == "default"


class Verdict(BaseModel):
    ok: bool
    reason: str


@pytest.mark.asyncio
async def test_complete_prompt_parses_a_schema_from_a_real_http_model(tmp_path, model_server):
    model_server.set_default(Text('```json\n{"ok": true, "reason": "fine"}\n```'))
    provider = build_model_provider(config(model_server), RuntimePaths.for_directory(tmp_path), "scripted")

    result = await complete_prompt(provider, "Is it fine?", schema=Verdict, overrides={"temperature": 0.0})

    assert result.content == Verdict(ok=True, reason="fine")
    request = model_server.requests[-1]
    system = next(message for message in request["messages"] if message["role"] in {"system", "developer"})
    assert "JSON schema" in system["content"]
    assert request["messages"][-1] == {"role": "user", "content": "Is it fine?"}
    assert provider.model.temperature is None  # the override was for that request only


@pytest.mark.asyncio
async def test_complete_prompt_schema_mismatch_is_a_value_error(tmp_path, model_server):
    model_server.set_default(Text("not json"))
    provider = build_model_provider(config(model_server), RuntimePaths.for_directory(tmp_path), "scripted")

    with pytest.raises(ValueError, match="JSON"):
        await complete_prompt(provider, "Is it fine?", schema=Verdict)
