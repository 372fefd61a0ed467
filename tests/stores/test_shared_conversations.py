"""Conversation stores shared by clients and processes: no acknowledged turn is ever lost.

Every backend (SQLite file, PostgreSQL, Redis; the in-memory store for clients of one process)
runs the same checks: concurrent asks on one id from two clients and from two real processes,
a holder killed with `kill -9`, a run's deadline and cancel while another process holds the id,
and corrupt rows.
"""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import sys
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from support.db_servers import PostgresServer, RedisServer
from support.polling import wait_until
from toolnexus.client import RunCancelled, RunTimeout, create_in_process_client
from toolnexus.client.memory import (
    AtomicConversationStore,
    ConversationStore,
    InMemoryConversationStore,
    PostgresConversationStore,
    RedisConversationStore,
    SQLiteConversationStore,
    StoreConfigError,
    StoreError,
)

ASKER = Path(__file__).parent.parent / "support" / "store_asker.py"
SHARED = ("sqlite", "postgres", "redis")


@dataclass
class Backend:
    kind: str
    target: str

    def store(self, lease_ms: float = 15_000) -> Any:
        if self.kind == "sqlite":
            return SQLiteConversationStore(self.target, lease_ms=lease_ms)
        if self.kind == "postgres":
            return PostgresConversationStore(self.target, lease_ms=lease_ms)
        return RedisConversationStore(self.target, lease_ms=lease_ms)

    def write_raw(self, id: str, raw: str) -> None:
        """Put `raw` in the row of `id` behind the store's back (a corrupt row)."""
        if self.kind == "sqlite":
            with sqlite3.connect(self.target) as conn:
                conn.execute("INSERT OR REPLACE INTO conversations VALUES (?, ?)", (id, raw))
        elif self.kind == "postgres":
            import psycopg

            with psycopg.connect(self.target, autocommit=True) as conn:
                conn.execute(
                    "INSERT INTO toolnexus_conversations (id, messages) VALUES (%s, %s)"
                    " ON CONFLICT (id) DO UPDATE SET messages = excluded.messages",
                    (id, raw),
                )
        else:
            import redis

            with redis.Redis.from_url(self.target) as client:
                client.set(f"toolnexus:conv:{id}", raw)

    def read_raw(self, id: str) -> str | None:
        if self.kind == "sqlite":
            with sqlite3.connect(self.target) as conn:
                row = conn.execute("SELECT messages FROM conversations WHERE id=?", (id,))
                found = row.fetchone()
                return None if found is None else found[0]
        if self.kind == "postgres":
            import psycopg

            with psycopg.connect(self.target) as conn:
                cur = conn.execute(
                    "SELECT messages FROM toolnexus_conversations WHERE id=%s", (id,)
                )
                found = cur.fetchone()
                return None if found is None else found[0]
        import redis

        with redis.Redis.from_url(self.target) as client:
            value = client.get(f"toolnexus:conv:{id}")
            return None if value is None else value.decode()


@pytest.fixture(scope="module")
def sqlite_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("shared") / "conversations.db")


@pytest.fixture(params=SHARED)
def backend(request: pytest.FixtureRequest, sqlite_path: str) -> Backend:
    if request.param == "sqlite":
        return Backend("sqlite", sqlite_path)
    if request.param == "postgres":
        server: PostgresServer = request.getfixturevalue("postgres")
        return Backend("postgres", server.url)
    redis_server: RedisServer = request.getfixturevalue("redis_server")
    return Backend("redis", redis_server.url)


@pytest.fixture
async def store(backend: Backend) -> AsyncIterator[Any]:
    s = backend.store()
    yield s
    await s.aclose()


def new_id() -> str:
    return f"conv-{uuid.uuid4().hex[:12]}"


async def echo(request: dict[str, Any]) -> dict[str, Any]:
    await asyncio.sleep(0.001)  # let other asks interleave
    return {"content": "re:" + request["messages"][-1]["content"]}


def check_transcript(messages: list[dict[str, Any]], acked: dict[str, list[str]]) -> None:
    """Every acknowledged prompt once, answered right after, in each asker's ack order."""
    prompts = [m["content"] for m in messages if m["role"] == "user"]
    assert len(prompts) == len(set(prompts)), "a turn was saved twice"
    for i, m in enumerate(messages):
        if m["role"] == "user":
            assert messages[i + 1] == {"role": "assistant", "content": "re:" + m["content"]}
    position = {p: i for i, p in enumerate(prompts)}
    for who, order in acked.items():
        missing = [p for p in order if p not in position]
        assert not missing, f"{len(missing)} acknowledged turns of {who} lost: {missing[:5]}"
        assert [position[p] for p in order] == sorted(position[p] for p in order)


