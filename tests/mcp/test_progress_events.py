"""Progress reaches the host: `Context.on_progress` set by the loop for every call, the
`progress` stream event between a call's `tool_call` and `tool_result`, and the observe-only
`on_progress` hook — from native tools (async and sync) and from MCP servers in both eras."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from support.client_helpers import kit
from support.fake_llm import call, text, tools
from support.llm_fixtures import llm, llm_server, make_client
from support.mcp_fixtures import ErasShared
from toolnexus import Hooks
from toolnexus.toolkit import Toolkit
from toolnexus.types import Tool, ToolContext

__all__ = ["llm", "llm_server", "make_client"]


def _reporting_tools(late: list[Any]) -> list[Tool]:
    async def steps(args: dict[str, Any], ctx: ToolContext) -> str:
        assert ctx.on_progress is not None
        await ctx.on_progress({"progress": 1.0, "total": 2.0, "message": "half"})
        ctx.on_progress({"progress": 2.0, "total": 2.0, "message": None})  # not awaited: fine
        late.append(ctx.on_progress)  # called after the call ended: dropped
        return "stepped"

    def blocking(args: dict[str, Any], ctx: ToolContext) -> str:
        assert threading.current_thread() is not threading.main_thread()
        assert ctx.on_progress is not None
        ctx.on_progress({"progress": 0.5, "total": None, "message": "from a thread"})
        return "blocked"

    schema: dict[str, Any] = {"type": "object", "properties": {}}
    return [
        Tool("steps", "Report twice.", schema, "native", steps),
        Tool("blocking", "Report from a worker thread.", schema, "native", blocking),
    ]


async def test_native_progress_streams_between_call_and_result(llm: Any, make_client: Any) -> None:
    late: list[Any] = []
    seen: list[dict[str, Any]] = []
    llm.push(tools(call("steps", {}, id="c1"), call("blocking", {}, id="c2")), text("ok"))
    client = make_client("openai", hooks=Hooks(on_progress=seen.append))
    events = [e async for e in client.stream("go", kit(*_reporting_tools(late)))]
    kinds = [(e["type"], e.get("id")) for e in events if e["type"] != "text"]
    assert kinds[:2] == [("tool_call", "c1"), ("tool_call", "c2")]
    progress = [e for e in events if e["type"] == "progress"]
    assert {
        "type": "progress",
        "id": "c1",
        "name": "steps",
        "progress": 1.0,
        "total": 2.0,
        "message": "half",
    } in progress
    assert [e["message"] for e in progress if e["id"] == "c1"] == ["half", None]
    assert [e["message"] for e in progress if e["id"] == "c2"] == ["from a thread"]
    first_result = next(i for i, e in enumerate(events) if e["type"] == "tool_result")
    last_progress = max(i for i, e in enumerate(events) if e["type"] == "progress")
    assert last_progress < first_result
    # the hook saw the same reports, with the turn
    assert {k: v for k, v in seen[0].items() if k != "message"} == {
        "name": "steps",
        "id": "c1",
        "turn": 0,
        "progress": 1.0,
        "total": 2.0,
    }
    assert sorted(e["message"] or "" for e in seen) == ["", "from a thread", "half"]
    # a report after the call ended reaches nobody
    count = len(seen)
    late[0]({"progress": 3.0})
    await asyncio.sleep(0)
    assert len(seen) == count
    assert events[-1]["result"].status == "done"


async def test_the_hook_sees_progress_without_streaming(llm: Any, make_client: Any) -> None:
    late: list[Any] = []
    seen: list[dict[str, Any]] = []

    async def slow_observer(event: dict[str, Any]) -> None:
        await asyncio.sleep(0)
        seen.append(event)

    def failing_observer(event: dict[str, Any]) -> None:
        raise RuntimeError("observer broke")

    llm.push(tools(call("steps", {}, id="c1")), text("ok"), tools(call("steps", {})), text("ok"))
    client = make_client("anthropic", hooks={"on_progress": slow_observer})
    result = await client.run("go", kit(*_reporting_tools(late)))
    assert result.status == "done"
    assert [e["progress"] for e in seen] == [1.0, 2.0]
    # an observer that raises never fails the call
    broken = make_client("anthropic", hooks={"on_progress": failing_observer})
    result = await broken.run("go", kit(*_reporting_tools(late)))
    assert result.tool_calls[0]["output"] == "stepped"


@pytest.mark.parametrize("server", ["h_dual", "h_legacy", "s_dual"])
async def test_mcp_server_progress_reaches_the_stream_and_the_hook(
    eras: ErasShared, llm: Any, make_client: Any, server: str
) -> None:
    name = f"{server}_progress"
    seen: list[dict[str, Any]] = []
    llm.push(tools(call(name, {"seconds": 0.5, "every": 0.1}, id="p1")), text("ok"))
    client = make_client("openai", hooks=Hooks(on_progress=seen.append))
    toolkit = Toolkit(extra_tools=[eras.tool(server, "progress")])
    events = [e async for e in client.stream("go", toolkit) if e["type"] != "text"]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "tool_call"
    assert "progress" in kinds
    assert kinds.index("tool_result") > max(i for i, k in enumerate(kinds) if k == "progress")
    first = next(e for e in events if e["type"] == "progress")
    assert first == {
        "type": "progress",
        "id": "p1",
        "name": name,
        "progress": 1.0,
        "total": None,
        "message": "step 1",
    }
    assert seen[0] == {
        "name": name,
        "id": "p1",
        "turn": 0,
        "progress": 1.0,
        "total": None,
        "message": "step 1",
    }
