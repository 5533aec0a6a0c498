"""What redacting a person's message costs: `redact_message` on 4 KB of prose, English with links and code.

Prints the median microseconds per message over `BENCH_ROUNDS` rounds (default 5) of `BENCH_CALLS` calls each
(default 2000), with no registered secret and with `BENCH_REGISTERED` (default 20) registered ones, and
`redact_text` (the log lines' rules, a superset) on the English text for comparison.
Run: `.venv/bin/python benchmarks/redaction.py`.
"""

from __future__ import annotations

import os
import random
import secrets
import statistics
import string
import timeit

from mindroom.logging_config import redact_message, redact_text, register_secret_values

SIZE = 4096


def _texts() -> dict[str, str]:
    rng = random.Random(1)
    words = " ".join("".join(rng.choices(string.ascii_lowercase, k=rng.randint(2, 9))) for _ in range(1000))
    english = (
        "The quick brown fox jumps over the lazy dog. See https://example.com/page?x=1 for the Estimate, "
        "please. A Bearer of news: my_var_name, task-list and JSON at 10:30. "
    ) * 40
    code = "def f(x_1, y_2):\n    return module.call(x_1 - y_2, url='http://host:8080/a_b')\n" * 60
    return {"random words": words[:SIZE], "english with links": english[:SIZE], "code": code[:SIZE]}


def _microseconds(call: object, rounds: int) -> float:
    calls = int(os.environ.get("BENCH_CALLS", "2000"))
    times = timeit.repeat(call, number=calls, repeat=rounds)  # type: ignore[arg-type]
    return statistics.median(times) / calls * 1e6


def main() -> None:
    """Print the table."""
    rounds = int(os.environ.get("BENCH_ROUNDS", "5"))
    texts = _texts()
    many = int(os.environ.get("BENCH_REGISTERED", "20"))
    for label, registered in (("no registered secret", 0), ("registered", many)):
        register_secret_values(secrets.token_urlsafe(32) for _ in range(registered))
        print(f"{label} ({registered})")
        for name, text in texts.items():
            print(f"  redact_message, {name}: {_microseconds(lambda t=text: redact_message(t), rounds):.0f} µs")
    english = texts["english with links"]
    print(f"redact_text, english with links: {_microseconds(lambda: redact_text(english), 1):.0f} µs")


if __name__ == "__main__":
    main()
