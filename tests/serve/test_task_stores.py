"""Task stores: the bounded in-memory store, the atomic file store and `resolve_store`."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolnexus.serve import FileTaskStore, InMemoryTaskStore, TaskStore, resolve_store


def task(id: str, state: str = "working", **extra: Any) -> dict[str, Any]:
    return {"id": id, "status": {"state": state}, **extra}


async def test_memory_store_round_trip_copies():
    store = InMemoryTaskStore()
    original = task("a", artifacts=[{"parts": []}])
    await store.save(original)
    original["status"]["state"] = "mutated"
    got = await store.get("a")
    assert got == task("a", artifacts=[{"parts": []}])
    assert got is not None
    got["status"]["state"] = "changed again"
    assert (await store.get("a")) == task("a", artifacts=[{"parts": []}])
    assert await store.get("missing") is None


def test_memory_store_default_bound():
    assert InMemoryTaskStore().max_tasks == 10_000
    with pytest.raises(ValueError, match="at least 1"):
        InMemoryTaskStore(max_tasks=0)


async def test_memory_store_evicts_oldest_finished_first():
    store = InMemoryTaskStore(max_tasks=3)
    await store.save(task("w1"))
    await store.save(task("done1", "completed"))
    await store.save(task("w2", "input-required"))
    await store.save(task("done2", "failed"))  # over the cap: done1 goes, not w1
    assert await store.get("done1") is None
    assert [await store.get(i) is not None for i in ["w1", "w2", "done2"]] == [True] * 3
    await store.save(task("w3"))  # done2 is the only finished one left
    assert await store.get("done2") is None
    await store.save(task("w4"))  # nothing finished: the oldest task goes
    assert await store.get("w1") is None
    assert len(store) == 3


async def test_memory_store_counts_updates_not_versions():
    store = InMemoryTaskStore(max_tasks=2)
    for state in ["submitted", "working", "completed"]:
        await store.save(task("a", state))
    await store.save(task("b"))
    assert len(store) == 2
    assert (await store.get("a")) == task("a", "completed")


@settings(
    max_examples=40,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    st.lists(
        st.tuples(st.integers(0, 12), st.sampled_from(["working", "completed", "input-required"])),
        max_size=60,
    )
)
def test_memory_store_stays_bounded_and_keeps_latest(ops):
    async def run() -> None:
        store = InMemoryTaskStore(max_tasks=5)
        latest: dict[str, str] = {}
        for number, state in ops:
            await store.save(task(str(number), state))
            latest[str(number)] = state
            assert len(store) <= 5
        for id, state in latest.items():
            got = await store.get(id)
            assert got is None or got["status"]["state"] == state

    asyncio.run(run())


async def test_file_store_round_trip_and_layout(tmp_path: Path):
    store = FileTaskStore(tmp_path / "nested" / "dir")
    assert (tmp_path / "nested" / "dir").is_dir()
    await store.save(task("a/b:c", "completed", contextId="ctx"))
    assert (tmp_path / "nested" / "dir" / "a_b_c.json").read_text() == (
        '{"id":"a/b:c","status":{"state":"completed"},"contextId":"ctx"}'
    )
    assert await store.get("a/b:c") == task("a/b:c", "completed", contextId="ctx")
    assert await store.get("missing") is None
    (tmp_path / "nested" / "dir" / "bad.json").write_text("{half")
    assert await store.get("bad") is None
    assert sorted(os.listdir(tmp_path / "nested" / "dir")) == ["a_b_c.json", "bad.json"]


async def test_file_store_readers_never_see_half_a_task(tmp_path: Path):
    store = FileTaskStore(tmp_path)
    big = "x" * 200_000
    await store.save(task("t", "working", note=big))
    seen: list[dict[str, Any] | None] = []

    async def writer() -> None:
        for i in range(30):
            await store.save(task("t", "working" if i % 2 else "completed", note=big))

    async def reader() -> None:
        for _ in range(60):
            seen.append(await store.get("t"))

    await asyncio.gather(writer(), reader(), reader())
    assert len(seen) == 120
    assert all(s is not None and s["note"] == big for s in seen)
    assert [p.name for p in tmp_path.iterdir()] == ["t.json"]  # no temp files left


def test_resolve_store():
    assert isinstance(resolve_store(None), InMemoryTaskStore)
    assert isinstance(resolve_store("memory"), InMemoryTaskStore)
    custom = InMemoryTaskStore(max_tasks=2)
    assert resolve_store(custom) is custom
    assert isinstance(custom, TaskStore)
    for bad in ["mongodb://x", "file:", "Memory"]:
        with pytest.raises(ValueError) as caught:
            resolve_store(bad)
        assert str(caught.value) == (
            f'Unknown A2A store: "{bad}" '
            '(expected "memory", "file:<dir>", postgres://… or redis://…)'
        )


def test_resolve_file_store(tmp_path: Path):
    store = resolve_store(f"file:{tmp_path / 'tasks'}")
    assert isinstance(store, FileTaskStore)
    assert (tmp_path / "tasks").is_dir()


def stamped(id: str, stamp: str, state: str = "TASK_STATE_COMPLETED", ctx: str = "c1") -> dict:
    return {"id": id, "contextId": ctx, "status": {"state": state, "timestamp": stamp}}


@pytest.fixture(params=["memory", "file"])
def listing_store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    return InMemoryTaskStore() if request.param == "memory" else FileTaskStore(tmp_path)


async def test_list_orders_newest_first_and_pages_by_cursor(listing_store: Any):
    stamps = [f"2026-01-01T00:00:0{i}.000Z" for i in range(5)]
    for i, stamp in enumerate(stamps):
        await listing_store.save(stamped(f"t{i}", stamp))
    await listing_store.save(stamped("tie", stamps[4]))  # same time as t4: ids descending
    seen: list[str] = []
    token: str | None = None
    pages = 0
    while True:
        page, token, total = await listing_store.list(page_size=2, page_token=token)
        pages += 1
        assert total == 6
        seen.extend(t["id"] for t in page)
        if not token:
            break
    assert pages == 3
    assert seen == ["tie", "t4", "t3", "t2", "t1", "t0"]


async def test_list_cursor_survives_changes_and_filters(listing_store: Any):
    for i in range(4):
        await listing_store.save(stamped(f"t{i}", f"2026-01-01T00:00:0{i}.000Z"))
    page, token, _ = await listing_store.list(page_size=2)
    assert [t["id"] for t in page] == ["t3", "t2"]
    await listing_store.save(stamped("new", "2026-01-02T00:00:00.000Z"))
    page, token, total = await listing_store.list(page_size=2, page_token=token)
    assert [t["id"] for t in page] == ["t1", "t0"] and token == "" and total == 5
    await listing_store.save(stamped("w", "2026-01-03T00:00:00.000Z", "working", ctx="c2"))
    page, _, total = await listing_store.list(state="working")
    assert [t["id"] for t in page] == ["w"] and total == 1
    page, _, total = await listing_store.list(context_id="c2")
    assert total == 1
    page, _, total = await listing_store.list(updated_after="2026-01-01T00:00:02.000Z")
    assert [t["id"] for t in page] == ["w", "new", "t3"]
    with pytest.raises(ValueError):
        await listing_store.list(page_token="not a token!")


async def test_list_by_owner_counts_a_task_without_one_as_the_unauthenticated_identitys(
    listing_store: Any,
):
    await listing_store.save({**stamped("a", "2026-01-01T00:00:01.000Z"), "owner": "alice"})
    await listing_store.save({**stamped("b", "2026-01-01T00:00:02.000Z"), "owner": "bob"})
    await listing_store.save(stamped("legacy", "2026-01-01T00:00:03.000Z"))
    for owner, ids in [("alice", ["a"]), ("bob", ["b"]), ("", ["legacy"]), ("eve", [])]:
        page, _, total = await listing_store.list(owner=owner)
        assert ([t["id"] for t in page], total) == (ids, len(ids))
    page, _, total = await listing_store.list()
    assert total == 3
    assert (await listing_store.get("a"))["owner"] == "alice"