# -- the protocols --------------------------------------------------------------------------------


def test_every_store_of_ours_is_atomic(tmp_path: Path):
    stores = [
        InMemoryConversationStore(),
        SQLiteConversationStore(tmp_path / "c.db"),
        PostgresConversationStore("postgresql://u@127.0.0.1:1/db"),
        RedisConversationStore("redis://127.0.0.1:1/0"),
    ]
    for s in stores:
        assert isinstance(s, ConversationStore) and isinstance(s, AtomicConversationStore)
    stores[1].close()

    class Plain:
        async def get(self, id: str) -> None:
            return None

        async def save(self, id: str, messages: list[dict[str, Any]]) -> None:
            pass

    assert isinstance(Plain(), ConversationStore)
    assert not isinstance(Plain(), AtomicConversationStore)


# -- many clients, many processes ----------------------------------------------------------------


async def test_clients_sharing_the_memory_store_lose_no_turn():
    shared = InMemoryConversationStore()
    clients = [create_in_process_client(model="m", generate=echo, store=shared) for _ in "ab"]
    acked: dict[str, list[str]] = {"a": [], "b": []}

    async def ask(client: Any, who: str, i: int) -> None:
        await client.ask(f"{who}-{i}", id="one")
        acked[who].append(f"{who}-{i}")

    pairs = zip(clients, "ab", strict=True)
    await asyncio.gather(*(ask(c, w, i) for c, w in pairs for i in range(30)))
    check_transcript(await shared.get("one") or [], acked)
    assert len(acked["a"]) + len(acked["b"]) == 60


async def test_two_clients_on_their_own_store_objects_lose_no_turn(backend: Backend):
    conv = new_id()
    stores = [backend.store(), backend.store()]
    clients = [create_in_process_client(model="m", generate=echo, store=s) for s in stores]
    acked: dict[str, list[str]] = {"a": [], "b": []}

    async def ask(client: Any, who: str, i: int) -> None:
        await client.ask(f"{who}-{i}", id=conv)
        acked[who].append(f"{who}-{i}")

    try:
        pairs = zip(clients, "ab", strict=True)
        await asyncio.gather(*(ask(c, w, i) for c, w in pairs for i in range(30)))
        check_transcript(await stores[0].get(conv) or [], acked)
        assert len(acked["a"]) + len(acked["b"]) == 60
    finally:
        for s in stores:
            await s.aclose()


