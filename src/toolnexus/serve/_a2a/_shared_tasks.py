"""A2A task stores on shared servers (PostgreSQL, Redis), so any replica answers for any task."""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from toolnexus._backends import RenewalWatch, guarded
from toolnexus._backends._postgres import PostgresPool
from toolnexus._backends._redis import RedisPool, as_text
from toolnexus.a2a._wire import dumps, state_name
from toolnexus.errors import ConfigError
from toolnexus.serve._a2a._tasks import (
    DEFAULT_PAGE_SIZE,
    FINISHED_STATES,
    TaskPage,
    decode_page_token,
    encode_page_token,
    page_of,
    task_order_key,
    task_owner,
)

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = ["PostgresTaskStore", "RedisTaskStore", "TaskChanges"]

# Where saves are announced: a PostgreSQL NOTIFY channel, a Redis pub/sub channel.
_CHANNEL = "toolnexus_task_changes"

# Tasks in these states are being run by the replica that saved them last.
_RUNNING = ("submitted", "working")


class _SharedTasks(ABC):
    """What the shared task stores add to `TaskStore` so that replicas cooperate.

    Which replica runs which task: each store instance claims the tasks it saves running and
    renews the claims every third of `lease_ms`, so another replica can tell a task that is
    being run (`running_elsewhere`) from one whose replica died (its claim expired).

    Which task changed: every save is announced to the other store instances (PostgreSQL
    `NOTIFY`, Redis pub/sub), so a replica learns at once that another one canceled the task it
    runs, or that a task it streams to a subscriber moved on (`watch`).
    """

    def __init__(self, lease_ms: float) -> None:
        if isinstance(lease_ms, bool) or not lease_ms > 0:
            raise ConfigError(f"lease_ms must be > 0, not {lease_ms!r}")
        self.lease_ms = float(lease_ms)
        self.owner = uuid.uuid4().hex
        self._running: set[str] = set()
        self._beater: asyncio.Task[None] | None = None
        self._watchers: dict[str, set[TaskChanges]] = {}
        self._listener: asyncio.Task[None] | None = None
        self._listening = False
        self._listening_event: asyncio.Event | None = None

    @property
    @abstractmethod
    def name(self) -> str:
        """How errors and logs name this store (its URL without the password)."""

    @abstractmethod
    async def _beat(self, ids: list[str]) -> None:
        """Renew this replica's claims on `ids` in the store."""

    @abstractmethod
    def _changes(self, on_ready: Callable[[], None]) -> AsyncIterator[str]:
        """The announcements of saves (`"<owner> <task id>"`) until the connection is lost."""

    def _track(self, id: str, state: str) -> None:
        if state in _RUNNING:
            self._running.add(id)
            if self._beater is None or self._beater.done():
                self._beater = asyncio.get_running_loop().create_task(self._beat_forever())
        else:
            self._running.discard(id)

    async def _beat_forever(self) -> None:
        renewals = RenewalWatch(self.name, self.lease_ms)
        while self._running:
            await asyncio.sleep(self.lease_ms / 3000)
            running = sorted(self._running)
            try:
                await self._beat(running)
            except Exception as exc:  # the claims lapse, as they must, unless the store is back
                renewals.failed(f"renewing the claim on {len(running)} running task(s)", exc)
            else:
                renewals.renewed()

    # -- change announcements -------------------------------------------------------------------

    def watch(self, id: str) -> TaskChanges:
        """Announcements of the saves of task `id` made by other store instances (replicas),
        from this call on: `async with store.watch(id) as changes:` then
        `await changes.wait(timeout)`. Saves that follow each other closely may be announced
        once: read the task to see where it is. Entering waits (up to `lease_ms`) until the
        announcements flow; `changes.missed` then says whether some may have been lost before
        (read the task once more)."""
        return TaskChanges(self, id)

    @property
    def listening(self) -> bool:
        """Whether announcements flow right now (none can have been missed since)."""
        return self._listening

    def add_watcher(self, changes: TaskChanges) -> None:
        """Route the announcements of `changes.id` to `changes` from now on."""
        self._watchers.setdefault(changes.id, set()).add(changes)

    def drop_watcher(self, changes: TaskChanges) -> None:
        """Stop routing announcements to `changes` (idempotent)."""
        watchers = self._watchers.get(changes.id)
        if watchers is not None:
            watchers.discard(changes)
            if not watchers:
                del self._watchers[changes.id]

    async def await_listening(self, timeout: float) -> None:
        """Start the change listener if it is not running and wait up to `timeout` seconds
        for announcements to flow (returning either way)."""
        self._start_listening()
        if not self._listening:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._ready_event().wait()

    def _ready_event(self) -> asyncio.Event:
        if self._listening_event is None:
            self._listening_event = asyncio.Event()
        return self._listening_event

    def _start_listening(self) -> None:
        if self._listener is None or self._listener.done():
            self._listener = asyncio.get_running_loop().create_task(self._listen_forever())

    def _on_ready(self) -> None:
        self._listening = True
        self._ready_event().set()
        # Saves announced while no connection listened are lost: every watcher looks again.
        for watchers in self._watchers.values():
            for changes in watchers:
                changes.notify()

    def _announced(self, payload: str) -> None:
        owner, _, id = payload.partition(" ")
        if owner == self.owner:
            return
        for changes in self._watchers.get(id, ()):
            changes.notify()

    async def _listen_forever(self) -> None:
        renewals = RenewalWatch(self.name, self.lease_ms)
        delay = 0.05
        while True:
            try:
                async for payload in self._changes(self._on_ready):
                    delay = 0.05
                    renewals.renewed()
                    self._announced(payload)
            except Exception as exc:  # reconnect; the watchers look again once it listens
                renewals.failed(
                    "listening for task changes",
                    exc,
                    "retrying; cancels and subscriptions reach across replicas once it is back",
                )
            self._listening = False
            self._ready_event().clear()
            await asyncio.sleep(delay)
            delay = min(delay * 2, 2.0)

    async def _stop_background(self) -> None:
        for name in ("_beater", "_listener"):
            job: asyncio.Task[None] | None = getattr(self, name)
            setattr(self, name, None)
            if job is not None:
                job.cancel()
                with contextlib.suppress(BaseException):
                    await job
        self._listening = False


