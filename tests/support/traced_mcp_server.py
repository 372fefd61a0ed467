"""An MCP server (official SDK) whose `traceparent` tool answers the `_meta.traceparent` of
the call it received ("" when none), with one resource and one prompt. Stdio when run as a
script; `http_app()` for HTTP."""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import Context, MCPServer


def build() -> MCPServer:
    server: MCPServer = MCPServer("traced", log_level="WARNING")

    @server.tool()
    def traceparent(ctx: Context) -> str:
        """The caller's W3C trace context, as the request's `_meta` carried it."""
        meta = ctx.request_context.meta or {}
        return str(meta.get("traceparent", ""))

    @server.resource("note://hello", name="hello")
    def hello() -> str:
        """A note."""
        return "hello from a resource"

    @server.prompt()
    def greet(name: str) -> str:
        """Greet someone."""
        return f"Hello {name}"

    return server


def http_app() -> Any:
    return build().streamable_http_app()


if __name__ == "__main__":
    build().run("stdio")
