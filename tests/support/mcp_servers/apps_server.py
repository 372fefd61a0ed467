"""An MCP App on the official SDK's extension framework: `MCPServer(extensions=[Apps()])` with a
tool bound to a `ui://` HTML resource, an app-only tool of the same App (`visibility: ["app"]`,
for the app to call, not the model), and a tool telling whether the caller declared Apps
support (`app()` is its streamable HTTP ASGI app)."""

from __future__ import annotations

from typing import Any

from mcp.server.apps import Apps, client_supports_apps
from mcp.server.mcpserver import Context, MCPServer

CLOCK_URI = "ui://clock/app.html"
CLOCK_HTML = "<!doctype html><title>clock</title><p id=now></p>"


def server() -> MCPServer:
    apps = Apps()

    @apps.tool(resource_uri=CLOCK_URI, name="clock", description="The time, shown as an app.")
    def clock() -> str:
        return "12:00"

    @apps.tool(
        resource_uri=CLOCK_URI,
        visibility=["app"],
        name="set_alarm",
        description="Set the clock's alarm (the app's button; hidden from the model).",
    )
    def set_alarm(at: str) -> str:
        return f"alarm at {at}"

    apps.add_html_resource(CLOCK_URI, CLOCK_HTML, name="clock app")
    mcp = MCPServer("apps", extensions=[apps])

    @mcp.tool()
    def supports_apps(ctx: Context) -> str:
        """Whether the calling client declared MCP Apps support."""
        return str(client_supports_apps(ctx))

    return mcp


def app() -> Any:
    return server().streamable_http_app(stateless_http=True)
