"""Shared task stores when the server goes away: a served agent answers store errors (naming
the store, never its password) and loses no acknowledged task; failing heartbeats are logged
once; `toolnexus serve --store` refuses to start on an unreachable server."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import httpx2
import pytest

from support.a2a_agent import message, rpc
from support.cli_runner import one_line_error, run_main
from support.db_servers import free_port
from support.polling import wait_until
from toolnexus.client import create_in_process_client
from toolnexus.errors import StoreError
from toolnexus.serve import PostgresTaskStore, RedisTaskStore
from toolnexus.toolkit import create_toolkit


def task_store(kind: str, url: str, **options: Any) -> Any:
    return (
        PostgresTaskStore(url, **options) if kind == "postgres" else RedisTaskStore(url, **options)
    )


async def answer(request: dict[str, Any]) -> dict[str, Any]:
    return {"content": "re:" + str(request["messages"][-1]["content"])}


def result_state(reply: dict[str, Any]) -> str:
    return str(reply["result"]["task"]["status"]["state"])


async def test_a_task_store_lost_mid_run_is_an_error_answer_and_loses_no_acknowledged_task(
    fragile: Any,
) -> None:
    kind, server = fragile
    store = task_store(kind, server.url, lease_ms=600)
    toolkit = await create_toolkit(builtins=False)
    client = create_in_process_client(model="m", generate=answer)
    handle = await toolkit.serve("127.0.0.1:0", client=client, a2a={"store": store})
    try:
        async with httpx2.AsyncClient(timeout=30) as http:
            first = await rpc(http, handle.url, "SendMessage", {"message": message("one")})
            assert result_state(first) == "TASK_STATE_COMPLETED"
            await asyncio.to_thread(server.stop)
            lost = await rpc(http, handle.url, "SendMessage", {"message": message("two")})
            error = lost["error"]["message"]
            assert error.startswith("Internal error: ") and store.name in error
            assert "saving task" in error and "Secret" not in error
            ready = await http.get(handle.url + "/readyz")
            assert ready.status_code == 503 and "Secret" not in ready.text
            await asyncio.to_thread(server.start)
            again = await rpc(http, handle.url, "SendMessage", {"message": message("three")})
            assert result_state(again) == "TASK_STATE_COMPLETED"
            kept = await rpc(http, handle.url, "GetTask", {"id": first["result"]["task"]["id"]})
            assert kept["result"] == first["result"]["task"]
            assert (await http.get(handle.url + "/readyz")).status_code == 200
    finally:
        if server.proc is None:
            server.start()
        await handle.stop()
        await store.aclose()


async def test_failing_heartbeats_are_one_warning_without_the_password(
    fragile: Any, caplog: pytest.LogCaptureFixture
) -> None:
    kind, server = fragile
    store = task_store(kind, server.url, lease_ms=300)
    caplog.set_level(logging.INFO, logger="toolnexus")

    def said(text: str) -> list[logging.LogRecord]:
        return [r for r in caplog.records if text in r.getMessage()]

    try:
        working = {"id": "beating", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}
        await store.save(working)
        await asyncio.to_thread(server.stop)
        await wait_until(lambda: said("renewing the claim"), timeout=15)
        await asyncio.to_thread(server.start)
        await wait_until(lambda: said(f"{store.name}: working again"), timeout=30)
        [warning] = said("renewing the claim")
        assert warning.levelno == logging.WARNING
        text = warning.getMessage()
        assert text.startswith(f"[toolnexus] {store.name}: renewing the claim on 1 running task")
        assert "***" in store.name and "Secret" not in text
        await store.save({**working, "status": {"state": "TASK_STATE_COMPLETED"}})
    finally:
        if server.proc is None:
            server.start()
        await store.aclose()


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (
            "postgresql://me:hush-58@127.0.0.1:{port}/db",
            "PostgreSQL task store postgresql://me:***@",
        ),
        ("redis://me:hush-58@127.0.0.1:{port}/0", "Redis task store redis://me:***@"),
    ],
)
def test_serve_refuses_to_start_on_an_unreachable_shared_store(
    capsys: pytest.CaptureFixture[str], url: str, shown: str
) -> None:
    port = free_port()
    done = run_main(
        capsys,
        "serve", "--a2a", "--store", url.format(port=port), "--port", "0",
        "--base-url", "http://127.0.0.1:9/v1", "--style", "openai", "--model", "m",
        "--api-key", "k-unused",
    )  # fmt: skip
    line = one_line_error(done)
    assert line.startswith(f"toolnexus: error: cannot reach {shown}127.0.0.1:{port}")
    assert "hush-58" not in done.stderr + done.stdout


async def test_a_watch_survives_a_store_restart(fragile: Any) -> None:
    kind, server = fragile
    here, there = task_store(kind, server.url), task_store(kind, server.url)
    task = {"id": "watched", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}
    try:
        async with here.watch("watched") as changes:
            await there.save(task)
            assert await changes.wait(15)
            await there.save({**task, "history": []})
            assert await changes.wait(15)
            await asyncio.to_thread(server.stop)
            await asyncio.to_thread(server.start)

            async def saved() -> bool:
                try:
                    await there.save({**task, "status": {"state": "TASK_STATE_COMPLETED"}})
                except StoreError:
                    return False
                return True

            await wait_until(saved, timeout=30, check_every=0.1)
            # announced, or (if it came while the listener reconnected) flagged as maybe missed
            assert await changes.wait(15)
            assert (await here.get("watched") or {})["status"]["state"] == "TASK_STATE_COMPLETED"
        own = task_store(kind, server.url)
        async with own.watch("mine") as mine:
            await mine.wait(0)  # the listener's first connection: "look once" for everyone
            await own.save({**task, "id": "mine"})
            assert not await mine.wait(0.3)  # a store instance does not announce to itself
        await own.aclose()
    finally:
        if server.proc is None:
            server.start()
        await here.aclose()
        await there.aclose()


def test_serve_never_echoes_the_password_of_a_keyword_connection_string(
    capsys: pytest.CaptureFixture[str],
) -> None:
    port = free_port()
    dsn = f"host=127.0.0.1 port={port} user=me password=hush-58 dbname=db"
    done = run_main(
        capsys,
        "serve", "--a2a", "--store", dsn, "--port", "0",
        "--base-url", "http://127.0.0.1:9/v1", "--style", "openai", "--model", "m",
        "--api-key", "k-unused",
    )  # fmt: skip
    line = one_line_error(done)
    assert line.startswith(
        f"toolnexus: error: cannot reach PostgreSQL task store host=127.0.0.1 port={port}"
        " user=me password=*** dbname=db"
    )
    assert "hush-58" not in done.stderr + done.stdout


async def test_a_keyword_connection_string_is_a_postgres_store_never_a_file(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolnexus.client import create_client
    from toolnexus.client.memory import PostgresConversationStore
    from toolnexus.errors import StoreConfigError

    monkeypatch.chdir(tmp_path)
    dsn = f"host=127.0.0.1 port={free_port()} user=me password=hush-58 dbname=db"
    client = create_client(
        base_url="http://127.0.0.1:9/v1", style="openai", model="m", api_key="k", store=dsn
    )
    try:
        store = client.conversation_store
        assert isinstance(store, PostgresConversationStore)
        assert "hush-58" not in store.name and "password=***" in store.name
        with pytest.raises(StoreError) as caught:  # nothing listens there
            await store.get("x")
        assert "hush-58" not in str(caught.value)
    finally:
        await client.aclose()
    for mangled in ("my password=hush-58", "postgres host=x password=hush-58", "a\nb"):
        with pytest.raises(StoreConfigError) as refused:
            create_client(
                base_url="http://127.0.0.1:9/v1",
                style="openai",
                model="m",
                api_key="k",
                store=mangled,
            )
        assert "hush-58" not in str(refused.value)
        assert "unknown conversation store" in str(refused.value)
    assert list(tmp_path.iterdir()) == []  # no SQLite file named after any of them