async def spawn(backend: Backend, conv: str, tag: str, count: int, *extra: str, lease_ms=15000):
    return await asyncio.create_subprocess_exec(
        sys.executable,
        str(ASKER),
        backend.kind,
        backend.target,
        conv,
        tag,
        str(count),
        str(lease_ms),
        *extra,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def read_until(proc: Any, last: str, acked: list[str], timeout: float = 60) -> list[str]:
    """Collect `ack` lines of `proc` into `acked` until a line equal to `last` (or its end)."""
    others: list[str] = []
    deadline = time.monotonic() + timeout
    while True:
        line = await asyncio.wait_for(proc.stdout.readline(), deadline - time.monotonic())
        if not line:
            err = await proc.stderr.read()
            if last != "":
                pytest.fail(f"asker ended early: {others} {err.decode(errors='replace')[-2000:]}")
            return others
        text = line.decode().rstrip("\n")
        if text.startswith("ack "):
            acked.append(text[4:])
        elif text == last:
            return others
        else:
            others.append(text)


async def test_two_processes_asking_50_at_once_on_one_id_lose_no_turn(backend: Backend):
    conv = new_id()
    procs = [await spawn(backend, conv, tag, 50) for tag in "pq"]
    acked: dict[str, list[str]] = {"p": [], "q": []}
    try:
        others = await asyncio.gather(
            *(read_until(proc, "done", acked[t]) for proc, t in zip(procs, "pq", strict=True))
        )
    finally:
        for proc in procs:
            if proc.returncode is None:
                proc.kill()
            await proc.wait()
    assert others == [[], []]  # no errors
    assert len(acked["p"]) == len(acked["q"]) == 50
    with_store = backend.store()
    try:
        check_transcript(await with_store.get(conv) or [], acked)
    finally:
        await with_store.aclose()


async def test_a_holder_killed_with_sigkill_frees_its_id_after_one_lease(backend: Backend):
    conv = new_id()
    victim = await spawn(backend, conv, "v", 5, "hold", lease_ms=800)
    acked: dict[str, list[str]] = {"v": [], "w": []}
    try:
        await read_until(victim, "holding", acked["v"])
        victim.send_signal(signal.SIGKILL)
        await victim.wait()
        survivor = await spawn(backend, conv, "w", 10, lease_ms=800)
        try:
            others = await read_until(survivor, "done", acked["w"])
        finally:
            if survivor.returncode is None:
                survivor.kill()
            await survivor.wait()
    finally:
        if victim.returncode is None:
            victim.kill()
            await victim.wait()
    assert victim.returncode == -signal.SIGKILL
    assert others == [] and len(acked["v"]) == 5 and len(acked["w"]) == 10
    check = backend.store()
    try:
        messages = await check.get(conv) or []
        check_transcript(messages, acked)
        assert "v-hold" not in [m["content"] for m in messages]  # never acknowledged, never saved
    finally:
        await check.aclose()


async def test_a_holder_frozen_past_its_lease_cannot_overwrite_the_turns_after_it(
    backend: Backend,
):
    """A holder that stops running (SIGSTOP: a frozen VM, a long pause) loses its lease; the
    turns acknowledged meanwhile by another process survive its late save, which is refused."""
    conv = new_id()
    frozen = await asyncio.create_subprocess_exec(
        sys.executable, str(ASKER), backend.kind, backend.target, conv, "f", "3", "600", "stall",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    acked: dict[str, list[str]] = {"f": [], "w": []}
    try:
        await read_until(frozen, "holding", acked["f"])
        frozen.send_signal(signal.SIGSTOP)
        survivor = await spawn(backend, conv, "w", 10, lease_ms=600)
        try:  # it waits for the frozen holder's lease to run out, then asks
            assert await read_until(survivor, "done", acked["w"]) == []
        finally:
            if survivor.returncode is None:
                survivor.kill()
            await survivor.wait()
        frozen.send_signal(signal.SIGCONT)
        assert frozen.stdin is not None
        frozen.stdin.write(b"answer now\n")  # the frozen run completes and tries to save
        await frozen.stdin.drain()
        late = await read_until(frozen, "done", acked["f"])
    finally:
        if frozen.returncode is None:
            frozen.send_signal(signal.SIGCONT)
            frozen.kill()
        await frozen.wait()
    assert len(acked["f"]) == 3 and len(acked["w"]) == 10
    assert len(late) == 1 and late[0].startswith("err f-hold StoreError"), late
    assert "was lost" in late[0]
    check = backend.store()
    try:
        messages = await check.get(conv) or []
        check_transcript(messages, acked)
        assert "f-hold" not in [m["content"] for m in messages]
    finally:
        await check.aclose()


@pytest.fixture
async def held(backend: Backend) -> AsyncIterator[tuple[Backend, str]]:
    """An id that another process holds (its run never ends) for the whole test."""
    conv = new_id()
    holder = await spawn(backend, conv, "h", 0, "hold")
    try:
        await read_until(holder, "holding", [])
        yield backend, conv
    finally:
        holder.kill()
        await holder.wait()


async def test_the_deadline_counts_while_another_process_holds_the_id(held):
    backend, conv = held
    store = backend.store()
    client = create_in_process_client(model="m", generate=echo, store=store, timeout_ms=300)
    try:
        started = time.monotonic()
        with pytest.raises(RunTimeout):
            await client.ask("late", id=conv)
        assert time.monotonic() - started < 5  # generous: the bound is the 0.3 s deadline
    finally:
        await store.aclose()


async def test_cancel_counts_while_another_process_holds_the_id(held):
    backend, conv = held
    store = backend.store()
    client = create_in_process_client(model="m", generate=echo, store=store)
    cancel = asyncio.Event()
    asyncio.get_running_loop().call_later(0.2, cancel.set)
    try:
        with pytest.raises(RunCancelled):
            await asyncio.wait_for(client.ask("late", id=conv, cancel=cancel), 10)
        # The cancelled wait left nothing behind: this process can claim other ids at once.
        await asyncio.wait_for(client.ask("other", id=new_id()), 10)
    finally:
        await store.aclose()


async def test_the_deadline_counts_while_another_connection_locks_the_sqlite_file(tmp_path):
    path = tmp_path / "locked.db"
    store = SQLiteConversationStore(path)
    await store.save("warm", [])  # schema in place
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # holds the write lock for the whole test
    client = create_in_process_client(model="m", generate=echo, store=store, timeout_ms=300)
    try:
        started = time.monotonic()
        with pytest.raises(RunTimeout):
            await client.ask("x", id="k")
        assert time.monotonic() - started < 5
    finally:
        other.execute("ROLLBACK")
        other.close()
        await store.aclose()
    quick = SQLiteConversationStore(path, lock_timeout_ms=200)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(StoreError, match=r"locked\.db.*stayed locked for 200 ms"):
            await quick.save("k", [])
    finally:
        other.execute("ROLLBACK")
        other.close()
        await quick.aclose()


# -- corrupt rows ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        ('[{"role": "user", "content": "cut', "not JSON"),
        ('{"role": "user", "content": "hi"}', "a JSON dict, not a list of messages"),
        ('"just text"', "a JSON str, not a list of messages"),
        ('[{"role": "user", "content": "hi"}, 7]', "a message that is not a JSON object"),
    ],
)
async def test_a_corrupt_row_is_a_clear_error_and_is_never_overwritten(backend, store, raw, why):
    conv = new_id()
    backend.write_raw(conv, raw)
    with pytest.raises(StoreError) as caught:
        await store.get(conv)
    message = str(caught.value)
    assert f"conversation {conv!r} is corrupt ({why}" in message
    assert message.startswith(store.name)
    assert "Secret" not in message  # the store's URL is shown without its password
    client = create_in_process_client(model="m", generate=echo, store=store)
    with pytest.raises(StoreError, match="is corrupt"):
        await client.ask("hello", id=conv)
    assert backend.read_raw(conv) == raw  # not replaced by a transcript built on garbage


