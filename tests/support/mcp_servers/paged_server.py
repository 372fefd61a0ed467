"""An MCP stdio server (official SDK, low-level `Server`) whose tool list spans several pages.

Run it as a script::

    python paged_server.py --pages 3 --per-page 2     # tools t0..t5 over 3 pages
    python paged_server.py --dup-cursor               # page 2 repeats page 1's cursor
    python paged_server.py --endless                  # a fresh cursor on every page, forever

Tool `tN` answers `tN:<args as compact JSON>`. Tool schemas carry extra keywords
(`additionalProperties`, `$defs`, `title`) so pass-through can be checked.
"""

from __future__ import annotations

import argparse
import json

import anyio
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp_types import CallToolResult, ListToolsResult, TextContent, Tool


def schema(i: int) -> dict[str, object]:
    return {
        "type": "object",
        "title": f"t{i} arguments",
        "properties": {"n": {"$ref": "#/$defs/count"}, "label": {"type": "string"}},
        "required": ["n"],
        "additionalProperties": False,
        "$defs": {"count": {"type": "integer", "minimum": 0}},
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pages", type=int, default=3)
    parser.add_argument("--per-page", type=int, default=2)
    parser.add_argument("--dup-cursor", action="store_true")
    parser.add_argument("--endless", action="store_true")
    args = parser.parse_args()

    async def list_tools(ctx: object, params: object) -> ListToolsResult:
        cursor = getattr(params, "cursor", None)
        page = int(cursor.split("-")[1]) if cursor else 0
        first = page * args.per_page
        tools = [
            Tool(name=f"t{i}", description=f"tool number {i}", input_schema=schema(i))
            for i in range(first, first + args.per_page)
        ]
        if args.endless:
            next_cursor: str | None = f"page-{page + 1}"
        elif args.dup_cursor:
            next_cursor = "page-1"
        else:
            next_cursor = f"page-{page + 1}" if page + 1 < args.pages else None
        return ListToolsResult(tools=tools, next_cursor=next_cursor)

    async def call_tool(ctx: object, params: object) -> CallToolResult:
        name = getattr(params, "name", "")
        arguments = getattr(params, "arguments", None) or {}
        text = f"{name}:{json.dumps(arguments, separators=(',', ':'), sort_keys=True)}"
        return CallToolResult(content=[TextContent(text=text)])

    server: Server = Server("paged", on_list_tools=list_tools, on_call_tool=call_tool)

    async def run() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(run)


if __name__ == "__main__":
    main()
