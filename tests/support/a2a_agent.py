"""A served toolkit agent with a scripted model, and JSON-RPC helpers that pass every answer
and event through the a2a-sdk oracle before a test sees it."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx2
import pytest
import pytest_asyncio

from support import a2a_oracle as oracle
from toolnexus.client import create_in_process_client
from toolnexus.serve import ServeHandle
from toolnexus.skill import SkillDef
from toolnexus.toolkit import Toolkit, create_toolkit
from toolnexus.types import Tool, ToolContext, ToolResult, auth_required, pending


@dataclass
class Seen:
    """What the served agent's tools and model observed."""

    slow_started: asyncio.Event = field(default_factory=asyncio.Event)
    slow_signalled: threading.Event = field(default_factory=threading.Event)
    model_calls: int = 0
    active: int = 0
    most_active: int = 0
    release: asyncio.Event = field(default_factory=asyncio.Event)
    prompts: list[Any] = field(default_factory=list)
    tasks: list[dict[str, Any]] = field(default_factory=list)  # on_task events


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return ""


class Model:
    """A scripted in-process model: the first word of the last user message picks the turn."""

    def __init__(self, seen: Seen) -> None:
        self.seen = seen

    async def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        self.seen.model_calls += 1
        messages = request["messages"]
        users = [m["content"] for m in messages if m["role"] == "user"]
        last = users[-1]
        self.seen.prompts.append(last)
        word = _text(last).split(" ", 1)[0]
        if messages[-1]["role"] == "tool":
            return {"content": "tool said: " + _text(messages[-1]["content"])}
        if word == "fail":
            raise RuntimeError("the model exploded")
        if word == "ask":
            return {"tool_calls": [{"name": "ask_color", "arguments": {}}]}
        if word == "auth":
            return {"tool_calls": [{"name": "sign_in", "arguments": {}}]}
        if word == "slow":
            return {"tool_calls": [{"name": "slow", "arguments": {}}]}
        if word == "hold":
            self.seen.active += 1
            self.seen.most_active = max(self.seen.most_active, self.seen.active)
            try:
                await self.seen.release.wait()
            finally:
                self.seen.active -= 1
        if word == "weird":
            return {"content": "bad \ud800 text"}
        if word == "nan":
            return {"tool_calls": [{"name": "nan_tool", "arguments": {}}]}
        if word == "history":
            return {"content": json.dumps([[m["role"], _text(m["content"])] for m in messages])}
        return {"content": f"turns={len(users)} last={_text(last)}"}


def make_tools(seen: Seen) -> list[Tool]:
    def ask_color(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        if ctx.answer is not None:
            return ToolResult("answered")
        return pending(kind="question", prompt="Which color?", data={"choices": ["red"]})

    def sign_in(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return auth_required("https://login.example/x", "Please sign in")

    async def slow(args: dict[str, Any], ctx: ToolContext) -> str:
        seen.slow_started.set()
        try:
            for _ in range(2000):
                if ctx.cancelled:
                    break
                await asyncio.sleep(0.005)
        finally:
            if ctx.cancelled:
                seen.slow_signalled.set()
        return "stopped" if ctx.cancelled else "never cancelled"

    def nan_tool(args: dict[str, Any], ctx: ToolContext) -> Any:
        return {"value": float("nan")}

    return [
        Tool("ask_color", "Ask the user for a color", None, "native", ask_color),
        Tool("sign_in", "Needs a login", None, "native", sign_in),
        Tool("slow", "Runs until cancelled", None, "native", slow),
        Tool("nan_tool", "Returns NaN", None, "native", nan_tool),
    ]


@pytest.fixture(scope="module")
def seen() -> Seen:
    return Seen()


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def agent_toolkit(seen: Seen) -> AsyncIterator[Toolkit]:
    toolkit = await create_toolkit(
        skills=[SkillDef(name="echo", content="Echo.", description="Echoes the task.")],
        builtins=False,
        extra_tools=make_tools(seen),
    )
    yield toolkit
    await toolkit.close()


async def serve_agent(toolkit: Toolkit, seen: Seen, **a2a: Any) -> ServeHandle:
    client = create_in_process_client(model="scripted", generate=Model(seen))
    profile = {"name": "tn", **a2a}
    return await toolkit.serve("127.0.0.1:0", client=client, a2a=profile, on_task=seen.tasks.append)


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def served(agent_toolkit: Toolkit, seen: Seen) -> AsyncIterator[ServeHandle]:
    handle = await serve_agent(agent_toolkit, seen)
    yield handle
    await handle.stop()


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def http() -> AsyncIterator[httpx2.AsyncClient]:
    async with httpx2.AsyncClient(timeout=20) as client:
        yield client


_ids = iter(range(1, 10**9))


def headers_for(version: str | None) -> dict[str, str]:
    return {"A2A-Version": version} if version is not None else {}


async def rpc(
    http: httpx2.AsyncClient,
    url: str,
    method: str,
    params: Any = None,
    *,
    version: str | None = "1.0",
    rid: Any = None,
) -> dict[str, Any]:
    """One JSON-RPC call; the answer is checked against the SDK's models."""
    rid = next(_ids) if rid is None else rid
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        body["params"] = params
    response = await http.post(url + "/", json=body, headers=headers_for(version))
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json")
    answer = oracle.check_strict_json(response.content)
    oracle.check_response(method, oracle.dialect_of(method, version), answer, rid)
    return answer


async def sse(
    http: httpx2.AsyncClient,
    url: str,
    method: str,
    params: Any,
    *,
    version: str | None = "1.0",
) -> list[dict[str, Any]]:
    """A streaming call: every SSE event, each checked; a plain JSON answer comes back as a
    one-element list."""
    rid = next(_ids)
    body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
    dialect = oracle.dialect_of(method, version)
    events: list[dict[str, Any]] = []
    async with http.stream("POST", url + "/", json=body, headers=headers_for(version)) as reply:
        assert reply.status_code == 200
        if reply.headers["content-type"].startswith("application/json"):
            answer = oracle.check_strict_json(await reply.aread())
            oracle.check_response(method, dialect, answer, rid)
            return [answer]
        assert reply.headers["content-type"].startswith("text/event-stream")
        async for line in reply.aiter_lines():
            if line.startswith("data: "):
                answer = oracle.check_strict_json(line[len("data: ") :])
                oracle.check_response(method, dialect, answer, rid)
                events.append(answer)
    return events


def message(text: str, *, dialect: str = "1.0", **extra: Any) -> dict[str, Any]:
    if dialect == "1.0":
        return {
            "messageId": "m-" + text[:8],
            "role": "ROLE_USER",
            "parts": [{"text": text}],
            **extra,
        }
    return {
        "kind": "message",
        "messageId": "m-" + text[:8],
        "role": "user",
        "parts": [{"kind": "text", "text": text}],
        **extra,
    }


async def settle(http: httpx2.AsyncClient, url: str, task_id: str, version: str = "1.0") -> Any:
    from support.polling import wait_until

    method = "GetTask" if version != "0.3" else "tasks/get"
    header = None if version in ("legacy", "0.3") else version

    async def check() -> Any:
        answer = await rpc(http, url, method, {"id": task_id}, version=header)
        state = answer["result"]["status"]["state"]
        done = state.lower().replace("_", "-").removeprefix("task-state-")
        return answer["result"] if done not in ("submitted", "working") else None

    return await wait_until(check, timeout=10)
