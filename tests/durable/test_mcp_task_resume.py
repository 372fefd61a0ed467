"""A durable run whose tool call an MCP server answered with a task (the Tasks extension)
survives `kill -9` of its process: the process that recovers the run resumes polling the same
task and never calls the tool a second time."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from support.client_helpers import base_url
from support.fake_llm import FakeLLM, call, text, tools
from support.mcp_servers import ThreadedHttpServer
from support.mcp_servers.tasks_server import app
from support.polling import wait_until
from toolnexus.mcp_source import load_mcp_with_context

WORKER = Path(__file__).parent / "mcp_task_worker.py"
BOOT_S = 60.0  # a process importing DBOS and toolnexus on a loaded machine


class Worker:
    def __init__(self, db_url: str, llm: FakeLLM, mcp_url: str, mode: str) -> None:
        args = [db_url, base_url(llm, "openai"), "wf-mcp-task", mcp_url, mode]
        self.proc = subprocess.Popen(
            [sys.executable, str(WORKER), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def go(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def result(self) -> dict[str, Any]:
        out, err = self.proc.communicate(timeout=BOOT_S)
        assert self.proc.returncode == 0, err[-4000:]
        summary: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
        return summary


async def test_a_run_killed_while_its_mcp_task_runs_resumes_the_same_task(
    llm: FakeLLM, tmp_path: Path, make_system_db: Any
) -> None:
    gates = tmp_path / "gates"
    gates.mkdir()
    upstream = ThreadedHttpServer(app(gates))
    mcp_url = upstream.url()
    observer = await load_mcp_with_context({"t": {"url": mcp_url}})
    counts_tool = next(t for t in observer.tools if t.name == "t_calls")

    async def counts() -> dict[str, Any]:
        found: dict[str, Any] = json.loads((await counts_tool.execute()).output)
        return found

    db_url = make_system_db("sqlite")
    llm.push(tools(call("t_gate", {"name": "g1"})), text("all done"))
    first = Worker(db_url, llm, mcp_url, "start")
    second = Worker(db_url, llm, mcp_url, "resume")
    try:
        first.go()
        # the task was created and is being polled (its reference is recorded by then)
        await wait_until(lambda: _polled(counts), timeout=BOOT_S, check_every=0.05)
        first.proc.kill()  # SIGKILL, mid-task
        first.proc.wait(timeout=BOOT_S)
        (gates / "g1").touch()
        second.go()
        summary = second.result()
        assert summary == {"text": "all done", "tools": [["t_gate", "opened g1"]]}
        assert (await counts())["calls"] == {"gate": 1}  # the tool was called once
    finally:
        for worker in (first, second):
            if worker.proc.poll() is None:
                worker.proc.kill()
                worker.proc.wait(timeout=BOOT_S)
        await observer.close()
        upstream.stop()


async def _polled(counts: Any) -> bool:
    found = await counts()
    return bool(found["calls"].get("gate") and found["polls"] >= 1)