class TaskChanges:
    """One watcher's view of the announcements of one task (see `watch`)."""

    def __init__(self, store: _SharedTasks, id: str) -> None:
        self.store = store
        self.id = id
        self._event = asyncio.Event()
        # Registered at once, so that nothing announced from now on is missed.
        store.add_watcher(self)
        self.missed = not store.listening  # announcements may have been lost before entry

    def notify(self) -> None:
        self._event.set()

    async def __aenter__(self) -> TaskChanges:
        await self.store.await_listening(self.store.lease_ms / 1000)
        return self

    async def wait(self, timeout: float | None = None) -> bool:
        """Whether a save was announced (or may have been missed) since the last call, waiting
        up to `timeout` seconds (`None`: until one is)."""
        if timeout is None:
            await self._event.wait()
        else:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._event.wait()
        announced = self._event.is_set()
        self._event.clear()
        return announced

    def close(self) -> None:
        """Stop watching (idempotent; leaving the `async with` block does it too)."""
        self.store.drop_watcher(self)

    async def __aexit__(self, *exc_info: object) -> None:
        self.close()


def _decode(raw: str | bytes | None) -> dict[str, Any] | None:
    """A stored task, or `None` for a row that cannot be read back (the `TaskStore` rule)."""
    if raw is None:
        return None
    try:
        task = json.loads(raw)
    except (ValueError, RecursionError, UnicodeDecodeError):
        return None
    return task if isinstance(task, dict) else None


def _fields(task: dict[str, Any]) -> tuple[str, str, str, str]:
    """(id, contextId, state, timestamp) as the listing filters and orders them (the owner is
    `task_owner`)."""
    status = task.get("status") if isinstance(task.get("status"), dict) else {}
    stamp, _ = task_order_key(task)
    context = task.get("contextId")
    return (
        str(task["id"]),
        context if isinstance(context, str) else "",
        state_name(status.get("state") if isinstance(status, dict) else None),
        stamp,
    )


