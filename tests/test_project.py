"""Project-level promises: the README's two commands and what CI runs."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    return [block.strip() for block in re.findall(r"```bash\n(.*?)```", text, re.DOTALL)]


def test_readme_gives_exactly_two_commands():
    commands = _readme_commands()
    assert len(commands) == 2
    assert all("\n" not in command for command in commands)
    assert all(command.startswith("python3 -m venv .venv") for command in commands)


def test_ci_runs_the_readme_test_command_exactly():
    test_command = _readme_commands()[1]
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert test_command in ci_lines
