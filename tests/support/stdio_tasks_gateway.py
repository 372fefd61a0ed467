"""A toolkit whose tool runs only as a task, served over stdio (`python stdio_tasks_gateway.py`),
for the test of MCP tasks served over stdio."""

from __future__ import annotations

import asyncio
from typing import Any

from toolnexus.toolkit import Toolkit
from toolnexus.types import Tool, ToolContext


async def build(args: dict[str, Any], ctx: ToolContext) -> str:
    return f"built {args.get('n')}"


async def main() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    toolkit = Toolkit(
        extra_tools=[
            Tool("build", "Build.", schema, "native", build, metadata={"taskSupport": "required"})
        ],
        builtins=False,
    )
    await toolkit.serve_stdio()


if __name__ == "__main__":
    asyncio.run(main())
