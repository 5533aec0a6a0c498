"""Settings from chat: `!model`, `!room_model`, `!thread_mode`, `!instructions` and `!config` (MindRoom's names),
and `!voice` (voice replies in a room).

Anyone the daemon admits may see the settings; only `administrators` may change them (and `!config` answers
only when `authorization.config_command_enabled` is on, and sets only the keys `mindroom.config.chat_settable`
lists). A change names what it overrides, is checked as config is, and is answered with what changed; `reset`
(or `!config reset <path>`) goes back to `config.yaml`.
The orchestrator registers these with the `SettingsChanger` of the run (`mindroom.daemon.chat_settings`).
"""

from __future__ import annotations

import json
import time
from typing import Any, Protocol

import yaml

from mindroom.bots.commands.table import Command, is_administrator
from mindroom.bots.runtime import Entity, LiveState
from mindroom.config.effective import EffectiveConfig, EffectiveValue, hidden
from mindroom.config.loading import format_key_path
from mindroom.config.overrides import Override, OverrideScope, parse_key_path
from mindroom.errors import ConfigError
from mindroom.hooks.context import MessageEnvelope

__all__ = ["REFUSED", "SettingsChanger", "settings_commands"]


REFUSED = "❌ Only administrators may change settings."
_RESETS = ("reset", "clear")
_SHOWS = ("", "list", "show", "status")
_REDACTION_MARKERS = ("***",)
_SOURCES = (("config.yaml", "from config.yaml"), ("chat", "from chat"), ("default", "defaults"))
_MAX_LINES = 150


class SettingsChanger(Protocol):
    """Where a change goes: checked, kept in the state, made live."""

    async def change(self, override: Override) -> list[str]:
        """Check, keep and apply `override`; the problems when it is refused (then nothing changed)."""

    async def reset(self, slot: tuple[str, str, str, str], by: str) -> bool:
        """Drop the override of `slot`; False when there was none."""

    async def effective(self, live: LiveState) -> EffectiveConfig:
        """The config in force in `live`, value by value with its source (`ConfigError` if config.yaml is broken)."""


def _models(live: LiveState) -> str:
    return ", ".join(f"`{name}`" for name in sorted(live.config.models)) or "none"


def _shown(override: Override | None, fallback: str) -> str:
    if override is None:
        return fallback
    return f"`{override.value}` (set from chat by {override.set_by})"


def _describe_model(live: LiveState, name: str) -> str:
    model = live.config.models[name]
    return f"`{name}` ({model.provider} {model.id})"


