"""`AgentRooms`: the agents' Matrix accounts as the Matrix tools reach them (`RoomDesk`), within their rooms.

The tools get an agent's own account and the rooms it is in, the room names config gives, who may talk to
whom (the `authorization:` rules, as ingress applies them), and the answers streaming now (to stop one, as a
🛑 reaction would). An event is sent through the account's `send_event`, which encrypts in an encrypted room
and never sends plaintext there.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from mindroom import ai
from mindroom.bots.directory import Directory
from mindroom.bots.runtime import LiveCell
from mindroom.bots.voice_reply import voice_audio
from mindroom.config.voice import TextToSpeechConfig
from mindroom.logging_config import get_logger
from mindroom.matrix import MatrixError
from mindroom.matrix.room_account import RoomAccount
from mindroom.matrix.voice import OggOpusError
from mindroom.state.journal import TurnJournal
from mindroom.tool_system.spec import ToolError

__all__ = ["AgentRooms"]

logger = get_logger(__name__)


class AgentRooms:
    """`RoomDesk` over the run's directory, live config and journal."""

    def __init__(self, directory: Directory, cell: LiveCell, journal: TurnJournal) -> None:
        self._directory = directory
        self._cell = cell
        self._journal = journal

    def client(self, agent: str) -> RoomAccount | None:
        """The running agent's account."""
        running = self._directory.entities.get(agent)
        return running.client if running is not None else None

    def joined(self, agent: str) -> Collection[str]:
        """The rooms the agent is in."""
        running = self._directory.entities.get(agent)
        return set(running.joined_rooms) if running is not None else set()

    def room_id(self, room: str) -> str:
        """A room named by its config key (or alias, or id) as its id."""
        return self._directory.room_ids.get(room, room)

    def agents_in_room(self, room_id: str) -> tuple[str, ...]:
        """The agents and teams in the room."""
        return self._directory.agents_in_room(room_id, self._cell.live.config)

    def user_ids(self) -> Mapping[str, str]:
        """Entity name -> Matrix user id."""
        return self._directory.bot_user_ids

    def may_reach(self, user_id: str, room_id: str, entity: str) -> bool:
        """Whether the person may talk to `entity` in the room."""
        return self._directory.may_reach(self._cell.live.config, user_id, room_id, entity)

    def stop_reply(self, entity: str, room_id: str, thread_id: str | None) -> str | None:
        """Stop `entity`'s answer streaming in this conversation, as a 🛑 would; its event id, or None."""
        running = self._directory.entities.get(entity)
        if running is None:
            return None
        for answer in self._journal.open_answers(entity):
            here = answer.room_id == room_id and answer.thread_root == thread_id
            if here and answer.response_event_id and running.request_stop(answer.response_event_id):
                logger.info("stop requested by a tool", agent=entity, target=answer.response_event_id)
                return answer.response_event_id
        return None

    async def send_event(self, agent: str, room_id: str, event_type: str, content: Mapping[str, Any]) -> str:
        """Send a room event as the agent (encrypted where the room is)."""
        running = self._directory.entities.get(agent)
        send = getattr(running.client, "send_event", None) if running is not None else None
        if send is None:
            raise ToolError("this account cannot send raw events")
        return str(await send(room_id, event_type, content))

    async def send_voice(
        self,
        agent: str,
        room_id: str,
        text: str,
        service: TextToSpeechConfig,
        env: Mapping[str, str],
        *,
        body: str,
        thread_root: str | None,
    ) -> tuple[str, int]:
        """Speak `text` and send it as the agent's voice message; its event id and length in ms."""
        running = self._directory.entities.get(agent)
        if running is None:
            raise ToolError("your Matrix account is not running")
        try:
            audio = await voice_audio(service, text, env)
            event_id = await running.client.send_voice(room_id, audio, body, thread_root=thread_root)
        except (ai.SpeechError, OggOpusError) as exc:
            raise ToolError(f"the speech service gave no voice message: {exc}") from None
        except MatrixError as exc:
            raise ToolError(f"the voice message could not be sent: {exc}") from None
        return event_id, audio.duration_ms
