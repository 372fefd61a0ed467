"""`toolnexus serve`: the toolkit as an MCP gateway (HTTP or stdio) and/or an A2A agent."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from toolnexus._log import logger
from toolnexus._secrets import remember
from toolnexus.cli._common import (
    CliError,
    add_model_flags,
    add_toolkit_flags,
    config_path,
    flagged_toolkit,
    on_signals,
    run_async,
)
from toolnexus.cli._run import make_client

if TYPE_CHECKING:
    from toolnexus.client import Client
    from toolnexus.toolkit import Toolkit
    from toolnexus.types import Tool

__all__ = ["add_parser", "run_serve"]

AUTH_ENV = "TOOLNEXUS_AUTH_TOKEN"
CLIENT_SECRET_ENV = "TOOLNEXUS_AUTH_CLIENT_SECRET"
# Comma-separated request-state keys for MCP replicas (the first seals, all unseal).
STATE_KEYS_ENV = "TOOLNEXUS_REQUEST_STATE_KEYS"

DESCRIPTION = f"""\
Serve the toolkit (MCP servers from --config or ./mcp.json, skills from --skills, and the
built-ins unless --no-builtins) to others: --mcp re-exposes every tool as one MCP server
(streamable HTTP at /mcp, or stdio with --stdio for desktop clients that launch it); --a2a
answers A2A tasks with a model (--base-url, --style, --model). A "mcpServer" or "a2a" block in
the config turns its profile on too. HTTP serving binds 127.0.0.1:8080 by default, prints its
URLs to stderr and runs until SIGINT or SIGTERM. --auth-token (or {AUTH_ENV}) requires
`Authorization: Bearer <token>`; --auth-issuer makes the server an OAuth-protected resource
accepting that authorization server's access tokens (checked against its JWKS, or by
introspection), the static token still accepted."""


def add_parser(sub: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        "serve",
        help="serve the toolkit as an MCP server (HTTP or stdio) and/or an A2A agent",
        description=DESCRIPTION,
    )
    add_toolkit_flags(parser)
    profiles = parser.add_argument_group("what to serve")
    profiles.add_argument("--mcp", action="store_true", help="the MCP server profile")
    profiles.add_argument(
        "--tools",
        metavar="NAME",
        action="append",
        help="expose only these tools over MCP (repeatable; default: every tool)",
    )
    profiles.add_argument(
        "--prefix",
        metavar="SERVER=PREFIX",
        action="append",
        help="what goes before SERVER's tool and prompt names (repeatable; an empty PREFIX for "
        'none; default: the config\'s "prefix", else "SERVER_")',
    )
    profiles.add_argument(
        "--no-prefix",
        action="store_true",
        help="serve every MCP server's tools and prompts under their own names",
    )
    profiles.add_argument(
        "--a2a", action="store_true", help="the A2A agent profile (needs the model flags)"
    )
    profiles.add_argument(
        "--store",
        "--task-store",
        dest="task_store",
        metavar="STORE",
        help='where A2A tasks live: "memory" (default), "file:DIR", postgres://… or redis://… '
        "(replicas sharing a PostgreSQL or Redis store answer for each other's tasks)",
    )
    where = parser.add_argument_group("where")
    where.add_argument(
        "--stdio",
        action="store_true",
        help="speak MCP over stdin/stdout (implies --mcp; logs go to stderr)",
    )
    where.add_argument(
        "--acp",
        action="store_true",
        help="run as an ACP agent over stdin/stdout for editors (needs the model flags; "
        "--store keeps its sessions)",
    )
    where.add_argument("--host", metavar="H", help="the address to bind (default 127.0.0.1)")
    where.add_argument(
        "--port", type=int, metavar="P", help="the port (default 8080; 0 picks a free one)"
    )
    where.add_argument(
        "--auth-token",
        metavar="T",
        help=f"require `Authorization: Bearer T` on every request (default: ${AUTH_ENV})",
    )
    oauth = parser.add_argument_group("OAuth (the server as a protected resource)")
    oauth.add_argument(
        "--auth-issuer",
        metavar="URL",
        action="append",
        help="accept access tokens of this authorization server (repeatable)",
    )
    oauth.add_argument(
        "--auth-audience",
        metavar="URL",
        help="this resource's URL, required in the tokens' aud (default: the /mcp endpoint URL)",
    )
    oauth.add_argument(
        "--auth-scope",
        metavar="SCOPE",
        action="append",
        help="a scope every request needs (repeatable)",
    )
    oauth.add_argument(
        "--auth-jwks-uri", metavar="URL", help="the JWKS (default: from the issuer's metadata)"
    )
    oauth.add_argument(
        "--auth-introspection-url",
        metavar="URL",
        help="check opaque tokens here (RFC 7662; default: from the issuer's metadata)",
    )
    oauth.add_argument(
        "--auth-tool-scope",
        metavar="TOOL=SCOPE",
        action="append",
        help="a scope tools/call of TOOL needs (repeatable; a caller without it does not see "
        "the tool in tools/list)",
    )
    oauth.add_argument(
        "--auth-client-id",
        metavar="ID",
        help="the server's client id at the introspection endpoint",
    )
    oauth.add_argument(
        "--auth-client-secret",
        metavar="SECRET",
        help=f"its client secret (default: ${CLIENT_SECRET_ENV}, which keeps it out of the "
        "process list; ${VAR} is expanded)",
    )
    add_model_flags(parser, required=False, title="model (for --a2a)")
    parser.set_defaults(handler=run_serve)
    return parser


def run_serve(args: argparse.Namespace) -> int:
    _check_flags(args)
    args.config = config_path(args)
    return run_async(_serve(args))


def _check_flags(args: argparse.Namespace) -> None:
    if args.acp and (
        args.stdio or args.mcp or args.a2a or args.host is not None or args.port is not None
    ):
        raise CliError("--acp serves one ACP agent over stdin/stdout: drop the other profiles")
    if args.stdio:
        if args.a2a:
            raise CliError("--a2a needs HTTP: it cannot be served over --stdio")
        if args.host is not None or args.port is not None:
            raise CliError("--stdio serves over stdin/stdout: drop --host/--port")
        if args.auth_token is not None:
            raise CliError("--auth-token applies to HTTP serving, not --stdio")
        if args.auth_issuer:
            raise CliError("--auth-issuer applies to HTTP serving, not --stdio")
    if not args.auth_issuer and (
        args.auth_audience
        or args.auth_scope
        or args.auth_jwks_uri
        or args.auth_introspection_url
        or args.auth_tool_scope
        or args.auth_client_id
        or args.auth_client_secret
    ):
        raise CliError("the --auth-* options need --auth-issuer")
    if args.auth_client_secret is not None and args.auth_client_id is None:
        raise CliError("--auth-client-secret needs --auth-client-id")
    if args.port is not None and not 0 <= args.port <= 65535:
        raise CliError(f"--port must be between 0 and 65535, not {args.port}")
    if args.auth_token == "":
        raise CliError("--auth-token must not be empty")


def _tool_scopes(values: list[str] | None) -> dict[str, list[str]]:
    """`TOOL=SCOPE` flags (several scopes may be space-separated) as a tool -> scopes map."""
    scopes: dict[str, list[str]] = {}
    for value in values or ():
        tool, _, wanted = value.partition("=")
        if not tool.strip() or not wanted.split():
            raise CliError(f"--auth-tool-scope takes TOOL=SCOPE, not {value!r}")
        scopes.setdefault(tool.strip(), []).extend(wanted.split())
    return scopes


def _client_secret(args: argparse.Namespace) -> str | None:
    from toolnexus._env import expand_env
    from toolnexus._secrets import remember
    from toolnexus.errors import EnvVarError

    if args.auth_client_id is None:
        return None
    raw = args.auth_client_secret
    if raw is None:
        raw = os.environ.get(CLIENT_SECRET_ENV)
    if raw is None:
        return None
    try:
        secret = expand_env(raw)
    except EnvVarError as exc:
        raise CliError(str(exc)) from None
    remember(secret)
    return secret


def _resource_auth(args: argparse.Namespace) -> Any:
    """The `ResourceAuth` of the --auth-* flags, or `None` without --auth-issuer."""
    if not args.auth_issuer:
        return None
    from toolnexus.serve import ResourceAuth

    auth = ResourceAuth(
        issuer=list(args.auth_issuer),
        audience=args.auth_audience,
        scopes=list(args.auth_scope or ()),
        tool_scopes=_tool_scopes(args.auth_tool_scope),
        jwks_uri=args.auth_jwks_uri,
        introspection_endpoint=args.auth_introspection_url,
        client_id=args.auth_client_id,
        client_secret=_client_secret(args),
    )
    try:
        auth.validate()
    except ValueError as exc:
        raise CliError(str(exc)) from None
    return auth


def _address(host: str | None, port: int | None) -> str:
    host = host or "127.0.0.1"
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"  # an IPv6 literal
    return f"{host}:{8080 if port is None else port}"


def _profiles(
    args: argparse.Namespace, config: Mapping[str, Any]
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The MCP and A2A profiles: on by flag, or by the config's `mcpServer` / `a2a` block."""
    mcp: dict[str, Any] | None = None
    if args.mcp or args.stdio or args.tools or config.get("mcpServer") is not None:
        mcp = _block(config, "mcpServer")
        if args.tools:
            mcp["tools"] = list(args.tools)
        keys = os.environ.get(STATE_KEYS_ENV, "")
        if "requestStateKeys" not in mcp and keys.strip():
            mcp["requestStateKeys"] = [k.strip() for k in keys.split(",") if k.strip()]
            for key in mcp["requestStateKeys"]:
                remember(key)
    a2a: dict[str, Any] | None = None
    if not args.stdio and (args.a2a or args.task_store or config.get("a2a") is not None):
        a2a = _block(config, "a2a")
        if args.task_store:
            a2a["store"] = args.task_store
    if mcp is None and a2a is None:
        raise CliError("nothing to serve: pass --mcp (or --stdio) and/or --a2a")
    return mcp, a2a


