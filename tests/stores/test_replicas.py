"""Two `serve` replicas sharing a PostgreSQL or Redis task store answer for each other's tasks,
and a task whose replica dies becomes final (failed) within a bounded time."""

from __future__ import annotations

import asyncio
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


@pytest.fixture(params=["postgres", "redis"])
async def replicas(request: pytest.FixtureRequest) -> AsyncIterator[list[Any]]:
    if request.param == "postgres":
        url = request.getfixturevalue("postgres").database(f"rep_{uuid.uuid4().hex[:8]}")
    else:
        url = request.getfixturevalue("redis_server").database(3)
    procs = []
    try:
        for _ in range(2):
            proc = await asyncio.create_subprocess_exec(
                sys.executable, str(REPLICA), request.param, url, stdout=asyncio.subprocess.PIPE
            )
            procs.append(proc)
        urls = [(await asyncio.wait_for(p.stdout.readline(), 30)).decode().strip() for p in procs]
        yield list(zip(procs, urls, strict=True))
    finally:
        for proc in procs:
            if proc.returncode is None:
                proc.kill()
            await proc.wait()


def state(answer: dict[str, Any]) -> str:
    return str(answer["result"]["status"]["state"])


async def test_any_replica_answers_for_any_task_and_a_dead_replicas_task_ends(replicas):
    (a, url_a), (_, url_b) = replicas
    async with httpx2.AsyncClient(timeout=10) as http:
        sent = await rpc(http, url_a, "SendMessage", {"message": message("hello")})
        done_id = sent["result"]["task"]["id"]
        got = await rpc(http, url_b, "GetTask", {"id": done_id})
        assert state(got) == "TASK_STATE_COMPLETED"

        held = await rpc(
            http,
            url_a,
            "SendMessage",
            {"message": message("hold one"), "configuration": {"returnImmediately": True}},
        )
        held_id = held["result"]["task"]["id"]
        # Running on A: B sees it working (not failed), and can cancel it for good.
        assert state(await rpc(http, url_b, "GetTask", {"id": held_id})) in RUNNING
        canceled = await rpc(http, url_b, "CancelTask", {"id": held_id})
        assert state(canceled) == "TASK_STATE_CANCELED"
        assert state(await rpc(http, url_b, "GetTask", {"id": held_id})) == "TASK_STATE_CANCELED"

        doomed = await rpc(
            http,
            url_a,
            "SendMessage",
            {"message": message("hold two"), "configuration": {"returnImmediately": True}},
        )
        doomed_id = doomed["result"]["task"]["id"]
        assert state(await rpc(http, url_b, "GetTask", {"id": doomed_id})) in RUNNING
        a.send_signal(signal.SIGKILL)
        await a.wait()

        async def failed() -> bool:
            return (
                state(await rpc(http, url_b, "GetTask", {"id": doomed_id})) == "TASK_STATE_FAILED"
            )

        await wait_until(failed, timeout=15, check_every=0.1)  # one lease (0.6 s) in practice
