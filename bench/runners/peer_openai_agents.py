"""`openai_agents`: the scenario through the OpenAI Agents SDK (runs in its own virtualenv).

`Agent` + `MCPServerStdio` (tools list cached, the SDK's documented option) +
`OpenAIChatCompletionsModel` on an `AsyncOpenAI` pointed at the mock with a dummy key.
Tracing is disabled so nothing leaves the machine.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _common as c

NAME = "openai_agents"


async def main(args: argparse.Namespace) -> dict[str, Any]:
    from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
    from agents.mcp import MCPServerStdio
    from openai import AsyncOpenAI

    set_tracing_disabled(True)
    command = c.mcp_server_command()
    with c.mock_llm(args.base_url) as base_url:
        server = MCPServerStdio(
            params={"command": command[0], "args": command[1:]},
            name=c.SERVER_NAME,
            cache_tools_list=True,
        )
        async with server:
            model = OpenAIChatCompletionsModel(
                model="mock", openai_client=AsyncOpenAI(base_url=base_url, api_key="bench")
            )
            agent = Agent(name="bench", instructions="", model=model, mcp_servers=[server])
            init_ms = c.since_start_ms()

            async def request() -> str:
                result = await Runner.run(agent, c.PROMPT)
                return str(result.final_output)

            measured = await c.measure_requests(request, n=args.n, warmup=args.warmup)
    return c.request_row(NAME, init_ms, measured, version=c.distribution_version("openai-agents"))


if __name__ == "__main__":
    ARGS = c.runner_parser(__doc__ or "").parse_args()
    c.guarded(NAME, lambda: main(ARGS))
