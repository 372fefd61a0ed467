"""The values that cross a handle boundary: results, inbox items, post outcomes, views."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from toolnexus.errors import AgentError
from toolnexus.types import Request

__all__ = ["HandleView", "InboxItem", "PostResult", "ResumableRuntime", "SpawnError", "TaskResult"]


class ResumableRuntime(Protocol):
    """The runtime a one-shot `Agent.run` leaves on its result (an `AgentRuntime`)."""

    @property
    def trace(self) -> list[str]: ...

    async def resume(self, answer: Any) -> TaskResult: ...


@dataclass(slots=True)
class TaskResult:
    """The outcome of one handle turn (or of a refused one); `is_error` is false only for
    `done` and `pending`. `turns`/`own_tokens` are the handle's own cumulative counts,
    `total_tokens` its whole subtree's. `output` is a `done` turn's final value: the validated
    value for an agent with an `output_type`, else the text (`None` for other statuses)."""

    text: str
    is_error: bool
    status: str
    pending: Request | None = None
    turns: int = 0
    total_tokens: int = 0
    own_tokens: int = 0
    limit: str | None = None
    runtime: ResumableRuntime | None = None
    output: Any = None

    async def resume(self, answer: Any) -> TaskResult:
        """Continue a `pending` result of `Agent.run` with the host's `Answer`."""
        if self.runtime is None:
            raise AgentError("this result has no runtime to resume (only Agent.run sets one)")
        return await self.runtime.resume(answer)


@dataclass(slots=True, frozen=True)
class InboxItem:
    """One unsolicited message waiting for a handle's next turn.

    `from_` is a handle id, `"external"` or `"clock"`; `channel` is open (`"peer"`, `"timer"`,
    `"external"`, ...). Timer items are coalesced into one line when drained.
    """

    from_: str
    channel: str
    text: str


@dataclass(slots=True, frozen=True)
class PostResult:
    """Whether a `post` or `wake` was accepted; `error` says why not."""

    ok: bool
    error: str | None = None


@dataclass(slots=True, frozen=True)
class SpawnError:
    """A refused spawn; not `toolnexus.SpawnError`: that is an exception.

    A value returned by `spawn`, never raised."""

    error: str


@dataclass(slots=True, frozen=True)
class HandleView:
    """A read-only snapshot of one handle: its state, subtree tokens and inbox length."""

    id: str
    state: str
    tokens: int
    inbox: int
