"""The A2A profile over real HTTP: card, SendMessage/GetTask, task states, resumption, stores."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
import pytest_asyncio

from support.polling import wait_until
from toolnexus.client import create_in_process_client
from toolnexus.serve import FileTaskStore, ServeHandle, build_agent_card
from toolnexus.skill import SkillDef
from toolnexus.toolkit import Toolkit, create_toolkit
from toolnexus.types import Tool, ToolContext, ToolResult, pending


def ask_color(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    if ctx.answer is not None:
        return ToolResult("answered")
    return pending(kind="question", prompt="Which color?")


class Model:
    """A scripted in-process model: its reply depends on the last user message."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.slow_started = asyncio.Event()

    async def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        messages = request["messages"]
        users = [m["content"] for m in messages if m["role"] == "user"]
        last = users[-1]
        if messages[-1]["role"] == "tool":
            return {"content": "tool said: " + str(messages[-1]["content"])}
        if last.startswith("fail"):
            raise RuntimeError("the model exploded")
        if last.startswith("ask"):
            return {"tool_calls": [{"name": "ask_color", "arguments": {}}]}
        if last.startswith("slow"):
            self.slow_started.set()
            await self.release.wait()
        return {"content": f"turns={len(users)} last={last}"}


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def agent_toolkit() -> AsyncIterator[Toolkit]:
    toolkit = await create_toolkit(
        skills=[
            SkillDef(name="summarize", content="Summarize.", description="Summarize any text"),
            SkillDef(name="translate", content="Translate."),
            SkillDef(name="secret", content="Hidden.", description="Not advertised"),
        ],
        builtins=False,
        extra_tools=[Tool("ask_color", "Ask the user for a color", None, "native", ask_color)],
    )
    yield toolkit
    await toolkit.close()


@pytest.fixture(scope="module")
def model() -> Model:
    return Model()


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def agent(
    agent_toolkit: Toolkit, model: Model
) -> AsyncIterator[tuple[ServeHandle, list[dict[str, Any]]]]:
    client = create_in_process_client(model="scripted", generate=model)
    events: list[dict[str, Any]] = []
    handle = await agent_toolkit.serve(
        "127.0.0.1:0",
        client=client,
        a2a={"name": "helper", "skills": ["summarize", "translate", "unknown"]},
        on_task=events.append,
    )
    yield handle, events
    await handle.stop()


async def rpc(
    http: httpx2.AsyncClient, url: str, method: str, params: Any, id: Any = "r1"
) -> dict[str, Any]:
    response = await http.post(
        url + "/", json={"jsonrpc": "2.0", "id": id, "method": method, "params": params}
    )
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    return response.json()  # type: ignore[no-any-return]


def message(text: str, **extra: Any) -> dict[str, Any]:
    return {
        "message": {
            "role": "user",
            "messageId": str(uuid.uuid4()),
            "parts": [{"kind": "text", "text": text}],
            **extra,
        },
        "configuration": {"blocking": False},
    }


async def settled(http: httpx2.AsyncClient, url: str, task_id: str) -> dict[str, Any]:
    async def check() -> dict[str, Any] | None:
        task = (await rpc(http, url, "GetTask", {"id": task_id}))["result"]
        state = task["status"]["state"]
        return task if state not in ("submitted", "working") else None

    return await wait_until(check)  # type: ignore[no-any-return]


async def test_agent_card(agent, http):
    handle, _ = agent
    response = await http.get(handle.url + "/.well-known/agent-card.json")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {
        "name": "helper",
        "description": "",
        "version": "0.1.0",
        "protocolVersion": "0.3.0",
        "capabilities": {"streaming": False, "pushNotifications": False},
        "defaultInputModes": ["text"],
        "defaultOutputModes": ["text"],
        "skills": [
            {"id": "summarize", "name": "summarize", "description": "Summarize any text"},
            {"id": "translate", "name": "translate", "description": ""},
        ],
        "url": handle.url + "/",
    }


