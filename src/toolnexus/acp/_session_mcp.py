"""The MCP servers an editor gives a session (`mcpServers` of `session/new`, `session/load`,
`session/resume`), connected as an MCP source of that session only.

Stdio servers run in the session's `cwd`; HTTP and SSE servers are the remote kind of an
`mcp.json` (streamable HTTP first, SSE as its fallback). Every value is taken as the editor sent
it: a header holding `${...}` is refused rather than expanded from this process's environment.
A server that cannot be used (an unknown transport, a failed connection) fails the request with
an error naming it, and nothing of the session's servers stays open.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["connect_session_servers", "with_session_tools"]


class _Unusable(Exception):
    """Why one of the editor's servers cannot be an `mcp.json` entry (never leaves this module:
    each becomes part of the request's invalid-params error)."""


def _entry(server: Any, cwd: str) -> dict[str, Any]:
    """The `mcp.json` entry of one ACP `McpServer`; `_Unusable` says why it cannot be one."""
    kind = getattr(server, "type", None)
    if kind in ("http", "sse"):
        headers = {h.name: h.value for h in server.headers or ()}
        for name, value in headers.items():
            if "${" in value:
                raise _Unusable(
                    f'header "{name}" holds "${{", which is never expanded here: send its value'
                )
        return {"type": kind, "url": server.url, "headers": headers}
    if kind == "acp":
        raise _Unusable('the "acp" transport (MCP over ACP) is not supported: use stdio or HTTP')
    if hasattr(server, "command"):
        return {
            "command": server.command,
            "args": list(server.args or ()),
            "env": {e.name: e.value for e in server.env or ()},
            "cwd": cwd,
        }
    raise _Unusable(f"unknown transport {kind!r}")


async def connect_session_servers(servers: Sequence[Any] | None, cwd: str) -> Any:
    """The `McpSource` of `servers` (`None` when there are none), the session's `cwd` offered
    to them as their root. Raises the SDK's invalid-params `RequestError` naming every server
    that cannot be used; nothing stays open then."""
    import acp
    from toolnexus.mcp_source import load_mcp_with_context

    if not servers:
        return None
    config: dict[str, Any] = {}
    problems: list[str] = []
    for server in servers:
        name = str(getattr(server, "name", "") or "")
        try:
            if not name:
                raise _Unusable("it has no name")
            if name in config:
                raise _Unusable("the name is given twice")
            config[name] = _entry(server, cwd)
        except _Unusable as exc:
            problems.append(f'MCP server "{name}": {exc}')
    if problems:
        raise acp.RequestError.invalid_params({"mcpServers": "; ".join(problems)})
    try:
        source = await load_mcp_with_context({"mcpServers": config}, roots=[cwd])
    except Exception as exc:
        raise acp.RequestError.invalid_params({"mcpServers": str(exc)}) from None
    failed = {n: s for n, s in source.servers.items() if s.status != "connected"}
    if failed:
        await source.close()
        said = "; ".join(
            f'MCP server "{name}" {state.status}: {state.error or "no reason given"}'
            for name, state in failed.items()
        )
        raise acp.RequestError.invalid_params({"mcpServers": said})
    return source


def with_session_tools(toolkit: Any, source: Any) -> Any:
    """A view of `toolkit` plus the tools of the session's `source` (a toolkit tool keeps its
    name on a clash); the toolkit itself is left as it is, for the other sessions."""
    view = toolkit
    for tool in source.tools:
        view = view._with_tool(tool)
    return view
