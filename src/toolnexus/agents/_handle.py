"""`Handle`: one agent instance in a runtime's tree; its pools, turns and scheduling state."""

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

__all__ = ["Handle", "HandleRuntimeState", "HandleState", "HandleTurn", "Pool", "Wake"]

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
class HandleTurn:
    """One running handle turn (not `client/_wire.Turn`, one parsed model answer)."""

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


@dataclass(slots=True, eq=False)
class HandleRuntimeState:
    """What `AgentRuntime` keeps for one handle while it schedules it.

    The runtime alone writes these fields (through its verbs); the rest of `agents/` may read
    them. Nothing here is the host's: a host reads `Handle`'s own attributes.
    """

    spawned: int = 0  # children ever spawned (closed ones count)
    wakes: deque[Wake] = field(default_factory=deque)  # accepted, not yet admitted
    waiters: list[asyncio.Future[TaskResult]] = field(default_factory=list)
    turn: HandleTurn | None = None  # the running turn
    queued: bool = False  # waiting in the parent's FIFO for a concurrency slot
    fifo: deque[Handle] = field(default_factory=deque)  # children waiting for a slot here
    active_children: int = 0  # children whose turn holds one of this handle's slots
    closing: asyncio.Future[None] | None = None  # set while (and after) closing
    toolkit: Toolkit | None = None  # the tools its turns see
    on_spawn: Any = None  # an awaitable from an async on_spawn, awaited before turn 1
    checkpoint: str | None = None  # a durably parked turn's input, for its replay
    checkpoint_spawns: list[tuple[str, Handle]] = field(default_factory=list)
    checkpoint_drained: list[InboxItem] = field(default_factory=list)
    replay_answers: list[Answer] = field(default_factory=list)  # to give the replay again


class Handle:
    """A live agent instance: its state, inbox, children, usage and remaining pools.

    Ids are `<parent id>/<def name>.<n>`; the store keeps one transcript per handle under
    `conv_id` (= `id`). Read the attributes; change a handle only through the runtime's verbs.
    `runtime_state` is the runtime's own scheduling state (`HandleRuntimeState`).
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
        self.runtime_state = HandleRuntimeState()

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
        """Suspended with no turn running: parked until `resume` answers its request."""
        return self.state == "suspended" and self.runtime_state.turn is None

    @property
    def closed_or_closing(self) -> bool:
        """Closed, or being closed: it takes no more work."""
        return self.state == "closed" or self.runtime_state.closing is not None

    @property
    def at_rest(self) -> bool:
        """Idle, with no wake of its own accepted and not yet admitted."""
        state = self.runtime_state
        return self.state == "idle" and not state.wakes and not state.queued

    def __repr__(self) -> str:
        return f"<Handle {self.id} {self.state}>"
