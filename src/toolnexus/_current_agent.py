"""Which agent the running code works for: set by `toolnexus.agents` around each agent turn,
read by hooks, `on_metric` callbacks, tools and the OpenTelemetry spans of that turn.

It lives below the client (standard library only) so the client's loop and `_otel` can read it
without importing the agents package; `toolnexus.agents` re-exports `current_agent`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass

__all__ = ["AgentIdentity", "agent_scope", "current_agent"]


@dataclass(slots=True, frozen=True)
class AgentIdentity:
    """An agent turn's identity: the agent's `name` and its runtime handle's `id`
    (`root/coordinator.1/explore.2`)."""

    name: str
    id: str


_CURRENT: ContextVar[AgentIdentity | None] = ContextVar("toolnexus_current_agent", default=None)


def current_agent() -> AgentIdentity | None:
    """The agent whose turn is running in this context, or `None` outside agent turns.

    Hooks, `on_metric` callbacks and tools called during an agent turn see that turn's agent
    (the innermost one when agents delegate); the metric events themselves stay unchanged.
    """
    return _CURRENT.get()


@contextlib.contextmanager
def agent_scope(name: str, handle_id: str) -> Iterator[AgentIdentity]:
    """Run a block as the turn of agent `name` on handle `handle_id`."""
    identity = AgentIdentity(name, handle_id)
    token = _CURRENT.set(identity)
    try:
        yield identity
    finally:
        _CURRENT.reset(token)
