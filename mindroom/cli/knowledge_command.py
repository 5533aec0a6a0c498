"""`mindroom knowledge`: what the knowledge bases hold, and rebuilding one.

Both read and write the indexes directly (SQLite files under the data directory, or the state's
PostgreSQL database), so they work whether or not a daemon runs: a running daemon's searches see a
rebuilt index as soon as it is written, file by file.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from mindroom.cli.common import ConfigOption, StorageOption, fail, read_cli_environment
from mindroom.logging_config import configure_logging

if TYPE_CHECKING:
    from mindroom.ai.knowledge.base import KnowledgeBase
    from mindroom.config.environment import DaemonEnvironment
    from mindroom.config.main import Config

__all__ = ["knowledge_app", "knowledge_reindex", "knowledge_status"]

knowledge_app = typer.Typer(no_args_is_help=True, help="Show and rebuild the knowledge bases' indexes.")


def _setup(config: Path | None, storage_path: Path | None) -> tuple[DaemonEnvironment, Config, str | None]:
    from mindroom.config.loading import load_config
    from mindroom.errors import ConfigError

    configure_logging("WARNING")
    found = read_cli_environment(config, storage_path)
    try:
        loaded = load_config(found.config_path, found.values)
    except ConfigError as exc:
        fail(str(exc), code=2)
        raise  # unreachable: fail exits
    return found, loaded, found.database_url or loaded.storage.database_url


async def _base(found: DaemonEnvironment, loaded: Config, url: str | None, base_id: str) -> KnowledgeBase:
    from mindroom.ai.knowledge.base import KnowledgeBase
    from mindroom.ai.knowledge.embedder import embedder_spec
    from mindroom.ai.knowledge.service import base_root
    from mindroom.state.location import open_knowledge_index

    config = loaded.knowledge_bases[base_id]
    index = await asyncio.to_thread(open_knowledge_index, found.storage_root, url, base_id)
    spec = embedder_spec(loaded.memory.embedder, found.values)
    return KnowledgeBase(base_id, config, base_root(found.config_path.parent, config), index, spec)


async def _status(found: DaemonEnvironment, loaded: Config, url: str | None) -> list[str]:
    lines = []
    for base_id, config in loaded.knowledge_bases.items():
        if config.mode == "files":
            lines.append(f"{base_id}: files mode (no index)")
            continue
        base = await _base(found, loaded, url, base_id)
        try:
            counts = await asyncio.to_thread(base.counts)
            ready = await asyncio.to_thread(getattr, base, "ready")
            state = "ready" if ready else "not built with the current settings (the daemon or `reindex` builds it)"
            search = "words and vectors" if base.embedder_spec is not None else "words"
            lines.append(
                f"{base_id}: {state}; {counts.files} files, {counts.chunks} chunks, {counts.vectors} vectors;"
                f" searched by {search}; folder {base.root}"
            )
            known = await asyncio.to_thread(base.index.files)
            lines += [f"  skipped {path}: {file.skipped}" for path, file in sorted(known.items()) if file.skipped]
        finally:
            await base.close()
    return lines or ["No knowledge bases are configured."]


@knowledge_app.command("status")
def knowledge_status(config: ConfigOption = None, storage_path: StorageOption = None) -> None:
    """Each base: whether its index is built, how many files, chunks and vectors, and the files skipped (why)."""
    found, loaded, url = _setup(config, storage_path)
    for line in asyncio.run(_status(found, loaded, url)):
        typer.echo(line)


async def _reindex(found: DaemonEnvironment, loaded: Config, url: str | None, base_id: str) -> list[str]:
    base = await _base(found, loaded, url, base_id)
    try:
        report = await base.refresh(rebuild=True)
        counts = await asyncio.to_thread(base.counts)
    finally:
        await base.close()
    lines = [
        f"{base_id}: indexed {report.indexed} files in {report.seconds:.1f} s"
        f" ({counts.chunks} chunks, {counts.vectors} vectors); {len(report.skipped)} skipped"
    ]
    return lines + [f"  skipped {path}: {reason}" for path, reason in report.skipped]


@knowledge_app.command("reindex")
def knowledge_reindex(
    name: Annotated[str, typer.Argument(help="The knowledge base's id under knowledge_bases:.")],
    config: ConfigOption = None,
    storage_path: StorageOption = None,
) -> None:
    """Rebuild one base's index from its folder, from nothing."""
    found, loaded, url = _setup(config, storage_path)
    bases = loaded.knowledge_bases
    if name not in bases or bases[name].mode != "semantic":
        known = ", ".join(sorted(b for b, c in bases.items() if c.mode == "semantic")) or "none"
        fail(f"mindroom knowledge reindex: no indexed knowledge base {name!r} (known: {known})", code=2)
        return
    try:
        lines = asyncio.run(_reindex(found, loaded, url, name))
    except FileNotFoundError as exc:
        fail(f"mindroom knowledge reindex: {exc}", code=1)
        return
    for line in lines:
        typer.echo(line)
