# pyright: strict
"""A user's program: everything it imports from `toolnexus` must type-check under --strict."""

from __future__ import annotations

import asyncio
from typing import Any

from toolnexus import (
    Answer,
    Client,
    ConfigError,
    Context,
    ProviderConnectionError,
    ProviderError,
    Request,
    RunCancelled,
    RunResult,
    RunTimeout,
    Tool,
    Toolkit,
    ToolnexusError,
    ToolResult,
    __version__,
    create_client,
    create_in_process_client,
    create_toolkit,
    define_tool,
    http_tool,
    to_anthropic,
    to_openai,
    tool,
)


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
async def greet(name: str, ctx: Context) -> str:
    """Greet someone by name."""
    return f"hello {name}"


def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper()


def generate(request: dict[str, Any]) -> dict[str, Any]:
    return {"content": f"{len(request['messages'])} messages"}


async def main() -> None:
    loud: Tool = define_tool(shout)
    weather: Tool = http_tool(
        name="weather", description="Weather", method="GET", url="http://127.0.0.1:9/weather"
    )
    toolkit: Toolkit = await create_toolkit(
        mcp_config=None, skills_dir=None, builtins=False, extra_tools=[add, greet, loud, weather]
    )
    # `Toolkit.create` takes `create_toolkit`'s parameters, by keyword or by position.
    same: Toolkit = await Toolkit.create(None, None, builtins=False, extra_tools=[add])
    await same.close()
    result: ToolResult = await toolkit.execute("add", {"a": 1, "b": 2})
    print(result.output, result.is_error, to_openai(toolkit.tools()), to_anthropic(toolkit.tools()))

    client: Client = create_client(
        base_url="http://127.0.0.1:9/v1", style="openai", model="m", api_key="k"
    )
    try:
        run: RunResult = await client.run("What is 1 + 2?", toolkit)
        print(run.text, run.turns, run.usage, run.status)
    except ProviderConnectionError as exc:
        print("unreachable:", exc.url)
    except ProviderError as exc:
        print(exc.status, exc.body)
    except (RunTimeout, RunCancelled, ConfigError) as exc:
        print(exc)
    except ToolnexusError as exc:
        print("other", exc)

    local = create_in_process_client(model="local", generate=generate)
    print(await local.run("hi", toolkit))

    def answer_for(request: Request) -> Answer | None:
        return None

    print(answer_for, __version__)
    await toolkit.close()


if __name__ == "__main__":
    asyncio.run(main())