_PG_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS toolnexus_tasks (
        id TEXT COLLATE "C" PRIMARY KEY,
        context_id TEXT NOT NULL,
        state TEXT NOT NULL,
        stamp TEXT COLLATE "C" NOT NULL,
        updated TIMESTAMPTZ,
        task TEXT NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS toolnexus_tasks_order ON toolnexus_tasks (stamp DESC, id DESC)",
    "CREATE INDEX IF NOT EXISTS toolnexus_tasks_context ON toolnexus_tasks (context_id)",
    # Schema 2: the identity owning each task. Rows from before read as owned by '' (the
    # unauthenticated / static-token identity), as a task without "owner" does everywhere.
    "ALTER TABLE toolnexus_tasks ADD COLUMN IF NOT EXISTS owner TEXT NOT NULL DEFAULT ''",
    "CREATE INDEX IF NOT EXISTS toolnexus_tasks_owner ON toolnexus_tasks"
    " (owner, stamp DESC, id DESC)",
    """CREATE TABLE IF NOT EXISTS toolnexus_task_runners (
        id TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        expires TIMESTAMPTZ NOT NULL
    )""",
)
_TERMINAL_SQL = ", ".join(f"'{state}'" for state in sorted(FINISHED_STATES))


class PostgresTaskStore(_SharedTasks):
    """A2A tasks in the PostgreSQL table `toolnexus_tasks`, one row of compact JSON per task.

    The filters and order of `ListTasks` (context, state, updated-after, newest first) run in
    SQL on indexed columns; saves are single upserts, durable on commit. The pool opens on
    first use, creating the table and recording its schema version; an unreachable server then
    raises `StoreConfigError` naming the URL without its password. Needs the `postgres` extra.
    """

    def __init__(
        self,
        dsn: str,
        *,
        lease_ms: float = 15_000,
        min_size: int = 1,
        max_size: int = 10,
        timeout_ms: float = 10_000,
    ) -> None:
        super().__init__(lease_ms)
        self._db = PostgresPool(
            dsn,
            label="PostgreSQL task store",
            component="tasks",
            schema=_PG_SCHEMA,
            min_size=min_size,
            max_size=max_size,
            timeout_ms=timeout_ms,
        )

    @property
    def name(self) -> str:
        return self._db.label

    async def open(self) -> None:
        """Connect and create the schema now rather than on first use."""
        await self._db.pool()

    async def ping(self) -> None:
        """Raise unless the server answers (what `/readyz` asks)."""

        async def ping(conn: AsyncConnection[Any]) -> None:
            await conn.execute("SELECT 1")

        await guarded(self.name, "pinging", "the server", self._db.run(ping))

    async def get(self, id: str) -> dict[str, Any] | None:
        async def get(conn: AsyncConnection[Any]) -> str | None:
            cursor = await conn.execute("SELECT task FROM toolnexus_tasks WHERE id = %s", (id,))
            row = await cursor.fetchone()
            return None if row is None else str(row[0])

        return _decode(await guarded(self.name, "reading", f"task {id!r}", self._db.run(get)))

    async def save(self, task: dict[str, Any]) -> None:
        """Store `task`; a task already finished keeps its final state (a cancel from another
        replica is not undone by the run that was still going there)."""
        id, context, state, stamp = _fields(task)
        owner = task_owner(task)
        payload = dumps(task).decode("utf-8")
        running = state in _RUNNING
        announce = f"{self.owner} {id}"

        async def save(conn: AsyncConnection[Any]) -> None:
            # One statement, so one round trip and atomic: the task, the claim of the replica
            # running it (or its release), and the announcement (sent on commit). A save that
            # a finished task refused changes nothing and announces nothing.
            await conn.execute(
                "WITH saved AS (INSERT INTO toolnexus_tasks AS t"
                " (id, context_id, state, stamp, updated, task, owner)"
                " VALUES (%s, %s, %s, %s, %s::timestamptz, %s, %s)"
                " ON CONFLICT (id) DO UPDATE SET context_id = excluded.context_id,"
                " owner = excluded.owner,"
                " state = excluded.state, stamp = excluded.stamp,"
                " updated = excluded.updated, task = excluded.task"
                f" WHERE t.state NOT IN ({_TERMINAL_SQL}) OR t.state = excluded.state"
                " RETURNING t.id),"
                " claimed AS (INSERT INTO toolnexus_task_runners (id, owner, expires)"
                " SELECT id, %s, clock_timestamp() + %s * interval '1 millisecond'"
                " FROM saved WHERE %s"
                " ON CONFLICT (id) DO UPDATE SET owner = excluded.owner,"
                " expires = excluded.expires RETURNING id),"
                " released AS (DELETE FROM toolnexus_task_runners"
                " WHERE id IN (SELECT id FROM saved) AND NOT %s RETURNING id)"
                " SELECT pg_notify(%s, %s) FROM saved",
                (
                    *(id, context, state, stamp, _timestamptz(stamp), payload, owner),
                    *(self.owner, self.lease_ms, running, running),
                    *(_CHANNEL, announce),
                ),
            )

        await guarded(self.name, "saving", f"task {id!r}", self._db.run(save))
        self._track(id, state)

    async def _beat(self, ids: list[str]) -> None:
        async def beat(conn: AsyncConnection[Any]) -> None:
            await conn.execute(
                "UPDATE toolnexus_task_runners"
                " SET expires = clock_timestamp() + %s * interval '1 millisecond'"
                " WHERE owner = %s AND id = ANY(%s)",
                (self.lease_ms, self.owner, ids),
            )

        await self._db.run(beat)

    async def running_elsewhere(self, id: str) -> bool:
        """Whether another live replica is running task `id` (its claim has not expired)."""

        async def check(conn: AsyncConnection[Any]) -> bool:
            cursor = await conn.execute(
                "SELECT 1 FROM toolnexus_task_runners WHERE id = %s AND owner <> %s"
                " AND expires > clock_timestamp()",
                (id, self.owner),
            )
            return await cursor.fetchone() is not None

        return await guarded(
            self.name, "checking the runner of", f"task {id!r}", self._db.run(check)
        )

    def _changes(self, on_ready: Callable[[], None]) -> AsyncIterator[str]:
        return self._db.listen(_CHANNEL, on_ready)

    async def list(
        self,
        *,
        context_id: str | None = None,
        state: str | None = None,
        updated_after: str | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
        page_token: str | None = None,
        owner: str | None = None,
    ) -> TaskPage:
        after = decode_page_token(page_token) if page_token else None
        where: list[str] = []
        args: list[Any] = []
        if owner is not None:
            where.append("owner = %s")
            args.append(owner)
        if context_id is not None:
            where.append("context_id = %s")
            args.append(context_id)
        if state is not None:
            where.append("state = %s")
            args.append(state_name(state))
        if updated_after:
            if _timestamptz(updated_after) is None:
                raise ValueError(f"invalid timestamp: {updated_after!r}")
            where.append("updated > %s::timestamptz")
            args.append(updated_after.replace("Z", "+00:00"))
        filters = " AND ".join(where) or "TRUE"
        page_where = filters
        page_args = list(args)
        if after is not None:
            page_where += " AND (stamp, id) < (%s, %s)"
            page_args += [after[0], after[1]]
        limit = max(page_size, 0)

        async def query(conn: AsyncConnection[Any]) -> tuple[list[Any], int]:
            cursor = await conn.execute(
                f"SELECT task FROM toolnexus_tasks WHERE {page_where}"  # type: ignore[arg-type]
                " ORDER BY stamp DESC, id DESC LIMIT %s",
                (*page_args, limit + 1),
            )
            rows = await cursor.fetchall()
            counted = await conn.execute(
                f"SELECT count(*) FROM toolnexus_tasks WHERE {filters}",  # type: ignore[arg-type]
                tuple(args),
            )
            total = await counted.fetchone()
            return rows, int(total[0]) if total is not None else 0

        rows, total = await guarded(self.name, "listing", "tasks", self._db.run(query))
        tasks = [t for t in (_decode(row[0]) for row in rows[:limit]) if t is not None]
        more = len(rows) > limit
        token = encode_page_token(task_order_key(tasks[-1])) if more and tasks else ""
        return tasks, token, total

    async def aclose(self) -> None:
        """Stop renewing claims and close the connection pool. Idempotent."""
        await self._stop_background()
        await self._db.aclose()


