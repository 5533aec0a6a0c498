"""Starter files for `mindroom config init`: a `config.yaml` and `.env` for the provider the environment offers."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from mindroom.config.project_extras import install_extra_command
from mindroom.config.providers import PROVIDER_ENV_VARS, ProviderChoice, detect_provider
from mindroom.constants import DEFAULT_CONFIG_FILENAME

__all__ = ["env_template", "starter_config", "write_starter_files"]


def starter_config(choice: ProviderChoice) -> str:
    """The text of a starter `config.yaml` using `choice` unless the environment overrides it."""
    why = (
        f"# {choice.env_var} is set, so agents use {choice.provider}."
        if choice.env_var
        else "# No provider key was set, so agents use the offline model (it repeats what you say)."
    )
    return f"""\
# MindRoom configuration. Every key is described in docs/configuration.md.
{why}
# Set a provider's key (OPENAI_API_KEY, ANTHROPIC_API_KEY, GOOGLE_API_KEY, ...) or OLLAMA_HOST
# (here or in .env) to use a real model; docs/configuration.md lists every provider.
# With no MATRIX_HOMESERVER set, `mindroom run` starts a private homeserver under the data dir.

models:
  default:
    provider: ${{MINDROOM_MODEL_PROVIDER:-{choice.provider}}}
    id: ${{MINDROOM_MODEL_ID:-{choice.model_id}}}

agents:
  assistant:
    display_name: Assistant
    role: A friendly general-purpose assistant.
    instructions:
      - Answer briefly and clearly.
    rooms: [lobby]

router:
  model: default

rooms:
  lobby:
    description: Talk to the agents here.

authorization:
  global_users: ["${{MINDROOM_USER:-@user:localhost}}"]
  default_room_access: false

room_defaults:
  invite_users: ["${{MINDROOM_USER:-@user:localhost}}"]

defaults:
  enable_streaming: true

# Plugin folders: list them here (with settings), or drop them into ./plugins/.
plugins: []
"""


def env_template(choice: ProviderChoice) -> str:
    """The text of a starter `.env`: every variable commented out, no values copied from the environment."""
    return f"""\
# Environment for MindRoom, read from beside config.yaml. The process environment wins over this file.
# Keep this file private (mode 0600); it holds keys once you fill them in.

# Model providers: the first one set is used ({", ".join(PROVIDER_ENV_VARS)}).
# Anthropic, Ollama, Google and Groq need their client, an extra of this project: {install_extra_command("anthropic")}
# (or the extra ollama, google, groq, bedrock, vertexai; all-models for every one).
# OPENAI_API_KEY=
# ANTHROPIC_API_KEY=
# GOOGLE_API_KEY=
# OPENROUTER_API_KEY=
# DEEPSEEK_API_KEY=
# GROQ_API_KEY=
# CEREBRAS_API_KEY=
# ZAI_API_KEY=
# AZURE_OPENAI_API_KEY=
# AZURE_OPENAI_ENDPOINT=https://<resource>.openai.azure.com
# OLLAMA_HOST=http://localhost:11434
# MINDROOM_MODEL_PROVIDER={choice.provider}
# MINDROOM_MODEL_ID={choice.model_id}

# Your own homeserver instead of the embedded one:
# MATRIX_HOMESERVER=https://matrix.example.org
# MATRIX_SERVER_NAME=example.org
# MATRIX_REGISTRATION_SHARED_SECRET=
# MINDROOM_ACCOUNT_PREFIX=mindroom_

# The human user allowed to talk to the agents (and who `mindroom chat` signs in as):
# MINDROOM_USER=@user:localhost
# MINDROOM_USER_PASSWORD=

# Daemon:
# MINDROOM_STORAGE_PATH=./mindroom_data
# Read from the process environment only (or given as flags of `mindroom run`), not from this file:
# MINDROOM_API_HOST and MINDROOM_API_PORT (the API, the dashboard and /metrics; 127.0.0.1:8765),
# MINDROOM_HOMESERVER_PORT (the embedded homeserver) and MINDROOM_LOG_LEVEL.
"""


def write_starter_files(directory: Path, env: Mapping[str, str], *, force: bool = False) -> list[Path]:
    """Write `config.yaml` and `.env` into `directory`; raises `FileExistsError` unless `force`."""
    choice = detect_provider(env)
    config_path = directory / DEFAULT_CONFIG_FILENAME
    env_path = directory / ".env"
    existing = [path for path in (config_path, env_path) if path.exists()]
    if existing and not force:
        names = ", ".join(str(path) for path in existing)
        msg = f"{names} already exist; pass --force to overwrite"
        raise FileExistsError(msg)
    directory.mkdir(parents=True, exist_ok=True)
    config_path.write_text(starter_config(choice), encoding="utf-8")
    env_path.unlink(missing_ok=True)  # a fresh file gets mode 0600 from the start
    fd = os.open(env_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as env_file:
        env_file.write(env_template(choice))
    (directory / "plugins").mkdir(exist_ok=True)
    return [config_path, env_path]
