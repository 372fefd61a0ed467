"""A durable run killed with SIGKILL at every kind of step boundary resumes where it stopped.

One run goes through five processes on one DBOS system database; each is `kill -9`ed at a
different point and the next one (which only launches DBOS) resumes the run:

1. during the first model call (in flight: it is sent again, at least once);
2. during a tool call (in flight: it runs again, with the same idempotency key);
3. during the second model call, after that tool completed (the tool never runs again);
4. while suspended on an approval (the suspended tool is not called again);
5. answered from this process (another process than the run's), the run finishes.

Side effects are counted in files; the fake LLM's request log shows what was re-sent. The run
is plain on a SQLite file, and streamed on PostgreSQL (a real server): there this process reads
the run's stream live through every kill, from a `DBOSClient`, and sees each event once, in
order (and so does a reader that comes after the end). A streamed run is the plain one plus its
stream writes, so the second run covers PostgreSQL for both.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from dbos import DBOSClient

from support.client_helpers import base_url
from support.fake_llm import FakeLLM, Reply, call, text, tools
from support.polling import wait_until
from toolnexus import Answer
from toolnexus.client import StreamEvent
from toolnexus.durable import pending_request, send_answer, stream_events

WORKER = Path(__file__).parent / "durable_worker.py"
BOOT_S = 60.0  # a process importing DBOS and toolnexus on a loaded machine


class Worker:
    """One process of the run."""

    started: list[Worker] = []  # noqa: RUF012  # every process of the test, to reap at the end

    def __init__(self, db_url: str, llm: FakeLLM, effects: Path, mode: str, *extra: str) -> None:
        args = [db_url, base_url(llm, "openai"), "wf-kill", str(effects), mode, *extra]
        self.proc = subprocess.Popen(
            [sys.executable, str(WORKER), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        Worker.started.append(self)

    def go(self) -> Worker:
        """Let the process launch DBOS (it has imported everything meanwhile)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        return self

    def kill(self) -> None:
        self.proc.kill()  # SIGKILL
        self.proc.wait(timeout=BOOT_S)

    async def result(self) -> dict[str, Any]:
        assert self.proc.stdout is not None and self.proc.stderr is not None
        out = await asyncio.to_thread(self.proc.stdout.read)
        err = await asyncio.to_thread(self.proc.stderr.read)
        await asyncio.to_thread(self.proc.wait, BOOT_S)
        assert self.proc.returncode == 0, err[-4000:]
        summary: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
        return summary


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def brief(event: StreamEvent) -> str:
    """An event as a short line: its type and what tells it apart."""
    if event["type"] == "text":
        return f"text {event['delta']}"
    if event["type"] == "tool_call":
        return f"tool_call {event['name']} {json.dumps(event['args'])}"
    if event["type"] == "tool_result":
        return f"tool_result {event['output']}"
    if event["type"] == "pending":
        return f"pending {event['request'].id}"
    if event["type"] == "done":
        return f"done {event['result'].text}"
    return event["type"]


async def read_all(workflow_id: str, dbos: DBOSClient, offset: int = 0) -> list[str]:
    return [brief(e) async for e in stream_events(workflow_id, offset=offset, client=dbos)]


STREAMED = [
    'tool_call record {"n": 1}',
    "tool_result recorded 1",
    'tool_call approve {"item": "x"}',
    "pending appr-x",
    "tool_result approved x",
    "text all done",
    "usage",
    "done all done",
]
"""The streamed run's events: each once, none from an attempt a kill cut short, no progress."""


@pytest.mark.parametrize(
    ("database", "streamed"),
    [("sqlite", False), ("postgres", True)],
    ids=["sqlite", "postgres-streamed"],
)
async def test_a_run_killed_at_each_step_boundary_completes_with_each_step_once(
    llm: FakeLLM,
    tmp_path: Path,
    make_system_db: Callable[[str], str],
    database: str,
    streamed: bool,
) -> None:
    db_url = make_system_db(database)
    effects = tmp_path / "effects"
    effects.mkdir()
    record_log, approve_log = effects / "record.log", effects / "approve.log"
    llm.push(
        Reply(hang=True),  # 1: killed in flight
        tools(call("record", {"n": 1})),  # 1 again: the record call
        Reply(hang=True),  # 2: killed in flight, after the tool completed
        tools(call("approve", {"item": "x"})),  # 2 again: suspends
        text("all done"),  # 3
    )

    # Every process is started (and imports everything) at once; each launches DBOS only
    # when the one before it has been killed.
    start = ["start", "--stream"] if streamed else ["start"]
    first = Worker(db_url, llm, effects, *start)
    second = Worker(db_url, llm, effects, "resume", "--block-tool", "record")
    third, fourth, fifth = (Worker(db_url, llm, effects, "resume") for _ in range(3))
    dbos = DBOSClient(system_database_url=db_url)
    reading: asyncio.Task[list[str]] | None = None
    try:
        # 1. Killed during the first model call.
        first.go()
        await llm.until_requests(1, timeout=BOOT_S)
        if streamed:  # the run exists now: read its stream live, through every kill
            reading = asyncio.create_task(read_all("wf-kill", dbos))
        first.kill()

        # 2. Resumed: the model call is sent again; killed inside the tool it asked for.
        second.go()
        await wait_until(lambda: lines(record_log), timeout=BOOT_S)
        second.kill()
        assert len(llm.requests) == 2

        # 3. Resumed: the tool in flight runs again under the same step key; killed during the
        # second model call.
        third.go()
        await llm.until_requests(3, timeout=BOOT_S)
        third.kill()
        first_try, retry = lines(record_log)
        assert first_try == retry  # same n, same idempotency key
        assert first_try.split()[1].startswith("wf-kill/")

        # 4. Resumed: the completed tool is not called again; the run suspends. Killed while
        # it waits.
        fourth.go()
        asked = await wait_until(
            lambda: pending_request("wf-kill", client=dbos), timeout=BOOT_S, check_every=0.05
        )
        assert asked.id == "appr-x" and asked.kind == "approval"
        fourth.kill()
        assert lines(approve_log) == ["ask x"]

        # 5. Resumed; answered from this process, which never launched DBOS.
        fifth.go()
        await send_answer("wf-kill", Answer("appr-x", True, {"by": "test"}), client=dbos)
        summary = await fifth.result()
        if reading is not None:
            assert await asyncio.wait_for(reading, BOOT_S) == STREAMED
            # A reader that comes after the end reads the same events, from any offset.
            assert await read_all("wf-kill", dbos) == STREAMED
            assert await read_all("wf-kill", dbos, offset=5) == STREAMED[5:]
    finally:
        if reading is not None and not reading.done():
            reading.cancel()
        dbos.destroy()
        for worker in Worker.started:
            if worker.proc.poll() is None:
                worker.kill()
        Worker.started.clear()

    assert summary == {
        "text": "all done",
        "status": "done",
        "tools": [["record", "recorded 1"], ["approve", "approved x"]],
    }
    assert len(lines(record_log)) == 2  # the in-flight attempt and its retry, nothing after
    assert lines(approve_log) == ["ask x", 'done x {"by": "test"}']
    requests = llm.requests
    assert len(requests) == 5  # each completed model call was sent exactly once
    # The resumed calls sent what the killed ones had sent.
    assert requests[0].body["messages"] == requests[1].body["messages"]
    assert requests[2].body["messages"] == requests[3].body["messages"]
    assert "recorded 1" in json.dumps(requests[2].body["messages"])
