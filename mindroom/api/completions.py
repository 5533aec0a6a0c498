"""The `/v1` door: one chat completion as a turn of the daemon's one turn (`mindroom.bots.turn.TurnRunner`).

The model name is resolved to an agent (`auto`: the router's model chooses, as it does in a room), the
request's messages become a message envelope (`source_kind` `api`, the room `api`, the session as its
conversation), and the turn runs on the agent's bot with an `HttpAnswer` channel: claimed in the journal,
`message:received`, then the answer stages. Its models are chosen as a Matrix turn's are: `room_models` for
the room `api`, else the agent's (or the router's) own; there is no Matrix room or thread whose chat settings
(`!room_model`, `!model`) could apply.

The turn runs in a task the HTTP app owns, so a reply is sent as soon as it is final while the turn is
stored behind it; the next request of the same session waits for that (the agent's per-session slot).
The journal records the turn without its content: a client that is gone cannot be answered after a restart.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass

from mindroom import ai
from mindroom.api.api_entity import ApiEntity
from mindroom.api.app_context import ApiContext
from mindroom.api.http_answer import HttpAnswer
from mindroom.api.openai_protocol import (
    ChatCompletionRequest,
    Conversation,
    OpenAIError,
    convert_messages,
    derive_session_id,
)
from mindroom.api.security import V1Principal
from mindroom.bots.doors import Arrival, Door
from mindroom.bots.ingress import InboundMessage
from mindroom.bots.turn import router_choice
from mindroom.config.teams import private_agent_reached
from mindroom.daemon.wiring import ApiCapabilities
from mindroom.hooks.origin import TurnOrigin
from mindroom.hooks.target import MessageTarget
from mindroom.hooks.transport import MessageEnvelope
from mindroom.logging_config import get_logger

__all__ = [
    "API_ROOM_ID",
    "API_SOURCE_KIND",
    "TEAM_PREFIX",
    "Completion",
    "eligible_agents",
    "eligible_teams",
    "start_completion",
]

logger = get_logger(__name__)

API_ROOM_ID = "api"
"""The room an API turn names: none in Matrix. Its turns share one fair lane of each agent's slots."""
API_SOURCE_KIND = "api"
TEAM_PREFIX = "team/"
"""A team's model name is `team/<team>`."""
_HISTORY_HEADER = "Earlier in this conversation:"


@dataclass(frozen=True, slots=True)
class Completion:
    """A started `/v1` turn: the model asked for (an agent, or `team/<team>`), its channel, its session."""

    model: str
    channel: HttpAnswer
    session_id: str
    task: asyncio.Task[None]


def eligible_agents(running: ApiCapabilities) -> list[str]:
    """The agents `/v1` offers: configured and running, in config order; not a private agent, nor one handing
    questions to one through `delegate_to` (an API key names no person whose copy it would use)."""
    entities = running.directory.entities
    agents = running.live.config.agents
    return [name for name in agents if name in entities and private_agent_reached(name, agents) is None]


def eligible_teams(running: ApiCapabilities) -> list[str]:
    """The teams `/v1` offers (as `team/<team>`): configured and running, every member too, in config order."""
    entities = running.directory.entities
    teams = running.live.config.teams
    return [name for name, team in teams.items() if name in entities and all(m in entities for m in team.agents)]


def _running(ctx: ApiContext) -> ApiCapabilities:
    running = ctx.daemon.running
    if running is None:
        raise OpenAIError(503, "The daemon is not running yet", type_="server_error")
    return running


async def _resolve_model(running: ApiCapabilities, model: str, prompt: str) -> str:
    """The agent a model name means; `auto` asks the router's model, chosen as in a room (the first agent if
    it cannot say, or the only one)."""
    agents = eligible_agents(running)
    if model == "auto":
        if not agents:
            raise OpenAIError(500, "No OpenAI-compatible agents configured for auto-routing", type_="server_error")
        if len(agents) == 1:
            return agents[0]
        keys = running.directory.room_keys(API_ROOM_ID)
        env = running.paths.env_values
        return await router_choice(running.live, env, tuple(agents), prompt, API_ROOM_ID, None, keys)
    if model.startswith(TEAM_PREFIX):
        team = model.removeprefix(TEAM_PREFIX)
        if team not in eligible_teams(running):
            raise OpenAIError(404, f"Team '{team}' not found", param="model", code="model_not_found")
        return team
    if model not in agents:
        raise OpenAIError(404, f"Model '{model}' not found", param="model", code="model_not_found")
    return model


async def _with_history(running: ApiCapabilities, agent: str, session: str, new: bool, talk: Conversation) -> str:
    """The prompt, preceded by the client's earlier messages when the session has no stored history to give."""
    if not talk.history:
        return talk.prompt
    if not new:
        stores = running.stores
        if await ai.session_exists(
            agent, session, storage_root=running.paths.storage_root, database_url=stores.session_url
        ):
            return talk.prompt
    lines = "\n".join(f"{role}: {text}" for role, text in talk.history)
    return f"{_HISTORY_HEADER}\n{lines}\n\n{talk.prompt}"


async def start_completion(
    ctx: ApiContext,
    principal: V1Principal,
    request: ChatCompletionRequest,
    headers: Mapping[str, str],
    completion_id: str,
) -> Completion:
    """Resolve the agent, build the envelope and start the turn (raises `OpenAIError` for a bad request)."""
    running = _running(ctx)
    talk = convert_messages(request.messages)
    agent = await _resolve_model(running, request.model, talk.prompt)
    session, new = derive_session_id(principal.namespace, agent, headers, principal.requester)
    body = await _with_history(running, agent, session, new, talk)
    requester = principal.requester or f"api:{principal.namespace[:16]}"
    envelope = MessageEnvelope(
        source_event_id=f"api:{completion_id}",
        target=MessageTarget(API_ROOM_ID, session_id=session),
        body=body,
        attachment_ids=(),
        mentioned_agents=(agent,),
        agent_name=agent,
        origin=TurnOrigin.classify(transport_sender_id=requester, requester_id=requester, source_kind=API_SOURCE_KIND),
    )
    channel = HttpAnswer(completion_id, stream=request.stream)
    entity = ApiEntity(running.directory.entities[agent])
    task = ctx.turns.spawn(_turn(running, entity, envelope, channel), f"api turn {completion_id}")
    return Completion(request.model if request.model.startswith(TEAM_PREFIX) else agent, channel, session, task)


async def _turn(running: ApiCapabilities, entity: ApiEntity, envelope: MessageEnvelope, channel: HttpAnswer) -> None:
    """The request's turn; a client gone before its answer leaves nothing of it stored."""
    question = InboundMessage(envelope, False, 0, False, None)
    try:
        await running.runner.run(Arrival(Door.API, entity, running.live, question, channel=channel))
    except asyncio.CancelledError:
        if not channel.delivered:
            await ai.forget_turn(
                entity.name,
                envelope.target.session_id,
                envelope.source_event_id,
                storage_root=running.paths.storage_root,
                database_url=running.stores.session_url,
            )
        raise
    finally:
        channel.finish()
