"""Module-level tools for the isolation tests: a worker process imports them by name."""

import os
import time

from mindroom.tool_system.spec import ToolError


def worker_pid() -> int:
    """The process the call ran in."""
    return os.getpid()


def echo(text: str, times: int = 1) -> str:
    """`text` repeated."""
    return text * times


async def async_echo(text: str) -> str:
    """`text`, from a coroutine function."""
    return text


def burn() -> None:
    """Spin forever on the CPU."""
    while True:
        pass


def hog() -> int:
    """Allocate until memory runs out."""
    chunks = []
    while True:
        chunks.append(bytearray(16 * 1024 * 1024))


def crash() -> None:
    """Die without answering."""
    os._exit(3)


def refuse() -> None:
    """Refuse like a tool does."""
    raise ToolError("not today")


def nap_noted(seconds: float, note: str) -> str:
    """Write this worker's pid into the file `note`, then sleep and answer."""
    with open(note + ".part", "w") as handle:
        handle.write(str(os.getpid()))
    os.replace(note + ".part", note)  # whole or absent: a reader never sees half a pid
    time.sleep(seconds)
    return "rested"


def nap_span(seconds: float) -> list[float]:
    """Sleep; answer this worker's pid and when the nap began and ended (the wall clock every process shares)."""
    began = time.time()
    time.sleep(seconds)
    return [os.getpid(), began, time.time()]


def shout() -> str:
    """Print to stdout (which must not reach the answer pipe), then answer."""
    print("noise on stdout", flush=True)
    return "answered"
