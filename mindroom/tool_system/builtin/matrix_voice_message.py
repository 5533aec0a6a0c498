"""The built-in `matrix_voice_message` tool (MindRoom's name): an agent speaks a short message into a conversation.

`matrix_voice_message(text, room_id=None, thread_id=None, caption=None, companion_message=None)`, as
MindRoom's: the text is spoken by the speech service and sent as the agent's voice message (Ogg/Opus, flagged
as voice, with its length and waveform) to the current conversation by default, another thread
(`thread_id`), the room timeline (`thread_id="room"`), or another room the agent is in. `caption` is the
voice message's text; `companion_message` is sent as a readable text message to the same place first.

The speech service is `voice.tts` (unset: OpenAI's, with `OPENAI_API_KEY`); the agent's tool entry may set
MindRoom's fields over it: `model`, `voice`, `base_url` and `api_key` (`response_format` may only be `opus`,
the format a voice message is). Six voice messages per agent and room per 30 seconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from mindroom.config.voice import TextToSpeechConfig
from mindroom.tool_system.builtin.matrix_access import RateWindow, agent_room, thread_argument
from mindroom.tool_system.builtin.parts import ToolCaller, tool_payload
from mindroom.tool_system.runtime_context import get_runtime_context
from mindroom.tool_system.spec import AgentToolEnvironment, ToolError, ToolSpec

__all__ = ["MAX_SPOKEN_CHARS", "VOICE_TOOL_SETTINGS", "matrix_voice_message", "matrix_voice_message_tools"]

MAX_SPOKEN_CHARS = 4096
"""The most a speech request takes (OpenAI's limit)."""
VOICE_TOOL_SETTINGS = ("api_key", "base_url", "model", "response_format", "voice")
"""The settings an agent's `matrix_voice_message` entry takes (MindRoom's)."""
_TOOL = "matrix_voice_message"
_RATE = RateWindow(6, 30.0)


def _entry(config: Any, agent: str) -> Mapping[str, Any]:
    entity = config.agents.get(agent) if config is not None else None
    entries = entity.tool_entries() if entity is not None else ()
    entry = next((e for e in entries if e.name == _TOOL), None)
    return entry.overrides if entry is not None else {}


def _service(caller: ToolCaller) -> TextToSpeechConfig:
    """`voice.tts` with the agent's tool entry over it; `ToolError` naming the setting at fault."""
    where = f"agents.{caller.agent_name}.tools: '{_TOOL}'"
    settings = _entry(caller.config, caller.agent_name)
    unknown = sorted(set(settings) - set(VOICE_TOOL_SETTINGS))
    if unknown:
        raise ToolError(f"{where}: {', '.join(unknown)} is not a setting (allowed: {', '.join(VOICE_TOOL_SETTINGS)})")
    if settings.get("response_format", "opus") != "opus":
        raise ToolError(f"{where}: response_format must be opus (a voice message is Ogg/Opus)")
    voice = getattr(caller.config, "voice", None)
    base = voice.tts if voice is not None and voice.tts is not None else TextToSpeechConfig()
    values = base.model_dump()
    values.update({key: settings[key] for key in ("model", "voice", "api_key") if settings.get(key)})
    if settings.get("base_url"):
        values.update(provider="openai_compatible", host=str(settings["base_url"]).removesuffix("/audio/speech"))
    try:
        return TextToSpeechConfig.model_validate(values)
    except ValidationError as error:
        problems = "; ".join(str(item["msg"]) for item in error.errors())
        raise ToolError(f"{where}: {problems}") from None


async def matrix_voice_message(
    text: str,
    room_id: str | None = None,
    thread_id: str | None = None,
    caption: str | None = None,
    companion_message: str | None = None,
) -> str:
    """Speak a short message and send it as your voice message in a Matrix room you are in.

    It goes to the current conversation (its thread) by default.

    Args:
        text: What to say, as plain sentences (it is read aloud as written).
        room_id: Room ID or configured room name; the current room by default.
        thread_id: Thread root ID; the current conversation by default, "room" for the room timeline.
        caption: The voice message's text, shown by clients that do not play audio; default "Voice message".
        companion_message: A readable text message sent to the same place before the voice message.
    """
    try:
        spoken = text.strip() if isinstance(text, str) else ""
        if not spoken:
            raise ToolError("text is required and must be non-empty")
        if len(spoken) > MAX_SPOKEN_CHARS:
            raise ToolError(f"text is longer than {MAX_SPOKEN_CHARS} characters; say less")
        where = agent_room(room_id)
        thread = thread_argument(where, thread_id)
        service = _service(where.caller)
        companion = (companion_message or "").strip()
        _RATE.take(where, 2 if companion else 1)
        fields: dict[str, Any] = {}
        if companion:
            fields["companion_event_id"] = await where.client.send_message(where.room_id, companion, thread_root=thread)
        bound = get_runtime_context()
        env = bound.runtime_paths.env_values if bound is not None and bound.runtime_paths is not None else {}
        body = (caption or "").strip() or "Voice message"
        event_id, duration_ms = await where.desk.send_voice(
            where.caller.agent_name, where.room_id, spoken, service, env, body=body, thread_root=thread
        )
    except ToolError as error:
        return tool_payload(_TOOL, "error", message=str(error))
    return tool_payload(
        _TOOL, "ok", room_id=where.room_id, thread_id=thread, event_id=event_id, duration_ms=duration_ms, **fields
    )


def matrix_voice_message_tools(_env: AgentToolEnvironment) -> tuple[ToolSpec, ...]:
    """The `matrix_voice_message` group: `matrix_voice_message(text, ...)`."""
    return (ToolSpec(name=_TOOL, function=matrix_voice_message),)
