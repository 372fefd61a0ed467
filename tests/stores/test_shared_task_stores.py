"""A2A task stores on PostgreSQL and Redis: the `TaskStore` contract, with the memory store as
the oracle for `ListTasks` (filters, order, cursors), and their config strings."""

from __future__ import annotations

import itertools
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from support.db_servers import PostgresServer, RedisServer, free_port
from toolnexus.errors import StoreConfigError
from toolnexus.serve import (
    InMemoryTaskStore,
    PostgresTaskStore,
    RedisTaskStore,
    resolve_store,
)

STATES = ["TASK_STATE_WORKING", "TASK_STATE_COMPLETED", "TASK_STATE_INPUT_REQUIRED"]


@pytest.fixture(params=["postgres", "redis"])
async def shared(request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    if request.param == "postgres":
        server: PostgresServer = request.getfixturevalue("postgres")
        store: Any = PostgresTaskStore(server.database(f"tasks_{uuid.uuid4().hex[:8]}"))
    else:
        redis_server: RedisServer = request.getfixturevalue("redis_server")
        store = RedisTaskStore(redis_server.url, prefix=f"t{uuid.uuid4().hex[:8]}:")
    yield store
    await store.aclose()


def make_tasks() -> list[dict[str, Any]]:
    tasks = []
    for n in range(37):
        stamp = f"2026-12-01T10:{n % 7:02d}:{n % 5:02d}.000Z" if n % 9 else None
        task: dict[str, Any] = {
            "id": f"task-{n:03d}-é",
            "contextId": f"ctx-{n % 3}",
            "status": {"state": STATES[n % 3], **({"timestamp": stamp} if stamp else {})},
            "history": [{"role": "ROLE_USER", "parts": [{"text": f"hello {n} ✓"}]}],
            "artifacts": [],
        }
        if n % 4:  # the others have no owner: the unauthenticated identity's ("")
            task["owner"] = ["", "alice", "bob", "alice"][n % 4]
        tasks.append(task)
    return tasks


async def all_pages(store: Any, page_size: int, **filters: Any) -> tuple[list[str], int]:
    ids: list[str] = []
    token: str | None = None
    totals = set()
    while True:
        page, token, total = await store.list(page_size=page_size, page_token=token, **filters)
        totals.add(total)
        ids += [t["id"] for t in page]
        if not token:
            break
    assert len(totals) == 1
    return ids, totals.pop()


async def test_get_returns_what_was_saved_and_listing_matches_the_memory_store(shared):
    oracle = InMemoryTaskStore()
    tasks = make_tasks()
    for task in tasks:
        await shared.save(task)
        await oracle.save(task)
    assert await shared.get(tasks[5]["id"]) == tasks[5]
    assert await shared.get("missing") is None
    changed = {**tasks[5], "status": {"state": "TASK_STATE_CANCELED"}}
    await shared.save(changed)
    await oracle.save(changed)
    assert await shared.get(tasks[5]["id"]) == changed
    filters: list[dict[str, Any]] = [
        {},
        {"context_id": "ctx-1"},
        {"state": "completed"},
        {"state": "TASK_STATE_INPUT_REQUIRED", "context_id": "ctx-2"},
        {"updated_after": "2026-12-01T10:03:00Z"},
        {"owner": ""},
        {"owner": "alice"},
        {"owner": "bob", "state": "completed"},
        {"owner": "nobody"},
    ]
    for page_size, chosen in itertools.product([1, 7, 50], filters):
        assert await all_pages(shared, page_size, **chosen) == await all_pages(
            oracle, page_size, **chosen
        ), (page_size, chosen)
    with pytest.raises(ValueError, match="invalid page token"):
        await shared.list(page_token="%%%")
    alices, total = await all_pages(shared, 7, owner="alice")
    assert total == len(alices) == sum(t.get("owner") == "alice" for t in tasks) > 0
    unowned, _ = await all_pages(shared, 7, owner="")
    assert set(unowned) == {t["id"] for t in tasks if not t.get("owner")}


async def test_postgres_tasks_stored_before_owners_read_as_the_unauthenticated_identitys(
    postgres: PostgresServer,
):
    """Schema 1 had no owner column: opening the store adds it, the old rows owned by ""."""
    import psycopg

    url = postgres.database(f"tasks_{uuid.uuid4().hex[:8]}")
    old = {"id": "old-1", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}}
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute(
            "CREATE TABLE toolnexus_schema (component TEXT PRIMARY KEY, version INTEGER NOT NULL)"
        )
        await conn.execute("INSERT INTO toolnexus_schema VALUES ('tasks', 1)")
        await conn.execute(
            'CREATE TABLE toolnexus_tasks (id TEXT COLLATE "C" PRIMARY KEY,'
            ' context_id TEXT NOT NULL, state TEXT NOT NULL, stamp TEXT COLLATE "C" NOT NULL,'
            " updated TIMESTAMPTZ, task TEXT NOT NULL)"
        )
        await conn.execute(
            "INSERT INTO toolnexus_tasks VALUES ('old-1', 'c', 'completed', '', NULL, %s)",
            (json.dumps(old),),
        )
    store = PostgresTaskStore(url)
    try:
        assert [t["id"] for t in (await store.list(owner=""))[0]] == ["old-1"]
        assert (await store.list(owner="alice"))[0] == []
        await store.save({**old, "id": "new-1", "owner": "alice"})
        assert [t["id"] for t in (await store.list(owner="alice"))[0]] == ["new-1"]
        assert await store.get("old-1") == old
    finally:
        await store.aclose()


async def test_task_stores_from_config_strings(postgres, redis_server):
    assert isinstance(resolve_store(postgres.url), PostgresTaskStore)
    assert isinstance(resolve_store(redis_server.url), RedisTaskStore)
    assert isinstance(resolve_store("memory"), InMemoryTaskStore)
    port = free_port()
    for url in (f"postgres://u:hush-31@127.0.0.1:{port}/db", f"redis://u:hush-31@127.0.0.1:{port}"):
        store: Any = resolve_store(url)
        with pytest.raises(StoreConfigError) as caught:
            await store.get("x")
        assert f"u:***@127.0.0.1:{port}" in str(caught.value)
        assert "hush-31" not in str(caught.value)
        await store.aclose()
