"""Tools talking to their caller through the tool context (log, sample, ask) and the toolkit's
resource notifications, over stdio and stateful HTTP (a 2025-11-25 session) with the official
SDK client, and over HTTP at 2026-07-28 (questions as input-required rounds)."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest_asyncio
from mcp.client.stdio import StdioServerParameters

from mcp import Client
from support.stdio_caller_tools import caller_toolkit
from toolnexus.serve import ServeHandle

SCRIPT = Path(__file__).parents[1] / "support" / "stdio_caller_tools.py"
SRC = Path(__file__).parents[2] / "src"
SUPPORT = Path(__file__).parents[1]


def _stdio() -> StdioServerParameters:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), str(SUPPORT), env.get("PYTHONPATH", "")])
    return StdioServerParameters(command=sys.executable, args=[str(SCRIPT)], env=env)


class Heard:
    def __init__(self) -> None:
        self.logs: list[tuple[str, Any, str | None]] = []
        self.asked: list[Any] = []
        self.notes: list[str] = []

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append((params.level, params.data, params.logger))

    async def sample(self, context: Any, params: types.CreateMessageRequestParams) -> Any:
        text = params.messages[0].content.text
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text=text.upper()), model="m"
        )

    async def elicit(self, context: Any, params: Any) -> types.ElicitResult:
        self.asked.append(params)
        if isinstance(params, types.ElicitRequestURLParams):
            return types.ElicitResult(action="accept")
        if params.message == "Sure?":
            return types.ElicitResult(action="accept", content={"sure": True})
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    async def message(self, message: Any) -> None:
        if isinstance(message, types.ServerNotification | types.ResourceUpdatedNotification):
            self.notes.append(type(message).__name__)
        else:
            self.notes.append(getattr(message, "method", type(message).__name__))


async def _talks_back(target: Any) -> None:
    """The 2025-11-25 session's back channel, end to end: log, sample, ask, notify."""
    heard = Heard()
    async with Client(
        target,
        mode="legacy",
        logging_callback=heard.log,
        sampling_callback=heard.sample,
        elicitation_callback=heard.elicit,
        message_handler=heard.message,
    ) as client:
        assert (await client.call_tool("chatty", {})).content[0].text == "logged"
        assert [level for level, _, _ in heard.logs] == ["debug", "info", "error"]
        assert heard.logs[1] == ("info", {"step": 1}, "chatty")

        heard.logs.clear()
        await client.set_logging_level("error")
        await client.call_tool("chatty", {})
        assert heard.logs == [("error", "went wrong", None)]

        sampled = await client.call_tool("summarize", {"text": "hello"})
        assert sampled.content[0].text == "model said: HELLO"

        confirmed = await client.call_tool("confirm", {})
        assert confirmed.content[0].text == "hello Ada, sure=True"
        visited = await client.call_tool("visit", {})
        assert visited.content[0].text == "visited"
        assert isinstance(heard.asked[-1], types.ElicitRequestURLParams)

        await client.subscribe_resource("counter://value")
        assert (await client.call_tool("bump", {})).content[0].text == "bumped"
        assert (await client.read_resource("counter://value")).contents[0].text == "1"
    assert any("ResourceUpdated" in n or "resources/updated" in n for n in heard.notes), heard.notes


async def test_stdio_log_sample_ask_and_notify():
    await _talks_back(_stdio())


async def test_stateful_http_log_sample_ask_and_notify(served):
    await _talks_back(served.url + "/mcp")


async def test_stdio_sampling_not_declared_is_a_clear_error():
    async with Client(_stdio(), mode="legacy") as client:
        result = await client.call_tool("summarize", {})
    assert result.content[0].text == (
        "unavailable: cannot sample: the MCP client did not declare sampling"
    )


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def served() -> AsyncIterator[ServeHandle]:
    handle = await caller_toolkit().serve("127.0.0.1:0", mcp={})
    yield handle
    await handle.stop()


async def test_modern_http_asks_as_input_required_rounds(served):
    heard = Heard()
    async with Client(served.url + "/mcp", elicitation_callback=heard.elicit) as client:
        confirmed = await client.call_tool("confirm", {})
        assert confirmed.content[0].text == "hello Ada, sure=True"
        assert [p.message for p in heard.asked] == ["Who are you?", "Sure?"]
        visited = await client.call_tool("visit", {})
        assert visited.content[0].text == "visited"


async def test_modern_http_samples_as_an_input_required_round(served):
    heard = Heard()
    async with Client(served.url + "/mcp", sampling_callback=heard.sample) as client:
        sampled = await client.call_tool("summarize", {"text": "hello"})
    assert sampled.content[0].text == "model said: HELLO"


async def test_modern_http_without_sampling_declared_is_a_clear_error(served):
    async with Client(served.url + "/mcp") as client:
        result = await client.call_tool("summarize", {"text": "hello"})
    assert result.content[0].text == (
        "unavailable: cannot sample: the MCP client did not declare sampling"
    )


async def test_legacy_http_without_a_session_cannot_sample(served):
    heard = Heard()
    stateless = await caller_toolkit().serve("127.0.0.1:0", mcp={"stateless": True})
    try:
        async with Client(
            stateless.url + "/mcp", mode="legacy", sampling_callback=heard.sample
        ) as client:
            result = await client.call_tool("summarize", {})
        assert result.content[0].text.startswith("unavailable: cannot sample:")
    finally:
        await stateless.stop()
