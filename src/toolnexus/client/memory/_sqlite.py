"""Conversations in one SQLite file, shared safely by every client and process that opens it."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from toolnexus._backends import SCHEMA_VERSION
from toolnexus.client.memory._lease import LeasedStore
from toolnexus.errors import ConfigError, StoreConfigError, StoreError

__all__ = ["SQLiteConversationStore"]

T = TypeVar("T")

_SYNCHRONOUS = ("OFF", "NORMAL", "FULL", "EXTRA")

# One statement waits at most this long on SQLite's own lock before its thread gives up and the
# event-loop side retries: short, so a deadline or a cancel is seen within that time.
_BUSY_S = 0.05
_RETRY_S = 0.005

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS conversations (
        id TEXT PRIMARY KEY,
        messages TEXT NOT NULL
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS conversation_leases (
        id TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        expires REAL NOT NULL
    ) WITHOUT ROWID""",
)

_UPSERT = (
    "INSERT INTO conversations (id, messages) VALUES (?, ?)"
    " ON CONFLICT (id) DO UPDATE SET messages = excluded.messages"
)


def _busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc)
    return "locked" in text or "busy" in text


class SQLiteConversationStore(LeasedStore):
    """A durable store in one SQLite file (WAL mode), one row of compact JSON per conversation.

    Every save replaces the whole transcript of its id in one transaction, so a reader or a crash
    sees the old transcript or the new one, never a mix. Any number of clients and processes may
    share the file: `claim` takes a lease row per id (renewed while held; a holder killed with
    `kill -9` blocks its id for at most `lease_ms`). All SQLite work runs on one worker thread
    per store, never on the event loop, in statements that wait at most 50 ms for the database
    lock: a run's deadline or cancel is honoured even while another process holds the file;
    a lock held longer than `lock_timeout_ms` fails the operation with `StoreError`.
    `synchronous="FULL"` (the default) also survives a power loss; `"NORMAL"` is faster and still
    loses nothing when only the process dies.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: str = "FULL",
        lease_ms: float = 15_000,
        lock_timeout_ms: float = 10_000,
    ) -> None:
        level = synchronous.upper()
        if level not in _SYNCHRONOUS:
            raise ConfigError(
                f"synchronous must be one of {', '.join(_SYNCHRONOUS)}, got {synchronous!r}"
            )
        if isinstance(lock_timeout_ms, bool) or not lock_timeout_ms > 0:
            raise ConfigError(f"lock_timeout_ms must be > 0, not {lock_timeout_ms!r}")
        super().__init__(lease_ms=lease_ms)
        self.path = os.fspath(path)
        self.lock_timeout_ms = float(lock_timeout_ms)
        self._synchronous = level
        self._conn: sqlite3.Connection | None = None
        self._closed = False
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="toolnexus-sqlite")

    @property
    def name(self) -> str:
        return f"SQLite conversation store {self.path!r}"

    # -- worker-thread side -------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        conn = self._conn
        if conn is not None:
            return conn
        try:
            if self.path != ":memory:":
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            # Autocommit mode: each statement is its own transaction unless BEGIN says otherwise.
            conn = sqlite3.connect(self.path, timeout=_BUSY_S, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise StoreConfigError(f"cannot open {self.name}: {exc}") from exc
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(f"PRAGMA synchronous={self._synchronous}")
            self._migrate(conn)
        except sqlite3.OperationalError as exc:
            conn.close()
            if _busy(exc):
                raise  # retried from the event-loop side
            raise StoreConfigError(f"cannot open {self.name}: {exc}") from exc
        except (sqlite3.Error, StoreError) as exc:
            conn.close()
            if isinstance(exc, StoreError):
                raise
            raise StoreConfigError(f"cannot open {self.name}: {exc}") from exc
        self._conn = conn
        return conn

    def _migrate(self, conn: sqlite3.Connection) -> None:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version == SCHEMA_VERSION:
            return
        if version > SCHEMA_VERSION:
            raise StoreConfigError(
                f"{self.name} has schema version {version}, newer than this toolnexus knows "
                f"({SCHEMA_VERSION}): upgrade toolnexus"
            )
        conn.execute("BEGIN IMMEDIATE")
        try:
            for statement in _SCHEMA:
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            conn.execute("COMMIT")
        except BaseException:
            _roll_back(conn)
            raise

    def _select(self, id: str) -> str | None:
        row = (
            self._connection()
            .execute("SELECT messages FROM conversations WHERE id = ?", (id,))
            .fetchone()
        )
        return None if row is None else row[0]

    def _upsert(self, id: str, payload: str, owner: str | None) -> bool:
        conn = self._connection()
        if owner is None:
            conn.execute(_UPSERT, (id, payload))
            return True
        conn.execute("BEGIN IMMEDIATE")
        try:
            held = conn.execute(
                "SELECT 1 FROM conversation_leases WHERE id = ? AND owner = ?", (id, owner)
            ).fetchone()
            if held is not None:
                conn.execute(_UPSERT, (id, payload))
            conn.execute("COMMIT")
        except BaseException:
            _roll_back(conn)
            raise
        return held is not None

    def _take(self, id: str, owner: str) -> bool:
        now = time.time()
        cursor = self._connection().execute(
            "INSERT INTO conversation_leases (id, owner, expires) VALUES (?, ?, ?)"
            " ON CONFLICT (id) DO UPDATE SET owner = excluded.owner, expires = excluded.expires"
            " WHERE conversation_leases.expires <= ? OR conversation_leases.owner = excluded.owner",
            (id, owner, now + self.lease_ms / 1000, now),
        )
        return cursor.rowcount == 1

    def _extend(self, id: str, owner: str) -> bool:
        cursor = self._connection().execute(
            "UPDATE conversation_leases SET expires = ? WHERE id = ? AND owner = ?",
            (time.time() + self.lease_ms / 1000, id, owner),
        )
        return cursor.rowcount == 1

    def _drop_lease(self, id: str, owner: str) -> None:
        self._connection().execute(
            "DELETE FROM conversation_leases WHERE id = ? AND owner = ?", (id, owner)
        )

    def _drop(self, id: str) -> None:
        self._connection().execute("DELETE FROM conversations WHERE id = ?", (id,))

    def _ids(self) -> list[str]:
        rows = self._connection().execute("SELECT id FROM conversations ORDER BY id").fetchall()
        return [row[0] for row in rows]

    def _close_connection(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # -- event-loop side ----------------------------------------------------------------------

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        give_up = loop.time() + self.lock_timeout_ms / 1000
        while True:
            if self._closed:
                raise StoreError(f"{self.name} is closed")
            try:
                return await loop.run_in_executor(self._worker, fn, *args)
            except sqlite3.OperationalError as exc:
                if not _busy(exc):
                    raise
                if loop.time() >= give_up:
                    raise StoreError(
                        f"{self.name}: the database stayed locked for {self.lock_timeout_ms:g} ms"
                    ) from exc
            await asyncio.sleep(_RETRY_S)

    async def _read(self, id: str) -> str | None:
        return await self._run(self._select, id)

    async def _write(self, id: str, payload: str, owner: str | None) -> bool:
        return await self._run(self._upsert, id, payload, owner)

    async def _acquire(self, id: str, owner: str) -> bool:
        return await self._run(self._take, id, owner)

    async def _renew(self, id: str, owner: str) -> bool:
        return await self._run(self._extend, id, owner)

    async def _release(self, id: str, owner: str) -> None:
        await self._run(self._drop_lease, id, owner)

    async def _remove(self, id: str) -> None:
        await self._run(self._drop, id)

    async def ids(self) -> list[str]:
        """Every stored conversation id, sorted."""
        return await self._run(self._ids)

    async def aclose(self) -> None:
        """Finish queued work, close the database and stop the worker thread. Idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            await asyncio.get_running_loop().run_in_executor(self._worker, self._close_connection)
        finally:
            self._worker.shutdown(wait=False)

    def close(self) -> None:
        """Blocking form of `aclose()`, for code without an event loop."""
        if self._closed:
            return
        self._closed = True
        try:
            self._worker.submit(self._close_connection).result()
        finally:
            self._worker.shutdown(wait=True)

    async def __aenter__(self) -> SQLiteConversationStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def _roll_back(conn: sqlite3.Connection) -> None:
    """End the failed transaction, if SQLite has not ended it already: on a full disk
    (SQLITE_FULL), an I/O error or out of memory it rolls back by itself, and a ROLLBACK then
    would raise `cannot rollback - no transaction is active`, hiding the cause."""
    if conn.in_transaction:
        conn.execute("ROLLBACK")
