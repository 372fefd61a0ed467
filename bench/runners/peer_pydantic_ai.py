"""`pydantic_ai`: the scenario through Pydantic AI (runs in its own virtualenv).

`Agent` with `OpenAIChatModel` + `OpenAIProvider(base_url=<mock>)` and the stdio MCP server as a
toolset (`MCPToolset` over a stdio transport; releases before 2.x called it `MCPServerStdio`),
kept connected with `async with agent`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _common as c

NAME = "pydantic_ai"


def _mcp_toolset(command: list[str]) -> Any:
    try:
        from pydantic_ai.mcp import MCPServerStdio  # releases before 2.x

        return MCPServerStdio(command[0], args=command[1:])
    except ImportError:
        from fastmcp.client.transports import StdioTransport
        from pydantic_ai.mcp import MCPToolset

        return MCPToolset(StdioTransport(command=command[0], args=command[1:]), id=c.SERVER_NAME)


async def main(args: argparse.Namespace) -> dict[str, Any]:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    with c.mock_llm(args.base_url) as base_url:
        model = OpenAIChatModel("mock", provider=OpenAIProvider(base_url=base_url, api_key="bench"))
        agent = Agent(model, toolsets=[_mcp_toolset(c.mcp_server_command())])
        async with agent:
            init_ms = c.since_start_ms()

            async def request() -> str:
                result = await agent.run(c.PROMPT)
                return str(result.output)

            measured = await c.measure_requests(request, n=args.n, warmup=args.warmup)
    return c.request_row(
        NAME, init_ms, measured, version=c.distribution_version("pydantic-ai-slim")
    )


if __name__ == "__main__":
    ARGS = c.runner_parser(__doc__ or "").parse_args()
    c.guarded(NAME, lambda: main(ARGS))
