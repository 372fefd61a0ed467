"""A FastMCP 4.1 server whose tools run as tasks through `fastmcp-tasks` (the
`io.modelcontextprotocol/tasks` extension on docket's in-memory backend), for the tests.

Run in the venv of `requirements.txt` (`make .venv-fastmcp-tasks/.installed`) as
`python server.py PORT`; it serves streamable HTTP on 127.0.0.1:PORT at `/mcp`.

- `crunch(n)`: task-only (`required`): reports progress, then answers `crunched <n>`;
- `maybe(text)`: `optional`: answers `maybe <text>`.
"""

from __future__ import annotations

import sys

from fastmcp import Context, FastMCP
from fastmcp.utilities.tasks import TaskConfig
from fastmcp_tasks import TasksExtension

mcp = FastMCP("fastmcp-tasks-upstream")
mcp.add_extension(TasksExtension())


@mcp.tool(task=TaskConfig(mode="required"))
async def crunch(n: int, ctx: Context) -> str:
    """Crunch n, in the background."""
    await ctx.report_progress(1, 2, "halfway")
    return f"crunched {n}"


@mcp.tool(task=True)
async def maybe(text: str) -> str:
    """Echo text, as a task when the caller can follow one."""
    return f"maybe {text}"


if __name__ == "__main__":
    mcp.run(transport="http", host="127.0.0.1", port=int(sys.argv[1]), show_banner=False)
