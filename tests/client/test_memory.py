"""Conversation memory: both stores, SQLite durability and crash safety, and `KeyedLock`."""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import sys
import time
from pathlib import Path

import pytest

from support.sqlite_saver import IDS, transcript
from toolnexus.client.memory import (
    ConversationStore,
    InMemoryConversationStore,
    KeyedLock,
    SQLiteConversationStore,
    StoreConfigError,
    StoreError,
)

SAVER = Path(__file__).parent.parent / "support" / "sqlite_saver.py"


def sample() -> list[dict]:
    return [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "add", "input": {"a": [1, 2]}}],
        },
    ]


# -- the protocol -------------------------------------------------------------------------------


def test_both_stores_satisfy_the_protocol(tmp_path: Path):
    assert isinstance(InMemoryConversationStore(), ConversationStore)
    store = SQLiteConversationStore(tmp_path / "c.db")
    assert isinstance(store, ConversationStore)
    store.close()

    class OnlyGet:
        async def get(self, id: str) -> None:
            return None

    assert not isinstance(OnlyGet(), ConversationStore)


# -- both stores ---------------------------------------------------------------------------------


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path):
    if request.param == "memory":
        yield InMemoryConversationStore()
    else:
        s = SQLiteConversationStore(tmp_path / "sub" / "conversations.db")
        yield s
        await s.aclose()


async def test_unknown_id_is_none_and_empty_transcript_is_kept(store):
    assert await store.get("nope") is None
    await store.save("empty", [])
    assert await store.get("empty") == []


async def test_save_replaces_and_ids_are_independent(store):
    await store.save("a", sample())
    await store.save("b", [{"role": "user", "content": "other"}])
    await store.save("a", [{"role": "user", "content": "second"}])
    assert await store.get("a") == [{"role": "user", "content": "second"}]
    assert await store.get("b") == [{"role": "user", "content": "other"}]
    await store.delete("a")
    assert await store.get("a") is None
    await store.delete("a")  # deleting twice is fine


async def test_caller_mutations_never_reach_the_store(store):
    messages = sample()
    await store.save("c", messages)
    # Mutating what was saved: the list, a message dict and a nested block.
    messages.append({"role": "user", "content": "late"})
    messages[0]["content"] = "changed"
    messages[1]["content"][0]["input"]["a"].append(3)
    got = await store.get("c")
    assert got == sample()
    # Mutating what was returned.
    got.clear()
    again = await store.get("c")
    assert again == sample()
    again[1]["content"][0]["input"]["a"].append(99)
    again[0]["role"] = "system"
    assert await store.get("c") == sample()
    assert await store.get("c") is not await store.get("c")


async def test_concurrent_saves_on_different_ids(store):
    async def converse(i: int) -> None:
        for turn in range(5):
            history = await store.get(f"id-{i}") or []
            history.append({"role": "user", "content": f"{i}:{turn}"})
            await store.save(f"id-{i}", history)

    await asyncio.gather(*(converse(i) for i in range(40)))
    for i in range(40):
        assert await store.get(f"id-{i}") == [
            {"role": "user", "content": f"{i}:{turn}"} for turn in range(5)
        ]


async def test_unicode_and_odd_ids_round_trip(store):
    messages = [{"role": "user", "content": 'héllo 👋 \u2028 \x00 "q" \\'}]
    for id in ("", "ctx/with/slashes", "ü", "'; DROP TABLE conversations; --"):
        await store.save(id, messages)
        assert await store.get(id) == messages


# -- SQLite specifics -----------------------------------------------------------------------------


async def test_sqlite_is_durable_across_reopen_and_uses_wal(tmp_path: Path):
    path = tmp_path / "durable.db"
    async with SQLiteConversationStore(path) as store:
        await store.save("x", sample())
        await store.save("y", [])
    reopened = SQLiteConversationStore(str(path))
    assert await reopened.get("x") == sample()
    assert await reopened.get("y") == []
    assert await reopened.ids() == ["x", "y"]
    await reopened.aclose()

    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        raw = conn.execute("SELECT messages FROM conversations WHERE id = 'x'").fetchone()[0]
    finally:
        conn.close()
    # Compact JSON, the contract's one serialisation.
    assert raw == (
        '[{"role":"user","content":"hi"},{"role":"assistant","content":'
        '[{"type":"tool_use","id":"t1","name":"add","input":{"a":[1,2]}}]}]'
    )


async def test_sqlite_store_is_readable_by_a_second_store_while_open(tmp_path: Path):
    path = tmp_path / "shared.db"
    writer = SQLiteConversationStore(path)
    reader = SQLiteConversationStore(path, synchronous="normal")
    try:
        await writer.save("k", sample())
        assert await reader.get("k") == sample()
        await reader.save("k", [])
        assert await writer.get("k") == []
    finally:
        await writer.aclose()
        await reader.aclose()


async def test_sqlite_close_is_idempotent_and_later_use_is_an_error(tmp_path: Path):
    store = SQLiteConversationStore(tmp_path / "c.db")
    await store.save("a", [])
    await store.aclose()
    await store.aclose()
    store.close()
    with pytest.raises(StoreError, match=r"SQLite conversation store '.*c\.db' is closed"):
        await store.get("a")
    sync_closed = SQLiteConversationStore(tmp_path / "d.db")
    sync_closed.close()  # never used: nothing to close but the worker
    sync_closed.close()


