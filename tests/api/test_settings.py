"""The app's settings and guards: binds beyond loopback need keys, keys from the environment (and `*_FILE`),
the key generated whenever the environment sets none (and the explicit opt-out), rate limits and the body cap,
the CLI's options and banner."""

from __future__ import annotations

import stat

import pytest
from structlog.testing import capture_logs

from mindroom.api.keys import KEY_FILENAME, dashboard_key, with_api_key
from mindroom.api.limits import RateLimiter
from mindroom.api.openai_protocol import OpenAIError, convert_messages, derive_session_id, parse_request
from mindroom.api.settings import ApiSettings, BindRefusedError, api_settings, is_loopback
from mindroom.cli.run import ApiBanner, api_lines, api_options
from mindroom.config.environment import daemon_environment


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "127.0.0.5"])
def test_settings_loopback_binds_need_no_key(host):
    api_settings({}, host=host).check_bind()
    assert is_loopback(host)


@pytest.mark.parametrize(
    ("env", "refused"),
    [
        ({}, True),
        ({"OPENAI_COMPAT_API_KEYS": "k"}, True),  # /api would still be open
        ({"MINDROOM_API_KEY": "d"}, False),
        ({"MINDROOM_API_KEY": "d", "OPENAI_COMPAT_ALLOW_UNAUTHENTICATED": "true"}, True),  # /v1 open to anyone
        (
            {"MINDROOM_API_KEY": "d", "OPENAI_COMPAT_ALLOW_UNAUTHENTICATED": "true", "OPENAI_COMPAT_API_KEYS": "k"},
            False,
        ),
    ],
)
def test_settings_refuse_a_bind_beyond_loopback_without_keys(env, refused):
    settings = api_settings(env, host="0.0.0.0")
    if refused:
        with pytest.raises(BindRefusedError, match=r"0\.0\.0\.0"):
            settings.check_bind()
    else:
        settings.check_bind()


@pytest.mark.parametrize(
    "host", ["192.168.1.5", "10.0.0.7", "172.16.0.1", "::", "[::]", "myhost.lan", "127.0.0.1.nip.io", "localhost.lan"]
)
@pytest.mark.parametrize("env", [{}, {"MINDROOM_API_ALLOW_UNAUTHENTICATED": "true"}, {"OPENAI_COMPAT_API_KEYS": "k"}])
def test_settings_refuse_a_lan_or_named_bind_without_a_key_opted_out_or_not(host, env):
    settings = api_settings(env, host=host)

    assert not is_loopback(host)
    with pytest.raises(BindRefusedError, match="MINDROOM_API_KEY") as refused:
        settings.check_bind()
    assert host in str(refused.value)
    api_settings({**env, "MINDROOM_API_KEY": "d"}, host=host).check_bind()  # the key is what it lacked


def test_settings_read_keys_hosts_and_limits_and_hide_secrets():
    settings = api_settings(
        {
            "OPENAI_COMPAT_API_KEYS": " a-key , ,b-key ",
            "MINDROOM_API_KEY": "dash-secret-value",
            "MINDROOM_PUBLIC_URL": "https://chat.example.org/x",
            "MINDROOM_DASHBOARD_ALLOWED_HOSTS": "Box.LAN",
            "OPENAI_COMPAT_API_KEY_REQUESTERS": "not json",
            "MINDROOM_API_RATE_LIMIT": "30",
        }
    )

    assert settings.openai_keys == ("a-key", "b-key")
    assert settings.allowed_hosts == {"chat.example.org", "box.lan"}
    assert settings.requesters is None  # invalid: every keyed request gets 503
    assert settings.rate_per_minute == 30
    assert "dash-secret-value" not in repr(settings) and "a-key" not in repr(settings)


def test_settings_keys_may_come_from_files(tmp_path, monkeypatch):
    (tmp_path / "v1").write_text("file-v1-key\n")
    (tmp_path / "dash").write_text("file-dash-key\n")
    monkeypatch.setenv("OPENAI_COMPAT_API_KEYS_FILE", str(tmp_path / "v1"))
    monkeypatch.setenv("MINDROOM_API_KEY_FILE", str(tmp_path / "dash"))
    (tmp_path / "config.yaml").write_text("agents: {}\n")

    values = daemon_environment(tmp_path / "config.yaml").values
    settings = api_settings(values)

    assert settings.openai_keys == ("file-v1-key",) and settings.api_key == "file-dash-key"


def test_dashboard_key_is_made_once_private_and_read_back(tmp_path):
    first = dashboard_key(tmp_path)
    second = dashboard_key(tmp_path)

    assert first.created and not second.created
    assert first.value == second.value and len(first.value) >= 24
    assert stat.S_IMODE(first.path.stat().st_mode) == 0o600
    lines = api_lines(ApiBanner("http://127.0.0.1:8765", first))
    assert any(first.value in line and "shown once" in line for line in lines)
    later = api_lines(ApiBanner("http://127.0.0.1:8765", second))
    assert not any(first.value in line for line in later)
    assert later[0] == "Dashboard: http://127.0.0.1:8765/"


