"""`toolnexus auth <server>`: sign in to an OAuth-protected MCP server once, ahead of time.

The sign-in runs the server's own flow (the `auth` entry of its config) with a one-shot HTTP
listener on the loopback redirect URI: the URL is printed (and opened in a browser when there
is a graphical one), the browser comes back to the listener, and the tokens land in the
server's token store, where every later toolkit finds them. `--logout` forgets them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import socket
import sys
import webbrowser
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from toolnexus.cli._common import CliError, run_async
from toolnexus.errors import ConfigError
from toolnexus.types import Answer, Request

if TYPE_CHECKING:
    from toolnexus.mcp_source._config import ServerSpec

__all__ = ["SignIn", "add_parser", "run_auth"]

DEFAULT_WAIT = 300.0  # seconds the listener waits for the browser to come back
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})

DESCRIPTION = """\
Sign in to an MCP server whose config entry has "auth": {"type": "oauth", ...} and keep the
credentials for later runs (by default in $TOOLNEXUS_HOME/mcp-auth, ~/.toolnexus without it).
The sign-in URL is printed and opened in a browser when one is available; a one-shot listener
on the redirect URI (default http://127.0.0.1:33418/callback) receives the browser's return.
With a redirect URI that is not on this machine, paste the URL the browser ends up on. A server
already signed in is only checked. --logout forgets the stored credentials."""

_DONE_PAGE = (
    "<!doctype html><meta charset=utf-8><title>toolnexus</title>"
    "<p>{message}</p><p>You can close this tab.</p>"
)


def add_parser(sub: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        "auth",
        help="sign in to an OAuth-protected MCP server (or --logout)",
        description=DESCRIPTION,
    )
    parser.add_argument("server", help="the server's name in the config")
    parser.add_argument(
        "--config", metavar="PATH", default="mcp.json", help="the mcp.json (default: ./mcp.json)"
    )
    parser.add_argument(
        "--logout", action="store_true", help="forget the server's stored credentials"
    )
    parser.add_argument(
        "--no-browser", action="store_true", help="only print the sign-in URL, open nothing"
    )
    parser.add_argument(
        "--wait",
        metavar="SECONDS",
        type=float,
        default=DEFAULT_WAIT,
        help=f"how long to wait for the browser to come back (default {DEFAULT_WAIT:g})",
    )
    parser.set_defaults(handler=run_auth)
    return parser


def run_auth(args: argparse.Namespace) -> int:
    return run_async(_auth(args))


async def _auth(args: argparse.Namespace) -> int:
    name: str = args.server
    entry, spec = await _server(args.config, name)
    if args.logout:
        from toolnexus.oauth._authorization import Authorization

        assert spec.auth is not None
        forgotten = await Authorization(spec.url, spec.auth, name=name).forget()
        print(
            f'Signed out of MCP server "{name}".'
            if forgotten
            else f'No stored sign-in for MCP server "{name}".'
        )
        return 0
    from toolnexus.mcp_source import load_mcp

    sign_in = SignIn(open_browser=not args.no_browser, wait=args.wait)
    source = await load_mcp({"mcpServers": {name: entry}}, wait_for=sign_in)
    async with source:
        state = source.servers[name]
    if state.status != "connected":
        raise CliError(f'MCP server "{name}" failed: {state.error or state.status}')
    tools = f"{state.tool_count} tool{'s' if state.tool_count != 1 else ''}"
    if sign_in.asked:
        print(f'Signed in to MCP server "{name}" ({tools}); the credentials are stored.')
    elif spec.auth is not None and spec.auth.grant == "client_credentials":
        print(f'MCP server "{name}" accepts the client credentials ({tools}).')
    else:
        print(f'MCP server "{name}" is already signed in ({tools}).')
    return 0


async def _server(path: str, name: str) -> tuple[dict[str, Any], ServerSpec]:
    """The config entry of `name` and its checked form; it must be remote with `auth`."""
    from toolnexus.mcp_source._config import ServerConfigError, check_server, parse_mcp_config

    try:
        servers = await asyncio.to_thread(parse_mcp_config, path)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    entry = servers.get(name)
    if entry is None:
        known = ", ".join(sorted(servers)) or "none"
        raise CliError(f'no MCP server "{name}" in {path} (servers: {known})')
    try:
        spec = check_server(name, entry)
    except (ServerConfigError, ConfigError) as exc:
        raise CliError(f'MCP server "{name}": {exc}') from None
    if spec.auth is None:
        raise CliError(f'MCP server "{name}" has no "auth" entry: there is nothing to sign in to')
    return dict(entry), spec


class SignIn:
    """The `wait_for` of the command: listen on the redirect URI, show the URL, and answer with
    the URL the browser came back to."""

    def __init__(self, *, open_browser: bool = True, wait: float = DEFAULT_WAIT) -> None:
        self.open_browser = open_browser
        self.wait = wait
        self.asked = False

    async def __call__(self, request: Request) -> Answer:
        self.asked = True
        redirect = urlsplit(str((request.data or {}).get("redirectUri", "")))
        if redirect.hostname not in _LOOPBACK or redirect.port is None:
            return await self._pasted(request)
        async with _listener(
            redirect.hostname or "127.0.0.1", redirect.port, redirect.path
        ) as back:
            self._show(request)
            try:
                landed = await asyncio.wait_for(back, self.wait)
            except TimeoutError:
                print(f"No sign-in within {self.wait:g} s.", file=sys.stderr, flush=True)
                return Answer(request.id, False, reason="expired")
        return Answer(request.id, True, {"callbackUrl": landed})

    def _show(self, request: Request) -> None:
        print(f"{request.prompt}: open this URL in a browser\n\n  {request.url}\n", flush=True)
        if self.open_browser and _graphical():
            with contextlib.suppress(Exception):  # no browser after all: the URL is printed
                webbrowser.open(request.url or "", new=2)

    async def _pasted(self, request: Request) -> Answer:
        self._show(request)
        print("Then paste the URL the browser ends up on:", flush=True)
        line = await asyncio.to_thread(sys.stdin.readline)
        if not line.strip():
            return Answer(request.id, False, reason="cancelled")
        return Answer(request.id, True, {"callbackUrl": line.strip()})


def _graphical() -> bool:
    """Whether a browser would open in a window (not take over this terminal)."""
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


@contextlib.asynccontextmanager
async def _listener(host: str, port: int, path: str) -> AsyncIterator[asyncio.Future[str]]:
    """A one-shot HTTP server on `host:port`: the first request to `path` resolves the future
    with its full URL and gets a short page back; anything else is a 404."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request as HttpRequest
    from starlette.responses import HTMLResponse, Response
    from starlette.routing import Route

    from toolnexus.serve._app import _EmbeddedServer

    landed: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    async def callback(http: HttpRequest) -> Response:
        if landed.done():
            return HTMLResponse(_DONE_PAGE.format(message="This sign-in is already done."))
        landed.set_result(str(http.url))
        error = http.query_params.get("error")
        message = f"Sign-in failed: {error}." if error else "Signed in to toolnexus."
        return HTMLResponse(_DONE_PAGE.format(message=message))

    bind = "127.0.0.1" if host == "localhost" else host.strip("[]")
    sock = socket.socket(socket.AF_INET6 if ":" in bind else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((bind, port))
    except OSError as exc:
        sock.close()
        raise CliError(
            f"cannot listen on {bind}:{port} for the sign-in ({exc.strerror}); free the port or "
            'set "redirectUri" in the server\'s "auth" entry'
        ) from None
    app = Starlette(routes=[Route(path or "/", callback)])
    # The command's own SIGINT handling stays in charge (Ctrl-C cancels the wait).
    server = _EmbeddedServer(
        uvicorn.Config(app, log_config=None, access_log=False, lifespan="off", ws="none")
    )
    task = asyncio.ensure_future(server.serve(sockets=[sock]))
    try:
        yield landed
    finally:
        server.should_exit = True
        with contextlib.suppress(Exception):
            await asyncio.wait_for(task, 5)
        sock.close()
