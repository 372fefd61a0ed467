"""`Agent`: a sub-agent definition (soul, tools, team, budget) and its one-shot entry points."""

from __future__ import annotations

import asyncio
import inspect
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from toolnexus._aio import Expired, Signalled, bounded
from toolnexus.agents._constants import (
    TASK_STATUS_ERROR,
    TASK_STATUS_INTERRUPTED,
    TASK_STATUS_PENDING,
    TASK_STATUS_TIMEOUT,
)
from toolnexus.agents._defs import AgentDef, Budget, check_name
from toolnexus.agents._loop import Loop
from toolnexus.agents._results import SpawnError, TaskResult
from toolnexus.agents._runtime import AgentRuntime
from toolnexus.agents._task import task_output
from toolnexus.errors import ConfigError, ConfigFileNotFound, ConfigTypeError
from toolnexus.types import Tool, ToolContext, ToolResult, pending

if TYPE_CHECKING:
    from toolnexus.client import Client
    from toolnexus.toolkit import Toolkit

__all__ = ["Agent", "agent", "check_runtime_options"]

T = TypeVar("T")

_RUNTIME_OPTIONS = frozenset(inspect.signature(AgentRuntime).parameters) - {"registry"}
_MAX_PARKED = 64
_PROMPT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"prompt": {"type": "string"}},
    "required": ["prompt"],
}


def check_runtime_options(options: Mapping[str, Any], where: str) -> None:
    unknown = sorted(set(options) - _RUNTIME_OPTIONS)
    if unknown:
        raise ConfigTypeError(f"{where}() got an unexpected option {unknown[0]!r}")


