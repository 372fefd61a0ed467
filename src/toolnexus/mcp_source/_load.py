"""Loading MCP servers: `load_mcp`, `load_mcp_with_context` and `list_mcp_tools` connect every
enabled server of a config concurrently (`_run_load`: cancellable, leaving nothing running).

Sits above `_source` (the `McpSource` a load returns) and `_server` (one server each).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from toolnexus._aio import mark_seen, wait_signal
from toolnexus.errors import ConfigError
from toolnexus.mcp_source._config import parse_mcp_config as _parse_mcp_config
from toolnexus.mcp_source._roots import RootInput
from toolnexus.mcp_source._server import WaitFor, _Server, tool_info
from toolnexus.mcp_source._source import McpSource
from toolnexus.mcp_source._state import McpInventory, ToolInfo

if TYPE_CHECKING:
    from toolnexus.oauth import TokenStore

ConfigInput = str | os.PathLike[str] | Mapping[str, Any]


def parse_mcp_config(path_or_dict: ConfigInput) -> dict[str, dict[str, Any]]:
    """The server map of a config; see `toolnexus.mcp_source._config`."""
    return _parse_mcp_config(path_or_dict)


async def load_mcp(config: ConfigInput, wait_for: WaitFor | None = None) -> McpSource:
    """Connect every enabled server concurrently and list its tools (no cancellation)."""
    return await load_mcp_with_context(config, wait_for)


async def load_mcp_with_context(
    config: ConfigInput,
    wait_for: WaitFor | None = None,
    *,
    cancel: asyncio.Event | None = None,
    roots: Sequence[RootInput] | None = None,
    workspace: str | os.PathLike[str] | None = None,
    token_store: TokenStore | Any = None,
) -> McpSource:
    """Connect every enabled server concurrently and list its tools.

    A failing server is recorded `failed` with a warning; it never fails the load. Only a config
    file that cannot be read or is not a JSON object raises `ValueError`. Setting `cancel` stops
    the whole load: everything opened is closed and `asyncio.CancelledError` propagates.
    `roots` (paths, `file://` URIs or `{"uri", "name"}`) and `workspace` are the roots offered
    to servers whose config has no `roots` key. `token_store` keeps the OAuth credentials of
    servers configured with `auth` and no `store` of their own (default: the file store).
    A server whose sign-in waits for the host (no `wait_for`) is `needs_auth`.
    """
    _check_cancel(cancel)
    servers = [
        _Server(name, cfg, wait_for, roots=roots, workspace=workspace, token_store=token_store)
        for name, cfg in (await _server_map(config)).items()
    ]
    source = McpSource(servers)
    connecting = [server.connect() for server in servers if server.wants_connection]
    await _run_load(connecting, cancel, source.close)
    try:
        _check_prefix_collisions(servers)
    except ConfigError:
        await source.close()
        raise
    return source


def _check_prefix_collisions(servers: Sequence[_Server]) -> None:
    """Two servers whose names clash because of a configured `"prefix"` are a config error
    (without one, the `<server>_` prefixes keep servers apart)."""
    owners: dict[str, _Server] = {}
    for server in servers:
        for tool in server.tools:
            first = owners.setdefault(tool.name, server)
            if first is not server and (
                first.spec is not None
                and server.spec is not None
                and (first.spec.prefix is not None or server.spec.prefix is not None)
            ):
                raise ConfigError(
                    f'MCP servers "{first.name}" and "{server.name}" both serve a tool named '
                    f'"{tool.name}": give one of them another "prefix"'
                )


async def list_mcp_tools(
    config: ConfigInput, *, cancel: asyncio.Event | None = None
) -> McpInventory:
    """Connect to every enabled server, list its tools (unfiltered) and disconnect."""
    _check_cancel(cancel)
    servers = [_Server(name, cfg) for name, cfg in (await _server_map(config)).items()]
    listed: dict[str, list[ToolInfo]] = {}
    protocols: dict[str, str | None] = {s.name: None for s in servers}

    async def inventory(server: _Server) -> None:
        try:
            if await server.connect(list_only=True):
                assert server.conn is not None
                protocols[server.name] = server.conn.protocol
                listed[server.name] = [tool_info(t) for t in server.conn.tools]
        finally:
            await server.close()

    async def close_all() -> None:
        await asyncio.gather(*(server.close() for server in servers))

    await _run_load(
        [inventory(server) for server in servers if server.wants_connection], cancel, close_all
    )
    return McpInventory(
        tools={s.name: listed[s.name] for s in servers if s.name in listed},
        status={s.name: s.status for s in servers},
        protocol=protocols,
    )


async def _server_map(config: ConfigInput) -> dict[str, Any]:
    if isinstance(config, Mapping):
        return _parse_mcp_config(config)
    return await asyncio.to_thread(_parse_mcp_config, config)


def _check_cancel(cancel: asyncio.Event | None) -> None:
    if cancel is not None and cancel.is_set():
        raise asyncio.CancelledError("MCP load cancelled")


async def _run_load(
    jobs: list[Coroutine[Any, Any, Any]],
    cancel: asyncio.Event | None,
    abort: Callable[[], Coroutine[Any, Any, None]],
) -> None:
    """Run the connect jobs concurrently; on `cancel` (or our own cancellation) abort them all,
    close what was opened, and raise `asyncio.CancelledError`."""
    if not jobs:
        return
    tasks = [asyncio.ensure_future(job) for job in jobs]
    everything = asyncio.gather(*tasks)
    everything.add_done_callback(mark_seen)
    watcher = asyncio.ensure_future(wait_signal(cancel)) if cancel is not None else None
    waiters: set[asyncio.Future[Any]] = {everything} if watcher is None else {everything, watcher}
    try:
        done, _ = await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    except BaseException:
        await _abort(tasks, abort)
        raise
    finally:
        if watcher is not None:
            watcher.cancel()
    if everything not in done:
        await _abort(tasks, abort)
        raise asyncio.CancelledError("MCP load cancelled")
    try:
        everything.result()
    except BaseException:  # a bug rather than a failing server: still leave nothing running
        await _abort(tasks, abort)
        raise


async def _abort(
    tasks: Sequence[asyncio.Future[Any]], abort: Callable[[], Coroutine[Any, Any, None]]
) -> None:
    """Cancel the jobs and close what they opened; return once both are done (a job cancelled
    between spawning a child and handing it to its connection kills that child itself)."""
    for task in tasks:
        task.cancel()
        task.add_done_callback(mark_seen)
    closing = asyncio.ensure_future(asyncio.gather(asyncio.wait(tasks), abort()))
    try:
        await asyncio.shield(closing)
    except asyncio.CancelledError:
        await asyncio.wait({closing})  # cancelled again: still finish closing, then propagate
        raise
