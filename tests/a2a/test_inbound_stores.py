"""Task stores behind the served agent: restarts on a file store, pluggable stores, failures."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from support.a2a_agent import message, rpc, serve_agent
from support.polling import wait_until


async def test_file_store_restart_keeps_tasks_byte_identical(agent_toolkit, seen, http, tmp_path):
    store = f"file:{tmp_path}"
    handle = await serve_agent(agent_toolkit, seen, store=store)
    ids: dict[str, str] = {}
    try:
        ids["completed"] = (
            await rpc(http, handle.url, "SendMessage", {"message": message("keep me")})
        )["result"]["task"]["id"]
        ids["input"] = (await rpc(http, handle.url, "SendMessage", {"message": message("ask")}))[
            "result"
        ]["task"]["id"]
        asked = (await rpc(http, handle.url, "SendMessage", {"message": message("ask")}))["result"][
            "task"
        ]["id"]
        await rpc(http, handle.url, "CancelTask", {"id": asked})
        ids["canceled"] = asked
        before = {
            (key, method): (
                await http.post(
                    handle.url + "/",
                    json={"jsonrpc": "2.0", "id": 1, "method": method, "params": {"id": task_id}},
                    headers=headers,
                )
            ).content
            for key, task_id in ids.items()
            for method, headers in (("GetTask", {"A2A-Version": "1.0"}), ("tasks/get", {}))
        }
    finally:
        await handle.stop()
    again = await serve_agent(agent_toolkit, seen, store=store)
    try:
        for (key, method), body in before.items():
            headers = {"A2A-Version": "1.0"} if method == "GetTask" else {}
            after = await http.post(
                again.url + "/",
                json={"jsonrpc": "2.0", "id": 1, "method": method, "params": {"id": ids[key]}},
                headers=headers,
            )
            assert after.content == body, key
        listed = await rpc(http, again.url, "ListTasks", {})
        assert {t["id"] for t in listed["result"]["tasks"]} >= set(ids.values())
        resumed = await rpc(
            http, again.url, "SendMessage", {"message": message("green", taskId=ids["input"])}
        )
        task = resumed["result"]["task"]
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
        assert [m["role"] for m in task["history"]] == ["ROLE_USER", "ROLE_AGENT", "ROLE_USER"]
    finally:
        await again.stop()


async def test_tasks_left_running_read_failed_and_old_files_load(
    agent_toolkit, seen, http, tmp_path
):
    (tmp_path / "crashed.json").write_text(
        json.dumps(
            {
                "id": "crashed",
                "contextId": "c",
                "status": {"state": "TASK_STATE_WORKING", "timestamp": "2026-01-01T00:00:00.000Z"},
            }
        )
    )
    # a file of the previous contract: 0.3 shapes, no contextId
    (tmp_path / "old.json").write_text(
        json.dumps(
            {
                "id": "old",
                "status": {"state": "completed"},
                "artifacts": [
                    {"artifactId": "a", "parts": [{"kind": "text", "text": "old answer"}]}
                ],
            }
        )
    )
    handle = await serve_agent(agent_toolkit, seen, store=f"file:{tmp_path}")
    try:
        crashed = (await rpc(http, handle.url, "GetTask", {"id": "crashed"}))["result"]
        assert crashed["status"]["state"] == "TASK_STATE_FAILED"
        assert crashed["status"]["message"]["parts"] == [
            {"text": "the server restarted before the task finished"}
        ]
        assert (
            json.loads((tmp_path / "crashed.json").read_text())["status"]["state"]
            == "TASK_STATE_FAILED"
        )
        old = (await rpc(http, handle.url, "tasks/get", {"id": "old"}, version=None))["result"]
        assert old["contextId"] == "old" and old["status"]["state"] == "completed"
        assert old["artifacts"][0]["parts"] == [{"kind": "text", "text": "old answer"}]
    finally:
        await handle.stop()


async def test_a_killed_server_leaves_a_task_that_reads_failed(agent_toolkit, seen, http, tmp_path):
    import asyncio
    import os
    import signal

    script = tmp_path / "serve.py"
    script.write_text(
        "import asyncio, sys\n"
        "from toolnexus.client import create_in_process_client\n"
        "from toolnexus.toolkit import create_toolkit\n"
        "async def model(request):\n"
        "    await asyncio.Event().wait()\n"
        "async def main():\n"
        "    tk = await create_toolkit(builtins=False)\n"
        "    client = create_in_process_client(model='m', generate=model)\n"
        f"    a2a = {{'store': 'file:{tmp_path / 'tasks'}'}}\n"
        "    h = await tk.serve('127.0.0.1:0', client=client, a2a=a2a)\n"
        "    print(h.url, flush=True)\n"
        "    await asyncio.Event().wait()\n"
        "asyncio.run(main())\n"
    )
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(script), stdout=asyncio.subprocess.PIPE
    )
    try:
        assert proc.stdout is not None
        url = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode().strip()
        sent = await rpc(
            http,
            url,
            "SendMessage",
            {"message": message("never ends"), "configuration": {"returnImmediately": True}},
        )
        task_id = sent["result"]["task"]["id"]

        async def working() -> bool:
            got = await rpc(http, url, "GetTask", {"id": task_id})
            return got["result"]["status"]["state"] == "TASK_STATE_WORKING"

        await wait_until(working)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        await proc.wait()
    handle = await serve_agent(agent_toolkit, seen, store=f"file:{tmp_path / 'tasks'}")
    try:
        got = (await rpc(http, handle.url, "GetTask", {"id": task_id}))["result"]
        assert got["status"]["state"] == "TASK_STATE_FAILED"
    finally:
        await handle.stop()


async def test_stop_saves_running_tasks_canceled(agent_toolkit, seen, http, tmp_path):
    seen.release.clear()
    handle = await serve_agent(agent_toolkit, seen, store=f"file:{tmp_path}")
    sent = await rpc(
        http,
        handle.url,
        "SendMessage",
        {"message": message("hold this"), "configuration": {"returnImmediately": True}},
    )
    task_id = sent["result"]["task"]["id"]
    await wait_until(lambda: seen.active > 0)
    await handle.stop()
    seen.release.set()
    saved = json.loads((tmp_path / f"{task_id}.json").read_text())
    assert saved["status"]["state"] == "TASK_STATE_CANCELED"
    assert saved["status"]["message"]["parts"] == [
        {"text": "the server stopped before the task finished"}
    ]


class DictStore:
    """A pluggable store without `list`, as a user might write one over SQL or Redis."""

    def __init__(self) -> None:
        self.rows: dict[str, str] = {}
        self.broken = False

    async def get(self, id: str) -> dict[str, Any] | None:
        if self.broken:
            raise RuntimeError("store is down")
        row = self.rows.get(id)
        return json.loads(row) if row is not None else None

    async def save(self, task: dict[str, Any]) -> None:
        self.rows[task["id"]] = json.dumps(task, ensure_ascii=False)


async def test_pluggable_store_without_list_and_failing_get(agent_toolkit, seen, http):
    store = DictStore()
    handle = await serve_agent(agent_toolkit, seen, store=store)
    try:
        sent = await rpc(http, handle.url, "SendMessage", {"message": message("héllo ✓")})
        task = sent["result"]["task"]
        assert json.loads(store.rows[task["id"]])["history"][0]["parts"] == [{"text": "héllo ✓"}]
        listed = await rpc(http, handle.url, "ListTasks", {})
        assert listed["error"]["code"] == -32004
        assert listed["error"]["message"] == "ListTasks is not supported by this task store"
        store.broken = True
        failed = await rpc(http, handle.url, "GetTask", {"id": task["id"]})
        assert failed["error"]["code"] == -32603
        assert failed["error"]["message"] == "Internal error: store is down"
    finally:
        await handle.stop()


async def test_unknown_store_names_are_refused(agent_toolkit, seen):
    with pytest.raises(ValueError, match='Unknown A2A store: "mongodb://x"'):
        await serve_agent(agent_toolkit, seen, store="mongodb://x")


def test_stored_tasks_stay_in_the_10_form(tmp_path: Path):
    from toolnexus.a2a._wire import read_task, render_task

    old = {
        "id": "t",
        "status": {
            "state": "input-required",
            "message": {"role": "agent", "parts": [{"kind": "text", "text": "?"}]},
        },
    }
    task = read_task(old)
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert task["status"]["message"]["role"] == "ROLE_AGENT"
    assert render_task(task, "0.3")["status"]["state"] == "input-required"