def _block(config: Mapping[str, Any], key: str) -> dict[str, Any]:
    """A copy of the config's profile block (`{}` when absent)."""
    block = config.get(key)
    if block is None:
        return {}
    if not isinstance(block, Mapping):
        raise CliError(f'the config\'s "{key}" block must be an object, not {type(block).__name__}')
    return dict(block)


def _a2a_client(args: argparse.Namespace, a2a: Mapping[str, Any]) -> Client:
    missing = [
        flag
        for flag, value in (
            ("--base-url", args.base_url),
            ("--style", args.style),
            ("--model", args.model),
        )
        if not value
    ]
    if missing:
        raise CliError(f"the A2A agent answers tasks with a model: pass {', '.join(missing)}")
    from toolnexus._backends import backend_of

    store = a2a.get("store")
    if isinstance(store, str) and backend_of(store) is not None:
        # Replicas sharing a server for their tasks share it for the conversations too, so a
        # task resumed on another replica finds its transcript.
        return make_client(args, store=store)
    return make_client(args)


async def _serve(args: argparse.Namespace) -> int:
    from toolnexus._config import read_config

    try:
        config = await asyncio.to_thread(read_config, args.config) if args.config else {}
    except ValueError as exc:
        raise CliError(str(exc)) from None
    config = _with_prefixes(config, args.prefix or [], no_prefix=args.no_prefix)
    if args.acp:
        return await _serve_acp(args, config)
    mcp, a2a = _profiles(args, config)
    client = _a2a_client(args, a2a) if a2a is not None else None
    token = args.auth_token if args.auth_token is not None else os.environ.get(AUTH_ENV) or None
    try:
        async with flagged_toolkit(args, config=config) as toolkit:
            if args.stdio:
                await _serve_stdio(toolkit, mcp)
            else:
                await _serve_http(toolkit, args, mcp=mcp, a2a=a2a, client=client, token=token)
    finally:
        if client is not None:
            await client.aclose()
    return 0


