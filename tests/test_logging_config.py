"""Logging: JSON lines or console text, context bound by the pipeline, library logs included, secrets redacted."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest
import structlog

from mindroom.logging_config import (
    configure_logging,
    get_logger,
    redact_secrets,
    redact_text,
    register_secret_env,
    register_secret_values,
)


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    saved = structlog.get_config()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    structlog.configure(**saved)
    root.handlers[:] = handlers
    root.setLevel(level)


def _json_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_redact_secrets_blanks_secret_fields_even_nested():
    event = {
        "event": "login",
        "password": "hunter2-long",
        "access_token": "abc",
        "headers": {"Authorization": "Bearer xyz", "Accept": "json"},
        "items": [{"api_key": "k-123456"}],
        "user": "@a:b",
        "max_tokens": None,
    }

    out = redact_secrets(None, "info", dict(event))

    assert out["password"] == out["access_token"] == "[redacted]"
    assert out["headers"] == {"Authorization": "[redacted]", "Accept": "json"}
    assert out["items"] == [{"api_key": "[redacted]"}]
    assert out["user"] == "@a:b" and out["event"] == "login" and out["max_tokens"] is None


def test_redact_text_scrubs_token_shaped_and_registered_values():
    register_secret_values(["registered-secret-value", "short"])
    text = (
        "token syt_abcdefgh_1234567890 key sk-ant-abcdefghijklmnop url /sync?access_token=zzz&x=1 "
        "Bearer abcdefghijklmnop registered-secret-value short"
    )

    scrubbed = redact_text(text)

    for secret in ("syt_abcdefgh", "sk-ant-abcdefghijklmnop", "zzz", "abcdefghijklmnop", "registered-secret-value"):
        assert secret not in scrubbed
    assert scrubbed.endswith("short")  # too short to register: it would blank ordinary words


def test_register_secret_env_takes_values_of_secret_named_variables():
    register_secret_env({"OPENAI_API_KEY": "value-of-the-openai-key", "MINDROOM_USER": "@user:localhost"})

    assert redact_text("the key is value-of-the-openai-key") == "the key is [redacted]"
    assert redact_text("@user:localhost") == "@user:localhost"


def test_json_lines_carry_logger_context_and_no_secrets(capsys):
    configure_logging("INFO", json=True)
    register_secret_values(["the-shared-secret-123"])
    logger = get_logger("mindroom.test")

    with structlog.contextvars.bound_contextvars(agent="assistant", room_id="!r:hs", correlation_id="c-1"):
        logger.info("answered", detail="secret is the-shared-secret-123")
    try:
        raise RuntimeError("failed with access_token=leaky")
    except RuntimeError:
        logger.exception("boom")

    lines = _json_lines(capsys.readouterr().err)
    answered, boom = lines
    assert answered["event"] == "answered" and answered["level"] == "info" and answered["logger"] == "mindroom.test"
    assert (answered["agent"], answered["room_id"], answered["correlation_id"]) == ("assistant", "!r:hs", "c-1")
    assert "timestamp" in answered
    assert "the-shared-secret-123" not in json.dumps(lines)
    assert "RuntimeError" in boom["exception"] and "leaky" not in boom["exception"]


def test_library_logs_go_through_the_same_renderer_and_redaction(capsys):
    configure_logging("INFO", json=True)

    logging.getLogger("aiohttp.client").warning("GET /sync?access_token=syt_secret_token_value failed")
    logging.getLogger("some.dependency").info("chatty info line")

    (line,) = _json_lines(capsys.readouterr().err)
    assert line["logger"] == "aiohttp.client" and line["level"] == "warning"
    assert "syt_secret_token_value" not in line["event"]


def test_nio_responses_is_quiet_below_error():
    configure_logging("DEBUG", json=True)

    assert logging.getLogger("nio.responses").getEffectiveLevel() == logging.ERROR


def test_console_rendering_is_not_json(capsys):
    configure_logging("INFO", json=False)

    get_logger("mindroom.test").warning("plain words", bot="router")

    err = capsys.readouterr().err
    assert "plain words" in err and "bot=router" in err
    with pytest.raises(json.JSONDecodeError):
        json.loads(err.splitlines()[0])


def test_level_filters_structlog_lines(capsys):
    configure_logging("WARNING", json=True)

    get_logger("x").info("hidden")
    get_logger("x").warning("shown")

    assert [line["event"] for line in _json_lines(capsys.readouterr().err)] == ["shown"]


def test_library_loggers_with_their_own_handlers_are_adopted(capsys):
    own = logging.getLogger("agno")
    own.addHandler(logging.StreamHandler())
    own.propagate = False

    configure_logging("INFO", json=True)
    own.error("model call failed")

    assert own.handlers == [] and own.propagate is True
    assert _json_lines(capsys.readouterr().err)[0]["event"] == "model call failed"