class Agent:
    """A sub-agent; not `toolnexus.Agent`: that is a remote A2A agent.

    A system prompt (its soul) over a scoped tool set, running the client loop.

    `does` is what a delegating model reads; `uses={"tools": [...]}` is the agent's whole tool
    set; `team` lists the agents it may delegate to through the `task` tool; `output_type` makes
    each of its runs end with a typed `result.output` (what a `completion` gate can check), and
    nothing else: an agent without one never inherits its client's. Run it with
    `await agent.run(prompt, client=...)`, expose it with `as_tool(...)`, or hand its
    `registry()` to an `AgentRuntime`.
    """

    def __init__(
        self,
        name: str,
        *,
        does: str,
        uses: Mapping[str, Any] | None = None,
        soul: str | None = None,
        soul_file: str | Path | None = None,
        team: Sequence[Agent] | None = None,
        budget: Budget | None = None,
        model: str | None = None,
        wait_for: Callable[..., Any] | None = None,
        on_spawn: Callable[..., Any] | None = None,
        on_close: Callable[..., Any] | None = None,
        hooks: Any = None,
        on_metric: Callable[[dict[str, Any]], Any] | None = None,
        guardrails: Sequence[Any] | None = None,
        completion: Any = None,
        output_type: Any = None,
    ) -> None:
        self.name = check_name(name)
        if not isinstance(does, str) or not does.strip():
            raise ConfigError(f"toolnexus.agents: agent {name!r} needs a non-empty does=")
        uses = dict(uses or {})
        extra = sorted(set(uses) - {"tools"})
        if extra:
            raise ConfigError(f"toolnexus.agents: uses= takes only 'tools', not {extra[0]!r}")
        tools = list(uses.get("tools") or ())
        for tool in tools:
            if not isinstance(tool, Tool):
                raise ConfigTypeError(
                    f"toolnexus.agents: uses['tools'] holds a {type(tool).__name__}"
                )
        if soul is not None and soul_file is not None:
            raise ConfigError("toolnexus.agents: give soul= or soul_file=, not both")
        if soul is not None and not isinstance(soul, str):
            raise ConfigTypeError("toolnexus.agents: soul must be a string")
        for member in team or ():
            if not isinstance(member, Agent):
                raise ConfigTypeError(f"toolnexus.agents: team holds a {type(member).__name__}")
        if budget is not None and not isinstance(budget, Budget):
            raise ConfigTypeError("toolnexus.agents: budget must be a Budget")
        self.does = does
        self.uses: dict[str, Any] = {"tools": tools} if "tools" in uses else {}
        self.soul = soul
        self.soul_file = str(soul_file) if soul_file is not None else None
        self.team: list[Agent] = list(team or ())
        self.budget = budget
        self.model = model
        self.wait_for = wait_for
        self.on_spawn = on_spawn
        self.on_close = on_close
        self.hooks = hooks
        self.on_metric = on_metric
        self.guardrails: list[Any] = list(guardrails or ())
        self.completion = completion
        self.output_type = output_type
        self.home: str | None = None

    def __repr__(self) -> str:
        return f"<Agent {self.name!r}>"

    # -- the registry --------------------------------------------------------------------------

    def session_soul(self) -> str:
        """The system prompt a new session starts with (a soul file is read now)."""
        if self.soul is not None:
            return self.soul
        if self.soul_file is not None:
            try:
                return Path(self.soul_file).read_text(encoding="utf-8")
            except FileNotFoundError:
                raise ConfigFileNotFound(f"soul file not found: {self.soul_file}") from None
        return ""

    def to_def(self) -> AgentDef:
        """This agent's registry entry (its soul read for a new session)."""
        return AgentDef(
            name=self.name,
            description=self.does,
            system_prompt=self.session_soul(),
            model=self.model or "inherit",
            budget=self.budget,
            tools=list(self.uses.get("tools") or ()),
            wait_for=self.wait_for,
            on_spawn=self.on_spawn,
            on_close=self.on_close,
            task_targets=[member.name for member in self.team],
            hooks=self.hooks,
            on_metric=self.on_metric,
            completion=self.completion,
            guardrails=list(self.guardrails),
            output_type=self.output_type,
        )

    def registry(self, acc: dict[str, AgentDef] | None = None) -> dict[str, AgentDef]:
        """Every agent reachable through the team graph, by name (cycles allowed); with
        `acc`, the entries are added to it and it is returned."""
        seen: dict[str, Agent] = {}
        queue: deque[Agent] = deque([self])
        while queue:
            current = queue.popleft()
            known = seen.get(current.name)
            if known is not None:
                if known is not current:
                    raise ConfigError(
                        f'toolnexus.agents: two different agents are named "{current.name}"'
                    )
                continue
            seen[current.name] = current
            queue.extend(current.team)
        out = acc if acc is not None else {}
        out.update((name, member.to_def()) for name, member in seen.items())
        return out

    # -- entry points --------------------------------------------------------------------------

    async def run(self, prompt: str, **runtime_options: Any) -> TaskResult:
        """Run once in a fresh runtime; the tree is closed unless the result is `pending`
        (then `await result.runtime.resume(answer)` continues it)."""
        check_runtime_options(runtime_options, "Agent.run")
        result, _ = await self._run_once(prompt, runtime_options)
        return result

    async def _run_once(
        self, prompt: str, runtime_options: Mapping[str, Any]
    ) -> tuple[TaskResult, AgentRuntime]:
        registry = await asyncio.to_thread(self.registry)
        rt = AgentRuntime(registry=registry, **runtime_options)
        rt.one_shot = True
        handle = rt.spawn(rt.root, self.name)
        if isinstance(handle, SpawnError):
            await rt.close(rt.root)
            return TaskResult(text=handle.error, is_error=True, status=TASK_STATUS_ERROR), rt
        try:
            result = await rt.run_turn(handle, prompt)
        except asyncio.CancelledError:
            await asyncio.shield(rt.close(rt.root, force=True, reason="interrupted"))
            raise
        result.runtime = rt
        if result.status != TASK_STATUS_PENDING:
            await rt.close(rt.root)
        return result, rt

    def as_tool(self, **runtime_options: Any) -> Tool:
        """This agent as one tool (`{"prompt"}` in, the final text out) for `extra_tools`.

        A suspension inside becomes the tool's own pending result; the re-execution carrying
        the host's answer resumes the parked run instead of starting over.
        """
        check_runtime_options(runtime_options, "Agent.as_tool")
        parked: OrderedDict[str, AgentRuntime] = OrderedDict()
        closing: set[asyncio.Task[None]] = set()
        name = self.name

        def park(rt: AgentRuntime, request_id: str) -> None:
            parked[request_id] = rt
            while len(parked) > _MAX_PARKED:
                _, oldest = parked.popitem(last=False)
                task = asyncio.ensure_future(
                    oldest.close(oldest.root, force=True, reason="interrupted")
                )
                closing.add(task)
                task.add_done_callback(closing.discard)

        async def resume(rt: AgentRuntime, answer: Any) -> tuple[TaskResult, AgentRuntime]:
            try:
                return await rt.resume(answer), rt
            except asyncio.CancelledError:
                await asyncio.shield(rt.close(rt.root, force=True, reason="interrupted"))
                raise

        async def execute(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
            answer = ctx.answer
            if answer is not None and answer.id in parked:
                work = resume(parked.pop(answer.id), answer)
            else:
                work = self._run_once(str(args.get("prompt", "")), runtime_options)
            outcome = await _bounded(work, ctx)
            if isinstance(outcome, _Cut):
                metadata = {"agent": name, "turns": 0, "totalTokens": 0, "status": outcome.status}
                return ToolResult(f"[{outcome.status}] {outcome.text}", True, metadata)
            result, rt = outcome
            if result.status == TASK_STATUS_PENDING and result.pending is not None:
                request = result.pending
                park(rt, request.id)
                return pending(
                    kind=request.kind,
                    prompt=request.prompt,
                    url=request.url,
                    data=request.data,
                    id=request.id,
                )
            return task_output(name, result)

        return Tool(name, self.does, dict(_PROMPT_SCHEMA), "native", execute)

    def loop(self, options: Mapping[str, Any] | Client, toolkit: Toolkit | None = None) -> Loop:
        """This agent's soul and gate on one client loop, without the runtime."""
        return Loop(self, options, toolkit)


@dataclass(slots=True, frozen=True)
class _Cut:
    """An agent tool call cut short by its signal or its timeout."""

    status: str
    text: str


async def _bounded(work: Awaitable[T], ctx: ToolContext) -> T | _Cut:
    """Await `work` within the call's signal and timeout; a cut cancels it (closing its tree)."""
    try:
        return await bounded(work, signal=ctx.signal, timeout=ctx.timeout)
    except Signalled:
        return _Cut(TASK_STATUS_INTERRUPTED, "interrupted")
    except Expired:
        return _Cut(TASK_STATUS_TIMEOUT, f"agent run exceeded {ctx.timeout:g}s")


def agent(name: str, **spec: Any) -> Agent:
    """`Agent(name, **spec)`, a sub-agent; not `toolnexus.agent`: that is a remote A2A agent."""
    return Agent(name, **spec)
