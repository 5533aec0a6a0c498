"""Ask the router's model which agent should answer a message (nothing of this call is persisted)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from uuid import uuid4

from agno.agent import Agent
from agno.run.base import RunStatus

from mindroom.ai.agents import agent_cache
from mindroom.ai.errors import ModelConfigError
from mindroom.ai.failures import failure_log, generation_error
from mindroom.ai.models import model_env_fingerprint
from mindroom.config.main import ModelConfig
from mindroom.hooks.enrichment import strip_enrichment_blocks
from mindroom.logging_config import get_logger, redact_message

__all__ = ["ROUTER_INSTRUCTIONS", "choose_agent", "parse_agent_choice", "render_routing_prompt"]

logger = get_logger(__name__)

ROUTER_INSTRUCTIONS = (
    "You route chat messages to the one agent best suited to answer them.",
    "Reply with exactly one agent name from the list, and nothing else.",
)
_DECORATION = "`'\"*_.,:;!?@ \n\t"


def render_routing_prompt(candidates: Sequence[tuple[str, str]], message: str) -> str:
    """The user turn the router model sees: the candidates with their roles, then the message."""
    lines = ["Agents:"]
    lines.extend(f"- {name}: {role}" if role else f"- {name}" for name, role in candidates)
    lines.extend(
        ["", "Message:", strip_enrichment_blocks(message), "", "Which agent should answer? Reply with its name."]
    )
    return "\n".join(lines)


def parse_agent_choice(reply: str, names: Sequence[str]) -> str | None:
    """The candidate named by the reply: an exact name, or the only candidate mentioned; else None."""
    by_lower = {name.lower(): name for name in names}
    bare = reply.strip().strip(_DECORATION).lower()
    if bare in by_lower:
        return by_lower[bare]
    lowered = reply.lower()
    mentioned = {
        name for key, name in by_lower.items() if re.search(rf"(?<![\w.-]){re.escape(key)}(?![\w-]|\.\w)", lowered)
    }
    return mentioned.pop() if len(mentioned) == 1 else None


def _build_router(model: ModelConfig, env: Mapping[str, str]) -> Agent:
    return Agent(
        id="mindroom-router",
        name="Router",
        model=agent_cache.model(model, env),
        instructions=list(ROUTER_INSTRUCTIONS),
        markdown=False,
        telemetry=False,
    )


async def choose_agent(
    model: ModelConfig, candidates: list[tuple[str, str]], message: str, *, env: Mapping[str, str]
) -> str | None:
    """Ask `model` to pick one of the (name, role) candidates; None when it fails or names none of them."""
    if not candidates:
        return None
    names = [name for name, _role in candidates]
    try:
        router = agent_cache.agent(
            ("router", model.model_dump_json()),
            model_env_fingerprint(model, env),
            lambda: _build_router(model, env),
        )
    except ModelConfigError as error:
        logger.error("router model misconfigured", problem=error.problem)
        return None
    run_id = str(uuid4())
    failure_log.watch(run_id)
    try:
        prompt = render_routing_prompt(candidates, redact_message(message))  # pasted secrets stay with the daemon
        output = await router.arun(prompt, stream=False, run_id=run_id)
    except Exception as error:
        output = None
        failure: BaseException | None = error
    else:
        failure = None
    finally:
        recorded = failure_log.pop(run_id)
    if output is None or output.status != RunStatus.completed:
        cause = generation_error(recorded or failure)
        logger.warning("router model call failed", model=model.id, kind=cause.kind, status_code=cause.status_code)
        return None
    reply = output.content if isinstance(output.content, str) else ""
    choice = parse_agent_choice(reply, names)
    if choice is None:
        logger.info("router reply names no candidate", model=model.id, candidates=len(names))
    return choice
