"""What each of MindRoom's config keys does here: its meaning (`USED`), or why it is accepted and not used.

Every path of `mindroom_key_paths()` has a note: its own, or the nearest section's above it (`note_for`). A
key in `NOT_USED` is accepted with one warning naming it and the reason (`mindroom.config.unused_keys`), at
`mindroom config validate`, at start, in `mindroom doctor` and on the dashboard's config page; its value is
dropped before the config is read, so nothing here can come to depend on it by accident.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = ["MINDROOM_PROMPT_NAMES", "NOT_USED", "PROMPTS_USED", "USED", "KeyNote", "note_for"]

_NOT_OFFERED = "this daemon does not offer"

USED: Mapping[str, str] = MappingProxyType(
    {
        "administrators": "platform administrators (!config, !memory wipe, !reload-plugins); they pass every access",
        "agents": "one Matrix account and AI agent each; a name may have capitals (its account's id is lowercase)",
        "agents.*.accept_invites": "true: every invite; false or []: none; a list: inviters matching an id or glob",
        "agents.*.access": "who may talk to the agent: room members, listed users or globs (see authorization)",
        "agents.*.compaction": "when and how older history is folded into a summary before an answer",
        "agents.*.context_files": "files of the agent's workspace whose text joins its instructions",
        "agents.*.delegate_to": "agents it may hand a question to within its turn",
        "agents.*.display_name": "the account's display name",
        "agents.*.include_default_tools": "whether defaults.tools are added to its tools",
        "agents.*.instructions": "its instructions",
        "agents.*.knowledge_bases": "the knowledge bases it searches",
        "agents.*.markdown": "whether answers are formatted as Markdown",
        "agents.*.max_tool_calls_from_history": "how many tool calls of earlier turns the model sees again",
        "agents.*.max_tool_calls_per_turn": "the most tool calls one turn runs; later calls get an error",
        "agents.*.memory_backend": "mem0 (memories in the state), file (its MEMORY.md in the prompt) or none",
        "agents.*.model": "its model (a key of models:)",
        "agents.*.num_history_messages": "how many earlier messages of the conversation the model sees",
        "agents.*.num_history_runs": "how many earlier turns of the conversation the model sees",
        "agents.*.private": "a copy of the agent's workspace, context files and file memory per requester",
        "agents.*.role": "what it is for: its description for the model and the router",
        "agents.*.room_thread_modes": "thread or room mode per room, over thread_mode",
        "agents.*.rooms": "rooms it joins and answers in",
        "agents.*.show_tool_calls": "true: tool calls are marked in the answer; false: the model is told they are not",
        "agents.*.skills": "skills it uses",
        "agents.*.thread_mode": "thread: answers in threads; room: in the main timeline",
        "agents.*.timezone": "the zone it is told the date and time in (unset: timezone)",
        "agents.*.tools": "its tools, with settings per tool",
        "agents.*.thread_exports": "each thread it answers in, written into its workspace's thread_exports/",
        "authorization": "who may reach agents, bridged accounts, and the !config switch",
        "authorization.aliases": "bridged accounts that speak as a person (access, approvals, memory are the person's)",
        "authorization.config_command_enabled": "whether administrators may use !config",
        "budgets": "a monthly limit per person on models with pricing; at it, fallback_model (unset: refused)",
        "bot_accounts": "other bots: answered only when they mention an agent, and counted as bots in chains",
        "defaults": "settings every agent has unless it sets its own",
        "defaults.compaction": "when and how older history is folded into a summary before an answer",
        "defaults.enable_streaming": "whether answers stream as edits",
        "defaults.markdown": "whether answers are formatted as Markdown",
        "defaults.max_preload_chars": "the most characters context_files add to a prompt",
        "defaults.max_tool_calls_from_history": "how many tool calls of earlier turns the model sees again",
        "defaults.max_tool_calls_per_turn": "the most tool calls one turn runs",
        "defaults.num_history_messages": "how many earlier messages the model sees",
        "defaults.num_history_runs": "how many earlier turns the model sees",
        "defaults.show_tool_calls": "whether tool calls are marked in answers",
        "defaults.streaming": "how a streamed answer is edited as it grows",
        "defaults.streaming.update_interval": "seconds between the edits of a streamed answer",
        "defaults.tools": "tools every agent gets",
        "defaults.thread_summary_first_threshold": "how many messages a thread has when its first summary is written",
        "defaults.thread_summary_model": "the model that writes thread summaries (unset: none, unless per room)",
        "defaults.thread_summary_subsequent_interval": "how many more messages before a thread's summary is renewed",
        "defaults.thread_summary_temperature": "the summary model's temperature (null: the provider's)",
        "knowledge_bases": "folders and Git checkouts indexed for search, key for key",
        "knowledge_reranker": "reranks knowledge search hits through a Cohere-format /rerank endpoint",
        "matrix_space": "a Matrix space (name) that holds every managed room, kept up to date",
        "mcp_servers": "MCP servers whose tools agents use, key for key",
        "memory": "whether agents remember the people they talk to, and the embedder of knowledge bases",
        "memory.backend": "mem0: memories in the state backend; file: MEMORY.md of the workspace; none: off",
        "memory.embedder": "the embedder of knowledge bases (and of memories)",
        "memory.file": "how much of MEMORY.md the file backend puts in the prompt",
        "memory.file.max_entrypoint_lines": "the most lines of MEMORY.md the prompt gets",
        "memory.file.max_entrypoint_tokens": "the most tokens (characters / 4) of MEMORY.md the prompt gets",
        "memory.llm": "the model that writes memories down",
        "models": "the language models, key for key",
        "models.*.display_name": "the model's name in !model lists",
        "models.*.icon": "kept with the model (an mxc URI or a config-relative image) for clients that show it",
        "models.*.pricing": "USD per million tokens: the cost each turn is recorded with, and what budgets count",
        "plugins": "plugin folders with settings and hook overrides, key for key",
        "room_thread_summary_models": "per room (key, alias or id): the model that writes its thread summaries",
        "prompts": "built-in prompt texts replaced by name (the names this daemon uses)",
        "room_defaults": "what every managed room gets: join policy, directory listing, encryption, invites, admins",
        "room_models": "the model every agent, team and the router uses in a room",
        "rooms": "rooms the daemon creates or joins",
        "rooms.*.admins": "accounts given administrator power in the room (over room_defaults.admins)",
        "rooms.*.description": "the topic of a new room (unless topic is set)",
        "rooms.*.display_name": "the room's name (over name)",
        "rooms.*.encrypted": "end-to-end encryption, turned on and never off (over room_defaults.encrypted)",
        "rooms.*.invite_users": "accounts invited to the room (over room_defaults.invite_users)",
        "rooms.*.join_policy": "invite, knock or public (over room_defaults.join_policy)",
        "rooms.*.listed": "whether the room is in the server's room directory",
        "router": "the account that manages rooms and picks who answers",
        "router.accept_invites": "whose invites the router accepts, as for agents",
        "router.access": "who may talk to the router (unset: members of the room)",
        "router.model": "the router's model",
        "teams": "agents answering together as one account, key for key (unknown keys are errors here)",
        "timezone": "the zone agents are told the date in and !schedule times are read in",
        "tool_approval": "which tool calls wait for a person's approval, key for key",
        "voice": "voice messages: transcribed, answered as text, and in voice too with tts and replies (own keys)",
        "voice.enabled": "false: voice messages are not transcribed (the agent says it cannot listen)",
        "voice.stt": "the speech-to-text service: provider, model, host, api_key, extra_kwargs",
    }
)
"""MindRoom key path -> what it does here."""

NOT_USED: Mapping[str, str] = MappingProxyType(
    {
        "agents.*.allow_self_config": "the self_config tool is named in tools: instead",
        "agents.*.automations": f"{_NOT_OFFERED} automations (prompt curation, dreaming, exploration)",
        "agents.*.cheap_model": "used by MindRoom only for cold_cache, which this daemon does not offer",
        "agents.*.compaction.fallback_model": "the summary is tried once, with compaction.model (or the answering one)",
        "agents.*.compaction.reserve_tokens": "history is kept to half the model's context_window here",
        "agents.*.compaction.timeout_seconds": "a summary takes as long as the model's request does",
        "defaults.compaction.fallback_model": "the summary is tried once, with compaction.model (or the answering one)",
        "defaults.compaction.reserve_tokens": "history is kept to half the model's context_window here",
        "defaults.compaction.timeout_seconds": "a summary takes as long as the model's request does",
        "teams.*.compaction.fallback_model": "the summary is tried once, with compaction.model (or the answering one)",
        "teams.*.compaction.reserve_tokens": "history is kept to half the model's context_window here",
        "teams.*.compaction.timeout_seconds": "a summary takes as long as the model's request does",
        "agents.*.cold_cache": f"{_NOT_OFFERED} switching an idle thread to a cheaper model",
        "agents.*.credential_managers": f"{_NOT_OFFERED} a credential store managed from chat",
        "agents.*.file_access": "the file tools always keep to the agent's workspace here",
        "agents.*.knowledge_graph": f"{_NOT_OFFERED} knowledge graphs",
        "agents.*.knowledge_graph_edits": f"{_NOT_OFFERED} knowledge graphs",
        "agents.*.mcp_gateway_shared_credentials": f"{_NOT_OFFERED} the MCP gateway",
        "agents.*.memory_search": "searches file memory, which here is MEMORY.md in the prompt only",
        "agents.*.mid_turn": f"{_NOT_OFFERED} judging messages that arrive during an answer",
        "agents.*.minimal_instructions": f"{_NOT_OFFERED} a minimal mode",
        "agents.*.participation": f"{_NOT_OFFERED} joining multi-person threads on its own judgment",
        "agents.*.private.knowledge": f"{_NOT_OFFERED} private knowledge indexes: use knowledge_bases",
        "agents.*.skill_learning": f"{_NOT_OFFERED} learned skills",
        "agents.*.thread_exports.invited_rooms": "every room the agent answers in is exported here",
        "agents.*.thread_exports.private_room_scope": f"{_NOT_OFFERED} thread exports into private workspaces",
        "agents.*.worker_scope": f"{_NOT_OFFERED} workers; tools run in this daemon (shell in its sandbox)",
        "agents.*.worker_tools": f"{_NOT_OFFERED} workers; tools run in this daemon (shell in its sandbox)",
        "background_tool_jobs": f"{_NOT_OFFERED} background tool jobs",
        "calls": f"{_NOT_OFFERED} voice calls",
        "debug": "model requests are not written to a log here",
        "defaults.allow_self_config": "the self_config tool is named in tools: instead",
        "defaults.automations": f"{_NOT_OFFERED} automations",
        "defaults.cheap_model": "used by MindRoom only for cold_cache, which this daemon does not offer",
        "defaults.coalescing": "each message is a turn of its own here",
        "defaults.file_access": "the file tools always keep to the agent's workspace here",
        "defaults.knowledge_graph": f"{_NOT_OFFERED} knowledge graphs",
        "defaults.knowledge_graph_edits": f"{_NOT_OFFERED} knowledge graphs",
        "defaults.large_message_strategy": "a long answer is sent as one message here",
        "defaults.max_consecutive_agent_replies": "chains of bot answers stop after two here",
        "defaults.show_stop_button": "no 🛑 is added; a 🛑 reaction from a person still stops an answer",
        "defaults.streaming.interval_ramp_seconds": "edits keep one interval here (update_interval)",
        "defaults.streaming.max_idle": "edits keep one interval here (update_interval)",
        "defaults.streaming.min_update_interval": "edits keep one interval here (update_interval)",
        "defaults.tool_output_auto_save_threshold_bytes": "large tool results are cut, not saved to a file, here",
        "defaults.worker_grantable_credentials": f"{_NOT_OFFERED} workers",
        "defaults.worker_scope": f"{_NOT_OFFERED} workers",
        "defaults.worker_tools": f"{_NOT_OFFERED} workers",
        "egress_broker": f"{_NOT_OFFERED} the egress broker",
        "event_journal": "the journal of events lives with the rest of the state (storage:)",
        "external_trigger_policy": f"{_NOT_OFFERED} signed external triggers",
        "knowledge_graph": f"{_NOT_OFFERED} knowledge graphs",
        "matrix_sync": "each bot syncs with /v3/sync (or the appservice receives); no sliding sync",
        "memory.auto_flush": f"{_NOT_OFFERED} flushing conversations into memory files",
        "memory.file.path": "teams keep no memory of their own here",
        "memory.search": "searches file memory, which here is MEMORY.md in the prompt only",
        "memory.team_reads_member_memory": "teams keep no memory of their own here; members remember as themselves",
        "mindroom_user": "the person's account is MINDROOM_USER here (embedded homeserver)",
        "personal_agents": f"{_NOT_OFFERED} personal agents",
        "personal_rooms": f"{_NOT_OFFERED} personal rooms",
        "router.judgment": "the router asks its model; no judgment service is called",
        "scheduler_catch_up_grace_seconds": "runs missed while the daemon was down fire once at start, however late",
        "knowledge_reranker.credentials_service": "the key is api_key or COHERE_API_KEY here (no credential store)",
        "voice.intelligence": "transcripts are used as heard, without a cleanup model",
        "voice.stt.credentials_service": "the key is api_key or OPENAI_API_KEY here (no credential store)",
        "voice.visible_router_echo": "the router does not echo transcripts here",
    }
)
"""MindRoom key path (a section covers its keys) -> why this daemon accepts it and does nothing with it."""

MINDROOM_PROMPT_NAMES = frozenset(
    {
        "AGENT_IDENTITY_CONTEXT_TEMPLATE",
        "AVATAR_AGENT_SYSTEM_PROMPT",
        "AVATAR_CHARACTER_STYLE",
        "AVATAR_ROOM_STYLE",
        "AVATAR_ROOM_SYSTEM_PROMPT",
        "AVATAR_TEAM_SYSTEM_PROMPT",
        "BACKGROUND_JOBS_ENDED_NOTICE",
        "BACKGROUND_JOBS_FOLLOW_UP_PROMPT",
        "CODEX_DEFAULT_INSTRUCTIONS",
        "COMPACTION_SUMMARY_PROMPT",
        "CONTEXT_CHUNK_OMITTED_MARKER_TEMPLATE",
        "CONTEXT_TRUNCATION_MARKER_TEMPLATE",
        "CURRENT_MESSAGE_PROMPT_INTRO",
        "DATETIME_CONTEXT_TEMPLATE",
        "DELEGATE_BACKGROUND_JOB_INSTRUCTIONS",
        "DELEGATE_TOOLKIT_INSTRUCTIONS_TEMPLATE",
        "DREAMING_PROMPT_TEMPLATE",
        "DREAMING_VERIFY_TEMPLATE",
        "DYNAMIC_TOOLING_INSTRUCTION_TEMPLATE",
        "EXPLORATION_FIX_EXCEPTION",
        "EXPLORATION_FIX_STEP",
        "EXPLORATION_PROMPT_TEMPLATE",
        "FILE_MEMORY_ENTRYPOINT_HEADER_TEMPLATE",
        "FILE_MEMORY_ENTRYPOINT_KEPT_COPY_NOTICE",
        "FILE_MEMORY_ENTRYPOINT_TRUNCATION_TEMPLATE",
        "HIDDEN_TOOL_CALLS_PROMPT",
        "INLINE_MEDIA_FALLBACK_PROMPT",
        "INTERACTIVE_QUESTION_PROMPT",
        "IN_PROGRESS_PARTIAL_REPLY_HEADER",
        "MEMORY_AUTO_FLUSH_EXTRACT_PROMPT_TEMPLATE",
        "MEMORY_CONTEXT_PROMPT_TEMPLATE",
        "MEMORY_EXISTING_SNIPPETS_TEMPLATE",
        "MEMORY_NO_EXISTING_SNIPPETS",
        "NATIVE_TOOL_SEARCH_INSTRUCTION_TEMPLATE",
        "OPENAI_COMPAT_AGENT_IDENTITY_CONTEXT_TEMPLATE",
        "OPENAI_COMPAT_HISTORY_GUIDANCE",
        "OUTPUT_REDIRECT_PROMPT",
        "PERSONALITY_CONTEXT_SECTION_HEADING",
        "PROMPT_CURATION_PROMPT_TEMPLATE",
        "PROMPT_CURATION_RECHECK_TEMPLATE",
        "QUEUED_MESSAGE_NOTICE_TEXT",
        "ROUTER_AGENT_SELECTION_PROMPT_TEMPLATE",
        "ROUTER_THREAD_CONTEXT_HEADER",
        "SKILLS_TOOL_USAGE_PROMPT",
        "SKILL_REVIEW_PROMPT",
        "TEAM_MODE_SELECTION_PROMPT_TEMPLATE",
        "THREAD_HISTORY_OMITTED_MARKER_TEMPLATE",
        "THREAD_SUMMARY_INSTRUCTIONS",
        "THREAD_SUMMARY_USER_PROMPT_TEMPLATE",
        "VOICE_TRANSCRIPTION_NORMALIZER_PROMPT_TEMPLATE",
        "WORKFLOW_SCHEDULE_PARSE_PROMPT_TEMPLATE",
        "WORKSPACE_SKILL_AUTHORING_PROMPT",
    }
)
"""The names `prompts:` may replace in MindRoom (any other name is an error there and here)."""

PROMPTS_USED: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "DATETIME_CONTEXT_TEMPLATE": ("date_str", "time_str", "timezone_str", "timezone_abbrev"),
        "HIDDEN_TOOL_CALLS_PROMPT": (),
    }
)
"""The prompts this daemon uses, with the fields each may name in braces; a replacement of any other of
MindRoom's prompts is accepted with a warning."""


@dataclass(frozen=True, slots=True)
class KeyNote:
    """A MindRoom key path, whether this daemon uses it, and what it does here or why not."""

    path: str
    used: bool
    note: str


def note_for(path: str) -> KeyNote:
    """The note of `path`: its own, else the nearest section's above it (`KeyError` when none has one)."""
    probe = path
    while probe:
        if probe in NOT_USED:
            return KeyNote(probe, False, NOT_USED[probe])
        if probe in USED:
            return KeyNote(probe, True, USED[probe])
        cut = max(probe.rfind("."), probe.rfind("["))
        probe = probe[:cut] if cut > 0 else ""
    raise KeyError(path)
