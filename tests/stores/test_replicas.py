"""Two `serve` replicas sharing a PostgreSQL or Redis task store answer for each other's tasks:
GetTask, CancelTask (which stops the run on the other replica) and SubscribeToTask (which
streams the other replica's progress), and a task whose replica dies becomes final (failed)
within a bounded time, for pollers and subscribers alike."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from support.a2a_agent import message, rpc
from support.polling import wait_until

RUNNING = ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")
REPLICA = Path(__file__).parent.parent / "support" / "store_replica.py"


class _Pair:
    """Two replica processes on one shared store, kept for the module (each start costs
    seconds on a loaded machine); a replica a test killed is started again for the next."""

    def __init__(self, kind: str, url: str, marks: Path) -> None:
        self.kind, self.url, self.marks = kind, url, marks
        self.procs: list[asyncio.subprocess.Process | None] = [None, None]
        self.urls = ["", ""]

    async def _start(self) -> tuple[asyncio.subprocess.Process, str]:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            str(REPLICA),
            self.kind,
            self.url,
            str(self.marks),
            stdout=asyncio.subprocess.PIPE,
        )
        try:
            assert proc.stdout is not None
            url = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode().strip()
        except BaseException:
            proc.kill()
            await proc.wait()
            raise
        return proc, url

    async def live(self) -> list[tuple[Any, str]]:
        """Both replicas, dead ones replaced first (started side by side)."""
        dead = [i for i, p in enumerate(self.procs) if p is None or p.returncode is not None]
        started = await asyncio.gather(*(self._start() for _ in dead), return_exceptions=True)
        for i, outcome in zip(dead, started, strict=True):
            if not isinstance(outcome, BaseException):
                self.procs[i], self.urls[i] = outcome
        for outcome in started:
            if isinstance(outcome, BaseException):
                raise outcome
        return list(zip(self.procs, self.urls, strict=True))

    async def stop(self) -> None:
        for proc in self.procs:
            if proc is None:
                continue
            if proc.returncode is None:
                proc.kill()
            await proc.wait()


@pytest.fixture(scope="module", params=["postgres", "redis"])
async def replica_pair(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[_Pair]:
    if request.param == "postgres":
        url = request.getfixturevalue("postgres").database(f"rep_{uuid.uuid4().hex[:8]}")
    else:
        url = request.getfixturevalue("redis_server").database(3)
    pair = _Pair(request.param, url, tmp_path_factory.mktemp(f"marks-{request.param}"))
    try:
        yield pair
    finally:
        await pair.stop()


@pytest.fixture
async def replicas(replica_pair: _Pair) -> list[tuple[Any, str]]:
    return await replica_pair.live()


@pytest.fixture
def marks(replica_pair: _Pair) -> Path:
    """The replicas' folder for `hold`/`gate` marks (each test uses prompts of its own)."""
    return replica_pair.marks


def state(answer: dict[str, Any]) -> str:
    return str(answer["result"]["status"]["state"])


async def send_held(http: httpx2.AsyncClient, url: str, text: str) -> str:
    config = {"returnImmediately": True}
    sent = await rpc(http, url, "SendMessage", {"message": message(text), "configuration": config})
    return str(sent["result"]["task"]["id"])


class Subscription:
    """A `SubscribeToTask` stream read event by event."""

    def __init__(self, http: httpx2.AsyncClient, url: str, task_id: str) -> None:
        body = {"jsonrpc": "2.0", "id": 7, "method": "SubscribeToTask", "params": {"id": task_id}}
        self._context = http.stream("POST", url + "/", json=body, headers={"A2A-Version": "1.0"})
        self._lines: Any = None

    async def __aenter__(self) -> Subscription:
        reply = await self._context.__aenter__()
        assert reply.headers["content-type"].startswith("text/event-stream")
        self._lines = reply.aiter_lines()
        return self

    async def next(self) -> dict[str, Any] | None:
        """The next event's result, or `None` once the stream has ended."""
        async for line in self._lines:
            if line.startswith("data: "):
                event: dict[str, Any] = json.loads(line[len("data: ") :])["result"]
                return event
        return None

    async def rest(self) -> list[dict[str, Any]]:
        events = []
        while (event := await self.next()) is not None:
            events.append(event)
        return events

    async def __aexit__(self, *exc_info: Any) -> None:
        await self._context.__aexit__(*exc_info)


async def test_any_replica_answers_gets_and_stops_the_runs_of_another(replicas, marks):
    (_, url_a), (_, url_b) = replicas
    async with httpx2.AsyncClient(timeout=20) as http:
        sent = await rpc(http, url_a, "SendMessage", {"message": message("hello")})
        done_id = sent["result"]["task"]["id"]
        got = await rpc(http, url_b, "GetTask", {"id": done_id})
        assert state(got) == "TASK_STATE_COMPLETED"

        held_id = await send_held(http, url_a, "hold one")
        # Running on A: B sees it working (not failed), and cancels it for good...
        assert state(await rpc(http, url_b, "GetTask", {"id": held_id})) in RUNNING
        canceled = await rpc(http, url_b, "CancelTask", {"id": held_id})
        assert state(canceled) == "TASK_STATE_CANCELED"
        # ...which reaches the run on A: its model call is stopped.
        await wait_until((marks / "hold one.stopped").exists, timeout=15)
        for url in (url_a, url_b):
            assert state(await rpc(http, url, "GetTask", {"id": held_id})) == "TASK_STATE_CANCELED"
        again = await rpc(http, url_a, "CancelTask", {"id": held_id})
        assert again["error"]["code"] == -32002  # not cancelable twice, on either replica