def _with_prefixes(config: dict[str, Any], given: list[str], *, no_prefix: bool) -> dict[str, Any]:
    """The config with the `--prefix`/`--no-prefix` flags set on its MCP servers."""
    if not given and not no_prefix:
        return config
    from toolnexus._config import RESERVED_KEYS
    from toolnexus.mcp_source import parse_mcp_config

    try:
        servers = parse_mcp_config(config)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    prefixes: dict[str, str | bool] = dict.fromkeys(servers, False) if no_prefix else {}
    for item in given:
        name, sep, prefix = item.partition("=")
        if not sep or name not in servers:
            raise CliError(f"--prefix {item!r}: give SERVER=PREFIX for a server in the config")
        prefixes[name] = prefix
    changed = {
        name: {**entry, "prefix": prefixes[name]}
        if name in prefixes and isinstance(entry, dict)
        else entry
        for name, entry in servers.items()
    }
    kept = {k: config[k] for k in RESERVED_KEYS if k in config}
    return {**kept, "mcpServers": changed}


def _log_call(info: dict[str, Any]) -> None:
    """One line per MCP tools/call, visible with -v."""
    outcome = "error" if info.get("is_error") else "ok"
    logger.info(
        "[toolnexus] tools/call %s [%s]: %s in %.0f ms",
        info.get("name"),
        info.get("source"),
        outcome,
        float(info.get("ms") or 0),
    )


