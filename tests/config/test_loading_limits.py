"""`config.yaml` limits: size, alias expansion, nesting and encoding fail fast with a `ConfigError` naming the file."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from mindroom.config import load_config, parse_config_text
from mindroom.config.loading import MAX_CONFIG_BYTES
from mindroom.errors import ConfigError

VALID = "agents:\n  helper: {display_name: Helper, rooms: [lobby]}\n"


def _laughs(levels: int) -> str:
    """A "billion laughs" file: each level is nine aliases of the one before, so it expands to 9**levels values."""
    lines = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 9)}]" for n in range(1, levels)]
    return "\n".join(lines) + "\n"


@contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """Fail the test (instead of hanging the run) when the block takes longer than `seconds`."""

    def expired(_signum: int, _frame: object) -> None:
        raise TimeoutError(f"took longer than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (_laughs(9), "aliases expand"),
        (_laughs(7), "aliases expand"),
        ("big: &big " + "x" * 500_000 + "\nlist: [" + ", ".join(["*big"] * 40) + "]\n", "characters"),
        ("a: " + "[" * 100 + "]" * 100 + "\n", "nests deeper"),
        ("a: " + "[" * 20_000 + "]" * 20_000 + "\n", "nests deeper"),
        ("a: &a [*a]\n", "refers to the node that contains it"),
    ],
    ids=["billion-laughs", "million-laughs", "aliased-long-string", "deep", "very-deep", "recursive-alias"],
)
def test_loading_refuses_expanding_or_deep_yaml_fast_naming_the_file(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(text)

    # The deadline is the check: an unbounded parse of these never ends (a billion nodes, or recursion).
    with _deadline(10), pytest.raises(ConfigError) as caught:
        load_config(path, env={})

    assert caught.value.path == path and str(path) in str(caught.value)
    assert problem in str(caught.value)


def test_loading_refuses_a_file_over_the_size_cap_without_parsing_it(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(VALID + "# " + "x" * MAX_CONFIG_BYTES + "\n")

    with pytest.raises(ConfigError, match="larger than 1 MiB") as caught:
        load_config(path, env={})

    assert caught.value.path == path
    with pytest.raises(ConfigError, match="larger than 1 MiB"):
        parse_config_text(path.read_text(), path, env={})


def test_loading_refuses_a_file_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_bytes(VALID.encode() + b"# caf\xe9\n")

    with pytest.raises(ConfigError, match="not UTF-8") as caught:
        load_config(path, env={})

    assert caught.value.path == path


def test_loading_still_accepts_ordinary_anchors_and_merge_keys(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        "agents:\n  helper: &agent {display_name: Helper, rooms: [lobby]}\n"
        "  scribe:\n    <<: *agent\n    display_name: Scribe\n"
    )

    config = load_config(path, env={})

    assert config.agents["scribe"].rooms == ["lobby"] and config.agents["scribe"].display_name == "Scribe"