def _timestamptz(stamp: str) -> str | None:
    """`stamp` as PostgreSQL reads a timestamptz, or `None` when it has no zone or is no date."""
    from datetime import datetime

    try:
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment.isoformat() if moment.tzinfo is not None else None


# KEYS: task, state, ids, runner, announcement channel. ARGV: payload, state, id, owner,
# lease ms, running (1/0), then the finished states. A finished task keeps its final state;
# a save is announced as "<owner> <id>".
_REDIS_SAVE = """
local stored = redis.call('GET', KEYS[2])
if stored and stored ~= ARGV[2] then
  for i = 7, #ARGV do
    if stored == ARGV[i] then return 0 end
  end
end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('SET', KEYS[2], ARGV[2])
redis.call('SADD', KEYS[3], ARGV[3])
redis.call('PUBLISH', KEYS[5], ARGV[4] .. ' ' .. ARGV[3])
if ARGV[6] == '1' then
  redis.call('SET', KEYS[4], ARGV[4], 'PX', ARGV[5])
else
  redis.call('DEL', KEYS[4])
end
return 1
"""


class RedisTaskStore(_SharedTasks):
    """A2A tasks in Redis: `<prefix>task:<id>` holds each task's compact JSON, `<prefix>tasks`
    the set of ids. A save writes both in one transaction. `ListTasks` reads every task and
    filters here (fine for the thousands of tasks a Redis store usually keeps; use PostgreSQL
    for more). Durability is the server's (AOF with `appendfsync always` to lose nothing).
    Needs the `redis` extra.
    """

    def __init__(
        self,
        url: str,
        *,
        prefix: str = "toolnexus:",
        lease_ms: float = 15_000,
        max_connections: int = 50,
        timeout_ms: float = 10_000,
    ) -> None:
        super().__init__(lease_ms)
        self._db = RedisPool(
            url,
            label="Redis task store",
            component="tasks",
            prefix=prefix,
            max_connections=max_connections,
            timeout_ms=timeout_ms,
        )

    @property
    def name(self) -> str:
        return self._db.label

    async def open(self) -> None:
        """Connect now rather than on first use."""
        await self._db.client()

    async def ping(self) -> None:
        """Raise unless the server answers (what `/readyz` asks)."""

        async def ping() -> None:
            client = await self._db.client()
            await client.ping()

        await guarded(self.name, "pinging", "the server", ping())

    async def get(self, id: str) -> dict[str, Any] | None:

        async def get() -> bytes | str | None:
            client = await self._db.client()
            raw: bytes | str | None = await client.get(self._db.key("task", id))
            return raw

        return _decode(await guarded(self.name, "reading", f"task {id!r}", get()))

    async def save(self, task: dict[str, Any]) -> None:
        """Store `task`; a task already finished keeps its final state (a cancel from another
        replica is not undone by the run that was still going there)."""
        id, _, state, _ = _fields(task)
        keys = [
            self._db.key("task", id),
            self._db.key("task-state", id),
            self._db.key("tasks"),
            self._db.key("task-runner", id),
            self._db.key(_CHANNEL),
        ]
        running = "1" if state in _RUNNING else "0"
        args: list[bytes | str | int] = [dumps(task), state, id, self.owner, int(self.lease_ms)]
        args += [running, *sorted(FINISHED_STATES)]

        await guarded(self.name, "saving", f"task {id!r}", self._db.script(_REDIS_SAVE, keys, args))
        self._track(id, state)

    async def _beat(self, ids: list[str]) -> None:
        client = await self._db.client()
        async with client.pipeline(transaction=False) as pipe:
            for id in ids:
                pipe.set(self._db.key("task-runner", id), self.owner, px=int(self.lease_ms))
            await pipe.execute()

    async def running_elsewhere(self, id: str) -> bool:
        """Whether another live replica is running task `id` (its claim has not expired)."""

        async def check() -> bool:
            client = await self._db.client()
            owner = await client.get(self._db.key("task-runner", id))
            return owner is not None and as_text(owner) != self.owner

        return await guarded(self.name, "checking the runner of", f"task {id!r}", check())

    def _changes(self, on_ready: Callable[[], None]) -> AsyncIterator[str]:
        return self._db.listen(_CHANNEL, on_ready)

    async def list(
        self,
        *,
        context_id: str | None = None,
        state: str | None = None,
        updated_after: str | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
        page_token: str | None = None,
        owner: str | None = None,
    ) -> TaskPage:

        async def read_all() -> list[dict[str, Any]]:
            client = await self._db.client()
            ids = sorted(await client.smembers(self._db.key("tasks")))  # type: ignore[misc]
            tasks: list[dict[str, Any]] = []
            for start in range(0, len(ids), 500):
                keys = [self._db.key("task", str(as_text(i))) for i in ids[start : start + 500]]
                for raw in await client.mget(keys):
                    task = _decode(raw)
                    if task is not None:
                        tasks.append(task)
            return tasks

        tasks = await guarded(self.name, "listing", "tasks", read_all())
        return page_of(
            tasks,
            context_id=context_id,
            state=state,
            updated_after=updated_after,
            page_size=page_size,
            page_token=page_token,
            owner=owner,
        )

    async def aclose(self) -> None:
        """Stop renewing claims and close the connections. Idempotent."""
        await self._stop_background()
        await self._db.aclose()