def test_build_agent_card_defaults_and_rules():
    skills = [
        SkillDef(name="b", content=".", description="Bee"),
        SkillDef(name="a", content="."),
    ]
    # The fixed keys are checked on the served card (test_agent_card); here, the defaults.
    card = build_agent_card(None, skills, "http://127.0.0.1:9")
    assert (card["name"], card["description"], card["version"]) == ("toolnexus-agent", "", "0.1.0")
    assert card["skills"] == [
        {"id": "b", "name": "b", "description": "Bee"},
        {"id": "a", "name": "a", "description": ""},
    ]
    assert card["url"] == "http://127.0.0.1:9/"
    assert "provider" not in card
    provider = {"organization": "Acme", "url": "https://acme.example"}
    profile = {
        "name": "",  # an empty value is kept: defaults only replace absent or None
        "description": None,
        "version": "2.0",
        "provider": provider,
        "skills": ["a", "zzz"],  # the card's order is the skills' order; unknown names ignored
    }
    card = build_agent_card(profile, skills, "http://127.0.0.1:9/")
    assert (card["name"], card["description"], card["version"]) == ("", "", "2.0")
    assert card["provider"] == provider
    assert card["skills"] == [{"id": "a", "name": "a", "description": ""}]
    assert card["url"] == "http://127.0.0.1:9/"


async def test_send_returns_submitted_then_completes(agent, http):
    handle, events = agent
    reply = await rpc(http, handle.url, "SendMessage", message("hello", contextId="ctx-1"), id=42)
    assert reply["id"] == 42 and reply["jsonrpc"] == "2.0"
    task = reply["result"]
    assert task["status"] == {"state": "submitted"}
    assert task["contextId"] == "ctx-1"
    uuid.UUID(task["id"])
    final = await settled(http, handle.url, task["id"])
    assert final["status"] == {"state": "completed"}
    assert final["contextId"] == "ctx-1"
    [artifact] = final["artifacts"]
    uuid.UUID(artifact["artifactId"])
    assert artifact["parts"] == [{"kind": "text", "text": "turns=1 last=hello"}]
    await wait_until(lambda: any(e["id"] == task["id"] for e in events))
    event = next(e for e in events if e["id"] == task["id"])
    assert event["state"] == "completed" and event["task"] == final
    assert event["result"].text == "turns=1 last=hello"
    assert event["result"].turns == 1


async def test_context_id_carries_the_conversation(agent, http):
    handle, _ = agent
    context = f"conv-{uuid.uuid4()}"
    first = (await rpc(http, handle.url, "SendMessage", message("one", contextId=context)))[
        "result"
    ]
    assert (await settled(http, handle.url, first["id"]))["artifacts"][0]["parts"][0]["text"] == (
        "turns=1 last=one"
    )
    second = (await rpc(http, handle.url, "SendMessage", message("two", contextId=context)))[
        "result"
    ]
    done = await settled(http, handle.url, second["id"])
    assert done["artifacts"][0]["parts"][0]["text"] == "turns=2 last=two"
    assert done["contextId"] == context
    # Without a contextId every message starts afresh.
    alone = (await rpc(http, handle.url, "SendMessage", message("three")))["result"]
    assert "contextId" not in alone
    done = await settled(http, handle.url, alone["id"])
    assert done["artifacts"][0]["parts"][0]["text"] == "turns=1 last=three"
    assert "contextId" not in done


async def test_text_parts_are_concatenated(agent, http):
    handle, _ = agent
    params = message("ignored")
    params["message"]["parts"] = [
        {"kind": "text", "text": "multi"},
        {"kind": "data", "data": {"x": 1}},
        {"kind": "text", "text": "part"},
    ]
    task = (await rpc(http, handle.url, "SendMessage", params))["result"]
    done = await settled(http, handle.url, task["id"])
    assert done["artifacts"][0]["parts"][0]["text"] == "turns=1 last=multipart"