# -- the server unreachable, or lost mid-run -------------------------------------------------------


@pytest.mark.parametrize("kind", ["postgres", "redis"])
async def test_a_store_unreachable_at_start_is_a_config_error_without_the_password(kind):
    from support.db_servers import free_port

    port = free_port()
    if kind == "postgres":
        store: Any = PostgresConversationStore(f"postgresql://me:hush-77@127.0.0.1:{port}/db")
    else:
        store = RedisConversationStore(f"redis://me:hush-77@127.0.0.1:{port}/0")
    client = create_in_process_client(model="m", generate=echo, store=store)
    with pytest.raises(StoreConfigError) as caught:
        await client.ask("hi", id="k")
    message = str(caught.value)
    assert f"me:***@127.0.0.1:{port}" in message and "hush-77" not in message
    assert "hush-77" not in repr(caught.value) and "hush-77" not in repr(store.name)
    await store.aclose()


async def test_a_store_lost_mid_run_fails_the_run_and_loses_no_acknowledged_turn(
    fragile, caplog: pytest.LogCaptureFixture
):
    kind, server = fragile
    backend = Backend(kind, server.url)
    store = backend.store(lease_ms=600)

    def renewal_warnings() -> list[str]:
        return [r.getMessage() for r in caplog.records if "renewing the claim" in r.getMessage()]

    async def generate(request: dict[str, Any]) -> dict[str, Any]:
        prompt = request["messages"][-1]["content"]
        if prompt == "the store goes away":
            await asyncio.to_thread(server.stop)
            # the claim's renewal fails while the turn runs: one WARNING says so
            await wait_until(renewal_warnings, timeout=15)
        return {"content": "re:" + prompt}

    client = create_in_process_client(model="m", generate=generate, store=store)
    try:
        await client.ask("before", id="k")
        with pytest.raises(StoreError) as caught:
            await client.ask("the store goes away", id="k")
        assert "conversation 'k'" in str(caught.value) and "Secret" not in str(caught.value)
        await asyncio.to_thread(server.start)
        result = await asyncio.wait_for(client.ask("after", id="k"), 30)
        contents = [m["content"] for m in result.messages]
        assert contents == ["before", "re:before", "after", "re:after"]
        assert await store.get("k") == result.messages
        [warning] = renewal_warnings()
        assert warning.startswith(f"[toolnexus] {store.name}: renewing the claim on conversation")
        assert "Secret" not in warning
    finally:
        if server.proc is None:
            server.start()
        await store.aclose()
