"""A2A task stores: where the inbound agent keeps its tasks (memory, one file per task, or yours).

A task is a JSON object in the A2A 1.0 form: `id`, `contextId`, `status` (`state` such as
`"TASK_STATE_WORKING"`, `message`, `timestamp`), `artifacts`, `history`. The endpoint renders it
in each peer's dialect on the way out; stores only keep and find it.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import copy
import json
import os
import tempfile
from collections import OrderedDict
from collections.abc import Iterable
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from toolnexus.a2a._wire import dumps, state_name
from toolnexus.errors import ConfigError
from toolnexus.types import sanitize

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "FINISHED_STATES",
    "FileTaskStore",
    "InMemoryTaskStore",
    "TaskPage",
    "TaskStore",
    "decode_page_token",
    "encode_page_token",
    "page_of",
    "resolve_local_store",
    "task_order_key",
    "task_owner",
]

# States after which a task never changes again (input-required still waits for a reply).
FINISHED_STATES = frozenset({"completed", "failed", "canceled", "rejected"})
DEFAULT_PAGE_SIZE = 50

_Tasks = list[dict[str, Any]]
TaskPage = tuple[_Tasks, str, int]


@runtime_checkable
class TaskStore(Protocol):
    """Persistence for A2A tasks (JSON objects keyed by `task["id"]`, in the 1.0 form).

    What an implementation must guarantee:

    - `get(id)` returns the task exactly as last saved — the same JSON value (non-ASCII text,
      nesting, key order of no importance, numbers as given) — as a fresh object the caller may
      mutate, or `None` when the id is unknown. A stored value that cannot be read back (corrupt
      row or file) reads as `None` rather than raising.
    - `save(task)` stores `task` under `task["id"]`, replacing any earlier version, and must not
      keep a reference to the caller's object. A save is atomic: a concurrent or later `get`
      sees the old task or the new one, never a mix. Once `save` returns, a persistent store
      has the task durably (it survives a crash of this process). Saves of one task are
      serialised by the caller; saves of different tasks may run concurrently.
    - Both may raise on a real failure (connection lost, disk full); the endpoint answers that
      request with a JSON-RPC internal error and goes on.
    - `list` is optional (without it, `ListTasks` answers "unsupported operation"). With it:
      `list(*, context_id=None, state=None, updated_after=None, page_size=50, page_token=None)`
      returns `(tasks, next_page_token, total)`. Filters: `context_id` equal to the task's
      `contextId`; `state` in toolnexus spelling (`"working"`, `"input-required"`...) equal to
      the task's state whatever its spelling; `updated_after` an ISO 8601 timestamp strictly
      before the task's `status.timestamp`. Order: `status.timestamp` newest first, ties by
      `id` descending (a task without a timestamp sorts last). `total` counts every match.
      `page_token` is the opaque string from a previous page: the next page starts right after
      the position it encodes (so it stays valid when tasks are added or change); `None` or
      `""` means the first page; an undecodable token raises `ValueError`.
      `next_page_token` is `""` on the last page. `encode_page_token`, `decode_page_token` and
      `task_order_key` give a store the same cursor format; `page_of` does it all in memory.
    - Ownership: a task may carry `"owner"` (a string naming the identity that created it; see
      `task_owner`). The endpoint passes `list(..., owner=<identity>)` and a store that takes
      `owner` lists only that identity's tasks, a task without `"owner"` counting as owned by
      `""` (the identity of an unauthenticated or static-token caller). A store whose `list`
      takes no `owner` cannot keep callers apart: `ListTasks` then answers "unsupported".
    - A store shared by replicas may also offer what `PostgresTaskStore` and `RedisTaskStore`
      do: `running_elsewhere(id)` (another live replica runs the task, so it is not orphaned),
      `watch(id)` (an async context manager whose `wait(timeout)` says when another replica
      saved the task: cancels and subscriptions then reach across replicas), `lease_ms` (how
      long a dead replica's task may still read as running) and `ping()` (for `/readyz`).
    """

    async def get(self, id: str) -> dict[str, Any] | None: ...

    async def save(self, task: dict[str, Any]) -> None: ...


def _status(task: dict[str, Any]) -> dict[str, Any]:
    status = task.get("status")
    return status if isinstance(status, dict) else {}


def _state(task: dict[str, Any]) -> str:
    return state_name(_status(task).get("state"))


def _timestamp(task: dict[str, Any]) -> str:
    stamp = _status(task).get("timestamp")
    return stamp if isinstance(stamp, str) else ""


def task_owner(task: dict[str, Any]) -> str:
    """The identity that owns `task`: its `"owner"`, `""` when it has none (an unauthenticated
    or static-token caller's task, or one stored before tasks recorded their owner)."""
    owner = task.get("owner")
    return owner if isinstance(owner, str) else ""


def task_order_key(task: dict[str, Any]) -> tuple[str, str]:
    """The sort key of the listing order; sort descending (newest first, then id descending)."""
    return (_timestamp(task), str(task.get("id", "")))


def encode_page_token(key: tuple[str, str]) -> str:
    """The opaque cursor for "after the task with this `task_order_key`"."""
    raw = json.dumps(list(key), separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_page_token(token: str) -> tuple[str, str]:
    """The position a cursor encodes; `ValueError` when it is not one of ours."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        key = json.loads(raw.decode("utf-8"))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise ValueError(f"invalid page token: {token!r}") from None
    if not (isinstance(key, list) and len(key) == 2 and all(isinstance(k, str) for k in key)):
        raise ValueError(f"invalid page token: {token!r}")
    return (key[0], key[1])


def _instant(stamp: str) -> datetime | None:
    try:
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


def page_of(
    tasks: Iterable[dict[str, Any]],
    *,
    context_id: str | None = None,
    state: str | None = None,
    updated_after: str | None = None,
    page_size: int = DEFAULT_PAGE_SIZE,
    page_token: str | None = None,
    owner: str | None = None,
) -> TaskPage:
    """One page of `tasks` by the `TaskStore.list` rules (the tasks are not copied); `owner`
    (when not `None`) keeps only that identity's tasks."""
    after = decode_page_token(page_token) if page_token else None
    since = _instant(updated_after) if updated_after else None
    if updated_after and since is None:
        raise ValueError(f"invalid timestamp: {updated_after!r}")
    wanted = state_name(state) if state is not None else None
    matches = []
    for task in tasks:
        if owner is not None and task_owner(task) != owner:
            continue
        if context_id is not None and task.get("contextId") != context_id:
            continue
        if wanted is not None and _state(task) != wanted:
            continue
        if since is not None:
            moment = _instant(_timestamp(task))
            if moment is None or moment <= since:
                continue
        matches.append(task)
    matches.sort(key=task_order_key, reverse=True)
    start = 0
    if after is not None:
        start = len(matches)
        for index, task in enumerate(matches):
            if task_order_key(task) < after:
                start = index
                break
    page = matches[start : start + max(page_size, 0)]
    more = start + len(page) < len(matches)
    next_token = encode_page_token(task_order_key(page[-1])) if more and page else ""
    return page, next_token, len(matches)


class InMemoryTaskStore:
    """Tasks in a dict for the life of the process, at most `max_tasks` of them.

    Over the cap, the oldest finished task is evicted first; only when no task has finished
    does the oldest task go. Reads and writes copy, so callers never share a stored dict.
    """

    def __init__(self, max_tasks: int = 10_000) -> None:
        if max_tasks < 1:
            raise ConfigError("max_tasks must be at least 1")
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
                self._tasks.popitem(last=False)

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
        page, token, total = page_of(
            self._tasks.values(),
            context_id=context_id,
            state=state,
            updated_after=updated_after,
            page_size=page_size,
            page_token=page_token,
            owner=owner,
        )
        return [copy.deepcopy(task) for task in page], token, total


class FileTaskStore:
    """One compact-JSON file per task, `<dir>/<sanitize(id)>.json`, written atomically.

    Writes go to a temporary file in `dir` that is flushed to disk and renamed over the target,
    so a reader sees the old or the new task, never half of one, and a finished save survives a
    crash. A missing or unreadable file reads as `None`. File I/O runs in worker threads.
    """

    def __init__(self, dir: str | os.PathLike[str]) -> None:
        self.dir = os.fspath(dir)
        os.makedirs(self.dir, exist_ok=True)

    def _path(self, id: str) -> str:
        return os.path.join(self.dir, f"{sanitize(id)}.json")

    async def get(self, id: str) -> dict[str, Any] | None:
        task = await asyncio.to_thread(self._read, self._path(id))
        # Distinct ids may share a sanitised file name: only the right task answers.
        return task if task is not None and str(task.get("id")) == id else None

    async def save(self, task: dict[str, Any]) -> None:
        data = dumps(task)
        await asyncio.to_thread(self._write, self._path(str(task["id"])), data)

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
        tasks = await asyncio.to_thread(self._read_all)
        return page_of(
            tasks,
            context_id=context_id,
            state=state,
            updated_after=updated_after,
            page_size=page_size,
            page_token=page_token,
            owner=owner,
        )

    def _read_all(self) -> _Tasks:
        try:
            names = os.listdir(self.dir)
        except OSError:
            return []
        tasks = []
        for name in names:
            if name.endswith(".json") and not name.startswith("."):
                task = self._read(os.path.join(self.dir, name))
                if task is not None and "id" in task:
                    tasks.append(task)
        return tasks

    @staticmethod
    def _read(path: str) -> dict[str, Any] | None:
        try:
            with open(path, "rb") as fh:
                task = json.loads(fh.read())
        except (OSError, ValueError, RecursionError):
            return None
        return task if isinstance(task, dict) else None

    def _write(self, path: str, data: bytes) -> None:
        os.makedirs(self.dir, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=".task-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        with contextlib.suppress(OSError):  # make the rename itself durable
            dir_fd = os.open(self.dir, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)


def resolve_local_store(store: Any = None) -> TaskStore:
    """The in-process task store an `a2a["store"]` value names: `None`/`"memory"`,
    `"file:<dir>"`, or any object with async `get`/`save` (optionally `list`). The public
    `resolve_store` (`_stores.py`) adds the shared stores, PostgreSQL and Redis."""
    if store is None or store == "memory":
        return InMemoryTaskStore()
    if isinstance(store, str):
        if store.startswith("file:") and len(store) > len("file:"):
            return FileTaskStore(store[len("file:") :])
        raise ConfigError(f'Unknown A2A store: "{store}" (expected "memory" or "file:<dir>")')
    return store  # type: ignore[no-any-return]
