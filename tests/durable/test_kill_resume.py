"""A durable run killed with SIGKILL at every kind of step boundary resumes where it stopped.

One run goes through five processes on one DBOS system database (a SQLite file, then
PostgreSQL on a real server); each is `kill -9`ed at a different point and the next one (which
only launches DBOS) resumes the run:

1. during the first model call (in flight: it is sent again, at least once);
2. during a tool call (in flight: it runs again, with the same idempotency key);
3. during the second model call, after that tool completed (the tool never runs again);
4. while suspended on an approval (the suspended tool is not called again);
5. answered from this process (another process than the run's), the run finishes.

Side effects are counted in files; the fake LLM's request log shows what was re-sent.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from dbos import DBOSClient

from support.client_helpers import base_url
from support.fake_llm import FakeLLM, Reply, call, text, tools
from support.polling import wait_until
from toolnexus import Answer
from toolnexus.durable import pending_request, send_answer

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


async def test_a_run_killed_at_each_step_boundary_completes_with_each_step_once(
    llm: FakeLLM, tmp_path: Path, system_db_url: str
) -> None:
    db_url = system_db_url
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

    # Each process is started while the one before still runs, and launched after its kill.
    # 1. Killed during the first model call.
    first = Worker(db_url, llm, effects, "start").go()
    second = Worker(db_url, llm, effects, "resume", "--block-tool", "record")
    await llm.until_requests(1, timeout=BOOT_S)
    first.kill()

    # 2. Resumed: the model call is sent again; killed inside the tool it asked for.
    second.go()
    third = Worker(db_url, llm, effects, "resume")
    await wait_until(lambda: lines(record_log), timeout=BOOT_S)
    second.kill()
    assert len(llm.requests) == 2

    # 3. Resumed: the tool in flight runs again under the same step key; killed during the
    # second model call.
    third.go()
    fourth = Worker(db_url, llm, effects, "resume")
    await llm.until_requests(3, timeout=BOOT_S)
    third.kill()
    first_try, retry = lines(record_log)
    assert first_try == retry  # same n, same idempotency key
    assert first_try.split()[1].startswith("wf-kill/")

    # 4. Resumed: the completed tool is not called again; the run suspends. Killed while it waits.
    fourth.go()
    fifth = Worker(db_url, llm, effects, "resume")
    dbos = DBOSClient(system_database_url=db_url)
    try:
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
    finally:
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
