"""A2A task stores: where the inbound agent keeps its Task dicts (memory or one file per task)."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import os
import tempfile
from collections import OrderedDict
from typing import Any, Protocol, runtime_checkable

from toolnexus._json import compact_json
from toolnexus.types import sanitize

__all__ = [
    "FINISHED_STATES",
    "FileTaskStore",
    "InMemoryTaskStore",
    "TaskStore",
    "resolve_store",
]

# States after which a task never changes again (input-required still waits for a reply).
FINISHED_STATES = frozenset({"completed", "failed", "canceled", "rejected"})


@runtime_checkable
class TaskStore(Protocol):
    """Persistence for A2A Task dicts, keyed by `task["id"]`."""

    async def get(self, id: str) -> dict[str, Any] | None: ...

    async def save(self, task: dict[str, Any]) -> None: ...


def _state(task: dict[str, Any]) -> str | None:
    status = task.get("status")
    return status.get("state") if isinstance(status, dict) else None


class InMemoryTaskStore:
    """Tasks in a dict for the life of the process, at most `max_tasks` of them.

    Over the cap, the oldest finished task is evicted first; only when no task has finished
    does the oldest task go. Reads and writes copy, so callers never share a stored dict.
    """

    def __init__(self, max_tasks: int = 10_000) -> None:
        if max_tasks < 1:
            raise ValueError("max_tasks must be at least 1")
        self.max_tasks = max_tasks
        self._tasks: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._finished: OrderedDict[str, None] = OrderedDict()

    def __len__(self) -> int:
        return len(self._tasks)

    async def get(self, id: str) -> dict[str, Any] | None:
        task = self._tasks.get(id)
        return copy.deepcopy(task) if task is not None else None

    async def save(self, task: dict[str, Any]) -> None:
        id = str(task["id"])
        self._tasks[id] = copy.deepcopy(task)
        if _state(task) in FINISHED_STATES:
            self._finished[id] = None
            self._finished.move_to_end(id)
        else:
            self._finished.pop(id, None)
        while len(self._tasks) > self.max_tasks:
            if self._finished:
                victim, _ = self._finished.popitem(last=False)
                del self._tasks[victim]
            else:
                victim, _ = self._tasks.popitem(last=False)


class FileTaskStore:
    """One JSON file per task, `<dir>/<sanitize(id)>.json`, written atomically.

    Writes go to a temporary file that is then renamed over the target, so a concurrent reader
    sees the old or the new task, never half of one. A missing or unreadable file reads as
    `None`. File I/O runs in worker threads, off the event loop.
    """

    def __init__(self, dir: str | os.PathLike[str]) -> None:
        self.dir = os.fspath(dir)
        os.makedirs(self.dir, exist_ok=True)

    def _path(self, id: str) -> str:
        return os.path.join(self.dir, f"{sanitize(id)}.json")

    async def get(self, id: str) -> dict[str, Any] | None:
        return await asyncio.to_thread(self._read, self._path(id))

    async def save(self, task: dict[str, Any]) -> None:
        data = compact_json(task).encode("utf-8")
        await asyncio.to_thread(self._write, self._path(str(task["id"])), data)

    @staticmethod
    def _read(path: str) -> dict[str, Any] | None:
        try:
            with open(path, "rb") as fh:
                task = json.loads(fh.read())
        except (OSError, ValueError):
            return None
        return task if isinstance(task, dict) else None

    def _write(self, path: str, data: bytes) -> None:
        os.makedirs(self.dir, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=".task-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise


def resolve_store(store: Any) -> TaskStore:
    """The task store an `a2a["store"]` value names (see the table in serve.md §3.5)."""
    if store is None or store == "memory":
        return InMemoryTaskStore()
    if isinstance(store, str):
        if store.startswith("file:") and len(store) > len("file:"):
            return FileTaskStore(store[len("file:") :])
        raise ValueError(f'Unknown A2A store: "{store}" (expected "memory" or "file:<dir>")')
    return store  # type: ignore[no-any-return]
