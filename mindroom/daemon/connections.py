"""People's OAuth connections for one run: the sealed vault, `!connect`/`!disconnect`/`!connections`, and the
service the HTTP app's callback and the tools of this run's turns find by its data directory."""

from __future__ import annotations

from mindroom.bots.commands.connections import connection_commands
from mindroom.bots.commands.table import CommandTable
from mindroom.daemon.startup.plan import PhaseStops, Stopping
from mindroom.daemon.wiring import RunningDaemon
from mindroom.logging_config import get_logger
from mindroom.matrix.crypto.recovery_key import RecoveryKeys
from mindroom.matrix.crypto.sealing import Sealer
from mindroom.oauth.errors import OAuthError
from mindroom.oauth.service import OAuthConnections, provide_connections
from mindroom.oauth.vault import TokenVault
from mindroom.state.backend import StateStores
from mindroom.tool_system.mcp.oauth_providers import MCPOAuthProviders

__all__ = ["announce_providers", "start_connections"]

logger = get_logger(__name__)


def start_connections(
    running: RunningDaemon, stores: StateStores, commands: CommandTable, keys: RecoveryKeys, stops: PhaseStops
) -> OAuthConnections | None:
    """Offer this run's connections (sealed with the recovery key) until it stops; None without a store."""
    if stores.connections is None:
        return None
    vault = TokenVault(stores.connections, lambda: Sealer(keys.load_or_create().key))
    cell, paths = running.cell, running.paths
    service = OAuthConnections(vault, lambda: cell.live.config.oauth_providers, paths.env_values, paths.config_dir)
    service.sources.append(MCPOAuthProviders(service, lambda: cell.live.config.mcp_servers))
    for command in connection_commands(service, lambda: running.directory.bot_user_ids.values()):
        commands.register(command)
    withdraw = provide_connections(paths.storage_root, service)

    async def stop(stopping: Stopping) -> None:
        withdraw()

    stops.add("oauth connections", stop)
    announce_providers(service)
    return service


def announce_providers(service: OAuthConnections) -> None:
    """Say at start which providers people can connect, and why the others named cannot be (never silent)."""
    try:
        states = service.states()
    except OAuthError as error:
        logger.warning("OAuth providers not usable", problem=str(error))
        return
    for state in states.values():
        if state.resolved is None and state.waiting:
            logger.info("OAuth provider of an MCP server", about=state.problem)
        elif state.resolved is None:
            logger.warning("OAuth provider not usable", problem=state.problem)
    if ready := sorted(state.id for state in states.values() if state.resolved is not None):
        logger.info("OAuth providers ready", providers=ready)