def test_with_api_key_generates_a_private_key_whenever_the_environment_sets_none(tmp_path):
    bare = api_settings({}, host="127.0.0.1", port=8765)

    keyed, key = with_api_key(bare, tmp_path)
    again, later = with_api_key(bare, tmp_path)

    assert bare.api_key is None
    assert key is not None and key.created and key.path == tmp_path / KEY_FILENAME
    assert keyed.api_key == key.value == (tmp_path / KEY_FILENAME).read_text().strip()
    assert stat.S_IMODE(key.path.stat().st_mode) == 0o600
    assert later is not None and not later.created and again.api_key == keyed.api_key
    assert (keyed.host, keyed.port) == ("127.0.0.1", 8765)


def test_with_api_key_keeps_the_operators_key_and_makes_no_file(tmp_path):
    settings = api_settings({"MINDROOM_API_KEY": "operator-key-1"})

    assert with_api_key(settings, tmp_path) == (settings, None)
    assert not (tmp_path / KEY_FILENAME).exists()


def test_with_api_key_opted_out_stays_keyless_with_a_warning(tmp_path):
    settings = api_settings({"MINDROOM_API_ALLOW_UNAUTHENTICATED": "yes"})

    with capture_logs() as logs:
        opened, key = with_api_key(settings, tmp_path)

    assert opened.api_key is None and key is None
    assert not (tmp_path / KEY_FILENAME).exists()
    [warning] = [log for log in logs if log["log_level"] == "warning"]
    assert warning["variable"] == "MINDROOM_API_ALLOW_UNAUTHENTICATED"
    assert "without a key" in warning["event"]


@pytest.mark.parametrize(("value", "served"), [(None, False), ("false", False), ("true", True), ("1", True)])
def test_settings_api_docs_are_off_unless_enabled(value, served):
    env = {} if value is None else {"MINDROOM_ENABLE_API_DOCS": value}

    assert api_settings(env).docs is served


def test_api_options_take_the_old_metrics_names_as_aliases():
    assert api_options(None, None, True) == api_options("127.0.0.1", 8765, True)
    aliased = api_options(None, None, True, metrics_port=9464, metrics_host="127.0.0.2")
    assert (aliased.host, aliased.port, aliased.enabled) == ("127.0.0.2", 9464, True)
    assert api_options(None, 9000, False, metrics_port=9464).port == 9000
    assert api_options(None, None, False).enabled is False


def test_rate_limiter_allows_a_burst_then_refills():
    now = [0.0]
    limiter = RateLimiter(60, burst=2, clock=lambda: now[0])

    assert [limiter.retry_after("k") for _ in range(2)] == [None, None]
    wait = limiter.retry_after("k")
    assert wait is not None and 0.9 < wait <= 1.0
    assert limiter.retry_after("other") is None  # per key
    now[0] = 1.0
    assert limiter.retry_after("k") is None


def test_openai_messages_convert_with_system_first_and_history_before_the_last_user():
    request = parse_request(
        b'{"model": "a", "temperature": 0.2, "messages": [{"role": "developer", "content": "Rules."},'
        b'{"role": "user", "content": "one"}, {"role": "assistant", "content": "two"},'
        b'{"role": "user", "content": [{"type": "text", "text": "three"}]}]}'
    )
    talk = convert_messages(request.messages)

    assert talk.prompt == "Rules.\n\nthree"
    assert talk.history == (("user", "one"), ("assistant", "two"))
    with pytest.raises(OpenAIError, match="Invalid request body"):
        parse_request(b'"just a string"')


def test_openai_session_ids_follow_the_headers():
    assert derive_session_id("ns", "helper", {"x-session-id": "s1"}) == ("ns:s1", False)
    assert derive_session_id("ns", "helper", {"x-librechat-conversation-id": "c9"}) == ("ns:c9:helper", False)
    ephemeral, new = derive_session_id("ns", "helper", {})
    assert new and ephemeral.startswith("ns:ephemeral:")
    mapped, _ = derive_session_id("ns", "helper", {"x-session-id": "s1"}, requester="@ada:example.org")
    assert mapped.startswith("requester:") and mapped.endswith(":ns:s1")


def test_settings_url_names_loopback_for_a_wildcard_bind():
    assert ApiSettings(host="0.0.0.0", port=8765).url == "http://127.0.0.1:8765"
    assert ApiSettings(host="::1", port=1).url == "http://[::1]:1"


def test_redacted_hides_secret_fields_and_forgets_its_memo_when_a_secret_is_registered():
    from mindroom.api.operator import redacted
    from mindroom.logging_config import register_secret_values

    value = {"name": "helper", "password": "hunter2", "note": "the value plain-value-7777x", "rows": [{"k": 1}]}
    first = redacted(value)
    register_secret_values(["plain-value-7777x"])
    second = redacted(value)

    assert first["name"] == "helper" and first["password"] == "[redacted]" and first["rows"] == [{"k": 1}]
    assert first["note"] == "the value plain-value-7777x"
    assert second["note"] == "the value [redacted]"  # not the memo of the earlier read
