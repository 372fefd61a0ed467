"""Shared pieces for the serving tests: a toolkit of native tools that report what they saw."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest
import pytest_asyncio

from toolnexus.toolkit import Toolkit
from toolnexus.types import Tool, ToolContext


class Seen:
    """What the tools observed, for assertions from the test side."""

    def __init__(self) -> None:
        self.async_started = asyncio.Event()
        self.async_cancelled = asyncio.Event()
        self.async_signal_set: bool | None = None
        self.thread_started = threading.Event()
        self.thread_saw_signal = threading.Event()


def make_tools(seen: Seen) -> list[Tool]:
    def echo(args: dict[str, Any], ctx: ToolContext) -> str:
        return "echo: " + args["text"]

    def boom(args: dict[str, Any], ctx: ToolContext) -> str:
        raise RuntimeError("boom went the tool")

    async def hang(args: dict[str, Any], ctx: ToolContext) -> str:
        seen.async_started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            seen.async_signal_set = ctx.cancelled
            seen.async_cancelled.set()
            raise
        return "never"

    def spin(args: dict[str, Any], ctx: ToolContext) -> str:
        # A blocking tool in a worker thread: it can only stop by watching the signal.
        seen.thread_started.set()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if ctx.cancelled:
                seen.thread_saw_signal.set()
                return "stopped"
            time.sleep(0.005)
        return "never cancelled"

    text_schema = {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    }
    return [
        Tool("echo", "Echo the text back", text_schema, "native", echo),
        Tool("boom", "Always raises", None, "native", boom),
        Tool("hang", "Waits until cancelled", None, "native", hang),
        Tool("spin", "Blocks a thread until cancelled", None, "native", spin),
        # Names cross the wire verbatim, including characters MCP clients may dislike.
        Tool("weird.name-1", "A dotted name", None, "custom", lambda a, c: "weird"),
    ]


@pytest.fixture(scope="module")
def seen() -> Seen:
    return Seen()


@pytest.fixture(scope="module")
def toolkit(seen: Seen) -> Toolkit:
    return Toolkit(extra_tools=make_tools(seen))


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def http() -> AsyncIterator[httpx2.AsyncClient]:
    """One HTTP client for the tests' own requests: making one costs tens of milliseconds."""
    async with httpx2.AsyncClient() as client:
        yield client