async def test_sqlite_bad_arguments_are_precise(tmp_path: Path):
    with pytest.raises(ValueError, match="synchronous must be one of OFF, NORMAL, FULL, EXTRA"):
        SQLiteConversationStore(tmp_path / "c.db", synchronous="sometimes")
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    store = SQLiteConversationStore(blocker / "c.db")
    with pytest.raises(StoreConfigError, match="cannot open SQLite conversation store"):
        await store.get("a")
    await store.aclose()


async def test_sqlite_waits_for_a_locked_database_off_the_event_loop(tmp_path: Path):
    path = tmp_path / "c.db"
    store = SQLiteConversationStore(path)
    await store.save("a", [])
    other = sqlite3.connect(path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")  # another writer holds the write lock
        other.execute("INSERT INTO conversations VALUES ('b', '[]')")
        saving = asyncio.create_task(store.save("a", sample()))
        for _ in range(20):
            await asyncio.sleep(0)  # the loop keeps running while the save waits
        assert not saving.done()
        assert await InMemoryConversationStore().get("x") is None
        other.execute("COMMIT")
        await saving
    finally:
        other.close()
    assert await store.get("a") == sample()
    assert await store.ids() == ["a", "b"]
    await store.aclose()


async def test_killed_mid_save_loses_nothing_saved_before(tmp_path: Path):
    path = tmp_path / "crash.db"
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(SAVER),
        str(path),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stdout is not None
    reported = -1
    target = 150
    deadline = time.monotonic() + 60
    try:
        while reported < target:
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"saver reported only {reported + 1} saves"
            line = await asyncio.wait_for(proc.stdout.readline(), remaining)
            if not line:
                err = await proc.stderr.read() if proc.stderr else b""
                pytest.fail(f"saver exited early: {err.decode(errors='replace')}")
            reported = int(line.split()[1])
    finally:
        # One signal only: a second `kill()` polls the child (waitpid) and can reap it before
        # asyncio's child watcher does, which then reports exit code 255 instead of -SIGKILL.
        if proc.returncode is None:
            proc.kill()  # SIGKILL, mid-save
        await proc.wait()
    assert proc.returncode == -signal.SIGKILL
    # Saves it printed after we read our target were also reported before it died.
    for line in (await proc.stdout.read()).splitlines():
        reported = int(line.split()[1])

    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()
    store = SQLiteConversationStore(path)
    try:
        for k in range(IDS):
            last_reported = max(n for n in range(k, reported + 1, IDS))
            got = await store.get(f"conv-{k}")
            assert got is not None
            generation = got[-1]["save"]
            # The reported save or a later one that finished unreported — never older, never torn.
            assert generation >= last_reported and generation % IDS == k
            assert got == transcript(generation)
    finally:
        await store.aclose()


# -- KeyedLock ------------------------------------------------------------------------------------


async def test_keyed_lock_serialises_one_key_and_leaves_nothing_behind():
    locks = KeyedLock()
    inside = 0
    most = 0
    order: list[int] = []

    async def work(i: int) -> None:
        nonlocal inside, most
        async with locks.hold("same"):
            inside += 1
            most = max(most, inside)
            for _ in range(3):
                await asyncio.sleep(0)  # yield to the others while holding the lock
            order.append(i)
            inside -= 1

    await asyncio.gather(*(work(i) for i in range(20)))
    assert most == 1
    assert order == list(range(20))  # FIFO: waiters go in arrival order
    assert len(locks) == 0


async def test_keyed_lock_lets_different_keys_run_concurrently():
    locks = KeyedLock()
    both_inside = asyncio.Event()
    arrived = 0

    async def work(key: str) -> None:
        nonlocal arrived
        async with locks.hold(key):
            arrived += 1
            if arrived == 2:
                both_inside.set()
            # Only finishes if the other key got in while this one is held.
            await asyncio.wait_for(both_inside.wait(), 10)

    await asyncio.gather(work("a"), work("b"))
    assert len(locks) == 0


async def test_keyed_lock_releases_on_error_and_on_cancelled_waiters():
    locks = KeyedLock()
    with pytest.raises(ValueError, match="boom"):
        async with locks.hold("k"):
            raise ValueError("boom")
    assert len(locks) == 0

    holding = asyncio.Event()
    release = asyncio.Event()

    async def holder() -> None:
        async with locks.hold("k"):
            holding.set()
            await release.wait()

    async def waiter() -> None:
        async with locks.hold("k"):
            pass

    held = asyncio.create_task(holder())
    await holding.wait()
    waiting = asyncio.create_task(waiter())
    for _ in range(5):
        await asyncio.sleep(0)
    assert not waiting.done() and len(locks) == 1  # queued behind the holder
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert len(locks) == 1
    release.set()
    await held
    assert len(locks) == 0
    async with locks.hold("k"):  # usable again afterwards
        assert len(locks) == 1
    assert len(locks) == 0


async def test_many_keys_do_not_leak():
    locks = KeyedLock()

    async def work(i: int) -> None:
        async with locks.hold(i % 7):
            await asyncio.sleep(0)

    await asyncio.gather(*(work(i) for i in range(500)))
    assert len(locks) == 0


async def test_a_full_disk_is_reported_as_the_cause_of_a_failed_save(tmp_path: Path):
    filler = Path(__file__).parent.parent / "support" / "sqlite_filler.py"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(filler), str(tmp_path / "c.db"), stdout=asyncio.subprocess.PIPE
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 60)
    claimed, plain, kept = out.decode().splitlines()
    for line in (claimed, plain):
        assert "saving conversation 'big' failed: " in line and line.split(": ")[1] == (
            "StoreError"
        )
        assert "cannot rollback" not in line
        assert line.endswith(("disk I/O error", "database or disk is full"))
    assert kept == "kept: [{'role': 'user', 'content': 'hi'}]"
