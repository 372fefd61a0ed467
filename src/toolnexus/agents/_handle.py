"""`Handle`: one spawned agent instance in a runtime's tree, and its remaining pools."""

from __future__ import annotations

import asyncio
import contextvars
import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from toolnexus.agents._defs import AgentDef, Budget
from toolnexus.agents._results import InboxItem, TaskResult
from toolnexus.types import Answer, Request

if TYPE_CHECKING:
    from toolnexus.agents._sources import TurnLedger
    from toolnexus.toolkit import Toolkit

__all__ = ["Handle", "HandleState", "Pool", "Turn", "Wake"]

HandleState = Literal["idle", "running", "suspended", "closed"]


@dataclass(slots=True)
class Pool:
    """What a handle may still spend: tokens, tool calls, children (`inf` = unlimited)."""

    tokens: float = math.inf
    tool_calls: float = math.inf
    children: float = math.inf


@dataclass(slots=True, eq=False)
class Wake:
    """One accepted wake waiting for admission; `future` gets that turn's result."""

    prompt: str | None
    future: asyncio.Future[TaskResult]
    replay: str | None = None  # a durable turn's preserved input, replayed as is
    answers: list[Answer] = field(default_factory=list)
    wait_for: Callable[..., Any] | None = None  # an interpreter for this turn only
    # The waker's context: the turn runs in it, so its spans are children of the span that
    # woke it (the delegating `task` call), even when admission comes later from a queue.
    context: contextvars.Context = field(default_factory=contextvars.copy_context)


@dataclass(slots=True, eq=False)
class Turn:
    """One running handle turn."""

    wake: Wake
    input: str
    drained: list[InboxItem]
    cancel: asyncio.Event
    abort: str | None = None  # "interrupted", "close" or "wall" once an abort was asked for
    task: asyncio.Task[None] | None = None
    timer: Any = None
    ledger: TurnLedger | None = None  # what the turn's LLM and tool calls spent so far
    spawns: list[tuple[str, Handle]] = field(default_factory=list)
    reattach: list[tuple[str, Handle]] | None = None  # the suspended turn's, while replaying
    answers: list[Answer] = field(default_factory=list)
    used: list[Answer] = field(default_factory=list)  # replay answers handed out so far


class Handle:
    """A live agent instance: its state, inbox, children, usage and remaining pools.

    Ids are `<parent id>/<def name>.<n>`; the store keeps one transcript per handle under
    `conv_id` (= `id`). Read the attributes; change a handle only through the runtime's verbs.
    """

    def __init__(
        self,
        id: str,
        defn: AgentDef,
        parent: Handle | None,
        *,
        spawned_at: float = 0.0,
        budget: Budget | None = None,
        pool: Pool | None = None,
    ) -> None:
        self.id = id
        self.defn = defn
        self.parent = parent
        self.depth: int = 0 if parent is None else parent.depth + 1
        self.state: HandleState = "idle"
        self.inbox: list[InboxItem] = []
        self.children: list[Handle] = []
        self.usage_total = 0
        self.own_total = 0
        self.turns_total = 0
        self.pool = pool if pool is not None else Pool()
        self.pending_req: Request | None = None
        self.last_result: TaskResult | None = None
        self.budget = budget if budget is not None else (defn.budget or Budget())
        self.spawned_at = spawned_at
        self._spawned = 0  # children ever spawned (closed ones count)
        self._wakes: deque[Wake] = deque()
        self._waiters: list[asyncio.Future[TaskResult]] = []
        self._turn: Turn | None = None
        self._queued = False  # waiting in the parent's FIFO for a concurrency slot
        self._fifo: deque[Handle] = deque()
        self._active_children = 0
        self._closing: asyncio.Future[None] | None = None  # set while (and after) closing
        self._toolkit: Toolkit | None = None
        self._on_spawn: Any = None  # an awaitable from an async on_spawn, awaited before turn 1
        self._checkpoint: str | None = None  # a durable turn's input, for its replay
        self._checkpoint_spawns: list[tuple[str, Handle]] = []
        self._checkpoint_drained: list[InboxItem] = []
        self._replay_answers: list[Answer] = []

    @property
    def conv_id(self) -> str:
        """The conversation id of this handle's transcript in the runtime's store (its id)."""
        return self.id

    def chain(self) -> list[Handle]:
        """This handle and its ancestors, root last."""
        out: list[Handle] = []
        node: Handle | None = self
        while node is not None:
            out.append(node)
            node = node.parent
        return out

    @property
    def durably_suspended(self) -> bool:
        return self.state == "suspended" and self._turn is None

    def __repr__(self) -> str:
        return f"<Handle {self.id} {self.state}>"
