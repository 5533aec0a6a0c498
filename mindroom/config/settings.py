"""Environment settings (pydantic-settings): homeserver, credentials, storage path; `.env` supported."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["MindroomSettings", "load_settings"]


class MindroomSettings(BaseSettings):
    """Settings read from the environment (and a `.env` file beside the config), MindRoom's names."""

    model_config = SettingsConfigDict(extra="ignore", env_file_encoding="utf-8", populate_by_name=True)

    matrix_homeserver: str | None = Field(default=None, validation_alias="MATRIX_HOMESERVER")
    matrix_server_name: str | None = Field(default=None, validation_alias="MATRIX_SERVER_NAME")
    matrix_registration_shared_secret: SecretStr | None = Field(
        default=None, validation_alias="MATRIX_REGISTRATION_SHARED_SECRET"
    )
    storage_path: Path | None = Field(default=None, validation_alias="MINDROOM_STORAGE_PATH")
    config_path: Path | None = Field(default=None, validation_alias="MINDROOM_CONFIG_PATH")
    log_level: str = Field(default="INFO", validation_alias="MINDROOM_LOG_LEVEL")
    log_json: bool | None = Field(default=None, validation_alias="MINDROOM_LOG_JSON")


def load_settings(env_file: Path | None = None) -> MindroomSettings:
    """Read settings from the process environment, then `env_file` for what the environment lacks."""
    if env_file is not None and env_file.is_file():
        return MindroomSettings(_env_file=env_file)  # type: ignore[call-arg]
    return MindroomSettings()
