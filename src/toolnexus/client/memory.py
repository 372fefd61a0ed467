"""Conversation memory: the `ConversationStore` protocol, two stores, and per-id locking.

`Client.ask(id=...)` loads a transcript with `get`, runs, and writes it back with `save`; the
client holds `KeyedLock.hold(id)` around the three so concurrent asks on one id never lose a turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sqlite3
from collections.abc import AsyncIterator, Hashable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from toolnexus._json import to_compact_json

__all__ = [
    "ConversationStore",
    "InMemoryConversationStore",
    "KeyedLock",
    "SQLiteConversationStore",
]

Messages = list[dict[str, Any]]


@runtime_checkable
class ConversationStore(Protocol):
    """Where `ask(id=...)` keeps transcripts: two async methods, keyed by conversation id."""

    async def get(self, id: str) -> list[dict[str, Any]] | None:
        """The saved transcript of `id`, or `None` when there is none."""
        ...

    async def save(self, id: str, messages: list[dict[str, Any]]) -> None:
        """Replace the transcript of `id` with `messages`."""
        ...


def _copy(value: Any) -> Any:
    """Copy the containers of JSON-shaped data (dicts and lists); leave the leaves shared."""
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


class InMemoryConversationStore:
    """The default store: a dict living as long as the client.

    `get` and `save` copy every list and dict, so mutating a saved or returned transcript never
    changes what the store holds.
    """

    def __init__(self) -> None:
        self._conversations: dict[str, Messages] = {}

    async def get(self, id: str) -> Messages | None:
        messages = self._conversations.get(id)
        return None if messages is None else _copy(messages)

    async def save(self, id: str, messages: Messages) -> None:
        self._conversations[id] = [_copy(m) for m in messages]

    async def delete(self, id: str) -> None:
        """Forget the transcript of `id` (no error when there is none)."""
        self._conversations.pop(id, None)


_SYNCHRONOUS = ("OFF", "NORMAL", "FULL", "EXTRA")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS conversations (
    id TEXT PRIMARY KEY,
    messages TEXT NOT NULL
) WITHOUT ROWID
"""


class SQLiteConversationStore:
    """A durable store in one SQLite file (WAL mode), one row of compact JSON per conversation.

    Every save replaces the whole transcript of its id in one transaction, so a reader or a crash
    sees the old transcript or the new one, never a mix. All SQLite work runs on one dedicated
    worker thread (never on the event loop); calls from many tasks queue there in order.
    `synchronous="FULL"` (the default) also survives a power loss; `"NORMAL"` is faster and still
    loses nothing when only the process dies.
    """

    def __init__(self, path: str | os.PathLike[str], *, synchronous: str = "FULL") -> None:
        level = synchronous.upper()
        if level not in _SYNCHRONOUS:
            raise ValueError(
                f"synchronous must be one of {', '.join(_SYNCHRONOUS)}, got {synchronous!r}"
            )
        self.path = os.fspath(path)
        self._synchronous = level
        self._conn: sqlite3.Connection | None = None
        self._closed = False
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="toolnexus-sqlite")

    # -- worker-thread side -------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        conn = self._conn
        if conn is None:
            try:
                if self.path != ":memory:":
                    Path(self.path).parent.mkdir(parents=True, exist_ok=True)
                # Autocommit mode: each statement below is its own transaction.
                conn = sqlite3.connect(self.path, timeout=30, isolation_level=None)
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute(f"PRAGMA synchronous={self._synchronous}")
                conn.execute(_SCHEMA)
            except (OSError, sqlite3.Error) as exc:
                raise sqlite3.OperationalError(
                    f"cannot open SQLite conversation store {self.path!r}: {exc}"
                ) from exc
            self._conn = conn
        return conn

    def _get(self, id: str) -> Messages | None:
        row = (
            self._connection()
            .execute("SELECT messages FROM conversations WHERE id = ?", (id,))
            .fetchone()
        )
        if row is None:
            return None
        messages: Messages = json.loads(row[0])
        return messages

    def _save(self, id: str, payload: str) -> None:
        self._connection().execute(
            "INSERT INTO conversations (id, messages) VALUES (?, ?)"
            " ON CONFLICT (id) DO UPDATE SET messages = excluded.messages",
            (id, payload),
        )

    def _delete(self, id: str) -> None:
        self._connection().execute("DELETE FROM conversations WHERE id = ?", (id,))

    def _ids(self) -> list[str]:
        rows = self._connection().execute("SELECT id FROM conversations ORDER BY id").fetchall()
        return [row[0] for row in rows]

    def _close_connection(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # -- event-loop side ----------------------------------------------------------------------

    async def _run(self, fn: Any, *args: Any) -> Any:
        if self._closed:
            raise RuntimeError("SQLiteConversationStore is closed")
        return await asyncio.get_running_loop().run_in_executor(self._worker, fn, *args)

    async def get(self, id: str) -> Messages | None:
        result: Messages | None = await self._run(self._get, id)
        return result

    async def save(self, id: str, messages: Messages) -> None:
        # Serialised here, before any await: the stored transcript is the one passed in, even if
        # the caller changes its list while the write is queued.
        await self._run(self._save, id, to_compact_json(list(messages)))

    async def delete(self, id: str) -> None:
        """Forget the transcript of `id` (no error when there is none)."""
        await self._run(self._delete, id)

    async def ids(self) -> list[str]:
        """Every stored conversation id, sorted."""
        result: list[str] = await self._run(self._ids)
        return result

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


class _Entry:
    __slots__ = ("lock", "users")

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.users = 0  # tasks holding or waiting for `lock`


class KeyedLock:
    """One asyncio lock per key, created on demand and dropped when nobody holds or awaits it.

    `async with locks.hold(id): ...` serialises work on the same id; different ids run
    concurrently. Memory stays proportional to the ids in use right now.
    """

    def __init__(self) -> None:
        self._entries: dict[Hashable, _Entry] = {}

    @contextlib.asynccontextmanager
    async def hold(self, key: Hashable) -> AsyncIterator[None]:
        """Hold the lock of `key` for the `async with` block."""
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = _Entry()
        entry.users += 1
        try:
            async with entry.lock:
                yield
        finally:
            entry.users -= 1
            if entry.users == 0:
                del self._entries[key]

    def __len__(self) -> int:
        """How many keys are held or awaited right now."""
        return len(self._entries)
