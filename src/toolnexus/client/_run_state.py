"""What the steps of one run share: its tally (`RunState`) and how it ends (`RunEnd`, `AGAIN`).

Each step of the loop (`_model_turn`, `_output_turn`, `_tool_turn`) returns a `RunEnd` when the
run is over, `AGAIN` when the model is to be asked again at once, or `None` to go on to the
next step.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, TypeAlias

from toolnexus.client._results import empty_usage

if TYPE_CHECKING:
    from toolnexus.client._results import ModelTurn, UsageLimits

__all__ = ["AGAIN", "Again", "Next", "RunEnd", "RunState"]


@dataclass(slots=True)
class RunEnd:
    """How a run ended: its `RunResult` `status`, the `limit` that stopped it, its `text`."""

    status: str  # "done", "incomplete", "refused" or "pending"
    limit: str | None  # the limit an `incomplete` run reached, else `None`
    text: str  # the last answer's text (a suspension's prompt for `pending`)


class Again(enum.Enum):
    """The step's answer when the model is to be asked again with no tool turn between."""

    AGAIN = "again"


AGAIN: Final = Again.AGAIN

Next: TypeAlias = "RunEnd | Again | None"
"""What a step returns: the run's end, `AGAIN`, or `None` (on to the next step)."""


class RunState:
    """The tally of one run, which the steps add to and the `RunResult` reports."""

    __slots__ = ("finished", "model", "model_turns", "records", "turns", "usage", "usage_seen")

    def __init__(self, model: str) -> None:
        self.usage = empty_usage()
        self.usage_seen = False  # a call reported usage (a streamed run then sends a `usage` event)
        self.turns = 0
        self.model_turns: list[ModelTurn] = []  # why each model call ended, what it reasoned
        self.records: list[dict[str, Any]] = []  # the tool calls run, as `RunResult.tool_calls`
        self.model = model  # the model last sent (a `before_llm` hook may change it)
        self.finished = False  # the `run` event is out: nothing may be reported after it

    def over_limit(self, limits: UsageLimits | None, calls: int) -> str | None:
        """The usage limit the run would pass by going on (with `calls` more tool calls)."""
        if limits is None:
            return None
        if limits.total_tokens is not None and self.usage["total_tokens"] > limits.total_tokens:
            return "total_tokens"
        if (
            limits.request_tokens is not None
            and self.usage["prompt_tokens"] > limits.request_tokens
        ):
            return "request_tokens"
        if limits.tool_calls is not None and len(self.records) + calls > limits.tool_calls:
            return "tool_calls"
        return None
