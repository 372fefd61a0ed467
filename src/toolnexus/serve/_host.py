"""The host of both profiles: `serve_toolkit` (MCP and/or A2A over one HTTP server),
`serve_toolkit_stdio` (MCP over stdin/stdout) and `start_a2a_server` (tasks answered by a
function instead of a client)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeAlias

from toolnexus._json import compact_json
from toolnexus._log import warn
from toolnexus._secrets import remember
from toolnexus._served import Served, ToolList
from toolnexus.errors import ConfigError, ConfigTypeError
from toolnexus.serve._a2a._card import build_agent_card
from toolnexus.serve._a2a._endpoint import DEFAULT_MAX_IN_FLIGHT, A2AEndpoint
from toolnexus.serve._a2a._run_task import RunTask, RunTaskClient
from toolnexus.serve._a2a._stores import resolve_store
from toolnexus.serve._addr import bind_socket, is_loopback, parse_addr, public_url
from toolnexus.serve._app import (
    AGENT_CARD_PATH,
    ServeHandle,
    ServeLimits,
    build_app,
    start_server,
)
from toolnexus.serve._auth import (
    OAuthCard,
    ResourceAuth,
    TokenVerifierImpl,
    served_tool_scopes,
)
from toolnexus.serve._mcp._http import session_policy
from toolnexus.serve._mcp._profile import (
    OnCall,
    execute_through,
    exposed_mcp_tools,
    make_mcp_server,
)
from toolnexus.serve._mcp._tasks import runs_as_task
from toolnexus.types import Tool

if TYPE_CHECKING:
    from toolnexus.skill import SkillInfo


__all__ = [
    "CARD_PATH",
    "OnTask",
    "serve_toolkit",
    "serve_toolkit_stdio",
    "start_a2a_server",
]

CARD_PATH = AGENT_CARD_PATH
"""Where the A2A profile serves its agent card."""

OnTask: TypeAlias = Callable[[dict[str, Any]], "Awaitable[None] | None"]
"""Called once per A2A task when it ends, with `{"id", "task", "result", "state"}`."""

# Built-ins that run commands or change files: risky to expose to a network without a token.
_DANGEROUS_BUILTINS = ("bash", "write", "edit", "apply_patch")


def _profile(value: Any, config: Mapping[str, Any], key: str, arg: str) -> Mapping[str, Any] | None:
    """The explicit profile, else the toolkit config's block; `None` means no profile."""
    if value is None:
        value = config.get(key)
        where = f'the config\'s "{key}" block'
    else:
        where = f"{arg}="
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ConfigTypeError(
            f"{where} must be a dict (the {arg} profile), not {type(value).__name__}"
        )
    return value


def _warn_if_exposed(host: str, port: int, tools: list[Tool]) -> None:
    risky = [t.name for t in tools if t.source == "builtin" and t.name in _DANGEROUS_BUILTINS]
    if not risky:
        return
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    warn(
        f"SECURITY: serving {', '.join(risky)} on {where} without auth_token — anyone who can "
        "reach this address can run commands and change files on this machine. Pass "
        "auth_token=..., bind 127.0.0.1, or leave these built-ins out (builtins={'tools': {...}})."
    )


