"""pytest plugin (entry point `pytest11`): the `hook_context_factory` fixture and the kit's other fixtures."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mindroom.hooks.hook_context import HookContextBase
from mindroom.testing.contexts import make_hook_context

__all__ = ["hook_context_factory"]


@pytest.fixture
def hook_context_factory(tmp_path: Path) -> Callable[..., HookContextBase]:
    """`hook_context_factory(context_type, /, **fields)` -> a new, ready-to-emit hook context."""
    storage_root = tmp_path / "mindroom_data"

    def factory(context_type: type[HookContextBase] | str, /, **fields: Any) -> HookContextBase:
        return make_hook_context(context_type, storage_root=storage_root, **fields)

    return factory


# The kit's end-to-end fixtures: a real Synapse for the session, a scripted model server per test.
from mindroom.testing.homeserver import matrix_homeserver  # noqa: E402
from mindroom.testing.model_server import model_server, model_server_session  # noqa: E402

__all__ += ["matrix_homeserver", "model_server", "model_server_session"]
