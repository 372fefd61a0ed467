"""A toolkit served over stdio, for the `serve_stdio` tests: `python stdio_gateway.py`.

Its tools print to stdout and log on purpose: none of that may reach the protocol stream.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from typing import Any

from toolnexus.toolkit import Toolkit
from toolnexus.types import Tool, ToolContext


def noisy(args: dict[str, Any], ctx: ToolContext) -> str:
    print("stray print from a tool")  # must not corrupt the protocol
    logging.getLogger("toolnexus").warning("[toolnexus] a log line from a tool")
    return "quiet result: " + str(args.get("text", ""))


async def hang(args: dict[str, Any], ctx: ToolContext) -> str:
    try:
        await asyncio.sleep(60)
    except asyncio.CancelledError:
        print(f"hang cancelled, signal={ctx.cancelled}", file=sys.stderr, flush=True)
        raise
    return "never"


async def main() -> None:
    logging.basicConfig(stream=sys.stderr, level=logging.INFO)
    print("startup chatter before serving", file=sys.stderr)
    toolkit = Toolkit(
        extra_tools=[
            Tool("noisy", "Prints and logs", None, "native", noisy),
            Tool("hang", "Waits until cancelled", None, "native", hang),
            Tool("hidden", "Not exposed", None, "native", lambda a, c: "x"),
        ],
        config={"mcpServer": {"name": "stdio-gateway", "tools": ["noisy", "hang"]}},
    )
    await toolkit.serve_stdio()
    print("stdin closed; gateway exiting", file=sys.stderr, flush=True)


if __name__ == "__main__":
    asyncio.run(main())
