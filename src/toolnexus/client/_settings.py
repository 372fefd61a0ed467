"""What a run takes from its client: the options, the model's endpoint and the memory."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolnexus.client._endpoint import Endpoint
    from toolnexus.client._events import MetricEvent
    from toolnexus.client._hooks import Hooks
    from toolnexus.client._model_settings import ModelSettings
    from toolnexus.client._output import OutputSpec
    from toolnexus.client._parts import PartPolicy
    from toolnexus.client._results import UsageLimits
    from toolnexus.client.memory import ConversationStore, KeyedLock

__all__ = ["RunSettings"]


@dataclass(slots=True)
class RunSettings:
    """A snapshot of the client's options for one run (or one `translate`).

    The loop and `translate` read these, never the `Client`: a client's public attributes
    (`model`, `system_prompt`, `max_turns`, ...) may change between runs, not during one.
    """

    endpoint: Endpoint
    model: str
    system_prompt: str | None
    max_turns: int
    hooks: Hooks | None
    timeout_ms: float | None
    wait_for: Callable[..., Any] | None
    tool_concurrency: int
    parts: PartPolicy
    store: ConversationStore
    locks: KeyedLock
    emit: Callable[[MetricEvent], None]
    output: OutputSpec | None = None  # the run's typed result, when it asks for one
    output_retries: int = 1  # re-asks after an answer that does not validate
    usage_limits: UsageLimits | None = None  # token and tool-call caps, checked live
    raise_on_limit: bool = False  # a limit raises `UsageLimitExceeded` instead of ending the run
    deps: Any = None  # handed to every tool call as `ctx.deps` and to hooks as `deps`
    model_settings: ModelSettings | None = None  # the client's, overridden by the run's
    tool_search: str | None = "auto"  # how deferred tools are found (docs/tools-search.md)
