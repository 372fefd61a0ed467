"""`deps=` reaches every tool call's context (sync, async, in another task) and the hooks."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from support.fake_llm import FakeLLM, call, text, tools
from toolnexus import Context, Toolkit, tool
from toolnexus.client import Client

STYLES = ("openai", "anthropic", "openai-responses")


@dataclass
class Deps:
    user: str
    seen: list[str]


@tool
async def whoami(ctx: Context[Deps]) -> str:
    """Say who the user is."""
    ctx.deps.seen.append("async")
    return ctx.deps.user


@tool
def whoami_sync(ctx: Context[Deps]) -> str:
    """Say who the user is, from a worker thread."""
    assert threading.current_thread() is not threading.main_thread()
    ctx.deps.seen.append("sync")
    return ctx.deps.user


@tool
async def whoami_in_task(ctx: Context[Deps]) -> str:
    """Say who the user is, from a task of its own."""

    async def inner() -> str:
        ctx.deps.seen.append("task")
        return ctx.deps.user

    return await asyncio.create_task(inner())


@pytest.mark.parametrize("streaming", [False, True])
@pytest.mark.parametrize("style", STYLES)
async def test_deps_reach_sync_async_and_task_tools(
    llm: FakeLLM, make_client: Callable[..., Client], style: str, streaming: bool
) -> None:
    llm.push(
        tools(call("whoami"), call("whoami_sync"), call("whoami_in_task")),
        text("done"),
    )
    deps = Deps("ada", [])
    toolkit = Toolkit(extra_tools=[whoami, whoami_sync, whoami_in_task])
    client = make_client(style)
    if streaming:
        events = [e async for e in client.stream("who?", toolkit, deps=deps)]
        result = events[-1]["result"]
    else:
        result = await client.run("who?", toolkit, deps=deps)
    assert sorted(deps.seen) == ["async", "sync", "task"]
    assert [r["output"] for r in result.tool_calls] == ["ada", "ada", "ada"]


async def test_hooks_see_deps(llm: FakeLLM, make_client: Callable[..., Client]) -> None:
    seen: dict[str, Any] = {}

    def remember(name: str) -> Callable[[dict[str, Any]], None]:
        def hook(event: dict[str, Any]) -> None:
            seen[name] = event.get("deps")

        return hook

    hooks = {k: remember(k) for k in ("before_llm", "after_llm", "before_tool", "after_tool")}
    llm.push(tools(call("whoami")), text("done"))
    deps = Deps("grace", [])
    client = make_client("openai", hooks=hooks)
    await client.run("who?", Toolkit(extra_tools=[whoami]), deps=deps)
    assert seen == {k: deps for k in hooks}


async def test_conversation_and_ask_pass_deps(
    llm: FakeLLM, make_client: Callable[..., Client]
) -> None:
    llm.push(tools(call("whoami")), text("a"), tools(call("whoami")), text("b"))
    client = make_client("anthropic")
    toolkit = Toolkit(extra_tools=[whoami])
    deps = Deps("lin", [])
    await client.ask("who?", toolkit, id="x", deps=deps)
    await client.conversation(toolkit, deps=deps).send("who?")
    assert deps.seen == ["async", "async"]


async def test_no_deps_is_none(llm: FakeLLM, make_client: Callable[..., Client]) -> None:
    got: list[Any] = []

    @tool
    def peek(ctx: Context) -> str:
        """Look at deps."""
        got.append(ctx.deps)
        return "ok"

    llm.push(tools(call("peek")), text("done"))
    await make_client("openai").run("?", Toolkit(extra_tools=[peek]))
    assert got == [None]
