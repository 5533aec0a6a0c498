"""Models for plugin code: `get_model_instance` (older plugins' import path) and the 2026 API's helpers.

- `get_model_instance(config, runtime_paths, model_name="default")`: the agno model a `models:` entry
  of the config describes, built by `mindroom.ai` exactly as agents get theirs.
- `build_model_provider(config, runtime_paths, model_name="default", *, execution_identity=None)` and
  `await complete_prompt(provider, prompt, ...)`: one request to that model, no tools, no history.

The code lives in `mindroom.ai.plugin_models` (only `mindroom.ai` imports agno); this path stays for
plugins. agno is imported only when a model is built, so importing this package stays light.
"""

from mindroom.ai.plugin_models import (
    HelperResult,
    ModelProvider,
    build_model_provider,
    complete_prompt,
    get_model_instance,
)

__all__ = ["HelperResult", "ModelProvider", "build_model_provider", "complete_prompt", "get_model_instance"]
