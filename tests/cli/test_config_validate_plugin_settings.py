"""`mindroom config validate` refuses plugin settings that do not fit the shape their plugin declares."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from mindroom.cli import app

runner = CliRunner()


def test_config_validate_plugin_settings_misfit_exits_2_naming_key_path_and_plugin(tmp_path: Path) -> None:
    folder = tmp_path / "plugins" / "quota"
    folder.mkdir(parents=True)
    schema = {"type": "object", "properties": {"limit": {"type": "integer", "minimum": 1}}}
    (folder / "mindroom.plugin.json").write_text(json.dumps({"name": "quota", "settings_schema": schema}))
    config = tmp_path / "config.yaml"
    config.write_text("agents:\n  helper: {display_name: Helper}\nplugins:\n  - path: plugins/quota\n    settings:\n"
                      "      limit: 0\n")  # fmt: skip

    result = runner.invoke(app, ["config", "validate", "-c", str(config)])

    assert result.exit_code == 2
    assert "plugins[0].settings.limit: does not satisfy minimum: 1 (plugin 'quota')" in result.stderr
    config.write_text(config.read_text().replace("limit: 0", "limit: 1"))
    assert runner.invoke(app, ["config", "validate", "-c", str(config)]).exit_code == 0
