"""The `matrix_voice_message` tool's speech service: `voice.tts`, with MindRoom's tool-entry fields over it."""

from __future__ import annotations

from typing import Any

import pytest

from mindroom.config.main import Config
from mindroom.tool_system.builtin.matrix_voice_message import _service
from mindroom.tool_system.builtin.parts import ToolCaller
from mindroom.tool_system.spec import ToolError


def _caller(entry: Any, voice: dict[str, Any] | None = None) -> ToolCaller:
    agent = {"display_name": "A", "tools": [entry]}
    config = Config.model_validate({"agents": {"a": agent}, **({"voice": voice} if voice else {})})
    return ToolCaller("a", "!r:x", None, "@p:x", None, None, config)


def test_matrix_voice_message_uses_voice_tts_when_the_entry_sets_nothing():
    service = _service(_caller("matrix_voice_message", {"tts": {"host": "http://kokoro:8880", "voice": "af_sky"}}))

    assert (service.base_url, service.voice, service.model) == ("http://kokoro:8880/v1", "af_sky", "gpt-4o-mini-tts")


def test_matrix_voice_message_without_voice_tts_is_openais_service():
    service = _service(_caller("matrix_voice_message"))

    assert (service.provider, service.base_url, service.model, service.voice) == (
        "openai", None, "gpt-4o-mini-tts", "alloy"
    )  # fmt: skip


@pytest.mark.parametrize(
    ("base_url", "expected"),
    [
        pytest.param("http://tts.lan:8880", "http://tts.lan:8880/v1", id="root"),
        pytest.param("http://tts.lan:8880/v1", "http://tts.lan:8880/v1", id="v1"),
        pytest.param("http://tts.lan:8880/v1/audio/speech", "http://tts.lan:8880/v1", id="full-path"),
    ],
)
def test_matrix_voice_message_entry_fields_go_over_voice_tts(base_url: str, expected: str):
    entry = {"matrix_voice_message": {"model": "kokoro", "voice": "bf_emma", "base_url": base_url, "api_key": "k"}}

    service = _service(_caller(entry, {"tts": {"host": "http://other:1", "max_chars": 100}}))

    assert (service.base_url, service.model, service.voice, service.api_key) == (expected, "kokoro", "bf_emma", "k")
    assert service.provider == "openai_compatible" and service.max_chars == 100


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        pytest.param({"voices": "nova"}, "voices is not a setting", id="a-key-with-a-suffix"),
        pytest.param({"host": "http://x"}, "host is not a setting", id="voice-tts-key-in-the-entry"),
        pytest.param({"response_format": "mp3"}, "response_format must be opus", id="not-opus"),
        pytest.param({"base_url": "ftp://tts.lan"}, "http", id="not-http"),
    ],
)
def test_matrix_voice_message_entry_refuses_naming_the_setting(settings: dict[str, Any], message: str):
    with pytest.raises(ToolError, match=f"agents.a.tools: 'matrix_voice_message': .*{message}"):
        _service(_caller({"matrix_voice_message": settings}))


def test_matrix_voice_message_entry_takes_opus_as_its_format():
    assert _service(_caller({"matrix_voice_message": {"response_format": "opus"}})).model == "gpt-4o-mini-tts"
