"""A voice reply as matrix-js-sdk (npm, with its Rust crypto) reads it: a second device of the person, on
the SDK Element is built on, decrypts the agent's voice message in the encrypted room and finds an `m.audio`
message flagged as voice, with the recording's length, its waveform and its encrypted file, in the thread."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from mindroom.testing.model_speech import ogg_opus_tone
from tests.integration.conftest import E2E
from tests.integration.test_voice_replies import _kind, _send_voice, _tts, _world

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

JS_SDK_PACKAGE = "matrix-js-sdk@37.5.0"
NPM_PREFIX = Path(__file__).resolve().parents[2] / ".cache" / "js-sdk"
READER = Path(__file__).with_name("js") / "voice_reader.mjs"


def _reader_script() -> Path:
    """The reader beside its installed SDK (an ES module resolves packages from its own folder)."""
    if not (NPM_PREFIX / "node_modules" / "matrix-js-sdk" / "package.json").is_file():
        npm = shutil.which("npm")
        assert npm is not None, "this test needs Node.js and npm"
        subprocess.run(
            [npm, "install", "--no-save", "--no-audit", "--no-fund", "--prefix", str(NPM_PREFIX), JS_SDK_PACKAGE],
            check=True, capture_output=True, timeout=600,
        )  # fmt: skip
    script = NPM_PREFIX / READER.name
    script.write_text(READER.read_text())
    return script


async def _line(process: asyncio.subprocess.Process, timeout: float) -> str:
    """The reader's next line of its own (marked `READER `), passing over the crypto's log lines."""
    assert process.stdout is not None

    async def read() -> str:
        assert process.stdout is not None
        while line := (await process.stdout.readline()).decode():
            if line.startswith("READER "):
                return line.removeprefix("READER ").strip()
        return ""

    line = await asyncio.wait_for(read(), timeout)
    assert line, "the reader ended early (its stderr is in the test's folder, js-reader.log)"
    return line


async def test_voice_js_sdk_reads_the_encrypted_voice_reply_as_a_voice_message(e2e: E2E):
    human, room_id, agent_id = await _world(e2e, {"tts": _tts(e2e), "replies": True})
    e2e.model_server.speech.speak_for(1.2)
    node = shutil.which("node")
    assert node is not None, "this test needs Node.js"
    command = [node, str(_reader_script()), e2e.homeserver.url, human.user_id, human.password, room_id, agent_id]
    with (e2e.root / "js-reader.log").open("w") as errors:
        reader = await asyncio.create_subprocess_exec(*command, stdout=subprocess.PIPE, stderr=errors)
    try:
        assert await _line(reader, 60) == "ready"
        root = await _send_voice(human, room_id, ogg_opus_tone(0.5))
        voice = await human.wait_for(_kind(root, agent_id, "m.audio"))
        read = json.loads(await _line(reader, 60))
    finally:
        reader.kill()
        await reader.wait()

    assert read["encrypted"] is True and read["decryptionFailed"] is False
    assert (read["type"], read["msgtype"], read["isAudio"], read["voice"]) == ("m.room.message", "m.audio", True, {})
    assert read["info"]["mimetype"] == "audio/ogg" and read["info"]["duration"] == voice["content"]["info"]["duration"]
    assert (
        1180 <= read["audio"]["duration"] <= 1220
        and read["audio"]["waveform"] == voice["content"]["org.matrix.msc1767.audio"]["waveform"]
    )
    assert read["file"]["url"] == voice["content"]["file"]["url"] and read["threadRoot"] == root
