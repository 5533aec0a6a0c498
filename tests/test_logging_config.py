"""Logging: JSON lines or console text, context bound by the pipeline, library logs included, secrets redacted."""

from __future__ import annotations

import dataclasses
import json
import logging
import subprocess
import sys
from collections.abc import Iterator

import pytest
import structlog

from mindroom.logging_config import (
    configure_logging,
    get_logger,
    redact_message,
    redact_secrets,
    redact_text,
    redact_value,
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


@pytest.mark.parametrize(
    "name",
    ["STRIPE_KEY", "DB_PASS", "POSTGRES_PASSWORD", "MY_PASSWORD_FILE", "GCP_CREDENTIALS", "HF_TOKEN", "APP_SECRET"],
)
def test_register_secret_env_covers_every_secret_name_shape(name):
    value = f"value-of-{name.lower()}-0042"
    register_secret_env({name: value, "MINDROOM_LOG_LEVEL": "value-of-the-log-level"})

    assert redact_text(f"connecting with {value}") == "connecting with [redacted]"
    assert redact_text("value-of-the-log-level") == "value-of-the-log-level"


@pytest.mark.parametrize(
    ("text", "secret", "kept"),
    [
        ("postgres://admin:hunter2-db@db.example:5432/app", "hunter2-db", "postgres://[redacted]@db.example:5432/app"),
        ("clone https://ghtoken-abc@github.com/o/r.git", "ghtoken-abc", "https://[redacted]@github.com/o/r.git"),
        ("GET http://u:p4ss-word@127.0.0.1:8008/x failed", "p4ss-word", "@127.0.0.1:8008/x failed"),
        ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA==", "Authorization: [redacted]"),
        ('{"authorization": "Bearer abc.def.ghi-jkl"}', "abc.def.ghi-jkl", '{"authorization": "[redacted]"}'),
        ("proxy-authorization=Digest zzzzzz", "zzzzzz", "proxy-authorization=[redacted]"),
        ("Cookie: session=abcdef; theme=dark", "abcdef", "Cookie: [redacted]"),
        ("login failed password=hunter2 for @a:b", "hunter2", "password=[redacted] for @a:b"),
        ('{"api_key": "k-123", "model": "gpt"}', "k-123", '"model": "gpt"'),
        ("DB_PASS=swordfish ./run", "swordfish", "DB_PASS=[redacted] ./run"),
        ("url /media?sig=abcdef123&w=1", "abcdef123", "sig=[redacted]&w=1"),
        ("token syt_abcdefghijklmnopqrst_0123", "syt_abcdefghij", "token [redacted]"),
        ("key ghp_abcdefghijklmnopqrstuvwxyz0123", "ghp_abcdefghij", "key [redacted]"),
    ],
)
def test_redact_text_table(text, secret, kept):
    scrubbed = redact_text(text)

    assert secret not in scrubbed
    assert kept in scrubbed


@pytest.mark.parametrize(
    "text",
    [
        "user @user:localhost joined !room:localhost",
        "see https://matrix.to/#/@bob:example.org",
        "http://127.0.0.1:8008/_matrix/client/versions",
        "used 42 max_tokens: 100",
    ],
)
def test_redact_text_leaves_ordinary_text_alone(text):
    assert redact_text(text) == text


def test_redact_text_takes_linear_time_on_long_lines():
    # Backtracking on these 400,000-character lines would take hours: a child that does not finish within the
    # guard fails the test (how fast it is, is for the benchmarks).
    code = (
        "from mindroom.logging_config import redact_text\n"
        "for text in ('a-' * 200_000, 'a ' * 200_000, '://' * 100_000, 'token=' * 50_000, 'key=' * 50_000,"
        " ' _' * 200_000):\n"
        "    redact_text(text)\n"
        "print('done')\n"
    )
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    except subprocess.TimeoutExpired:
        pytest.fail("redacting the long lines had not finished after 300 s")
    assert done.stdout.strip() == "done"


@dataclasses.dataclass(frozen=True)
class _Login:
    user: str
    password: str
    note: object


SYT = "syt_abcdefghijklmnop_0123456789"


@pytest.mark.parametrize(
    "value",
    [
        {"outer": {"inner": [{"deep": ("x", {f"a {SYT}"})}]}},
        [[[[f"Bearer {SYT}"]]]],
        ({"k": frozenset({SYT})},),
        _Login("@a:b", "pw-0000", note={"url": f"https://x:{SYT}@h/"}),
        {"error": RuntimeError(f"token {SYT}")},
        [ValueError("failed", {"password": "short"})],
        KeyError(SYT),
        OSError(13, "denied", f"/tmp/{SYT}"),
        {"raw": SYT.encode()},
        {f"key {SYT}": 1},
    ],
)
def test_redact_value_table(value):
    out = redact_value(value)

    text = repr(out)
    assert "syt_abcdefghijklmnop" not in text and "pw-0000" not in text and "short" not in text
    assert "[redacted]" in text


def test_redact_value_renders_exceptions_as_type_and_redacted_message():
    assert redact_value(RuntimeError(f"token {SYT}")) == "RuntimeError: token [redacted]"
    assert redact_value(ValueError()) == "ValueError"


def test_redact_value_replaces_what_is_nested_too_deep_instead_of_passing_it():
    deep: list = []
    cursor = deep
    for _ in range(50):
        cursor.append([])
        cursor = cursor[0]
    cursor.append("value-never-inspected")
    cyclic: list = []
    cyclic.append(cyclic)

    assert "value-never-inspected" not in repr(redact_value(deep))
    assert "[redacted]" in repr(redact_value(deep))
    assert "[redacted]" in repr(redact_value(cyclic))


def test_redact_value_keeps_plain_values_and_types():
    value = {"count": 3, "ratio": 0.5, "ok": True, "none": None, "names": ("a", "b"), "items": ["x"]}

    assert redact_value(value) == value
    assert redact_value(("a",)) == ("a",)


def test_redact_secrets_covers_exceptions_and_deep_values_in_log_fields():
    event = {"event": "failed", "error": RuntimeError(f"token {SYT}"), "data": [[[[[[[[[[SYT]]]]]]]]]]}

    out = redact_secrets(None, "error", event)

    assert SYT not in repr(out)


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


# A bare `key` (and a name ending in `_key`/`-key`/`.key`) names a secret; a word that only ends in
# "key" (`monkey`, `hotkey`, `turkey`) does not.
@pytest.mark.parametrize(
    ("text", "secret", "kept"),
    [
        ("upstream refused key=k3y-value-0042", "k3y-value-0042", "key=[redacted]"),
        ('{"key": "k3y-value-0042", "model": "gpt"}', "k3y-value-0042", '"key": "[redacted]", "model": "gpt"'),
        ("{'key': 'k3y-value-0042'}", "k3y-value-0042", "'key': '[redacted]'"),
        ("KEY: k3y-value-0042", "k3y-value-0042", "KEY: [redacted]"),
        ("signing_key=k3y-value-0042 done", "k3y-value-0042", "signing_key=[redacted] done"),
        ("STRIPE_KEY=k3y-value-0042", "k3y-value-0042", "STRIPE_KEY=[redacted]"),
        ("x-key: k3y-value-0042", "k3y-value-0042", "x-key: [redacted]"),
    ],
)
def test_redact_text_blanks_a_bare_key(text, secret, kept):
    scrubbed = redact_text(text)

    assert secret not in scrubbed
    assert kept in scrubbed


@pytest.mark.parametrize(
    "text",
    ["monkey=george", "hotkey=ctrl-k", "turkey: roasted", "keyboard=us", "keys=3", "key_id=12", "the key is here"],
)
def test_redact_text_keeps_words_that_only_end_in_key(text):
    assert redact_text(text) == text


def test_redact_value_blanks_fields_named_key():
    out = redact_value({"key": "k3y-value-0042", "signing_key": "other-value-77", "monkey": "george", "keys": 3})

    assert out == {"key": "[redacted]", "signing_key": "[redacted]", "monkey": "george", "keys": 3}


def test_json_log_lines_never_hold_a_bare_key(capsys):
    configure_logging("INFO", json=True)

    get_logger("mindroom.test").warning("upstream failed", detail="GET /v1?x=1 key=k3y-value-0042", key="k3y-2-0042")
    logging.getLogger("some.dependency").warning('rejected {"key": "k3y-3-0042"}')

    text = capsys.readouterr().err
    assert len(_json_lines(text)) == 2
    assert "k3y-value-0042" not in text and "k3y-2-0042" not in text and "k3y-3-0042" not in text


def test_hooks_snapshot_never_holds_a_bare_key(tmp_path):
    import asyncio

    from mindroom.daemon.hooks_snapshot import write_hooks_snapshot
    from mindroom.hooks import EVENT_MESSAGE_RECEIVED, HookRegistry, MessageReceivedContext
    from mindroom.hooks.execution import emit
    from mindroom.plugins import load_plugin_dir

    plugin = tmp_path / "leaky"
    plugin.mkdir()
    (plugin / "mindroom.plugin.json").write_text(json.dumps({"name": "leaky", "hooks_module": "hooks.py"}))
    (plugin / "hooks.py").write_text(
        "from mindroom.hooks import hook\n\n"
        '@hook("message:received")\n'
        "async def leak(ctx):\n"
        '    raise RuntimeError(\'upstream said {"key": "k3y-value-0042"} for key=k3y-2-0042\')\n'
    )
    registry = HookRegistry.from_plugins([load_plugin_dir(plugin)])
    asyncio.run(emit(registry, EVENT_MESSAGE_RECEIVED, MessageReceivedContext()))
    path = tmp_path / "state" / "hooks.json"

    write_hooks_snapshot(path, registry, running=True)

    (row,) = json.loads(path.read_text())["hooks"]
    assert row["last_error"].startswith("RuntimeError: upstream said")
    assert "k3y-value-0042" not in path.read_text() and "k3y-2-0042" not in path.read_text()


def test_debug_enabled_follows_the_configured_level():
    from mindroom.logging_config import debug_enabled

    configure_logging("DEBUG", json=True)
    assert debug_enabled() is True
    configure_logging("INFO", json=True)
    assert debug_enabled() is False
    configure_logging("WARNING", json=True)
    assert debug_enabled() is False


RECOVERY = "EsTc 5rr1 K1RQ 4CEu 1PDT N8bn TwF2 C6jP YARg yU8k J2vg 6ByT"


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        ("id AKIAIOSFODNN7EXAMPLE, ok", "id [redacted], ok"),
        ("(ASIAY34FZKBOKMUTVV7A)", "([redacted])"),
        (f"key: {RECOVERY}.", "key: [redacted]."),
        (f"key {RECOVERY.replace(' ', '')}!", "key [redacted]!"),
        ("use sk-proj-abcdefghijklmnop", "use [redacted]"),
        ("a ghp_abcdefghijklmnopqrstuvwxyz0123 b", "a [redacted] b"),
        ("t=syt_abcdefghijklmnopqrst_0123 x", "t=[redacted] x"),
        ("x github_pat_11ABCDEFG0123456789_abcdefghij y", "x [redacted] y"),
        ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3In0.abcdefghijkl end", "jwt [redacted] end"),
        ("-H 'Bearer abcdefghijklmnop'", "-H '[redacted]'"),
        ("clone https://me:hunter22@example.org/r.git", "clone https://[redacted]@example.org/r.git"),
    ],
)
def test_redact_message_replaces_credential_shapes(text, redacted):
    assert redact_message(text) == redacted


@pytest.mark.parametrize(
    "text",
    [
        "AKIAIOSFODNN7EXAMPL is one short",
        "akiaiosfodnn7example in lower case",
        "XAKIAIOSFODNN7EXAMPLE inside a word",
        "AKIAIOSFODNN7EXAMPLEX one long",
        "AKIAIOSFODNN7EXAMPLE_suffix",
        " ".join(RECOVERY.split()[:11]) + " is 11 groups",
        "EsTimate, Establish",
        "task-list-management-system and disk-usage-monitoring",
        "the key: C major; password: swordfish",  # a name before a value is for the logs' rules, not a message's
        "see https://example.org/a:b@c and mailto:someone@example.org",
    ],
)
def test_redact_message_keeps_near_misses_as_written(text):
    assert redact_message(text) == text


def test_redact_message_replaces_a_registered_value_whole_even_inside_a_longer_one():
    register_secret_values(["shared-secret-0042", "shared-secret-0042-and-more"])

    assert redact_message("a shared-secret-0042-and-more b") == "a [redacted] b"
    assert redact_message("a shared-secret-004 b") == "a shared-secret-004 b"