async def test_a_subscriber_on_one_replica_follows_a_run_on_another(replicas, marks):
    (_, url_a), (_, url_b) = replicas
    async with httpx2.AsyncClient(timeout=20) as http:
        task_id = await send_held(http, url_a, "gate one")
        async with Subscription(http, url_b, task_id) as stream:
            first = await stream.next()
            assert first is not None and first["task"]["status"]["state"] in RUNNING
            (marks / "gate one").touch()  # let A finish the run
            events = await asyncio.wait_for(stream.rest(), 20)
        *updates, last = events
        artifacts = [e["artifactUpdate"]["artifact"] for e in updates if "artifactUpdate" in e]
        assert [a["parts"][0]["text"] for a in artifacts] == ["done:gate one"]
        assert last["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
        final = await rpc(http, url_b, "GetTask", {"id": task_id})
        assert final["result"]["artifacts"] == artifacts


async def test_serve_store_flag_shares_tasks_and_conversations(redis_server) -> None:
    from support.cli_runner import clean_env, start_serve, stop_serve
    from support.fake_llm import FakeLLM, text
    from toolnexus.client import RedisConversationStore

    url = redis_server.database(4)
    with FakeLLM() as llm:
        llm.push(text("Hello from a replica."))
        model = ["--base-url", llm.url + "/v1", "--style", "openai", "--model", "m"]
        flags = ["--a2a", "--store", url, "--port", "0", *model, "--api-key", "k-unused"]
        starts = (start_serve(*flags, env=clean_env()) for _ in range(2))
        outcomes = await asyncio.gather(*starts, return_exceptions=True)
        started = [o for o in outcomes if not isinstance(o, BaseException)]
        try:
            for outcome in outcomes:
                if isinstance(outcome, BaseException):
                    raise outcome
            (_, a), (_, b) = ((p, u["a2a"].rstrip("/")) for p, u in started)
            async with httpx2.AsyncClient(timeout=30) as http:
                sent = await rpc(http, a, "SendMessage", {"message": message("hi")})
                task = sent["result"]["task"]
                assert task["status"]["state"] == "TASK_STATE_COMPLETED"
                got = await rpc(http, b, "GetTask", {"id": task["id"]})
                assert got["result"] == task
        finally:
            await asyncio.gather(*(stop_serve(proc, signal.SIGTERM) for proc, _ in started))
    async with RedisConversationStore(url) as conversations:
        turns = await conversations.get(task["contextId"])
    assert [m["content"] for m in turns or []] == ["hi", "Hello from a replica."]


async def test_a_task_waiting_for_input_resumes_on_another_replica_and_its_subscriber_follows(
    replicas,
):
    (_, url_a), (_, url_b) = replicas
    async with httpx2.AsyncClient(timeout=20) as http:
        asked = await rpc(http, url_a, "SendMessage", {"message": message("ask me")})
        task = asked["result"]["task"]
        assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        async with Subscription(http, url_a, task["id"]) as stream:
            first = await stream.next()
            assert (
                first is not None
                and first["task"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
            )
            reply = message("Ada", taskId=task["id"], contextId=task["contextId"])
            resumed = await rpc(http, url_b, "SendMessage", {"message": reply})
            assert resumed["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
            events = await asyncio.wait_for(stream.rest(), 20)
        states = [e["statusUpdate"]["status"]["state"] for e in events if "statusUpdate" in e]
        assert states[-1] == "TASK_STATE_COMPLETED"
        artifacts = [e["artifactUpdate"]["artifact"] for e in events if "artifactUpdate" in e]
        assert artifacts == resumed["result"]["task"]["artifacts"]
        assert "Ada" in artifacts[0]["parts"][0]["text"]


# Last of the module: it kills a replica (the next test would wait for a new one).
async def test_a_dead_replicas_task_ends_failed_for_pollers_and_subscribers(replicas):
    (a, url_a), (_, url_b) = replicas
    async with httpx2.AsyncClient(timeout=20) as http:
        doomed_id = await send_held(http, url_a, "hold two")
        assert state(await rpc(http, url_b, "GetTask", {"id": doomed_id})) in RUNNING
        async with Subscription(http, url_b, doomed_id) as stream:
            first = await stream.next()
            assert first is not None and first["task"]["status"]["state"] in RUNNING
            a.send_signal(signal.SIGKILL)
            await a.wait()
            # one lease (0.6 s) in practice; the bound is generous for a loaded machine
            events = await asyncio.wait_for(stream.rest(), 20)
        status = events[-1]["statusUpdate"]["status"]
        assert status["state"] == "TASK_STATE_FAILED"
        assert (
            status["message"]["parts"][0]["text"] == "the server restarted before the task finished"
        )
        got = await rpc(http, url_b, "GetTask", {"id": doomed_id})
        assert state(got) == "TASK_STATE_FAILED"
