"""FastMCP's client (with `fastmcp-tasks`, which drives tasks) as a caller of a toolnexus
server, for the tests: `python client.py URL TOOL JSON_ARGS` calls the tool once as a task
(`call_tool_task`, which fails unless the server answered with a task), waits for its result
and prints `{"task": <its id>, "text": <the result's text>}` as one JSON line."""

from __future__ import annotations

import asyncio
import json
import sys

from fastmcp import Client
from fastmcp_tasks import call_tool_task


async def main(url: str, tool: str, args: str) -> None:
    async with Client(url) as client:
        task = await call_tool_task(client, tool, json.loads(args))
        result = await task.result()
        text = "".join(getattr(block, "text", "") for block in result.content)
        sys.stdout.write(json.dumps({"task": task.task_id, "text": text}) + "\n")


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