def _log_task(info: dict[str, Any]) -> None:
    """One line per finished A2A task, visible with -v."""
    result = info.get("result")
    calls = getattr(result, "tool_call_count", 0)
    state = info.get("state")
    logger.info("[toolnexus] A2A task %s: %s (%s tool calls)", info.get("id"), state, calls)


async def _until_signal() -> None:
    stop = asyncio.Event()
    with on_signals(stop.set, signal.SIGINT, signal.SIGTERM):
        await stop.wait()


def _exposed(toolkit: Toolkit, mcp: Mapping[str, Any]) -> list[Tool]:
    from toolnexus.serve import exposed_mcp_tools

    try:
        return exposed_mcp_tools(toolkit.tools(), mcp)
    except TypeError as exc:  # e.g. the profile's "tools" is not a list
        raise CliError(str(exc)) from None


def _exposed_count(toolkit: Toolkit, mcp: Mapping[str, Any]) -> str:
    count = len(_exposed(toolkit, mcp))
    return f"{count} tool{'s' if count != 1 else ''}"


def _note_builtins(toolkit: Toolkit, mcp: Mapping[str, Any] | None) -> None:
    """Name the built-ins served over MCP: they run commands and change files."""
    names = [t.name for t in _exposed(toolkit, mcp or {}) if t.source == "builtin"]
    if names:
        print(
            f"toolnexus: serving the built-ins {', '.join(names)} (--no-builtins drops them)",
            file=sys.stderr,
        )


