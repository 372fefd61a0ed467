"""The official a2a-sdk 1.x client, built by its own card-driven factory, against our agent."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import pytest_asyncio
from a2a.client import ClientConfig, ClientFactory, create_client
from a2a.client.card_resolver import parse_agent_card
from a2a.client.transports.jsonrpc import JsonRpcTransport
from a2a.compat.v0_3.jsonrpc_transport import CompatJsonRpcTransport
from a2a.types import a2a_pb2 as pb
from a2a.utils.errors import TaskNotCancelableError
from google.protobuf.json_format import MessageToDict

from support import a2a_oracle as oracle
from support.a2a_agent import serve_agent
from support.polling import wait_until


@pytest_asyncio.fixture(loop_scope="session")
async def sdk_http() -> AsyncIterator[tuple[httpx.AsyncClient, list[httpx.Request]]]:
    seen: list[httpx.Request] = []

    async def record(request: httpx.Request) -> None:
        seen.append(request)

    async with httpx.AsyncClient(timeout=20, event_hooks={"request": [record]}) as client:
        yield client, seen


def send_request(text: str, **message: Any) -> pb.SendMessageRequest:
    return pb.SendMessageRequest(
        message=pb.Message(
            message_id="m1", role=pb.ROLE_USER, parts=[pb.Part(text=text)], **message
        )
    )


async def events_of(client: Any, request: pb.SendMessageRequest) -> list[dict[str, Any]]:
    return [MessageToDict(event) async for event in client.send_message(request)]


async def test_card_passes_both_sdk_models(served, sdk_http):
    http, _ = sdk_http
    card = (await http.get(served.url + "/.well-known/agent-card.json")).json()
    oracle.check_card(card)
    assert parse_agent_card(card).supported_interfaces[0].protocol_version == "1.0"


async def test_send_without_streaming(served, sdk_http):
    http, seen = sdk_http
    client = await create_client(served.url, ClientConfig(streaming=False, httpx_client=http))
    assert isinstance(client._transport, JsonRpcTransport)  # type: ignore[attr-defined]
    [event] = await events_of(client, send_request("hello there"))
    task = event["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["artifacts"][0]["parts"] == [{"text": "turns=1 last=hello there"}]
    assert task["contextId"] and task["history"][0]["messageId"] == "m1"
    posts = [r for r in seen if r.method == "POST"]
    assert posts[-1].headers["A2A-Version"] == "1.0"
    assert json.loads(posts[-1].content)["method"] == "SendMessage"


async def test_send_streaming(served, sdk_http):
    http, _ = sdk_http
    client = await create_client(served.url, ClientConfig(streaming=True, httpx_client=http))
    events = await events_of(client, send_request("stream me"))
    assert [next(iter(e)) for e in events] == [
        "task",
        "statusUpdate",
        "artifactUpdate",
        "statusUpdate",
    ]
    assert events[0]["task"]["status"]["state"] == "TASK_STATE_SUBMITTED"
    assert events[1]["statusUpdate"]["status"]["state"] == "TASK_STATE_WORKING"
    artifact = events[2]["artifactUpdate"]
    assert artifact["artifact"]["parts"] == [{"text": "turns=1 last=stream me"}]
    assert artifact["lastChunk"] is True
    assert events[3]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    ids = {e[k].get("taskId") for e in events[1:] for k in e}
    assert ids == {events[0]["task"]["id"]}


def compat_card(card: dict[str, Any]) -> pb.AgentCard:
    """Our card without its 1.0 interface, as a 0.3-only client would pick it."""
    trimmed = dict(card)
    trimmed["supportedInterfaces"] = [
        i for i in card["supportedInterfaces"] if i["protocolVersion"] == "0.3"
    ]
    return parse_agent_card(trimmed)


@pytest.mark.parametrize("streaming", [False, True])
async def test_sdk_in_v03_compat_mode(served, sdk_http, streaming):
    http, seen = sdk_http
    card = (await http.get(served.url + "/.well-known/agent-card.json")).json()
    client = ClientFactory(ClientConfig(streaming=streaming, httpx_client=http)).create(
        compat_card(card)
    )
    assert isinstance(client._transport, CompatJsonRpcTransport)  # type: ignore[attr-defined]
    events = await events_of(client, send_request("compat call"))
    final = events[-1]
    if streaming:
        assert final["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
        assert any("artifactUpdate" in e for e in events)
    else:
        assert final["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
        assert final["task"]["artifacts"][0]["parts"] == [{"text": "turns=1 last=compat call"}]
    post = [r for r in seen if r.method == "POST"][-1]
    assert post.headers["A2A-Version"] == "0.3"
    assert json.loads(post.content)["method"] == ("message/stream" if streaming else "message/send")


async def test_input_required_round_trip(served, sdk_http):
    http, _ = sdk_http
    client = await create_client(served.url, ClientConfig(streaming=False, httpx_client=http))
    [event] = await events_of(client, send_request("ask me"))
    task = event["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    status_message = task["status"]["message"]
    assert status_message["messageId"] and status_message["role"] == "ROLE_AGENT"
    assert status_message["parts"] == [{"text": "Which color?"}]
    request = status_message["metadata"]["toolnexusRequest"]
    assert (request["kind"], request["prompt"], request["data"]) == (
        "question",
        "Which color?",
        {"choices": ["red"]},
    )
    reply = send_request("red", task_id=task["id"], context_id=task["contextId"])
    [event] = await events_of(client, reply)
    done = event["task"]
    assert done["id"] == task["id"] and done["status"]["state"] == "TASK_STATE_COMPLETED"
    # the reply continues the conversation kept under the contextId
    assert done["artifacts"][0]["parts"] == [{"text": "turns=2 last=red"}]
    roles = [m["role"] for m in done["history"]]
    assert roles == ["ROLE_USER", "ROLE_AGENT", "ROLE_USER"]


async def test_cancel_a_slow_run(served, sdk_http, seen):
    http, _ = sdk_http
    client = await create_client(
        served.url, ClientConfig(streaming=False, polling=True, httpx_client=http)
    )
    seen.slow_started.clear()
    [event] = await events_of(client, send_request("slow job"))
    task_id = event["task"]["id"]
    await wait_until(seen.slow_started.is_set)
    before = len([t for t in seen.tasks if t["id"] == task_id])
    canceled = await client.cancel_task(pb.CancelTaskRequest(id=task_id))
    assert canceled.status.state == pb.TASK_STATE_CANCELED
    await wait_until(seen.slow_signalled.is_set)
    await wait_until(lambda: any(t["id"] == task_id for t in seen.tasks))
    got = await client.get_task(pb.GetTaskRequest(id=task_id))
    assert got.status.state == pb.TASK_STATE_CANCELED  # the late result was discarded
    assert [t["state"] for t in seen.tasks if t["id"] == task_id] == ["canceled"]
    assert before == 0
    with pytest.raises(TaskNotCancelableError):
        await client.cancel_task(pb.CancelTaskRequest(id=task_id))


async def test_list_tasks_pages_and_filters(agent_toolkit, seen, sdk_http):
    http, _ = sdk_http
    handle = await serve_agent(agent_toolkit, seen)
    try:
        client = await create_client(handle.url, ClientConfig(streaming=False, httpx_client=http))
        ids = []
        for n in range(5):
            context = {"context_id": "ctx-even"} if n % 2 == 0 else {}
            [event] = await events_of(client, send_request(f"task {n}", **context))
            ids.append(event["task"]["id"])
        pages = []
        token = ""
        while True:
            page = await client.list_tasks(pb.ListTasksRequest(page_size=2, page_token=token))
            assert page.total_size == 5 and page.page_size == 2
            pages.append([t.id for t in page.tasks])
            assert all(not t.artifacts for t in page.tasks)
            token = page.next_page_token
            if not token:
                break
        assert [len(p) for p in pages] == [2, 2, 1]
        assert sorted(i for page in pages for i in page) == sorted(ids)
        even = await client.list_tasks(
            pb.ListTasksRequest(context_id="ctx-even", include_artifacts=True)
        )
        assert even.total_size == 3 and all(t.artifacts for t in even.tasks)
        done = await client.list_tasks(pb.ListTasksRequest(status=pb.TASK_STATE_COMPLETED))
        assert done.total_size == 5
        for size, message in [(0, "minimum page size is 1"), (101, "maximum page size is 100")]:
            with pytest.raises(Exception, match=message):
                await client.list_tasks(pb.ListTasksRequest(page_size=size))
    finally:
        await handle.stop()


async def test_subscribe_sees_the_current_task_first(served, sdk_http, seen):
    http, _ = sdk_http
    client = await create_client(served.url, ClientConfig(streaming=True, httpx_client=http))
    poller = await create_client(
        served.url, ClientConfig(streaming=False, polling=True, httpx_client=http)
    )
    seen.slow_started.clear()
    [event] = await events_of(poller, send_request("slow subscribe"))
    task_id = event["task"]["id"]
    await wait_until(seen.slow_started.is_set)
    stream = client.subscribe(pb.SubscribeToTaskRequest(id=task_id))
    first = await anext(stream)
    assert first.task.id == task_id and first.task.status.state == pb.TASK_STATE_WORKING
    await poller.cancel_task(pb.CancelTaskRequest(id=task_id))
    rest = [MessageToDict(e) async for e in stream]
    assert rest[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_CANCELED"
    with pytest.raises(Exception, match="terminal state"):
        async for _ in client.subscribe(pb.SubscribeToTaskRequest(id=task_id)):
            pass
