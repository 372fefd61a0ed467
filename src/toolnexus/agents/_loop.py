"""`Loop`: one agent's soul, guardrails and completion gate on a client, without a runtime."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from toolnexus.agents._constants import LIMIT_COMPLETION, TASK_STATUS_DONE
from toolnexus.agents._harness import guarded_hooks, run_gated
from toolnexus.client import Client, create_client
from toolnexus.errors import ConfigTypeError

if TYPE_CHECKING:
    from toolnexus.agents._defs import Budget
    from toolnexus.client import RunResult
    from toolnexus.client._options import ClientChanges
    from toolnexus.toolkit import Toolkit

__all__ = ["Loop", "LoopAgent", "Outcome", "RunOptions"]


@dataclass(slots=True, frozen=True)
class RunOptions:
    """What may vary per `Loop.run` call: the model for that call only."""

    model: str = ""


class LoopAgent(Protocol):
    """What a `Loop` reads from the agent it runs (an `Agent`)."""

    budget: Budget | None
    model: str | None
    wait_for: Callable[..., Any] | None
    on_metric: Callable[[dict[str, Any]], Any] | None
    hooks: Any
    guardrails: list[Any]
    completion: Any
    output_type: Any

    def session_soul(self) -> str: ...


@dataclass(slots=True)
class Outcome:
    """What one `Loop.run` ended with; `stopped_by` is empty when done."""

    text: str = ""
    status: str = "done"
    stopped_by: str = ""
    attempts: int = 0
    turns: int = 0
    result: Any = None


class Loop:
    """Runs one agent on a client loop (built once): a fresh transcript per `run`."""

    def __init__(
        self, agent: LoopAgent, options: Mapping[str, Any] | Client, toolkit: Toolkit | None
    ) -> None:
        self.agent = agent
        self.toolkit = toolkit
        self._status = "idle"
        self._turns = 0
        soul = agent.session_soul()
        max_turns = agent.budget.max_turns if agent.budget is not None else None
        if isinstance(options, Client):
            changes: ClientChanges = {
                "output_type": agent.output_type,
                "hooks": guarded_hooks(agent.guardrails, agent.hooks or options.hooks),
            }
            if soul:
                changes["system_prompt"] = soul
            if agent.model and agent.model != "inherit":
                changes["model"] = agent.model
            if max_turns is not None:
                changes["max_turns"] = max_turns
            if agent.wait_for is not None:
                changes["wait_for"] = agent.wait_for
            if agent.on_metric is not None:
                changes["on_metric"] = agent.on_metric
            client = options.derive(**changes)
            self._owned = False
        elif isinstance(options, Mapping):
            opts = dict(options)
            if soul:
                opts.setdefault("system_prompt", soul)
            if opts.get("model") in (None, "", "inherit") and agent.model:
                opts["model"] = agent.model
            if max_turns is not None:
                opts.setdefault("max_turns", max_turns)
            if agent.wait_for is not None:
                opts.setdefault("wait_for", agent.wait_for)
            if agent.on_metric is not None:
                opts.setdefault("on_metric", agent.on_metric)
            if agent.output_type is not None:
                opts.setdefault("output_type", agent.output_type)
            opts["hooks"] = guarded_hooks(agent.guardrails, agent.hooks or opts.get("hooks"))
            client = create_client(**opts)
            self._owned = True
        else:
            raise ConfigTypeError("Agent.loop() needs a dict of create_client options or a Client")
        self.client = client

    async def run(self, prompt: str, model: str = "") -> Outcome:
        """Run `prompt` on a fresh transcript through the agent's completion gate.

        `model` overrides the configured model for this call only. Client errors propagate.
        """
        client = self.client
        if model:
            client = client.derive(model=model)
        attempts = 0
        history: list[dict[str, Any]] | None = None

        async def ask(text: str) -> RunResult:
            nonlocal attempts, history
            attempts += 1
            result = await client.run(text, self.toolkit, history=history)
            history = result.messages
            return result

        try:
            result = await run_gated(ask, prompt, self.agent.completion)
        except BaseException:
            self._status = "error"
            raise
        self._turns += result.turns
        status = result.status
        self._status = "idle" if status == TASK_STATUS_DONE else status
        if status == TASK_STATUS_DONE:
            stopped_by = ""
        elif result.limit == LIMIT_COMPLETION:
            stopped_by = result.text
        else:
            stopped_by = f"run reported {status}" + (f" ({result.limit})" if result.limit else "")
        return Outcome(
            text=result.text,
            status=status,
            stopped_by=stopped_by,
            attempts=attempts,
            turns=result.turns,
            result=result,
        )

    @property
    def status(self) -> str:
        """`"idle"` before and after a `done` run, else the last run's status (`"error"` when
        it raised)."""
        return self._status

    @property
    def turns(self) -> int:
        """LLM calls over every run of this loop."""
        return self._turns

    async def aclose(self) -> None:
        """Close the client this loop built (a given `Client` stays open)."""
        if self._owned:
            await self.client.aclose()
