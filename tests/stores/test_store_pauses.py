"""Shared stores whose server stops answering (SIGSTOP: connections are accepted by the kernel,
nothing is answered): every call ends by the store's timeout or the run's deadline with an
error naming the store (never its password), the served agent keeps answering other requests
meanwhile, and the store works again once the server does.

The bounds asserted are hang guards (the timeout plus a generous margin), not speed figures.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx2
import pytest

from support.a2a_agent import message, rpc
from support.db_servers import PostgresServer, RedisServer
from support.polling import wait_until
from toolnexus.client import create_in_process_client
from toolnexus.client.memory import PostgresConversationStore, RedisConversationStore
from toolnexus.errors import RunTimeout, StoreError
from toolnexus.serve import PostgresTaskStore, RedisTaskStore
from toolnexus.toolkit import create_toolkit

TIMEOUT_MS = 1000
MARGIN_S = 5.0  # the hang guard: far above the timeout, far below what a hang takes
SECRETS = ("pg-Secret-7781", "redis-Secret-5512")


def within(started: float, bound_s: float) -> None:
    assert time.monotonic() - started < bound_s + MARGIN_S


def names_the_store(error: str, store: Any) -> None:
    assert store.name in error and "***" in store.name
    assert not any(secret in error for secret in SECRETS)


async def test_a_paused_task_store_answers_get_task_with_a_store_error_in_time(
    fragile: tuple[str, PostgresServer | RedisServer],
) -> None:
    kind, server = fragile
    store = (PostgresTaskStore if kind == "postgres" else RedisTaskStore)(
        server.url, timeout_ms=TIMEOUT_MS
    )
    toolkit = await create_toolkit(builtins=False)

    async def answer(request: dict[str, Any]) -> dict[str, Any]:
        return {"content": "ok"}

    client = create_in_process_client(model="m", generate=answer)
    handle = await toolkit.serve("127.0.0.1:0", client=client, a2a={"store": store})
    try:
        async with httpx2.AsyncClient(timeout=30) as http:
            sent = await rpc(http, handle.url, "SendMessage", {"message": message("one")})
            task_id = sent["result"]["task"]["id"]
            with server.paused():
                started = time.monotonic()
                asked = asyncio.ensure_future(rpc(http, handle.url, "GetTask", {"id": task_id}))
                card = await http.get(handle.url + "/.well-known/agent-card.json")
                assert card.status_code == 200  # served meanwhile
                answered = await asked
                within(started, TIMEOUT_MS / 1000)
            error = answered["error"]["message"]
            assert f"reading task {task_id!r} failed" in error
            names_the_store(error, store)
            again = await rpc(http, handle.url, "GetTask", {"id": task_id})
            assert again["result"]["id"] == task_id
    finally:
        await handle.stop()
        await store.aclose()


async def test_a_paused_conversation_store_fails_reads_and_saves_in_time(
    fragile: tuple[str, PostgresServer | RedisServer],
) -> None:
    kind, server = fragile
    store = (PostgresConversationStore if kind == "postgres" else RedisConversationStore)(
        server.url, timeout_ms=TIMEOUT_MS
    )
    said = [{"role": "user", "content": "hi"}]
    try:
        await store.save("paused", said)
        with server.paused():
            for action, work in (
                ("reading", store.get("paused")),
                ("saving", store.save("paused", said)),  # may land when the server resumes
            ):
                started = time.monotonic()
                with pytest.raises(StoreError) as caught:
                    await work
                within(started, TIMEOUT_MS / 1000)
                assert f"{action} conversation 'paused' failed" in str(caught.value)
                names_the_store(str(caught.value), store)
        # the connections that timed out were dropped: the next call finds a working one
        assert await store.get("paused") == said
    finally:
        await store.aclose()


async def test_a_run_on_a_store_paused_mid_run_ends_by_its_deadline(
    fragile: tuple[str, PostgresServer | RedisServer],
) -> None:
    kind, server = fragile
    # The store would wait 30 s; the run's deadline is 1 s.
    store = (PostgresConversationStore if kind == "postgres" else RedisConversationStore)(
        server.url, timeout_ms=30_000
    )
    pausing: list[Any] = []

    async def answer(request: dict[str, Any]) -> dict[str, Any]:
        if request["messages"][-1]["content"] == "pause":
            pausing.append(server.paused())
            pausing[0].__enter__()
        return {"content": "ok"}

    client = create_in_process_client(
        model="m", generate=answer, store=store, timeout_ms=TIMEOUT_MS
    )
    toolkit = await create_toolkit(builtins=False)
    try:
        await client.ask("hi", toolkit, id="deadline")
        started = time.monotonic()
        with pytest.raises(RunTimeout):
            await client.ask("pause", toolkit, id="deadline")  # the save finds it paused
        within(started, TIMEOUT_MS / 1000)
    finally:
        if pausing:
            pausing[0].__exit__(None, None, None)
        await client.aclose()
        await store.aclose()


async def test_a_watch_notices_a_paused_store_and_follows_it_back(
    fragile: tuple[str, PostgresServer | RedisServer],
) -> None:
    # A listener whose server stops answering says so (`listening` turns false, so watchers
    # know announcements may be lost) instead of waiting unnoticed, and listens again after.
    kind, server = fragile
    kinds = PostgresTaskStore if kind == "postgres" else RedisTaskStore
    here, there = kinds(server.url, timeout_ms=TIMEOUT_MS), kinds(server.url)
    # an id of its own: the server outlives the test, and the other tests' tasks stay on it
    task = {"id": "paused-watch", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}
    try:
        async with here.watch("paused-watch") as changes:
            assert here.listening
            with server.paused():
                started = time.monotonic()
                await wait_until(lambda: not here.listening, timeout=2 * TIMEOUT_MS / 1000 + 5)
                within(started, 2 * TIMEOUT_MS / 1000)
            await wait_until(lambda: here.listening, timeout=15)
            await changes.wait(0)  # "look again" after the reconnection
            await there.save(task)
            assert await changes.wait(15)
    finally:
        await here.aclose()
        await there.aclose()
