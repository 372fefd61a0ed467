# pyright: strict
"""A user's program with typed results, run dependencies and the sync API (--strict clean)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from toolnexus import (
    Client,
    Context,
    OutputError,
    RunResult,
    Toolkit,
    UsageLimitExceeded,
    create_in_process_client,
    tool,
)
from toolnexus.testing import (
    FunctionModel,
    ScriptedModel,
    SeenRequest,
    override,
    text,
    tool_call,
    tools,
)


class City(BaseModel):
    name: str
    population: int


@dataclass
class Deps:
    user: str


@tool
def whoami(ctx: Context[Deps]) -> str:
    """Say who the user is."""
    user: str = ctx.deps.user
    return user


def generate(request: dict[str, Any]) -> dict[str, Any]:
    return {"content": '{"name": "Paris", "population": 2100000}'}


def population(client: Client) -> int:
    result: RunResult[City] = client.run_sync(
        "biggest city?", Toolkit(extra_tools=[whoami]), output_type=City, deps=Deps("ada")
    )
    city: City = result.output
    return city.population


async def names(client: Client) -> list[str]:
    result = await client.run("cities?", output_type=list[str], output_mode="prompted")
    return [name.upper() for name in result.output]


def describe(client: Client) -> str:
    try:
        answer = client.ask_sync("hello", id="c1", output_type=City, output_retries=2)
    except UsageLimitExceeded as exc:
        return f"limit {exc.limit}"
    try:
        return answer.output.name
    except OutputError as exc:
        return f"{exc.status}: {exc.errors}"


def stream(client: Client) -> str:
    parts: list[str] = []
    for event in client.stream_sync("hi"):
        if event["type"] == "text":
            parts.append(str(event["delta"]))
    return "".join(parts)


def scripted(client: Client) -> int:
    model = ScriptedModel(tools(tool_call("whoami")), text('{"name": "Oslo", "population": 1}'))
    with override(client, model):
        result = client.run_sync(
            "?", Toolkit(extra_tools=[whoami]), output_type=City, deps=Deps("x")
        )
    model.assert_requests(2)
    seen: SeenRequest = model.last_request
    echo = FunctionModel(lambda request: f"echo {request.prompt}")
    return result.output.population + len(seen.tool_names) + len(echo.requests)


async def variant(client: Client) -> int:
    """A variant of a client: another model and turn limit, the same connections."""
    fast: Client = client.derive(model="small-model", max_turns=2, output_type=City)
    fast.system_prompt = "answer briefly"
    result = await fast.run("?", output_type=City, usage_limits=None, raise_on_limit=True)
    return result.output.population


def main() -> None:
    with create_in_process_client(model="local", generate=generate) as client:
        print(population(client), describe(client))
    asyncio.run(names(create_in_process_client(model="local", generate=generate)))


if __name__ == "__main__":
    main()