class _Commands:
    """The settings commands of one run, sharing its `SettingsChanger`."""

    def __init__(self, desk: SettingsChanger) -> None:
        self.desk = desk

    async def _set(
        self, envelope: MessageEnvelope, scope: OverrideScope, key: str, value: Any, room: str, thread: str
    ) -> str | None:
        override = Override(scope, key, value, envelope.requester_id, time.time(), room, thread)
        problems = await self.desk.change(override)
        return f"❌ Not changed: {'; '.join(problems)}" if problems else None

    async def model(self, entity: Entity, live: LiveState, envelope: MessageEnvelope, args: str) -> str:
        """`!model [name|reset]`: this thread's model for every agent and team answering in it."""
        thread, room = envelope.thread_id, envelope.room_id
        if not thread:
            return "❌ `!model` sets the model of a thread: send it in one (or use `!room_model` for the whole room)."
        name = args.strip()
        settings = live.settings
        if name.lower() in _SHOWS and name not in live.config.models:
            here = settings.get("thread", "model", room, thread)
            return (
                f"This thread: {_shown(here, 'no model set')}. Room: "
                f"{_shown(settings.get('room', 'model', room), 'no model set')}. Available models: {_models(live)}."
            )
        if not is_administrator(live, envelope, "model"):
            return REFUSED
        if name.lower() in _RESETS and name not in live.config.models:
            found = await self.desk.reset(("thread", room, thread, "model"), envelope.requester_id)
            return "✅ This thread uses the room's model again." if found else "This thread had no model set."
        if name not in live.config.models:
            return f"❌ Unknown model `{name}`. Available models: {_models(live)}."
        refused = await self._set(envelope, "thread", "model", name, room, thread)
        return refused or f"✅ This thread now uses {_describe_model(live, name)}; `!model reset` undoes it."

    async def room_model(self, entity: Entity, live: LiveState, envelope: MessageEnvelope, args: str) -> str:
        """`!room_model [name|reset]`: this room's model for every agent, team and the router."""
        name, room = args.strip(), envelope.room_id
        if name.lower() in _SHOWS and name not in live.config.models:
            here = live.settings.get("room", "model", room)
            return f"This room: {_shown(here, 'the configured models')}. Available models: {_models(live)}."
        if not is_administrator(live, envelope, "room_model"):
            return REFUSED
        if name.lower() in _RESETS and name not in live.config.models:
            found = await self.desk.reset(("room", room, "", "model"), envelope.requester_id)
            return "✅ This room uses the configured models again." if found else "This room had no model set."
        if name not in live.config.models:
            return f"❌ Unknown model `{name}`. Available models: {_models(live)}."
        refused = await self._set(envelope, "room", "model", name, room, "")
        return refused or (
            f"✅ This room now uses {_describe_model(live, name)} for every agent, team and the router"
            " (it overrides `room_models` and their own models here); `!room_model reset` undoes it."
        )

    async def thread_mode(self, entity: Entity, live: LiveState, envelope: MessageEnvelope, args: str) -> str:
        """`!thread_mode [room|thread|reset]`: whether answers in this room go to threads or the main timeline."""
        mode, room = args.strip().lower(), envelope.room_id
        if mode in _SHOWS:
            here = live.settings.get("room", "thread_mode", room)
            return f"This room: {_shown(here, 'as config.yaml says (`thread_mode`)')}."
        if not is_administrator(live, envelope, "thread_mode"):
            return REFUSED
        if mode in _RESETS:
            found = await self.desk.reset(("room", room, "", "thread_mode"), envelope.requester_id)
            return "✅ This room follows config.yaml's thread mode again." if found else "This room had no mode set."
        refused = await self._set(envelope, "room", "thread_mode", mode, room, "")
        where = "in threads" if mode == "thread" else "in the main timeline"
        return refused or f"✅ Agents and teams now answer {where} in this room; `!thread_mode reset` undoes it."

    async def voice(self, entity: Entity, live: LiveState, envelope: MessageEnvelope, args: str) -> str:
        """`!voice [on|off|reset]`: whether agents here answer a voice message in voice too."""
        word, room = args.strip().lower(), envelope.room_id
        if word in _SHOWS:
            here = live.settings.get("room", "voice_replies", room)
            if here is None:
                return "Voice replies in this room: as config.yaml says (`voice.replies`)."
            return f"Voice replies in this room: {'on' if here.value else 'off'} (set from chat by {here.set_by})."
        if not is_administrator(live, envelope, "voice"):
            return REFUSED
        if word in _RESETS:
            found = await self.desk.reset(("room", room, "", "voice_replies"), envelope.requester_id)
            return "✅ Voice replies here follow config.yaml again." if found else "This room had no voice setting."
        if word not in ("on", "off"):
            return "Usage: `!voice on`, `!voice off`, `!voice reset`, or `!voice` to show."
        if word == "on" and live.config.voice.tts is None:
            return "❌ No text-to-speech service is set up: `voice.tts` in config.yaml names one."
        refused = await self._set(envelope, "room", "voice_replies", word == "on", room, "")
        how = "in text, then in voice" if word == "on" else "in text only"
        return refused or f"✅ Agents here now answer voice messages {how}; `!voice reset` undoes it."

    async def instructions(self, entity: Entity, live: LiveState, envelope: MessageEnvelope, args: str) -> str:
        """`!instructions [agent text|agent reset]`: an agent's extra instructions in this thread (or room)."""
        room, thread = envelope.room_id, envelope.thread_id or ""
        scope: OverrideScope = "thread" if thread else "room"
        target, _, text = args.strip().partition(" ")
        target, text = target.lstrip("@"), text.strip()
        if not target:
            here = [o for o in live.settings.overrides if o.key.startswith("instructions:") and o.room_id == room]
            lines = [f"- {o.key.partition(':')[2]} ({o.scope}): {' '.join(o.value)}" for o in here]
            return "\n".join(["Extra instructions here:", *lines]) if lines else "No extra instructions here."
        if not is_administrator(live, envelope, "instructions"):
            return REFUSED
        key = f"instructions:{target}"
        if text.lower() in _RESETS:
            found = await self.desk.reset((scope, room, thread, key), envelope.requester_id)
            return f"✅ {target} has no extra instructions in this {scope} now." if found else "None were set."
        if not text:
            return "Usage: `!instructions <agent> <text>` or `!instructions <agent> reset`."
        refused = await self._set(envelope, scope, key, [text], room, thread)
        return refused or f"✅ {target} follows these extra instructions in this {scope}: {text}"

    async def config(self, entity: Entity, live: LiveState, envelope: MessageEnvelope, args: str) -> str:
        """`!config [show] | get <path> | set <path> <value> | reset <path>`: config keys, from chat."""
        if not live.config.authorization.config_command_enabled:
            return "❌ `!config` is off (`authorization.config_command_enabled`)."
        if not is_administrator(live, envelope, "config"):
            return REFUSED
        verb, _, rest = args.strip().partition(" ")
        path_text, _, value_text = rest.strip().partition(" ")
        if verb.lower() in ("", "show"):
            try:
                effective = await self.desk.effective(live)
            except ConfigError as error:
                return (
                    f"❌ config.yaml does not load as it is now, so where each value comes from cannot be told: {error}"
                )
            return _listing(effective, rest.strip())
        try:
            path = format_key_path(parse_key_path(path_text))
        except ValueError as error:
            return f"❌ {error}"
        if verb.lower() == "get":
            found = live.settings.get("config", path)
            note = f" (set from chat by {found.set_by}; `!config reset {path}` restores config.yaml's)" if found else ""
            return f"`{path}` = {_value_at(live, path)}{note}"
        if verb.lower() == "reset":
            reset = await self.desk.reset(("config", "", "", path), envelope.requester_id)
            return f"✅ `{path}` is config.yaml's again." if reset else f"Nothing was set for `{path}`."
        if verb.lower() != "set" or not value_text.strip():
            return "Usage: `!config show`, `!config get <path>`, `!config set <path> <value>`, `!config reset <path>`."
        try:
            value = yaml.safe_load(value_text)
        except yaml.YAMLError:
            return "❌ Not changed: the value is not YAML."
        if any(marker in value_text for marker in _REDACTION_MARKERS):
            return "❌ Not changed: the value holds a hidden secret's placeholder."
        before = _value_at(live, path)
        refused = await self._set(envelope, "config", path, value, "", "")
        return (
            refused
            or f"✅ `{path}`: {before} → {_render(value)} (overrides config.yaml; `!config reset {path}` undoes it)."
        )


