"""`floor`: the scenario with no framework — the physical limit on this machine.

One kept-alive HTTP/1.1 connection written by hand with asyncio streams, and a bare MCP SDK
`ClientSession` over stdio. One request = two LLM round trips + two concurrent MCP calls.
The session speaks 2025-11-25 (`initialize`); with `--modern` it speaks 2026-07-28
(`server/discover`, per-request `_meta`), the era a toolkit negotiates with this SDK's servers
(the `floor_modern` row): the server's side of each call costs more in that era.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _common as c

NAME = "floor"


class RawHTTP:
    """POST JSON over one persistent HTTP/1.1 connection (Content-Length bodies only)."""

    def __init__(self, base_url: str) -> None:
        parts = urlsplit(base_url)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 80
        self.path = parts.path.rstrip("/") + "/chat/completions"
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def connect(self) -> None:
        self._reader, self._writer = await asyncio.open_connection(self.host, self.port)

    async def post(self, body: dict[str, Any]) -> dict[str, Any]:
        assert self._reader is not None and self._writer is not None
        payload = json.dumps(body, separators=(",", ":")).encode()
        self._writer.write(
            (
                f"POST {self.path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
                "Content-Type: application/json\r\nAuthorization: Bearer bench\r\n"
                f"Content-Length: {len(payload)}\r\n\r\n"
            ).encode()
            + payload
        )
        head = await self._reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            if line[:15].lower() == b"content-length:":
                length = int(line[15:])
        raw = await self._reader.readexactly(length)
        if not head.startswith(b"HTTP/1.1 200"):
            raise RuntimeError(f"LLM answered {head.splitlines()[0]!r}: {raw[:200]!r}")
        return json.loads(raw)  # type: ignore[no-any-return]

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            await self._writer.wait_closed()


def _text_of(result: Any) -> str:
    return "".join(getattr(part, "text", "") for part in result.content)


@contextlib.asynccontextmanager
async def floor_request(
    base_url: str, *, modern: bool = False
) -> AsyncIterator[Callable[[], Awaitable[str]]]:
    """The scenario's request written by hand: a bare SDK session over stdio to the MCP server
    and one kept-alive HTTP/1.1 connection to the mock LLM, open for as long as the block runs
    (the `floor` row and `bench/instructions.py` measure this same request)."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    command = c.mcp_server_command()
    params = StdioServerParameters(command=command[0], args=command[1:])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await (session.discover() if modern else session.initialize())
        listed = await session.list_tools()
        tools = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description or "",
                    "parameters": t.input_schema,
                },
            }
            for t in listed.tools
        ]
        http = RawHTTP(base_url)
        await http.connect()

        async def call(tool_call: dict[str, Any]) -> dict[str, Any]:
            fn = tool_call["function"]
            result = await session.call_tool(fn["name"], json.loads(fn["arguments"]))
            return {"role": "tool", "tool_call_id": tool_call["id"], "content": _text_of(result)}

        async def request() -> str:
            messages: list[dict[str, Any]] = [{"role": "user", "content": c.PROMPT}]
            while True:
                body = {"model": "mock", "messages": messages, "tools": tools}
                message = (await http.post(body))["choices"][0]["message"]
                messages.append(message)
                calls = message.get("tool_calls")
                if not calls:
                    return str(message.get("content") or "")
                messages.extend(await asyncio.gather(*(call(tc) for tc in calls)))

        try:
            yield request
        finally:
            await http.close()


async def main(args: argparse.Namespace) -> dict[str, Any]:
    with c.mock_llm(args.base_url) as base_url:
        async with floor_request(base_url, modern=args.modern) as request:
            init_ms = c.since_start_ms()
            measured = await c.measure_requests(request, n=args.n, warmup=args.warmup)
    era = "2026-07-28" if args.modern else "2025-11-25"
    return c.request_row(args.name, init_ms, measured, mcp_protocol=era)


if __name__ == "__main__":
    PARSER = c.runner_parser(__doc__ or "")
    PARSER.add_argument("--name", default=NAME, help="row name")
    PARSER.add_argument(
        "--modern", action="store_true", help="discover at 2026-07-28 instead of initialize"
    )
    ARGS = PARSER.parse_args()
    c.guarded(ARGS.name, lambda: main(ARGS))
