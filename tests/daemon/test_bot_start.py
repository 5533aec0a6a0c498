"""Starting bots: a lost crypto store keeps that bot down and the others start; which bots may get a new device."""

from __future__ import annotations

import asyncio

import pytest
from structlog.testing import capture_logs

from mindroom.daemon.bot_start import BotDown, NewDevices, start_bots, tell_admin_room
from mindroom.matrix import MatrixCryptoStoreError, MatrixLoginError


class _Client:
    def __init__(self) -> None:
        self.closed = False

    async def close(self) -> None:
        self.closed = True


class _Bot:
    """A bot whose start logs in, or fails as its Matrix client would."""

    def __init__(self, name: str, failure: BaseException | None = None) -> None:
        self.name = name
        self.client = _Client()
        self.failure = failure
        self.started = False

    async def start(self) -> str:
        await asyncio.sleep(0)
        if self.failure is not None:
            raise self.failure
        self.started = True
        return f"@{self.name}:localhost"


def _lost(name: str) -> MatrixCryptoStoreError:
    return MatrixCryptoStoreError(name, f"/data/crypto/{name}/crypto.db", "does not exist")


@pytest.mark.asyncio
async def test_start_bots_keeps_a_bot_with_a_lost_store_down_and_starts_the_rest() -> None:
    bots = {"router": _Bot("router"), "helper": _Bot("helper", _lost("helper")), "scribe": _Bot("scribe")}

    with capture_logs() as logs:
        down = await start_bots(bots)

    assert list(down) == ["helper"] and down["helper"].path == "/data/crypto/helper/crypto.db"
    assert bots["router"].started and bots["scribe"].started and bots["helper"].client.closed
    (line,) = [entry for entry in logs if entry["event"].startswith("bot not started")]
    assert line["agent"] == "helper" and "mindroom run --new-device helper" in line["fix"]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "bots",
    [
        {"router": _Bot("router", _lost("router")), "helper": _Bot("helper")},
        {"router": _Bot("router"), "helper": _Bot("helper", MatrixLoginError("helper", ["refused"]))},
    ],
)
async def test_start_bots_raises_a_lost_router_store_and_every_other_failure(bots: dict[str, _Bot]) -> None:
    with pytest.raises((MatrixCryptoStoreError, MatrixLoginError)):
        await start_bots(bots)


def test_new_devices_from_the_flag_and_the_environment() -> None:
    assert NewDevices.from_settings(None, ["helper", "scribe"]) == NewDevices(bots=frozenset({"helper", "scribe"}))
    every = NewDevices.from_settings("1")
    assert every.allows("router") and every.allows("anyone")
    assert NewDevices.from_settings("true", ["x"]).every
    named = NewDevices.from_settings("helper, scribe", ["critic"])
    assert named.bots == {"helper", "scribe", "critic"} and not named.every
    assert named.allows("scribe") and not named.allows("router")
    assert NewDevices.from_settings("0") == NewDevices() == NewDevices.from_settings("")
    assert named.unknown(["router", "helper", "scribe"]) == ["critic"]


@pytest.mark.asyncio
async def test_admin_notice_names_the_bot_and_the_fix_without_the_data_directory() -> None:
    sent: list[str] = []

    async def send(text: str) -> None:
        sent.append(text)

    await tell_admin_room({"helper": BotDown("helper", "/srv/secret-place/crypto/helper/crypto.db", "gone")}, send)

    (notice,) = sent
    assert "helper is not running" in notice and "`mindroom run --new-device helper`" in notice
    assert "crypto/helper/crypto.db" in notice and "/srv/secret-place" not in notice