async def serve_toolkit(
    toolkit: Served,
    addr: str,
    *,
    client: Any = None,
    a2a: Mapping[str, Any] | None = None,
    on_task: Callable[..., Any] | None = None,
    mcp: Mapping[str, Any] | None = None,
    on_call: OnCall | None = None,
    auth_token: str | None = None,
    limits: ServeLimits | None = None,
    card_skills: Sequence[Any] | None = None,
    auth: ResourceAuth | None = None,
) -> ServeHandle:
    """Serve `toolkit` on `addr` (`"host:port"`) with the MCP and/or A2A profile.

    Returns once the server accepts connections; `handle.url` carries the real port. `limits`
    bounds what slow or hostile clients may cost (timeouts, connections, buffered bytes). The
    agent card lists the toolkit's skills, or `card_skills` when given. The server runs on the
    caller's event loop. `auth` (`ResourceAuth`) makes the server an OAuth-protected resource:
    it serves its protected-resource metadata and accepts access tokens of the named
    authorization server (and `auth_token`, when also given).
    """
    host, port = parse_addr(addr)
    config = toolkit.config
    a2a_cfg = _profile(a2a, config, "a2a", "a2a")
    mcp_cfg = _profile(mcp, config, "mcpServer", "mcp")
    if a2a_cfg is not None and client is None:
        raise ConfigError(
            "serving the A2A profile needs a client: pass serve(..., client=create_client(...)) "
            "— the client's model fulfils the incoming tasks with this toolkit"
        )
    if auth_token is not None and (not isinstance(auth_token, str) or not auth_token):
        raise ConfigError("auth_token must be a non-empty string")
    remember(auth_token)
    if auth is not None:
        if not isinstance(auth, ResourceAuth):
            raise ConfigTypeError("auth must be a toolnexus.serve.ResourceAuth")
        auth.validate()
        # Keyed by served names from here on (and a key naming no tool refused).
        auth = replace(auth, tool_scopes=served_tool_scopes(auth.tool_scopes, toolkit.tools()))
    # A file store creates its directory: file-system work stays off the event loop.
    store = (
        await asyncio.to_thread(resolve_store, a2a_cfg.get("store"))
        if a2a_cfg is not None
        else None
    )
    exposed = exposed_mcp_tools(toolkit.tools(), mcp_cfg) if mcp_cfg is not None else []
    sessions = session_policy(mcp_cfg) if mcp_cfg is not None else None
    loopback = is_loopback(host)
    if not loopback and auth_token is None and auth is None:
        _warn_if_exposed(host, port, toolkit.tools() if a2a_cfg is not None else exposed)

    sock = await asyncio.to_thread(bind_socket, host, port)  # may resolve a host name
    try:
        real_port = sock.getsockname()[1]
        url = public_url(host, real_port)
        endpoint = None
        card: bytes | OAuthCard | None = None
        verifier: TokenVerifierImpl | None = None
        agent_url = ""
        if a2a_cfg is not None:
            public = a2a_cfg.get("url")
            agent_url = _endpoint_url(public if isinstance(public, str) and public else url)
        if auth is not None:
            verifier = TokenVerifierImpl(
                auth, _resources(auth, url, mcp=mcp_cfg is not None, agent=agent_url)
            )
        if a2a_cfg is not None:
            assert store is not None
            endpoint = A2AEndpoint(
                toolkit,
                client,
                store,
                on_task,
                max_in_flight=a2a_cfg.get("maxInFlight", DEFAULT_MAX_IN_FLIGHT),
                owns_store=isinstance(a2a_cfg.get("store"), str),
                tool_scopes=auth.tool_scopes if auth is not None else None,
            )
            skills: Any = card_skills
            if skills is None:
                skills = toolkit.skill_source.skills if toolkit.skill_source is not None else {}
            profile = a2a_cfg

            def render(oauth: Mapping[str, Mapping[str, Any]] | None = None) -> bytes:
                return compact_json(
                    build_agent_card(
                        profile,
                        skills,
                        agent_url,
                        auth=auth_token is not None,
                        oauth=oauth,
                        oauth_scopes=auth.scopes if auth is not None else (),
                    )
                ).encode("utf-8")

            card = render() if verifier is None else OAuthCard(render, verifier)
        # The MCP tasks are the A2A profile's (one task, two views); served alone, the MCP
        # profile keeps them in an endpoint of its own, on its `taskStore`.
        tasks = endpoint
        if tasks is None and mcp_cfg is not None and any(map(runs_as_task, exposed)):
            tasks = await _mcp_task_book(toolkit, mcp_cfg)
        mcp_server = (
            make_mcp_server(
                exposed,
                mcp_cfg,
                on_call,
                execute_through(toolkit),
                tool_scopes=auth.tool_scopes if auth is not None else None,
                upstream=toolkit.mcp_source,
                offers=getattr(toolkit, "offers", None),
                tasks=tasks,
                skills=toolkit.skill_source,
                current_tools=lambda: exposed_mcp_tools(toolkit.tools(), mcp_cfg),
            )
            if mcp_cfg is not None
            else None
        )
        app = build_app(
            mcp_server=mcp_server,
            a2a=endpoint,
            card=card,
            host=host,
            auth_token=auth_token,
            limits=limits,
            oauth=verifier,
            mcp_sessions=sessions,
        )
    except BaseException:
        sock.close()
        raise
    return await start_server(
        app, sock, url=url, host=host, port=real_port, a2a=tasks, limits=limits
    )


