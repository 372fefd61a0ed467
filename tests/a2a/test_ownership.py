"""A2A task ownership (a2a.md, amendment 2026-12-02): every task, context and conversation
belongs to the identity that created it; every route answers another identity's task exactly as
an unknown one, in every dialect. Served with OAuth resource mode (tokens of two subjects
signed by a loopback authorization server) and a static token, on loopback."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
import pytest_asyncio
from a2a.client import ClientConfig, create_client
from a2a.types import a2a_pb2 as pb
from a2a.utils.errors import TaskNotFoundError

from support import a2a_oracle as oracle
from support.a2a_agent import Model, Seen, make_tools, message
from support.oauth_server import AuthServer, running_auth_server
from toolnexus.client import create_in_process_client
from toolnexus.serve import FileTaskStore, ResourceAuth, ServeHandle
from toolnexus.skill import SkillDef
from toolnexus.toolkit import Toolkit, create_toolkit

AUDIENCE = "https://agent.example/a2a"
STATIC = "static-token-0wn3r"
_ids = iter(range(1, 10**9))


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def authz() -> AsyncIterator[AuthServer]:
    async with running_auth_server() as server:
        yield server


@pytest.fixture(scope="module")
def owned_seen() -> Seen:
    return Seen()


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def owned_toolkit(owned_seen: Seen) -> AsyncIterator[Toolkit]:
    toolkit = await create_toolkit(
        skills=[SkillDef(name="echo", content="Echo.", description="Echoes the task.")],
        builtins=False,
        extra_tools=make_tools(owned_seen),
    )
    yield toolkit
    await toolkit.close()


async def _serve(
    toolkit: Toolkit, seen: Seen, authz: AuthServer, *, store: Any = None
) -> ServeHandle:
    client = create_in_process_client(model="scripted", generate=Model(seen))
    a2a: dict[str, Any] = {"name": "owned"}
    if store is not None:
        a2a["store"] = store
    return await toolkit.serve(
        "127.0.0.1:0",
        client=client,
        a2a=a2a,
        auth=ResourceAuth(issuer=authz.issuer, audience=AUDIENCE, jwks_refresh_interval=0),
        auth_token=STATIC,
    )


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def agent(owned_toolkit: Toolkit, owned_seen: Seen, authz: AuthServer):
    handle = await _serve(owned_toolkit, owned_seen, authz)
    yield handle
    await handle.stop()


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def web() -> AsyncIterator[httpx2.AsyncClient]:
    async with httpx2.AsyncClient(timeout=20) as client:
        yield client


class Caller:
    """One identity calling the agent: JSON-RPC with its bearer, answers checked by the oracle."""

    def __init__(self, web: httpx2.AsyncClient, url: str, token: str) -> None:
        self.web = web
        self.url = url
        self.token = token

    def headers(self, version: str | None) -> dict[str, str]:
        headers = {"Authorization": f"Bearer {self.token}"}
        if version is not None:
            headers["A2A-Version"] = version
        return headers

    async def rpc(self, method: str, params: Any, version: str | None = "1.0") -> dict[str, Any]:
        rid = next(_ids)
        body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
        answer = await self.web.post(self.url + "/", json=body, headers=self.headers(version))
        assert answer.status_code == 200, answer.text
        reply = oracle.check_strict_json(answer.content)
        oracle.check_response(method, oracle.dialect_of(method, version), reply, rid)
        return reply

    async def stream(self, method: str, params: Any, version: str | None = "1.0") -> list[Any]:
        """Every answer of a streaming call (a refusal comes back as one plain JSON answer)."""
        rid = next(_ids)
        body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
        out = []
        async with self.web.stream(
            "POST", self.url + "/", json=body, headers=self.headers(version)
        ) as reply:
            assert reply.status_code == 200
            if reply.headers["content-type"].startswith("application/json"):
                return [json.loads(await reply.aread())]
            async for line in reply.aiter_lines():
                if line.startswith("data: "):
                    out.append(json.loads(line[len("data: ") :]))
        return out

    async def send(self, text: str, **extra: Any) -> dict[str, Any]:
        """A blocking 1.0 SendMessage; the task it answers."""
        answer = await self.rpc("SendMessage", {"message": message(text, **extra)})
        assert "result" in answer, answer
        return dict(answer["result"]["task"])


@pytest.fixture
def alice(web: httpx2.AsyncClient, agent: ServeHandle, authz: AuthServer) -> Caller:
    return Caller(web, agent.url, authz.token(AUDIENCE, sub="alice"))


@pytest.fixture
def bob(web: httpx2.AsyncClient, agent: ServeHandle, authz: AuthServer) -> Caller:
    # Same OAuth client as alice, another subject: still another identity.
    return Caller(web, agent.url, authz.token(AUDIENCE, sub="bob"))


@pytest.fixture
def operator(web: httpx2.AsyncClient, agent: ServeHandle) -> Caller:
    return Caller(web, agent.url, STATIC)


def _unknown(answer: dict[str, Any], task_id: str, stranger_id: str) -> dict[str, Any]:
    """An answer about `task_id` with the id written as `stranger_id` (to compare with the
    answer about a task that does not exist)."""
    return json.loads(json.dumps(answer).replace(task_id, stranger_id))


# Each route that names a task, in each dialect: (method, version header, params of a task id).
_NAMED = [
    ("GetTask", "1.0", lambda t: {"id": t}),
    ("CancelTask", "1.0", lambda t: {"id": t}),
    ("SendMessage", "1.0", lambda t: {"message": message("red", taskId=t)}),
    ("GetTask", None, lambda t: {"id": t}),
    ("CancelTask", None, lambda t: {"id": t}),
    ("SendMessage", None, lambda t: {"message": message("red", taskId=t)}),
    ("tasks/get", None, lambda t: {"id": t}),
    ("tasks/cancel", None, lambda t: {"id": t}),
    ("message/send", None, lambda t: {"message": message("red", dialect="0.3", taskId=t)}),
    ("tasks/pushNotificationConfig/get", None, lambda t: {"id": t}),
    ("GetTaskPushNotificationConfig", "1.0", lambda t: {"taskId": t, "id": "x"}),
]
_STREAMED = [
    ("SubscribeToTask", "1.0", lambda t: {"id": t}),
    ("tasks/resubscribe", None, lambda t: {"id": t}),
    ("SendStreamingMessage", "1.0", lambda t: {"message": message("red", taskId=t)}),
    ("message/stream", None, lambda t: {"message": message("red", dialect="0.3", taskId=t)}),
]


@pytest.mark.parametrize("other", ["bob", "operator"])
async def test_another_identity_is_answered_as_for_an_unknown_task(
    request: pytest.FixtureRequest, alice: Caller, other: str
):
    intruder: Caller = request.getfixturevalue(other)
    task = await alice.send("ask me")  # input-required: cancelable, resumable, subscribable
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    task_id, stranger = task["id"], "no-such-task-" + task["id"]
    for method, version, params in _NAMED:
        theirs = await intruder.rpc(method, params(task_id), version)
        nobodys = await intruder.rpc(method, params(stranger), version)
        assert "error" in theirs, (method, version, theirs)
        assert _unknown(theirs, task_id, stranger)["error"] == nobodys["error"], (method, version)
    for method, version, params in _STREAMED:
        [theirs] = await intruder.stream(method, params(task_id), version)
        [nobodys] = await intruder.stream(method, params(stranger), version)
        assert "error" in theirs, (method, version, theirs)
        assert _unknown(theirs, task_id, stranger)["error"] == nobodys["error"], (method, version)
    assert theirs["error"]["code"] == -32001
    # Nothing was done to the task: alice finds it as she left it, and answers it herself.
    again = await alice.rpc("GetTask", {"id": task_id})
    assert again["result"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert again["result"]["history"] == task["history"]
    done = await alice.send("red", taskId=task_id)
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert done["artifacts"][0]["parts"] == [{"text": "turns=2 last=red"}]


async def test_a_running_task_is_neither_seen_nor_canceled_by_another_subject(
    alice: Caller, bob: Caller
):
    sent = await alice.rpc(
        "SendMessage",
        {"message": message("slow please"), "configuration": {"returnImmediately": True}},
    )
    task_id = sent["result"]["task"]["id"]
    for method in ("GetTask", "CancelTask"):
        refused = await bob.rpc(method, {"id": task_id})
        error = refused["error"]
        assert (error["code"], error["message"]) == (-32001, f"Task not found: {task_id}")
    [refused] = await bob.stream("SubscribeToTask", {"id": task_id})
    assert refused["error"]["code"] == -32001
    mine = await alice.rpc("GetTask", {"id": task_id})
    assert mine["result"]["status"]["state"] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")
    canceled = await alice.rpc("CancelTask", {"id": task_id})
    assert canceled["result"]["status"]["state"] == "TASK_STATE_CANCELED"


async def test_list_tasks_lists_the_callers_own(alice: Caller, bob: Caller, operator: Caller):
    mine = {(await alice.send(f"list alice {n}"))["id"] for n in range(2)}
    theirs = {(await bob.send("list bob"))["id"]}
    ops = {(await operator.send("list operator"))["id"]}

    async def listed(caller: Caller, version: str = "1.0") -> tuple[set[str], int]:
        answer = await caller.rpc("ListTasks", {"pageSize": 100}, version)
        result = answer["result"]
        return {t["id"] for t in result["tasks"]}, result["totalSize"]

    alices, alice_total = await listed(alice)
    bobs, bob_total = await listed(bob)
    operators, _ = await listed(operator)
    assert mine <= alices and not alices & (theirs | ops)
    assert theirs <= bobs and not bobs & (mine | ops)
    assert ops <= operators and not operators & (mine | theirs)
    assert alice_total == len(alices) and bob_total == len(bobs)
    # A context filter naming someone else's context finds nothing.
    context = (await alice.rpc("GetTask", {"id": next(iter(mine))}))["result"]["contextId"]
    other = await bob.rpc("ListTasks", {"contextId": context})
    assert other["result"]["tasks"] == [] and other["result"]["totalSize"] == 0


@pytest.mark.parametrize("status", ["UNRECOGNIZED", "TASK_STATE_UNSPECIFIED", ""])
async def test_an_unrecognized_status_filter_is_no_filter(bob: Caller, status: str):
    made = (await bob.send("filter me"))["id"]
    answer = await bob.rpc("ListTasks", {"status": status, "pageSize": 100})
    assert made in {t["id"] for t in answer["result"]["tasks"]}
    completed = await bob.rpc("ListTasks", {"status": "TASK_STATE_COMPLETED", "pageSize": 100})
    assert answer["result"]["totalSize"] >= completed["result"]["totalSize"] >= 1


async def test_a_context_id_never_reaches_another_subjects_transcript(alice: Caller, bob: Caller):
    first = await alice.send("my secret is aubergine")
    context = first["contextId"]
    theirs = await bob.send("history please", contextId=context)
    transcript = theirs["artifacts"][0]["parts"][0]["text"]
    assert "aubergine" not in transcript
    assert [m for m in json.loads(transcript) if m[0] != "system"] == [["user", "history please"]]
    assert theirs["id"] != first["id"]
    # Alice's conversation goes on under the same contextId.
    mine = await alice.send("history please", contextId=context)
    assert "aubergine" in mine["artifacts"][0]["parts"][0]["text"]


async def test_the_official_sdk_client_of_another_subject_cannot_reach_a_task(
    agent: ServeHandle, alice: Caller, authz: AuthServer
):
    task = await alice.send("ask me")
    headers = {"Authorization": f"Bearer {authz.token(AUDIENCE, sub='carol')}"}
    async with httpx.AsyncClient(timeout=20, headers=headers) as http:
        client = await create_client(agent.url, ClientConfig(streaming=False, httpx_client=http))
        with pytest.raises(TaskNotFoundError):
            await client.get_task(pb.GetTaskRequest(id=task["id"]))
        with pytest.raises(TaskNotFoundError):
            await client.cancel_task(pb.CancelTaskRequest(id=task["id"]))
        listed = await client.list_tasks(pb.ListTasksRequest())
        assert task["id"] not in {t.id for t in listed.tasks}
    again = await alice.rpc("GetTask", {"id": task["id"]})
    assert again["result"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"


async def test_ownerless_stored_tasks_belong_to_the_static_token_identity(
    owned_toolkit: Toolkit, owned_seen: Seen, authz: AuthServer, web: httpx2.AsyncClient, tmp_path
):
    """A task stored before tasks recorded an owner reads as the unauthenticated / static-token
    identity's: the operator still reaches it, no OAuth subject does."""
    legacy = {
        "id": "legacy-1",
        "contextId": "ctx-legacy",
        "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-01-01T00:00:00Z"},
        "history": [{"messageId": "m0", "role": "ROLE_USER", "parts": [{"text": "old"}]}],
    }
    (tmp_path / "legacy-1.json").write_text(json.dumps(legacy))
    handle = await _serve(owned_toolkit, owned_seen, authz, store=FileTaskStore(tmp_path))
    async with handle:
        operator = Caller(web, handle.url, STATIC)
        alice = Caller(web, handle.url, authz.token(AUDIENCE, sub="alice"))
        assert (await operator.rpc("GetTask", {"id": "legacy-1"}))["result"]["id"] == "legacy-1"
        listed = await operator.rpc("ListTasks", {})
        assert [t["id"] for t in listed["result"]["tasks"]] == ["legacy-1"]
        assert (await alice.rpc("GetTask", {"id": "legacy-1"}))["error"]["code"] == -32001
        assert (await alice.rpc("ListTasks", {}))["result"]["tasks"] == []
        # What an OAuth subject creates records its owner in the stored task.
        made = await alice.send("stored owner")
        stored = json.loads(Path(tmp_path, f"{made['id']}.json").read_text())
        assert stored["owner"] and "alice" in stored["owner"]
        assert "owner" not in made  # never rendered