def _render(value: Any, name: str = "") -> str:
    # Under its key's name, so a value kept under `api_key` or `password` is blanked whatever it looks like.
    return json.dumps(hidden(value, name), ensure_ascii=False, default=str)


def _value_at(live: LiveState, path: str) -> str:
    node: Any = live.config.model_dump(mode="json")
    parts = parse_key_path(path)
    for part in parts:
        listed = isinstance(node, list) and isinstance(part, int) and part < len(node)
        if (isinstance(node, dict) and part in node) or listed:
            node = node[part]
        else:
            return "(not set)"
    return _render(node, str(parts[-1]))


def _when(at: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(at)) if at is not None else "unknown"


def _line(value: EffectiveValue) -> str:
    shown = json.dumps(value.value, ensure_ascii=False, default=str)
    where = f"chat, by {value.set_by} at {_when(value.set_at)}" if value.source == "chat" else value.source
    return f"- {value.path} = {shown} ({where})"


def _listing(effective: EffectiveConfig, prefix: str) -> str:
    """`!config show [path]`: the values in force and where each comes from (below a path: defaults too)."""
    values = effective.under(prefix)
    if not values:
        return f"No config key at or below `{prefix}`."
    shown = values if prefix else tuple(value for value in values if value.source != "default")
    counts = ", ".join(f"{sum(v.source == source for v in values)} {name}" for source, name in _SOURCES)
    lines = [f"Config in force{f' at `{prefix}`' if prefix else ''} ({counts}):", *map(_line, shown[:_MAX_LINES])]
    if len(shown) > _MAX_LINES:
        lines.append(f"… and {len(shown) - _MAX_LINES} more: `!config show <path>` narrows the list.")
    if prefix:
        return "\n".join(lines)
    lines.append("Defaults are left out; `!config show <path>` lists every value at or below a path.")
    if effective.scoped:
        lines += ["Room and thread settings from chat:", *(f"- {item.describe()}" for item in effective.scoped)]
    if effective.not_in_effect:
        lines.append("Kept from chat, passed over (`!config reset <path>`, or a reset from chat, removes one):")
        lines += [f"- {item.describe()} — passed over: {why}" for item, why in effective.not_in_effect]
    return "\n".join(lines)


def settings_commands(desk: SettingsChanger) -> list[Command]:
    """The settings commands, answered with `desk`, for the orchestrator to register into the command table."""
    commands = _Commands(desk)
    return [
        Command("model", "this thread's model: `!model <name>`, `!model reset`, `!model` to show", commands.model),
        Command("room_model", "this room's model: `!room_model <name>`, `reset`, or show", commands.room_model),
        Command(
            "thread_mode", "answers in threads or the room: `!thread_mode room|thread|reset`", commands.thread_mode
        ),
        Command("voice", "voice replies in this room: `!voice on|off|reset`, `!voice` to show", commands.voice),
        Command(
            "instructions",
            "an agent's extra instructions here: `!instructions <agent> <text>|reset`",
            commands.instructions,
        ),
        Command(
            "config",
            "config keys from chat: `show`, `get <path>`, `set <path> <value>`, `reset <path>`",
            commands.config,
        ),
    ]
