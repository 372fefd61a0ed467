"""The demo's MCP server: two small tools, written with the official MCP SDK, served over stdio.

`toolnexus demo` starts it as `<python> <this file>`; it imports nothing from toolnexus.
"""

from __future__ import annotations

from typing import TypedDict

from mcp.server.mcpserver import MCPServer

server = MCPServer("demo", log_level="WARNING")


class Sum(TypedDict):
    sum: int


@server.tool(description="Add two integers and return their sum as structured content.")
def add(a: int, b: int) -> Sum:
    return {"sum": a + b}


@server.tool(description="Return the text in upper case.", structured_output=False)
def shout(text: str) -> str:
    return text.upper() + "!"


if __name__ == "__main__":
    server.run()
