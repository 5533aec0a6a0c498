"""The exceptions the daemon raises on purpose, all drawn here as one tree.

    MindroomError
    ├── ConfigError               config.yaml or the environment is invalid (names file, key path, line)
    ├── PluginError               a plugin cannot be loaded (names the plugin and the cause)
    │   ├── ManifestError         mindroom.plugin.json is missing or malformed
    │   │   └── PluginApiVersionError   the plugin needs a newer plugin API than this daemon has  (plugins.manifest)
    │   └── PluginImportError     a plugin module failed to import
    ├── PluginStateError          a plugin name would put its state outside `<data>/plugins/` (also ValueError)
    ├── InvalidHookResultError    a hook returned what its mode cannot use; counted as its failure  (hooks.emission)
    ├── SkillError                a SKILL.md folder is malformed, or two plugins offer one skill  (plugins.skills)
    ├── ToolCatalogError          plugin tools clash, or an agent names an unknown tool  (tool_system.catalog)
    ├── ToolError                 a tool refuses or fails; its text goes back to the model  (tool_system.spec)
    ├── ToolMetadataValidationError   no registered tool of that name  (tool_system.metadata; also ValueError)
    ├── PathConfinementError      a path would leave its root, or is a link  (tool_system.path_confinement; ValueError)
    ├── ModelConfigError          a model cannot be built (names model and problem)  (ai.errors)
    ├── GenerationError           the model failed while answering; safe to show in chat  (ai.errors)
    │   └── StreamStalledError    a streamed answer went silent past its idle limit  (ai.resilience)
    ├── TranscriptionError        a voice message could not be turned into text  (ai.media)
    ├── SpeechError               an answer could not be spoken by the speech service  (ai.speech)
    ├── OggOpusError              audio is not the Ogg/Opus a voice message carries (also ValueError)  (matrix.voice)
    ├── UnreadableFileError       a knowledge file cannot be indexed; says why  (ai.knowledge.files)
    ├── GitSyncError              a knowledge base's Git checkout cannot sync; git's words  (ai.knowledge.git_checkout)
    ├── MatrixError               anything the Matrix layer reports  (matrix.errors)
    │   ├── MatrixConnectionError   the homeserver could not be reached (also ConnectionError)
    │   ├── MatrixRequestError      the homeserver answered with a Matrix error
    │   │   └── MediaTooLargeError    an attachment is larger than the daemon takes  (matrix.media)
    │   ├── MatrixLoginError        a bot could not log in, register or reuse its credentials
    │   ├── MatrixDeviceError       a bot's device cannot go on, so the bot is not started (names the bot)
    │   │   ├── MatrixCryptoStoreError  its crypto store is lost or unreadable (names the file)
    │   │   └── MatrixRecoveryError     its crypto state does not open with the recovery key given (names the fix)
    │   ├── KeyProblem              an account's keys need the operator's fix (logged)  (matrix.crypto.account_keys)
    │   ├── RecoveryKeyError        a recovery key's text is not one (also ValueError)  (matrix.crypto.recovery_key)
    │   ├── SecretStorageError      a secret does not open with that key (ValueError)  (matrix.crypto.secret_storage)
    │   ├── SealError               a sealed crypto item does not open (also ValueError)  (matrix.crypto.sealing)
    │   ├── MatrixEncryptionError   an event for an encrypted room could not be encrypted (so it was not sent)
    │   ├── ThreadTagError          a thread tag is not read or written: bad name, no power  (matrix.thread_tags)
    │   └── AgentMessageSnapshotUnavailable   MindRoom's "latest message unreadable" (also RuntimeError); never
    │                               raised here: the daemon reads it from memory  (matrix.cache.agent_message_snapshot)
    ├── StateError                the daemon's state cannot be used  (state.errors)
    │   ├── StateLockedError      another daemon holds the state; names it (host, pid, since when)
    │   └── StateLostError        the state's lock was lost while running
    ├── QueueFullError            a room already has as many turns waiting as it may  (bots.fairness)
    ├── ScheduleParseError        a `!schedule` line cannot be read (also ValueError)  (daemon.scheduling.parse)
    ├── SynapseError              a Synapse process failed to start or answer; carries log tails  (homeserver.synapse)
    ├── EmbeddedHomeserverError   the embedded homeserver cannot run; says what to install or fix  (homeserver.embedded)
    ├── HomeserverError           the testing kit's homeserver failed (testing.homeserver)
    └── ChatError                 `mindroom chat` cannot sign in or find its room  (cli.chat)

Hook callbacks never surface exceptions to callers: the hook host contains them (see
`mindroom.hooks.execution`). `ValueError`/`TypeError` from the `@hook` decorator are programming
errors in the plugin and surface at import, where the plugin loader reports them as `PluginImportError`.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["ConfigError", "ManifestError", "MindroomError", "PluginError", "PluginImportError", "PluginStateError"]


class MindroomError(Exception):
    """Base class for errors the daemon reports to its operator."""


class ConfigError(MindroomError):
    """The config file or environment is invalid; the message names the file, key path and problem."""

    def __init__(self, path: Path | str, problems: list[str]) -> None:
        self.path = Path(path)
        self.problems = problems
        joined = "\n".join(f"  {problem}" for problem in problems)
        super().__init__(f"invalid config {self.path}:\n{joined}")


class PluginError(MindroomError):
    """A plugin could not be loaded; names the plugin (or its folder) and the cause."""

    def __init__(self, plugin: str, path: Path | str, cause: str) -> None:
        self.plugin = plugin
        self.path = Path(path)
        self.cause = cause
        super().__init__(f"plugin {plugin!r} ({self.path}): {cause}")


class ManifestError(PluginError):
    """The plugin's manifest is missing or malformed."""


class PluginImportError(PluginError):
    """One of the plugin's modules failed to import."""


class PluginStateError(MindroomError, ValueError):
    """A plugin name that would place its state directory outside `<data>/plugins/`."""