async def _mcp_task_book(toolkit: Served, mcp_cfg: Mapping[str, Any]) -> A2AEndpoint:
    """The endpoint keeping the MCP profile's tasks when no A2A profile is served (its
    `taskStore`: the values an A2A `store` takes)."""
    store = mcp_cfg.get("taskStore")
    resolved = await asyncio.to_thread(resolve_store, store)
    return A2AEndpoint(toolkit, None, resolved, owns_store=isinstance(store, str))


def _endpoint_url(base: str) -> str:
    return base if base.endswith("/") else base + "/"


def _resources(auth: ResourceAuth, url: str, *, mcp: bool, agent: str) -> list[str]:
    """The resource identifiers the server answers for: the MCP endpoint (`audience`, else
    `<url>/mcp`) and the agent (its card's endpoint URL; `audience` when it is served alone)."""
    resources = []
    if mcp:
        resources.append(auth.audience or f"{url}/mcp")
    if agent:
        resources.append(agent if mcp or auth.audience is None else auth.audience)
    return resources or [auth.audience or f"{url}/"]


async def serve_toolkit_stdio(
    toolkit: Served,
    *,
    mcp: Mapping[str, Any] | None = None,
    on_call: OnCall | None = None,
) -> None:
    """Serve `toolkit` as an MCP server over stdin/stdout until stdin closes.

    Only protocol goes to stdout: while serving, the SDK's stdio transport speaks on a private
    copy of file descriptor 1 and points fd 1 itself at stderr, so a stray `print` in a tool
    lands there (with the logs).
    """
    from mcp.server.stdio import stdio_server

    cfg = _profile(mcp, toolkit.config, "mcpServer", "mcp") or {}
    exposed = exposed_mcp_tools(toolkit.tools(), cfg)
    # The tools that may run as tasks do so here too, kept on the profile's `taskStore`.
    tasks = await _mcp_task_book(toolkit, cfg) if any(map(runs_as_task, exposed)) else None
    try:
        server = make_mcp_server(
            exposed,
            cfg,
            on_call,
            execute_through(toolkit),
            upstream=toolkit.mcp_source,
            offers=getattr(toolkit, "offers", None),
            tasks=tasks,
            skills=toolkit.skill_source,
            current_tools=lambda: exposed_mcp_tools(toolkit.tools(), cfg),
        )
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    finally:
        if tasks is not None:
            await tasks.aclose()


async def start_a2a_server(
    addr: str,
    a2a: Mapping[str, Any] | None,
    skills: Sequence[SkillInfo],
    run_task: RunTask,
    on_task: Callable[[dict[str, Any]], Any] | None = None,
    loop: asyncio.AbstractEventLoop | None = None,
    mcp: Mapping[str, Any] | None = None,
    mcp_tools: Sequence[Tool] | None = None,
    on_call: OnCall | None = None,
) -> ServeHandle:
    """Serve on `addr` (`"host:port"`) what `Toolkit.serve` serves, with the tasks answered by
    `run_task` instead of a client: the A2A profile `a2a` (its card lists `skills`) and, with
    `mcp`, the MCP profile exposing `mcp_tools`. Without either profile nothing is mounted.

    The server runs on the running event loop; `loop`, when given, must be that loop.
    """
    if loop is not None and loop is not asyncio.get_running_loop():
        raise ConfigError("start_a2a_server serves on the running event loop; pass loop=None")
    if a2a is not None and not callable(run_task):
        raise ConfigTypeError(f"run_task must be callable, not {type(run_task).__name__}")
    return await serve_toolkit(
        ToolList(mcp_tools or ()),
        addr,
        client=RunTaskClient(run_task) if a2a is not None else None,
        a2a=a2a,
        on_task=on_task,
        mcp=mcp,
        on_call=on_call,
        card_skills=list(skills),
    )