async def test_a_second_cancel_always_answers_not_cancelable(agent: ServeHandle, operator: Caller):
    """Two cancels of one running task, racing: exactly one succeeds, round after round."""
    outcomes = []
    for _ in range(40):
        sent = await operator.rpc(
            "SendMessage",
            {"message": message("slow race"), "configuration": {"returnImmediately": True}},
        )
        task_id = sent["result"]["task"]["id"]
        both = await asyncio.gather(
            operator.rpc("CancelTask", {"id": task_id}),
            operator.rpc("CancelTask", {"id": task_id}),
        )
        codes = sorted(a["error"]["code"] if "error" in a else 0 for a in both)
        third = await operator.rpc("CancelTask", {"id": task_id})
        outcomes.append((codes, third.get("error", {}).get("code")))
    assert outcomes == [([-32002, 0], -32002)] * 40


class _ListsEveryone:
    """A pluggable store whose `list` cannot filter by owner."""

    def __init__(self) -> None:
        self.tasks: dict[str, dict[str, Any]] = {}

    async def get(self, id: str) -> dict[str, Any] | None:
        return json.loads(json.dumps(self.tasks[id])) if id in self.tasks else None

    async def save(self, task: dict[str, Any]) -> None:
        self.tasks[task["id"]] = json.loads(json.dumps(task))

    async def list(
        self,
        *,
        context_id: str | None = None,
        state: str | None = None,
        updated_after: str | None = None,
        page_size: int = 50,
        page_token: str | None = None,
    ) -> Any:
        return list(self.tasks.values()), "", len(self.tasks)


async def test_a_store_that_cannot_list_by_owner_serves_no_list_tasks(
    owned_toolkit: Toolkit, owned_seen: Seen, authz: AuthServer, web: httpx2.AsyncClient
):
    store = _ListsEveryone()
    handle = await _serve(owned_toolkit, owned_seen, authz, store=store)
    async with handle:
        alice = Caller(web, handle.url, authz.token(AUDIENCE, sub="alice"))
        made = await alice.send("into a plain store")
        assert store.tasks[made["id"]]["owner"]
        refused = await Caller(web, handle.url, STATIC).rpc("ListTasks", {})
        assert refused["error"]["code"] == -32004
        assert (await alice.rpc("GetTask", {"id": made["id"]}))["result"]["id"] == made["id"]