async def test_a_failing_run_fails_its_task(agent, http):
    handle, events = agent
    task = (await rpc(http, handle.url, "SendMessage", message("fail please")))["result"]
    final = await settled(http, handle.url, task["id"])
    assert final["status"]["state"] == "failed"
    assert final["status"]["message"]["role"] == "agent"
    [part] = final["status"]["message"]["parts"]
    assert part["kind"] == "text" and "the model exploded" in part["text"]
    assert "artifacts" not in final
    await wait_until(lambda: any(e["id"] == task["id"] for e in events))
    event = next(e for e in events if e["id"] == task["id"])
    assert (event["state"], event["result"]) == ("failed", None)
    # The server is unaffected.
    ok = (await rpc(http, handle.url, "SendMessage", message("still fine")))["result"]
    assert (await settled(http, handle.url, ok["id"]))["status"]["state"] == "completed"


@pytest.mark.parametrize("context", [None, "ctx-resume"])
async def test_input_required_then_resumed(agent, context, http):
    handle, events = agent
    extra = {"contextId": context} if context else {}
    task = (await rpc(http, handle.url, "SendMessage", message("ask for a color", **extra)))[
        "result"
    ]
    waiting = await settled(http, handle.url, task["id"])
    assert waiting["status"] == {
        "state": "input-required",
        "message": {"role": "agent", "parts": [{"kind": "text", "text": "Which color?"}]},
    }
    assert "artifacts" not in waiting
    await wait_until(lambda: any(e["id"] == task["id"] for e in events))
    assert next(e for e in events if e["id"] == task["id"])["state"] == "input-required"

    resumed = await rpc(
        http, handle.url, "SendMessage", message("blue", taskId=task["id"], **extra)
    )
    assert resumed["result"]["id"] == task["id"]
    assert resumed["result"]["status"] == {"state": "working"}
    final = await settled(http, handle.url, task["id"])
    assert final["status"] == {"state": "completed"}
    assert final["artifacts"][0]["parts"][0]["text"] == "turns=2 last=blue"
    if context:
        assert final["contextId"] == context
    else:
        assert "contextId" not in final

    again = await rpc(http, handle.url, "SendMessage", message("red", taskId=task["id"]))
    assert again["error"] == {
        "code": -32002,
        "message": f"Task {task['id']} is completed, not input-required",
    }


async def test_unknown_task_ids(agent, http):
    handle, _ = agent
    reply = await rpc(http, handle.url, "SendMessage", message("x", taskId="nope"), id=7)
    assert reply == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": {"code": -32001, "message": "Task not found: nope"},
    }
    reply = await rpc(http, handle.url, "GetTask", {"id": "missing"})
    assert reply["error"] == {"code": -32001, "message": "Task not found: missing"}


async def test_protocol_errors(agent, http):
    handle, _ = agent
    for body in [b"{not json", b"[" * 100_000]:  # the second nests deeper than Python parses
        response = await http.post(
            handle.url + "/", content=body, headers={"Content-Type": "application/json"}
        )
        assert response.status_code == 200
        assert response.json() == {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32700, "message": "Parse error"},
        }
    reply = await rpc(http, handle.url, "CancelTask", {"id": "x"}, id="abc")
    assert reply == {
        "jsonrpc": "2.0",
        "id": "abc",
        "error": {"code": -32601, "message": "Method not found: CancelTask"},
    }
    reply = await rpc(http, handle.url, "SendMessage", {"message": "not an object"})
    assert reply["error"]["code"] == -32602


async def test_routes_without_mcp(agent, http):
    handle, _ = agent
    for method, path in [("GET", "/"), ("POST", "/mcp"), ("GET", "/other")]:
        response = await http.request(method, handle.url + path)
        assert (response.status_code, response.text) == (404, "not found")


async def test_both_profiles_on_one_server(agent_toolkit, model, http):
    from mcp import Client

    client = create_in_process_client(model="scripted", generate=model)
    async with await agent_toolkit.serve("127.0.0.1:0", client=client, a2a={}, mcp={}) as handle:
        async with Client(handle.url + "/mcp") as mcp_client:
            names = [t.name for t in (await mcp_client.list_tools()).tools]
        assert names == [t.name for t in agent_toolkit.tools()]
        task = (await rpc(http, handle.url, "SendMessage", message("both")))["result"]
        assert (await settled(http, handle.url, task["id"]))["status"]["state"] == "completed"
        card = (await http.get(handle.url + "/.well-known/agent-card.json")).json()
        assert card["name"] == "toolnexus-agent"
        assert [s["id"] for s in card["skills"]] == ["summarize", "translate", "secret"]


