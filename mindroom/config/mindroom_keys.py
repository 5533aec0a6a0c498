"""MindRoom 2026.10's `config.yaml` keys: the one list of them, as a tree of key paths.

A path names mapping keys with `*` (`agents.*` is every agent) and list items with `[]` (`defaults.tools[]`).
`MINDROOM_KEY_TREE` gives each section's keys; a key with no entry of its own holds a value (or a free-form
mapping, such as `models.*.extra_kwargs`), so nothing under it is checked. `personal_agents.*.agent` has an
agent's keys. `tests/config/test_mindroom_keys.py` checks the tree against MindRoom's own config models.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import MappingProxyType

__all__ = ["MINDROOM_KEY_TREE", "child_pattern", "is_mindroom_key", "mindroom_key_paths", "mindroom_keys_under"]

_ACCESS = "current_room_members members_of_rooms users"
_COMPACTION = "enabled fallback_model model replay_window_tokens reserve_tokens threshold_percent threshold_tokens"
_COMPACTION += " timeout_seconds"
_JUDGMENT = "credentials_service model provider threshold timeout_seconds"
_GIT = "branch credentials_service exclude_patterns include_patterns lfs poll_interval_seconds repo_url skip_hidden"
_GIT += " sync_timeout_seconds"
_AUTOMATION = "cron max_content_loss max_leads max_reduction max_tool_calls min_reduction model name options"
_AUTOMATION += " revisit_days room trigger_tokens"
_TOOL_ENTRY = "defer initial name overrides"
_SPEECH = "api_key credentials_service extra_kwargs host model provider"
_AGENT = (
    "accept_invites access allow_self_config automations cheap_model cold_cache compaction context_files"
    " credential_managers delegate_to display_name file_access include_default_tools instructions knowledge_bases"
    " knowledge_graph knowledge_graph_edits markdown max_tool_calls_from_history max_tool_calls_per_turn"
    " mcp_gateway_shared_credentials memory_backend memory_search mid_turn minimal_instructions model"
    " num_history_messages num_history_runs participation private role room_thread_modes rooms show_tool_calls"
    " skill_learning skills thread_exports thread_mode timezone tools worker_scope worker_tools"
)
_AGENT_SECTIONS = {
    "": _AGENT,
    ".access": _ACCESS,
    ".automations[]": _AUTOMATION,
    ".cold_cache": "idle_seconds judgment",
    ".cold_cache.judgment": _JUDGMENT,
    ".compaction": _COMPACTION,
    ".memory_search": "include include_entrypoint mode",
    ".mid_turn": "defer_reaction instructions judgment",
    ".mid_turn.judgment": _JUDGMENT,
    ".participation": "debounce_seconds decline_reaction instructions judgment",
    ".participation.judgment": _JUDGMENT,
    ".private": "context_files knowledge per root template_dir",
    ".private.knowledge": "chunk_overlap chunk_size description enabled git path watch",
    ".private.knowledge.git": _GIT,
    ".skill_learning": "archive_after_days enabled model notify review_interval timeout_seconds",
    ".thread_exports": "invited_rooms private_room_scope",
    ".tools[]": _TOOL_ENTRY,
}

_TREE: dict[str, str] = {
    "": (
        "administrators agents authorization background_tool_jobs bot_accounts budgets calls debug defaults"
        " egress_broker event_journal external_trigger_policy knowledge_bases knowledge_graph knowledge_reranker"
        " matrix_space matrix_sync mcp_servers memory mindroom_user models personal_agents personal_rooms plugins"
        " prompts room_defaults room_models room_thread_summary_models rooms router scheduler_catch_up_grace_seconds"
        " teams timezone tool_approval voice"
    ),
    **{f"agents.*{suffix}": keys for suffix, keys in _AGENT_SECTIONS.items()},
    **{f"personal_agents.*.agent{suffix}": keys for suffix, keys in _AGENT_SECTIONS.items()},
    "authorization": "aliases config_command_enabled",
    "background_tool_jobs": "approval_wait_timeout enabled exclude_toolkits",
    "budgets": "fallback_model monthly_limit_usd",
    "calls": "agents enabled livekit_service_url profiles",
    "calls.profiles.*": "agent_model backend credentials_service model stt tts voice",
    "calls.profiles.*.stt": _SPEECH,
    "calls.profiles.*.tts": _SPEECH,
    "debug": "llm_request_log_dir log_llm_requests",
    "defaults": (
        "allow_self_config automations cheap_model coalescing compaction enable_streaming file_access knowledge_graph"
        " knowledge_graph_edits large_message_strategy markdown max_consecutive_agent_replies max_preload_chars"
        " max_tool_calls_from_history max_tool_calls_per_turn num_history_messages num_history_runs show_stop_button"
        " show_tool_calls streaming thread_summary_first_threshold thread_summary_model"
        " thread_summary_subsequent_interval thread_summary_temperature tool_output_auto_save_threshold_bytes tools"
        " worker_grantable_credentials worker_scope worker_tools"
    ),
    "defaults.automations[]": _AUTOMATION,
    "defaults.coalescing": "debounce_ms",
    "defaults.compaction": _COMPACTION,
    "defaults.streaming": "interval_ramp_seconds max_idle min_update_interval update_interval",
    "defaults.tools[]": _TOOL_ENTRY,
    "egress_broker": "private_networks services unmatched_hosts",
    "egress_broker.services.*": (
        "description display_name oauth_on_shared_workers oauth_provider placeholder_env preset restrict_only"
        " restrict_to_rules rules"
    ),
    "egress_broker.services.*.rules[]": "auth host path_prefix port",
    "egress_broker.services.*.rules[].auth": "name template type username",
    "event_journal": "backend database_url database_url_env",
    "external_trigger_policy": (
        "admin_users default_max_body_bytes default_replay_window_seconds enabled max_body_bytes"
        " max_replay_window_seconds max_triggers_per_owner"
    ),
    "knowledge_bases.*": (
        "chunk_context_model chunk_overlap chunk_size description exclude_extensions exclude_patterns extra_extensions"
        " git include_extensions include_patterns mode path poll_interval_seconds require_content_before_publish"
        " skip_hidden watch"
    ),
    "knowledge_bases.*.git": _GIT,
    "knowledge_graph": "aliases extraction_instructions generation ingest model",
    "knowledge_graph.ingest": (
        "backfill_days idle_seconds interval_seconds max_episode_chars max_sessions_per_cycle max_tool_result_chars"
    ),
    "knowledge_reranker": "api_key credentials_service model provider url",
    "matrix_space": "enabled name",
    "matrix_sync": "max_pending_bytes max_response_bytes mode sliding_timeline_limit",
    "mcp_servers.*": (
        "allow_private_network args auth auto_reconnect call_timeout_seconds command cwd description display_name"
        " enabled env exclude_tools headers icon include_tools max_concurrent_calls required startup_timeout_seconds"
        " summary tool_prefix transport url"
    ),
    "mcp_servers.*.auth": (
        "authorization_server authorization_url client_config_services discovery display_name"
        " dynamic_client_registration extra_auth_params extra_token_params pkce_code_challenge_method provider_id"
        " registration_url resource scopes shared_client_config_services token_endpoint_auth_method token_url type"
    ),
    "memory": "auto_flush backend embedder file llm search team_reads_member_memory",
    "memory.auto_flush": (
        "batch enabled extractor flush_interval_seconds idle_seconds max_retry_cooldown_seconds"
        " retry_cooldown_seconds stale_ttl_seconds"
    ),
    "memory.auto_flush.batch": "max_sessions_per_agent_per_cycle max_sessions_per_cycle",
    "memory.auto_flush.extractor": (
        "include_memory_context max_chars_per_flush max_extraction_seconds max_messages_per_flush model no_reply_token"
    ),
    "memory.auto_flush.extractor.include_memory_context": "memory_snippets snippet_max_chars",
    "memory.embedder": "config provider",
    "memory.embedder.config": "api_key credentials_service dimensions document_prefix host model query_prefix",
    "memory.file": "max_entrypoint_lines max_entrypoint_tokens path",
    "memory.llm": "config provider",
    "memory.search": "include include_entrypoint mode",
    "mindroom_user": "display_name username",
    "models.*": (
        "api api_key context_window display_name extra_kwargs host icon id pricing provider stream_idle_timeout_seconds"
    ),
    "models.*.pricing": "cache_read cache_write input output",
    "personal_agents.*": "agent matrix_username name users",
    "personal_rooms": (
        "agent alias_prefix auto_join_requester avatar avatar_from_requester backfill commands confirmation name"
        " onboarding_rooms requester_admin topic welcome welcome_dispatch"
    ),
    "plugins[]": "enabled hooks path settings",
    "plugins[].hooks.*": "enabled priority timeout_ms",
    "room_defaults": "admins encrypted invite_users join_policy listed",
    "rooms.*": "admins description display_name encrypted invite_users join_policy listed",
    "router": "accept_invites access judgment model",
    "router.access": _ACCESS,
    "router.judgment": "credentials_service provider threshold timeout_seconds",
    "teams.*": (
        "accept_invites access agents compaction display_name max_tool_calls_from_history max_tool_calls_per_turn"
        " mode model num_history_messages num_history_runs role rooms"
    ),
    "teams.*.access": _ACCESS,
    "teams.*.compaction": _COMPACTION,
    "tool_approval": "default rules scheduled_any_arguments timeout_days",
    "tool_approval.rules[]": "action match script timeout_days",
    "voice": "enabled intelligence stt visible_router_echo",
    "voice.intelligence": "model",
    "voice.stt": _SPEECH,
}

MINDROOM_KEY_TREE: Mapping[str, frozenset[str]] = MappingProxyType(
    {parent: frozenset(keys.split()) for parent, keys in _TREE.items()}
)
"""Section path -> its keys (the root is `""`)."""


def _joined(parent: str, key: str) -> str:
    return f"{parent}.{key}" if parent else key


def child_pattern(parent: str, key: str | int) -> str | None:
    """The path pattern of `key` under the section `parent` (`agents`, `helper` -> `agents.*`), or None when
    MindRoom has no such key there (or `parent` holds a value, so nothing under it is a key of its own)."""
    if isinstance(key, int):
        pattern = f"{parent}[]"
        return pattern if pattern in MINDROOM_KEY_TREE else None
    keys = MINDROOM_KEY_TREE.get(parent)
    if keys is not None and key in keys:
        return _joined(parent, key)
    wildcard = _joined(parent, "*")
    if any(path == wildcard or path.startswith((f"{wildcard}.", f"{wildcard}[")) for path in MINDROOM_KEY_TREE):
        return wildcard
    return None


def _paths(parent: str) -> Iterator[str]:
    for key in sorted(MINDROOM_KEY_TREE.get(parent, ())):
        path = _joined(parent, key)
        yield path
        for level in (path, f"{path}.*", f"{path}[]", f"{path}.*[]"):
            if level != path and level in MINDROOM_KEY_TREE:
                yield from _paths(level)
        if path in MINDROOM_KEY_TREE:
            yield from _paths(path)


def mindroom_key_paths() -> frozenset[str]:
    """Every MindRoom key path (`agents.*.timezone`, `defaults.tools[].name`, ...)."""
    return frozenset(_paths(""))


def is_mindroom_key(path: str) -> bool:
    """True when `path` (a pattern, as `mindroom_key_paths` spells them) is one of MindRoom's keys."""
    return path in _ALL


def mindroom_keys_under(path: str) -> frozenset[str]:
    """The keys MindRoom has in the section at `path` (empty when it holds a value)."""
    return MINDROOM_KEY_TREE.get(path, frozenset())


_ALL = mindroom_key_paths()
