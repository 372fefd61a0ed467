"""Where a tool call records the remote task it is waiting on, so another process can resume it.

A call that a server answers with a task (an MCP task, an A2A task) records the task's reference
here while it waits; a durable run (`durable/`) installs a ledger around each tool step that
keeps the reference in its database, so the process that recovers the step finds it and resumes
waiting on the same task instead of calling again. Outside such a step there is no ledger and
nothing is recorded. This module is the seam between the two: it imports nothing of either.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol

__all__ = ["TaskLedger", "current_ledger", "ledger"]


class TaskLedger(Protocol):
    """The record of one tool call's remote task."""

    async def recall(self) -> Mapping[str, Any] | None:
        """The reference recorded for this call (by an earlier attempt), or `None`."""

    async def record(self, reference: Mapping[str, Any] | None) -> None:
        """Record `reference` (plain JSON data) for this call; `None` once it is done."""


_LEDGER: ContextVar[TaskLedger | None] = ContextVar("toolnexus_task_ledger", default=None)


def current_ledger() -> TaskLedger | None:
    """The ledger of the tool call running now, if any."""
    return _LEDGER.get()


@contextmanager
def ledger(book: TaskLedger | None) -> Iterator[None]:
    """Make `book` the ledger of the tool call run inside the block."""
    token = _LEDGER.set(book)
    try:
        yield
    finally:
        _LEDGER.reset(token)
