"""The journaling seam: how a durable engine makes each model call and tool call of a run a step.

A run takes the `RunSteps` installed by `journal(steps)` in its context when it starts; with none
(the default) the loop calls the model and the tools directly and pays nothing for the seam.
`toolnexus.durable` installs one that runs each call as a DBOS step, so a run replayed after a
crash gets the recorded answers back instead of calling again; another engine plugs in the same
way. What runs outside the steps (hooks, the loop's own logic) runs again on a replay, so it must
be deterministic.

Tool steps are drawn in call order, before a turn's calls start (they then run concurrently):
an engine that numbers its steps gets the same numbers on every replay.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from toolnexus.client._wire import Turn
    from toolnexus.types import ToolResult

__all__ = ["RunSteps", "ToolStep", "current_steps", "journal"]

ToolStep = Callable[[Callable[[], Awaitable["ToolResult"]]], Awaitable["ToolResult"]]
"""Runs one tool call (the function it is given) as a step and returns its result."""


class RunSteps(Protocol):
    """What a durable engine provides to journal one run."""

    @property
    def wait_for(self) -> Callable[..., Any] | None:
        """Replaces the client's `wait_for` for the run (a durable wait); `None` keeps it."""
        ...

    async def model_call(self, call: Callable[[], Awaitable[Turn]]) -> Turn:
        """Run one model call (`call()`, with its retries) as a step; return its turn."""
        ...

    def tool_call(self, name: str) -> ToolStep:
        """The step one call of tool `name` will run in; drawn in call order."""
        ...


_current: ContextVar[RunSteps | None] = ContextVar("toolnexus_run_steps", default=None)


def current_steps() -> RunSteps | None:
    """The steps runs started in this context journal through, if any."""
    return _current.get()


@contextlib.contextmanager
def journal(steps: RunSteps | None) -> Iterator[None]:
    """Runs started inside the block journal their calls through `steps` (`None`: not at all,
    as inside a step, so a run a tool starts is not journaled into its caller's steps)."""
    token = _current.set(steps)
    try:
        yield
    finally:
        _current.reset(token)
