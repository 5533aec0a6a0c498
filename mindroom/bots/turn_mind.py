"""`TurnMind`: what an agent remembers and knows, for its turns.

Before an answer, `recall` adds what the agent remembers about the person asking to the run's system
prompt; `tools` gives an agent that names knowledge bases the `search_knowledge_base` tool; after the
answer is delivered, `after_answer` starts the memory model on the exchange in a task of its own, so no
reply waits for it. An agent with neither memory nor knowledge bases costs one lookup in its config.

`TurnMind` owns the extraction tasks and the knowledge bases of one run: `apply` follows the config (at
start and on reload), `stop` lets running extractions finish (bounded), then closes the bases.
"""

from __future__ import annotations

from typing import Any

from mindroom.config.main import Config, ModelConfig
from mindroom.constants import RuntimePaths
from mindroom.logging_config import get_logger
from mindroom.tasks import TaskOwner

__all__ = ["MEMORY_HEADING", "TurnMind", "memory_model"]

logger = get_logger(__name__)

MEMORY_HEADING = "What you remember about the person you are talking to (from earlier conversations):"
_STOP_GRACE_S = 10.0
_LLM_HOSTS = {"openrouter": "https://openrouter.ai/api/v1"}


def memory_model(config: Config, agent_name: str) -> ModelConfig | None:
    """The model that writes memories down: `memory.llm` when set, else the agent's own model."""
    llm = config.memory.llm
    if llm is None:
        return config.models.get(config.agents[agent_name].model)
    options = dict(llm.config)
    model_id = str(options.pop("model", "gpt-4o-mini" if llm.provider != "ollama" else "llama3.2"))
    host = options.pop("host", None) or options.pop("base_url", None) or _LLM_HOSTS.get(llm.provider)
    api_key = options.pop("api_key", None)
    provider = "openai" if llm.provider == "openrouter" else llm.provider
    return ModelConfig(provider=provider, id=model_id, host=host, api_key=api_key, extra_kwargs=options)  # type: ignore[arg-type]


class TurnMind:
    """Memory and knowledge bases for one run's turns (the owner of extraction tasks and the bases' keepers)."""

    def __init__(self, paths: RuntimePaths, session_url: str | None) -> None:
        self.paths = paths
        self.session_url = session_url
        self._knowledge: Any = None
        self._extractions = TaskOwner("memory")
        self._tools: dict[str, tuple[tuple[Any, ...], tuple[Any, ...]]] = {}

    @property
    def knowledge(self) -> Any:
        """The run's `KnowledgeService` (None until a config names a knowledge base)."""
        return self._knowledge

    async def apply(self, config: Config) -> None:
        """Start, keep or stop knowledge bases to match `config` (no base: nothing is loaded)."""
        if self._knowledge is None and not config.knowledge_bases:
            return
        if self._knowledge is None:
            from mindroom.ai.knowledge.service import KnowledgeService

            self._knowledge = KnowledgeService(
                storage_root=self.paths.storage_root,
                config_dir=self.paths.config_dir,
                database_url=self.session_url,
                env=self.paths.env_values,
            )
        await self._knowledge.apply(config)

    async def recall(self, config: Config, agent_name: str, requester: str) -> str:
        """The system-prompt block of what `agent_name` remembers about `requester` ("" when nothing, or no memory)."""
        if not config.memory_enabled(agent_name):
            return ""
        from mindroom.ai.memory import recall_memories

        try:
            found = await recall_memories(
                requester, agent=agent_name, storage_root=self.paths.storage_root, database_url=self.session_url
            )
        except Exception as exc:  # the answer goes on without memories rather than not at all
            logger.warning("recalling memories failed", agent=agent_name, error=str(exc))
            return ""
        if not found:
            return ""
        return "\n".join([MEMORY_HEADING, *(f"- {item.text}" for item in found)])

    def tools(self, config: Config, agent_name: str) -> tuple[Any, ...]:
        """The knowledge search tool of an agent naming knowledge bases (the same object while its bases stay)."""
        agent = config.agents.get(agent_name)
        if agent is None or not agent.knowledge_bases or self._knowledge is None:
            return ()
        from mindroom.ai.knowledge.rerank import Reranker

        bases = self._knowledge.bases(agent.knowledge_bases)
        reranker = Reranker.from_config(config.knowledge_reranker, self.paths.env_values)
        cached = self._tools.get(agent_name)
        if cached is not None and cached[0] == (*bases, reranker):
            return cached[1]
        if not bases:
            return ()
        from mindroom.ai.knowledge.search_tool import knowledge_search_tool
        from mindroom.ai.tools import agno_function

        built = (agno_function(knowledge_search_tool(bases, reranker), agent_name),)
        self._tools[agent_name] = ((*bases, reranker), built)
        return built

    def after_answer(self, config: Config, agent_name: str, requester: str, question: str, answer: str) -> None:
        """Start writing down what this exchange says about the person, in the background (memory on only)."""
        if not config.memory_enabled(agent_name) or not question.strip():
            return
        model = memory_model(config, agent_name)
        if model is None:
            return
        self._extractions.spawn(
            self._extract(model, agent_name, requester, [("user", question), ("assistant", answer)]),
            "memory extraction",
            name=f"memory-{agent_name}",
        )

    async def _extract(self, model: ModelConfig, agent: str, requester: str, exchange: list[tuple[str, str]]) -> None:
        from mindroom.ai.agents import agent_cache
        from mindroom.ai.memory import extract_memories

        try:
            changed = await extract_memories(
                agent_cache.model(model, self.paths.env_values), requester, agent, exchange,
                storage_root=self.paths.storage_root, database_url=self.session_url,
            )  # fmt: skip
        except Exception as exc:  # a memory not written is logged; the conversation is unaffected
            logger.warning("memory extraction failed", agent=agent, error=str(exc))
            return
        logger.info("memory extraction done", agent=agent, changed=changed)

    async def settled(self) -> None:
        """Wait until the extractions running now have finished (tests and benchmarks use it)."""
        await self._extractions.settled()

    async def stop(self, grace_s: float = _STOP_GRACE_S) -> None:
        """Give running extractions `grace_s` to finish, cancel the rest, close the knowledge bases."""
        await self._extractions.cancel_all(grace_s)
        if self._knowledge is not None:
            await self._knowledge.stop()
            self._knowledge = None
        self._tools.clear()
