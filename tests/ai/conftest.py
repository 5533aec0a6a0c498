"""Fixtures for the AI layer tests: the scripted model server, a model config for it, a storage root."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from mindroom.ai import close_caches
from mindroom.config.main import ModelConfig
from mindroom.testing.model_server import ScriptedModelServer, model_server

__all__ = ["model_server"]


@pytest.fixture
def scripted_model(model_server: ScriptedModelServer) -> ModelConfig:
    """A model config pointing agno's OpenAI client at the scripted server, without client retries."""
    return ModelConfig(
        provider="openai", id="scripted-model", extra_kwargs={"base_url": model_server.base_url, "max_retries": 0}
    )


@pytest_asyncio.fixture
async def storage_root(tmp_path: Path) -> AsyncIterator[Path]:
    """A fresh data directory; the AI layer's cached agents and databases are closed afterwards."""
    yield tmp_path
    await close_caches()
