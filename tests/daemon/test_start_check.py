"""`check_start`: what a start refuses (errors with key path, line and fix) and what it only warns about, on real
files, real plugin folders and the real tool catalogue."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from mindroom.config.environment import DaemonEnvironment
from mindroom.constants import RuntimePaths
from mindroom.daemon.start_check import check_start
from mindroom.daemon.startup.phases import prepare_live_state
from mindroom.errors import ConfigError

AGENT = "agents:\n  helper:\n    display_name: Helper\n"


def _paths(tmp_path: Path, text: str, env: dict[str, str] | None = None) -> RuntimePaths:
    (tmp_path / "config.yaml").write_text(text)
    return RuntimePaths(config_path=tmp_path / "config.yaml", storage_root=tmp_path / "data", env_values=env or {})


def test_check_start_refuses_a_tool_name_with_a_suffix_naming_the_item_its_line_and_the_fix(tmp_path: Path) -> None:
    paths = _paths(
        tmp_path, "agents:\n  helper:\n    display_name: Helper\n    tools:\n      - calculator\n      - shells\n"
    )

    checked = check_start(paths)

    (error,) = checked.errors
    assert error.text == "agents.helper.tools[1] (line 6): unknown tool 'shells'"
    assert "mindroom tools list" in error.fix
    assert checked.build is None and checked.config is not None
    assert str(checked.error()) == f"invalid config {paths.config_path}:\n  {error}"


def test_check_start_refuses_a_toolkit_setting_one_letter_off(tmp_path: Path) -> None:
    paths = _paths(
        tmp_path,
        f"{AGENT}    tools:\n      - duckduckgo:\n          fixed_max_resultz: 3\n",
    )

    (error,) = check_start(paths).errors

    assert error.text.startswith("agents.helper.tools[0] (line 5): 'duckduckgo': setting 'fixed_max_resultz' is not")
    assert "fixed_max_results" in error.text  # the allowed settings are listed
    assert error.fix.startswith("fix or remove the setting")


def test_check_start_refuses_a_name_offered_only_by_mindrooms_hosted_service(tmp_path: Path) -> None:
    paths = _paths(tmp_path, "agents:\n  helper:\n    display_name: Helper\n    tools: [agent_vault_access]\n")

    (error,) = check_start(paths).errors

    assert error.text.startswith("agents.helper.tools[0] (line 4): 'agent_vault_access' is not offered here")


def test_check_start_warns_of_a_missing_package_and_a_key_not_used_here_and_starts(tmp_path: Path) -> None:
    paths = _paths(
        tmp_path,
        "agents:\n  helper:\n    display_name: Helper\n    tools: [tavily, calculator]\n    cheap_model: default\n",
    )

    checked = check_start(paths)

    assert checked.errors == () and checked.build is not None
    by_topic = {finding.topic: finding for finding in checked.warnings}
    assert by_topic["tools"].text.startswith("agents.helper.tools: 'tavily' cannot run here (missing package")
    assert by_topic["tools"].fix.startswith("mindroom tools install tavily")
    assert by_topic["notice"].text.startswith("agents.helper.cheap_model (line 5): ")


def test_check_start_warns_of_a_plugin_that_does_not_load_and_of_the_names_it_may_have_given(tmp_path: Path) -> None:
    plugin = tmp_path / "plugins" / "broken"
    plugin.mkdir(parents=True)
    (plugin / "mindroom.plugin.json").write_text(json.dumps({"name": "broken", "tools_module": "tools.py"}))
    (plugin / "tools.py").write_text("import not_a_module_anywhere\n")
    paths = _paths(
        tmp_path, "agents:\n  helper:\n    display_name: Helper\n    tools: [broken_tool]\nplugins: [plugins/broken]\n"
    )

    checked = check_start(paths)

    assert checked.errors == ()
    texts = [finding.text for finding in checked.warnings]
    assert any(text.startswith("plugin 'broken'") and "not_a_module_anywhere" in text for text in texts)
    assert "agents.helper.tools: unknown tool 'broken_tool'; the agent runs without it" in texts


def test_check_start_reports_a_config_that_does_not_load_with_the_loaders_line(tmp_path: Path) -> None:
    paths = _paths(tmp_path, "agents:\n  helper:\n    display_name: Helper\n    temprature: 0.2\n")

    checked = check_start(paths)

    assert checked.config is None
    assert [finding.text.split(":")[0] for finding in checked.errors] == ["agents.helper.temprature (line 4)"]


@pytest.mark.asyncio
async def test_live_state_phase_refuses_what_check_start_refuses_and_logs_the_notices(tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    paths = _paths(bad, "agents:\n  helper:\n    display_name: Helper\n    tools: [calculatorr]\n")
    with pytest.raises(ConfigError) as raised:
        await prepare_live_state(DaemonEnvironment(paths.config_path, paths.storage_root, {}))
    assert str(raised.value) == str(check_start(paths).error())

    good = tmp_path / "good"
    good.mkdir()
    paths = _paths(good, "agents:\n  helper:\n    display_name: Helper\n    cheap_model: default\n")
    with capture_logs() as logs:
        await prepare_live_state(DaemonEnvironment(paths.config_path, paths.storage_root, {}))
    warned = [entry["warning"] for entry in logs if entry["event"] == "config warning"]
    assert [str(finding) for finding in check_start(paths).warnings if finding.topic == "notice"] == warned
    assert warned and warned[0].startswith("agents.helper.cheap_model (line 4): ")


def test_check_start_refuses_a_database_url_run_cannot_use_naming_the_variable_not_the_password(tmp_path: Path):
    url = "postgresql+psycopg://mindroom:s3cret-pw@db.example/mindroom"  # SQLAlchemy's spelling, not a libpq URL
    paths = _paths(tmp_path, f"{AGENT}    tools: [calculatorr]\n", {"MINDROOM_DATABASE_URL": url})

    checked = check_start(paths)

    state, tools = checked.errors
    assert state.text == "MINDROOM_DATABASE_URL: the database URL's scheme 'postgresql+psycopg' is not supported;" + (
        " use postgresql://"
    )
    assert state.fix.startswith("set MINDROOM_DATABASE_URL to a postgresql:// URL") and state.topic == "state"
    assert tools.text == "agents.helper.tools[0] (line 4): unknown tool 'calculatorr'"  # the rest is checked too
    assert "s3cret-pw" not in str(checked.error()) and checked.build is None