async def _serve_stdio(toolkit: Toolkit, mcp: dict[str, Any] | None) -> None:
    """Serve until stdin closes or a signal arrives, whichever comes first."""
    exposed = _exposed_count(toolkit, mcp or {})
    _note_builtins(toolkit, mcp)
    print(f"toolnexus: serving {exposed} over MCP stdio", file=sys.stderr, flush=True)
    serving = asyncio.ensure_future(toolkit.serve_stdio(mcp=mcp, on_call=_log_call))
    waiting = asyncio.ensure_future(_until_signal())
    try:
        await asyncio.wait({serving, waiting}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (serving, waiting):
            task.cancel()
        await asyncio.gather(serving, waiting, return_exceptions=True)
    if serving.done() and not serving.cancelled() and serving.exception() is not None:
        raise serving.exception()  # type: ignore[misc]


async def _serve_http(
    toolkit: Toolkit,
    args: argparse.Namespace,
    *,
    mcp: dict[str, Any] | None,
    a2a: dict[str, Any] | None,
    client: Client | None,
    token: str | None,
) -> None:
    address = _address(args.host, args.port)
    shared = await _open_shared_store(a2a)
    try:
        handle = await toolkit.serve(
            address,
            mcp=mcp,
            a2a=a2a,
            client=client,
            auth_token=token,
            auth=_resource_auth(args),
            on_call=_log_call,
            on_task=_log_task,
        )
    except BaseException as exc:
        if shared is not None:
            await shared.aclose()
        if isinstance(exc, OSError):  # the address is taken or unknown, the store folder failed
            raise CliError(_os_error_text(exc)) from None
        if isinstance(exc, TypeError | ValueError):  # a malformed profile, e.g. "tools" not a list
            raise CliError(str(exc)) from None
        raise
    try:
        if mcp is not None:
            _note_builtins(toolkit, mcp)
            exposed = _exposed_count(toolkit, mcp)
            print(f"toolnexus: MCP server at {handle.url}/mcp ({exposed})", file=sys.stderr)
        if a2a is not None:
            print(
                f"toolnexus: A2A agent at {handle.url}/ "
                f"(card: {handle.url}/.well-known/agent-card.json)",
                file=sys.stderr,
            )
        if token is not None:
            print("toolnexus: requests need `Authorization: Bearer <token>`", file=sys.stderr)
        print("toolnexus: press Ctrl-C to stop", file=sys.stderr, flush=True)
        await _until_signal()
    finally:
        await handle.stop()
        if shared is not None:
            await shared.aclose()
    print("toolnexus: stopped", file=sys.stderr, flush=True)


async def _open_shared_store(a2a: dict[str, Any] | None) -> Any:
    """The PostgreSQL or Redis task store the A2A profile names, connected now so that an
    unreachable server stops the command at once (naming the URL without its password);
    `None` for the other stores, which `serve` opens itself."""
    from toolnexus._backends import backend_of
    from toolnexus.errors import StoreConfigError

    url = a2a.get("store") if a2a is not None else None
    if not isinstance(url, str) or backend_of(url) is None:
        return None
    from toolnexus.serve import resolve_store

    assert a2a is not None
    store: Any = resolve_store(url)
    try:
        await store.open()
    except StoreConfigError as exc:
        await store.aclose()
        raise CliError(str(exc)) from None
    a2a["store"] = store
    return store


def _os_error_text(exc: OSError) -> str:
    """`[Errno 13] Permission denied: 'x'` as `Permission denied: x`; a message without an errno
    (the server's own, e.g. `cannot listen on 127.0.0.1:80: ...`) as it is."""
    if exc.strerror is None:
        return str(exc)
    return f"{exc.strerror}: {exc.filename}" if exc.filename else exc.strerror


async def _serve_acp(args: argparse.Namespace, config: Mapping[str, Any]) -> int:
    """The toolkit and a client as one ACP agent on stdio, its sessions in --store."""
    missing = [f for f, v in (("--base-url", args.base_url), ("--model", args.model)) if not v]
    if missing:
        raise CliError(f"the ACP agent answers prompts with a model: pass {', '.join(missing)}")
    from toolnexus.acp import ask_editor

    store = {"store": args.task_store} if args.task_store else {}
    client = make_client(args, wait_for=ask_editor, **store)
    print("toolnexus: serving an ACP agent over stdio", file=sys.stderr, flush=True)
    try:
        async with flagged_toolkit(args, config=config) as toolkit:
            await toolkit.serve_acp(client)
    finally:
        await client.aclose()
    return 0
