"""The one generic driver for the agents fixtures (`tests/fixtures/agents/*.json`).

It turns a fixture's `mockLLM.scripts` into an in-process `generate(request)` keyed by the
request's model, its `tools` into native tools, its `registry` into `AgentDef`s, and runs
timers on a virtual clock. `{"$ref": "<file>#/<pointer>"}` anywhere shares parts.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolnexus import Tool, ToolContext, ToolResult, pending
from toolnexus.agents import AgentDef, Budget
from toolnexus.types import Answer, Request

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "agents"
_NUMBERED = re.compile(r"^\d+\.", re.MULTILINE)


def load(name: str) -> Any:
    """A fixture with every `$ref` resolved."""
    return _resolve(json.loads((FIXTURES / name).read_text(encoding="utf-8")))


def _resolve(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"$ref"}:
            file, _, pointer = value["$ref"].partition("#")
            target = json.loads((FIXTURES / file).read_text(encoding="utf-8"))
            for key in filter(None, pointer.split("/")):
                target = target[int(key)] if isinstance(target, list) else target[key]
            return _resolve(target)
        return {k: _resolve(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve(v) for v in value]
    return value


# -- the virtual clock ------------------------------------------------------------------------


class _Timer:
    def __init__(self, clock: VirtualClock, when: float, callback: Callable[[], Any]) -> None:
        self.when = when
        self.callback = callback
        self.cancelled = False
        self._clock = clock

    def cancel(self) -> None:
        self.cancelled = True


class VirtualClock:
    """`now`, `call_later`, `sleep`; `advance(seconds)` fires due timers in time order."""

    def __init__(self) -> None:
        self._now = 0.0
        self._heap: list[tuple[float, int, _Timer]] = []
        self._seq = itertools.count()

    def now(self) -> float:
        return self._now

    def call_later(self, seconds: float, callback: Callable[[], Any]) -> _Timer:
        timer = _Timer(self, self._now + max(0.0, seconds), callback)
        heapq.heappush(self._heap, (timer.when, next(self._seq), timer))
        return timer

    async def sleep(self, seconds: float) -> None:
        done = asyncio.get_running_loop().create_future()
        self.call_later(seconds, lambda: done.done() or done.set_result(None))
        await done

    async def advance(self, seconds: float) -> None:
        """Move time forward, firing each due timer (and letting the loop run after each)."""
        end = self._now + seconds
        while self._heap and self._heap[0][0] <= end:
            when, _, timer = heapq.heappop(self._heap)
            self._now = max(self._now, when)
            if not timer.cancelled:
                timer.callback()
            await settle()
        self._now = end
        await settle()


async def settle(rounds: int = 20) -> None:
    """Let ready callbacks and tasks run (no wall-clock sleep)."""
    for _ in range(rounds):
        await asyncio.sleep(0)


# -- the scripted model -----------------------------------------------------------------------


def _tool_contents(messages: list[dict[str, Any]]) -> list[str]:
    return [str(m.get("content") or "") for m in messages if m.get("role") == "tool"]


def _render(template: str, request: dict[str, Any]) -> str:
    messages = request["messages"]
    contents = _tool_contents(messages)
    system = next((m["content"] for m in messages if m.get("role") == "system"), "") or ""
    last = str(messages[-1].get("content") or "") if messages else ""
    names = [t["function"]["name"] for t in request.get("tools") or ()]
    swaps = {
        "<tool contents joined by ' + '>": " + ".join(contents),
        "<first tool content>": contents[0] if contents else "",
        "<last tool content>": contents[-1] if contents else "",
        "<numbered lines of the last message>": str(len(_NUMBERED.findall(last))),
        "<soul:loaded|missing>": "[soul:loaded]"
        if "You are the CODER" in system
        else "[soul:missing]",
        "<offered tool names>": "[" + ",".join(names) + "]",
    }
    for key, value in swaps.items():
        template = template.replace(key, value)
    return template


def _matches(rule: dict[str, Any], messages: list[dict[str, Any]]) -> bool:
    contents = _tool_contents(messages)
    if rule.get("always"):
        return True
    if "whenToolMsgs" in rule:
        want = rule["whenToolMsgs"]
        return len(contents) == 0 if want == 0 else len(contents) >= 1
    if "whenToolMsgContains" in rule:
        return any(rule["whenToolMsgContains"] in c for c in contents)
    if "whenNoToolMsgContains" in rule:
        return not any(rule["whenNoToolMsgContains"] in c for c in contents)
    return False


@dataclass
class ScriptedModel:
    """`generate(request)` answering from `scripts` by `request["model"]` (default: `ok`)."""

    scripts: dict[str, list[dict[str, Any]]]
    usage: dict[str, int] | None
    release: asyncio.Event = field(default_factory=asyncio.Event)
    requests: list[dict[str, Any]] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    started: asyncio.Event = field(default_factory=asyncio.Event)
    overrides: dict[str, Callable[[dict[str, Any]], Any]] = field(default_factory=dict)

    async def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        self.requests.append(request)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(0)  # let sibling requests overlap
            model = str(request["model"])
            if model in self.overrides:
                reply = self.overrides[model](request)
                if asyncio.iscoroutine(reply):
                    reply = await reply
                return reply  # type: ignore[no-any-return]
            rule = next(
                (r for r in self.scripts.get(model, ()) if _matches(r, request["messages"])), None
            )
            if rule is None:
                return self._reply({"content": "ok"})
            if rule.get("blocksUntil") == "released-or-aborted":
                self.started.set()
                await self.release.wait()
            if "toolCalls" in rule:
                calls = [
                    {
                        "id": f"call_{len(self.requests)}_{i}",
                        "name": c["name"],
                        "arguments": c["args"],
                    }
                    for i, c in enumerate(rule["toolCalls"])
                ]
                return self._reply({"tool_calls": calls})
            return self._reply({"content": _render(rule["text"], request)})
        finally:
            self.in_flight -= 1

    def _reply(self, reply: dict[str, Any]) -> dict[str, Any]:
        if self.usage is not None:
            reply["usage"] = dict(self.usage)
        return reply


def model_of(fixture: dict[str, Any]) -> ScriptedModel:
    mock = fixture["mockLLM"]
    return ScriptedModel(mock["scripts"], mock.get("usagePerCall"))


# -- tools and the registry -------------------------------------------------------------------


def _lookup(args: dict[str, Any], ctx: ToolContext) -> str:
    return f"data({args.get('q', '')})"


def _check_secret(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    if ctx.answer is not None and ctx.answer.ok:
        return ToolResult("secret-token")
    return pending(kind="approval", prompt="approve secret access?")


_BEHAVIORS: dict[str, Callable[[dict[str, Any], ToolContext], Any]] = {
    "lookup": _lookup,
    "check_secret": _check_secret,
}


def tools_of(fixture: dict[str, Any]) -> dict[str, Tool]:
    out: dict[str, Tool] = {}
    for name, spec in fixture.get("tools", {}).items():
        out[name] = Tool(name, f"the {name} tool", spec["inputSchema"], "native", _BEHAVIORS[name])
    return out


def approve(request: Request) -> Answer:
    return Answer(id=request.id, ok=True)


_WAIT_FOR = {"approve": approve}


def budget_of(spec: dict[str, Any] | None) -> Budget | None:
    return Budget(**spec) if spec else None


def registry_of(
    fixture: dict[str, Any], override: dict[str, Any] | None = None, **extra: dict[str, Any]
) -> dict[str, AgentDef]:
    """The fixture's registry as `AgentDef`s; `extra[name]` sets more fields on one def."""
    tools = tools_of(fixture)
    entries = dict(fixture["registry"])
    for name, patch in (override or {}).items():
        entries[name] = {**entries.get(name, {}), **patch}
    out: dict[str, AgentDef] = {}
    for name, spec in entries.items():
        wait_for = spec.get("waitFor")
        out[name] = AgentDef(
            name=name,
            description=spec["does"],
            system_prompt=spec.get("soul", ""),
            model=spec.get("model", "inherit"),
            budget=budget_of(spec.get("budget")),
            tools=[tools[t] for t in spec.get("tools", ())],
            wait_for=_WAIT_FOR[wait_for["behavior"]] if wait_for else None,
            task_targets=list(spec.get("team", ())),
        )
        for key, value in extra.get(name, {}).items():
            setattr(out[name], key, value)
    return out


