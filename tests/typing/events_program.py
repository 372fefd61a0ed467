# pyright: strict
"""A user's program reading typed stream events, hook arguments and metric events
(`mypy --strict` and `pyright` clean: `match event["type"]` narrows each branch)."""

from __future__ import annotations

from typing import Any, assert_type

from pydantic import BaseModel

from toolnexus import Client, StreamEvent, Toolkit, create_in_process_client
from toolnexus.client import (
    AfterToolInfo,
    AfterToolReply,
    BeforeLlmInfo,
    BeforeToolInfo,
    BeforeToolReply,
    DoneEvent,
    Hooks,
    MetricEvent,
    OutputEvent,
    ProgressEvent,
    ReasoningEvent,
    RunResult,
    TextEvent,
    ToolCallEvent,
    ToolResultEvent,
    UiEvent,
)
from toolnexus.types import ToolResult


class City(BaseModel):
    name: str


def show(event: StreamEvent) -> str:
    match event["type"]:
        case "text":
            assert_type(event, TextEvent)
            return event["delta"]
        case "reasoning":
            assert_type(event, ReasoningEvent)
            return "(reasoning redacted)" if event.get("redacted") else event["delta"]
        case "tool_call":
            assert_type(event, ToolCallEvent)
            return f"{event['name']}({event['args']})"
        case "ui":
            assert_type(event, UiEvent)
            return f"render {event['resource_uri']} for call {event['id']}"
        case "progress":
            assert_type(event, ProgressEvent)
            return f"{event['progress']}/{event['total']}"
        case "tool_result":
            assert_type(event, ToolResultEvent)
            return ("error: " if event["is_error"] else "") + event["output"]
        case "pending":
            return event["request"].prompt
        case "refusal":
            return event["refusal"]
        case "output":
            return repr(event["output"])
        case "usage":
            return str(event["usage"]["total_tokens"])
        case "done":
            result: RunResult[Any] = event["result"]
            return result.status


async def typed_stream(client: Client) -> str:
    name = ""
    async for event in client.stream("biggest city?", output_type=City):
        if event["type"] == "output":
            assert_type(event, OutputEvent[City])
            name = event["output"].name
        elif event["type"] == "done":
            assert_type(event, DoneEvent[City])
            name = name or event["result"].output.name
    return name


def sync_stream(client: Client) -> list[str]:
    return [show(event) for event in client.stream_sync("hi")]


def on_metric(event: MetricEvent) -> None:
    match event["event"]:
        case "llm":
            print(event["model"], event["prompt_tokens"] + event["completion_tokens"])
        case "tool":
            print(event["tool"], event["source"], event.get("pending", False))
        case "run":
            print(event["turns"], event.get("error"))


def untyped_metric(event: dict[str, Any]) -> None:  # written before the events were typed
    print(event.get("event"))


def before_llm(info: BeforeLlmInfo) -> None:
    print(len(info["messages"]), info["turn"], info.get("deps"))


def before_tool(info: BeforeToolInfo) -> BeforeToolReply | None:
    if info["name"] == "rm":
        return {"result": ToolResult("refused", True)}
    return {"args": {**info["args"], "checked": True}} if info["turn"] == 0 else None


async def after_tool(info: AfterToolInfo) -> AfterToolReply:
    return {"result": ToolResult(info["result"].output.upper())}


def untyped_hook(info: dict[str, Any]) -> None:
    print(info["turn"])


def build() -> Client:
    def generate(request: dict[str, Any]) -> dict[str, Any]:
        return {"content": "hi"}

    hooks = Hooks(
        before_llm=before_llm,
        before_tool=before_tool,
        after_tool=after_tool,
        after_llm=untyped_hook,
    )
    create_in_process_client(model="m", generate=generate, on_metric=untyped_metric)
    return create_in_process_client(model="m", generate=generate, hooks=hooks, on_metric=on_metric)


def main() -> None:
    with build() as client:
        print(sync_stream(client), Toolkit())


if __name__ == "__main__":
    main()
