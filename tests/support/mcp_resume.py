"""Resume an MCP suspension in a fresh process: reads `{"url", "tool", "arguments", "request",
"answer"}` as JSON on stdin, builds a toolkit for the server at `url` (named `srv`), executes the
tool with `Context(answer=..., request=...)` and prints the result as JSON on stdout."""

from __future__ import annotations

import asyncio
import json
import sys

from toolnexus import create_toolkit
from toolnexus.types import Answer, Request, ToolContext, pending_of


async def main() -> None:
    job = json.load(sys.stdin)
    toolkit = await create_toolkit(mcp_config={"srv": {"url": job["url"]}}, builtins=False)
    try:
        ctx = ToolContext(
            answer=Answer.from_dict(job["answer"]), request=Request.from_dict(job["request"])
        )
        result = await toolkit.execute(job["tool"], job["arguments"], ctx)
        request = pending_of(result)
        print(
            json.dumps(
                {
                    "output": result.output,
                    "is_error": result.is_error,
                    "pending": request.to_dict() if request is not None else None,
                }
            )
        )
    finally:
        await toolkit.close()


if __name__ == "__main__":
    asyncio.run(main())