async def test_every_task_version_goes_through_the_store_with_its_context_id(
    agent_toolkit, model, http
):
    class RecordingStore:
        def __init__(self) -> None:
            self.tasks: dict[str, dict[str, Any]] = {}
            self.saved: list[dict[str, Any]] = []
            self.read: list[str] = []

        async def get(self, id: str) -> dict[str, Any] | None:
            self.read.append(id)
            return self.tasks.get(id)

        async def save(self, task: dict[str, Any]) -> None:
            self.saved.append(task)
            self.tasks[task["id"]] = task

    store = RecordingStore()
    client = create_in_process_client(model="scripted", generate=model)
    async with await agent_toolkit.serve(
        "127.0.0.1:0", client=client, a2a={"store": store}
    ) as handle:
        for extra in ({"contextId": "ctx-store"}, {}):
            task = (await rpc(http, handle.url, "SendMessage", message("stored", **extra)))[
                "result"
            ]
            final = await settled(http, handle.url, task["id"])
            versions = [t for t in store.saved if t["id"] == task["id"]]
            assert [t["status"]["state"] for t in versions] == ["submitted", "working", "completed"]
            assert [t.get("contextId") for t in versions] == [extra.get("contextId")] * 3
            assert versions[-1] == final
            assert task["id"] in store.read  # GetTask read it from the store


async def test_on_task_errors_and_store_failures_never_crash(agent_toolkit, model, http):
    class FlakyStore:
        def __init__(self) -> None:
            self.tasks: dict[str, dict[str, Any]] = {}

        async def get(self, id: str) -> dict[str, Any] | None:
            return self.tasks.get(id)

        async def save(self, task: dict[str, Any]) -> None:
            if task["status"]["state"] == "working":
                raise OSError("disk on fire")
            self.tasks[task["id"]] = task

    def broken(event: dict[str, Any]) -> None:
        raise RuntimeError("callback bug")

    client = create_in_process_client(model="scripted", generate=model)
    store = FlakyStore()
    async with await agent_toolkit.serve(
        "127.0.0.1:0", client=client, a2a={"store": store}, on_task=broken
    ) as handle:
        task = (await rpc(http, handle.url, "SendMessage", message("robust")))["result"]
        final = await settled(http, handle.url, task["id"])
        assert final["status"]["state"] == "completed"
        second = (await rpc(http, handle.url, "SendMessage", message("again")))["result"]
        assert (await settled(http, handle.url, second["id"]))["status"]["state"] == "completed"


async def test_file_store_survives_a_restart(agent_toolkit, model, tmp_path: Path, http):
    client = create_in_process_client(model="scripted", generate=model)
    profile = {"store": f"file:{tmp_path / 'tasks'}"}
    async with await agent_toolkit.serve("127.0.0.1:0", client=client, a2a=profile) as first:
        task = (await rpc(http, first.url, "SendMessage", message("persist me")))["result"]
        done = await settled(http, first.url, task["id"])
    assert (tmp_path / "tasks" / f"{task['id']}.json").is_file()
    async with await agent_toolkit.serve("127.0.0.1:0", client=client, a2a=profile) as second:
        assert (await rpc(http, second.url, "GetTask", {"id": task["id"]}))["result"] == done


async def test_stop_cancels_running_tasks(agent_toolkit, model, tmp_path: Path, http):
    client = create_in_process_client(model="scripted", generate=model)
    model.slow_started.clear()
    store = FileTaskStore(tmp_path)
    handle = await agent_toolkit.serve("127.0.0.1:0", client=client, a2a={"store": store})
    task = (await rpc(http, handle.url, "SendMessage", message("slow job")))["result"]
    await asyncio.wait_for(model.slow_started.wait(), 10)
    await handle.stop()
    stored = await store.get(task["id"])
    assert stored is not None
    assert stored["status"]["state"] == "canceled"
