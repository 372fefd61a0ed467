"""A small MCP server for tests, written with the official SDK (`MCPServer`).

Run it as a script::

    python basic_server.py                      # stdio
    python basic_server.py --http 0             # streamable HTTP on 127.0.0.1, ephemeral port
    python basic_server.py --sse 0              # legacy SSE only (POST to /sse answers 405)
    python basic_server.py --http 0 --token T   # streamable HTTP behind `Authorization: Bearer T`

Over HTTP the first stdout line is `PORT <n>`; the endpoint is `http://127.0.0.1:<n>/mcp`
(`/sse` with `--sse`). Other options: `--name NAME`, `--crash-after N` (the call after the N-th
tool call kills the process with exit code 3 and a last stderr line), `--hang-initialize`
(never answers `initialize`), `--stderr TEXT` (printed to stderr at start).

Tools: echo, add (structured), fail, fail_blank, image, media, slow, env, cwd, pid,
spawn_child, exit, exit_later, add_tool, ask, ask_url, client_info, auth_header, calls_made.

`http_app(*argv)` builds the same server's ASGI app in-process (e.g. for a thread-run uvicorn).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import (
    AudioContent,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

IMAGE_BYTES = bytes(range(256)) * 188 + b"\x00" * 85  # 48213 bytes
AUDIO_BYTES = b"RIFF" + b"\x01" * 96  # 100 bytes


def build(args: argparse.Namespace) -> MCPServer:
    lifespan = None
    if args.hang_initialize:

        @asynccontextmanager
        async def hang(_server: MCPServer) -> AsyncIterator[dict[str, Any]]:
            await asyncio.Event().wait()  # never returns: initialize is never answered
            yield {}

        lifespan = hang

    mcp: MCPServer = MCPServer(args.name, lifespan=lifespan, log_level="WARNING")
    calls = {"n": 0}

    def count() -> None:
        calls["n"] += 1
        if args.crash_after is not None and calls["n"] > args.crash_after:
            print(f"crashing after {args.crash_after} calls", file=sys.stderr, flush=True)
            os._exit(3)

    @mcp.tool(structured_output=False, description="Echo the text back.")
    def echo(text: str) -> str:
        count()
        return text

    @mcp.tool(structured_output=False, description="Add two integers; structured result.")
    def add(a: int, b: int) -> CallToolResult:
        count()
        total = a + b
        return CallToolResult(
            content=[TextContent(text=str(total))], structured_content={"sum": total, "ok": "é"}
        )

    @mcp.tool(structured_output=False, description="Return an error result with the given message.")
    def fail(message: str) -> CallToolResult:
        count()
        return CallToolResult(
            content=[TextContent(text=message), TextContent(text="  "), TextContent(text="more")],
            is_error=True,
        )

    @mcp.tool(structured_output=False, description="Return an error result without any text.")
    def fail_blank() -> CallToolResult:
        count()
        return CallToolResult(content=[TextContent(text=" ")], is_error=True)

    @mcp.tool(structured_output=False, description="Return a caption and a PNG image.")
    def image() -> CallToolResult:
        count()
        return CallToolResult(
            content=[
                TextContent(text="a picture"),
                ImageContent(data=base64.b64encode(IMAGE_BYTES).decode(), mime_type="image/png"),
            ]
        )

    @mcp.tool(
        structured_output=False,
        description="Return audio, an embedded resource and a resource link, no text.",
    )
    def media() -> CallToolResult:
        count()
        return CallToolResult(
            content=[
                AudioContent(data=base64.b64encode(AUDIO_BYTES).decode(), mime_type="audio/wav"),
                EmbeddedResource(
                    resource=TextResourceContents(
                        uri="file:///x.txt", mime_type="text/plain", text="hello"
                    )
                ),
                ResourceLink(uri="file:///y.md", name="y", mime_type="text/markdown"),
            ]
        )

    @mcp.tool(structured_output=False, description="Sleep for the given seconds, then answer.")
    async def slow(seconds: float) -> str:
        count()
        await asyncio.sleep(seconds)
        return f"slept {seconds}"

    @mcp.tool(structured_output=False, description="Value of an environment variable.")
    def env(name: str) -> str:
        count()
        return os.environ.get(name, "<unset>")

    @mcp.tool(structured_output=False, description="Working directory.")
    def cwd() -> str:
        count()
        return os.getcwd()

    @mcp.tool(structured_output=False, description="Process id.")
    def pid() -> str:
        count()
        return str(os.getpid())

    @mcp.tool(
        structured_output=False,
        description="Spawn a long-sleeping grandchild (`detach`: in a session of its own); "
        "return its pid.",
    )
    def spawn_child(detach: bool = False) -> str:
        count()
        child = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(300)"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=detach,
        )
        return str(child.pid)

    @mcp.tool(
        structured_output=False, description="Print a line to stderr and exit with the given code."
    )
    def exit(code: int, message: str = "") -> str:
        if message:
            print(message, file=sys.stderr, flush=True)
        os._exit(code)

    exiting: list[asyncio.Task[None]] = []

    @mcp.tool(structured_output=False, description="Answer, then exit a moment later.")
    async def exit_later(code: int, message: str = "", delay: float = 0.05) -> str:
        async def bye() -> None:
            await asyncio.sleep(delay)
            if message:
                print(message, file=sys.stderr, flush=True)
            os._exit(code)

        exiting.append(asyncio.get_running_loop().create_task(bye()))
        return "bye"

    @mcp.tool(
        structured_output=False,
        description="Register a new tool and notify the client (tools/list_changed).",
    )
    async def add_tool(name: str, ctx: Context) -> str:
        count()

        def added() -> str:
            return f"I am {name}"

        mcp.add_tool(
            added, name=name, description=f"Added at runtime: {name}", structured_output=False
        )
        if (ctx.protocol_version or "") >= "2026-07-28":
            await ctx.notify_tools_changed()  # reaches `subscriptions/listen` streams
        else:
            await ctx.request_context.session.send_tool_list_changed()
        return f"added {name}"

    @mcp.tool(
        structured_output=False, description="Ask the user for a name and age (form elicitation)."
    )
    async def ask(ctx: Context) -> str:
        count()
        result = await ctx.request_context.session.elicit_form(
            "Who are you?",
            {
                "type": "object",
                "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
                "required": ["name"],
            },
            related_request_id=ctx.request_id,
        )
        return f"{result.action}:{sorted((result.content or {}).items())}"

    @mcp.tool(structured_output=False, description="Send the user to a URL (URL elicitation).")
    async def ask_url(ctx: Context) -> str:
        count()
        result = await ctx.request_context.session.elicit_url(
            "Please sign in",
            "https://auth.example/authorize?x=1",
            "elc-1",
            related_request_id=ctx.request_id,
        )
        return str(result.action)

    @mcp.tool(
        structured_output=False,
        description="The clientInfo and whether elicitation was advertised.",
    )
    def client_info(ctx: Context) -> str:
        count()
        params = ctx.request_context.session.client_params
        caps = ctx.client_capabilities
        info = params.client_info if params is not None else None
        elicit = caps is not None and caps.elicitation is not None
        return (
            f"{info.name if info else None} {info.version if info else None} elicitation={elicit}"
        )

    @mcp.tool(
        structured_output=False, description="Whether an Authorization header reached the server."
    )
    def auth_header(ctx: Context) -> str:
        count()
        headers = ctx.headers or {}
        return "present" if headers.get("authorization") else "absent"

    @mcp.tool(structured_output=False, description="How many tool calls this process has served.")
    def calls_made() -> str:
        count()
        return str(calls["n"])

    return mcp


def _bearer_guard(app: Any, token: str) -> Any:
    """A plain ASGI wrapper answering 401 unless `Authorization: Bearer <token>` is sent."""
    expected = f"Bearer {token}".encode()

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and dict(scope["headers"]).get(b"authorization") != expected:
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [(b"content-type", b"text/plain"), (b"www-authenticate", b"Bearer")],
                }
            )
            await send({"type": "http.response.body", "body": b"unauthorized"})
            return
        await app(scope, receive, send)

    return guarded


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", default="basic")
    parser.add_argument("--http", type=int, default=None, metavar="PORT")
    parser.add_argument("--sse", type=int, default=None, metavar="PORT")
    parser.add_argument("--token", default=None)
    parser.add_argument("--crash-after", type=int, default=None)
    parser.add_argument("--hang-initialize", action="store_true")
    parser.add_argument("--stderr", default=None)
    return parser.parse_args(argv)


def http_app(*argv: str) -> Any:
    """The ASGI app `--http`/`--sse` would serve (streamable HTTP unless `--sse` is given)."""
    args = parse_args(list(argv))
    mcp = build(args)
    app = mcp.sse_app() if args.sse is not None else mcp.streamable_http_app()
    return _bearer_guard(app, args.token) if args.token else app


def serve_http(app: Any, port: int) -> None:
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))


def main() -> None:
    args = parse_args()
    if args.stderr:
        print(args.stderr, file=sys.stderr, flush=True)
    if args.http is not None or args.sse is not None:
        serve_http(http_app(*sys.argv[1:]), args.http if args.http is not None else args.sse)
    else:
        build(args).run()


if __name__ == "__main__":
    main()