def transitions(trace: list[str]) -> dict[str, list[str]]:
    """Each handle's state changes, as `<from>→<to>` arrows, in order."""
    out: dict[str, list[str]] = {}
    for line in trace:
        hid, _, text = line.partition(": ")
        head = text.split(" ", 1)[0]
        if "→" in head and not head.startswith("→") and head.split("→")[0] in _STATES:
            out.setdefault(hid, []).append(head)
    return out


_STATES = ("idle", "running", "suspended", "closed")


def arrows_match(actual: list[str], expected: list[str]) -> bool:
    """An expected `→closed` matches any `<x>→closed`."""
    if len(actual) != len(expected):
        return False
    return all(
        a == e or (e.startswith("→") and a.endswith(e))
        for a, e in zip(actual, expected, strict=True)
    )


# -- the steps interpreter --------------------------------------------------------------------


async def run_steps(rt: Any, steps: list[dict[str, Any]], model: ScriptedModel, check: Any) -> None:
    """Run a fixture's `steps` on `rt`; `check(expect, rt, result)` judges each step's result."""
    from toolnexus.agents import InboxItem, SpawnError

    def handle(hid: str) -> Any:
        stack = [rt.root]
        while stack:
            node = stack.pop()
            if node.id == hid:
                return node
            stack.extend(node.children)
        raise AssertionError(f"no handle {hid}")

    for step in steps:
        (op, args), expect = (
            next(iter((k, v) for k, v in step.items() if k != "expect")),
            step.get("expect", {}),
        )
        result: Any = None
        if op == "spawn":
            made = rt.spawn(handle(args["parent"]), args["def"], budget_of(args.get("budget")))
            if "spawnError" in expect:
                assert isinstance(made, SpawnError) and made.error == expect["spawnError"], made
            else:
                assert not isinstance(made, SpawnError), made
        elif op == "wakeWait":
            result = await rt.run_turn(handle(args["handle"]), args.get("prompt"))
        elif op == "post":
            item = InboxItem(args["from"], args["channel"], args["text"])
            posted = rt.post(handle(args["handle"]), item)
            if "ok" in expect:
                assert posted.ok is expect["ok"], posted
            if "errorContains" in expect:
                assert expect["errorContains"] in (posted.error or "")
        elif op == "wake":
            assert rt.wake(handle(args["handle"]), args.get("prompt")).ok
        elif op == "awaitState":
            if args.get("modelStarted"):
                await asyncio.wait_for(model.started.wait(), 5)
            assert handle(args["handle"]).state == args["state"]
        elif op == "interrupt":
            rt.interrupt(handle(args["handle"]))
        elif op == "wait":
            result = await asyncio.wait_for(rt.wait(handle(args["handle"])), 5)
        elif op == "closeRoot":
            await rt.close(rt.root)
        else:
            raise AssertionError(f"unknown step {op}")
        for hid, tokens in expect.get("pool", {}).items():
            assert handle(hid).pool.tokens == tokens, (hid, handle(hid).pool)
        for hid, size in expect.get("inbox", {}).items():
            assert len(handle(hid).inbox) == size
        if result is not None:
            await check(expect, rt, result)
