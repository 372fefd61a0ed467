"""Generic `expect` checks for the agents fixtures."""

from __future__ import annotations

from typing import Any

from agents_driver import arrows_match, transitions

from toolnexus.agents import AgentRuntime, Handle, TaskResult


def find(rt: AgentRuntime, hid: str) -> Handle:
    stack = [rt.root]
    while stack:
        node = stack.pop()
        if node.id == hid:
            return node
        stack.extend(node.children)
    raise AssertionError(f"no handle {hid}; have {[v.id for v in rt.list()]}")


async def check(expect: dict[str, Any], rt: AgentRuntime, result: TaskResult) -> None:
    if "status" in expect:
        assert result.status == expect["status"], result
    for piece in expect.get("textContains", ()):
        assert piece in result.text, result.text
    for piece, count in expect.get("textCount", {}).items():
        assert result.text.count(piece) == count, result.text
    if "limit" in expect:
        assert result.limit == expect["limit"], result
    if "turns" in expect:
        assert result.turns == expect["turns"], result
    if "usageTotal" in expect:
        assert result.total_tokens == expect["usageTotal"], result
    if "pendingKind" in expect:
        assert result.pending is not None and result.pending.kind == expect["pendingKind"]
    if "pendingPath" in expect:
        assert result.pending is not None and result.pending.data is not None
        assert result.pending.data["path"] == expect["pendingPath"]
    if "maxObservedConcurrentTurnsAtLeast" in expect:
        assert rt.max_observed_concurrent_turns >= expect["maxObservedConcurrentTurnsAtLeast"]
    if "maxObservedConcurrentTurnsAtMost" in expect:
        assert rt.max_observed_concurrent_turns <= expect["maxObservedConcurrentTurnsAtMost"]
    for hid, ids in expect.get("children", {}).items():
        assert [c.id for c in find(rt, hid).children] == ids
    for hid, state in expect.get("states", {}).items():
        assert find(rt, hid).state == state, (hid, rt.trace)
    for hid in expect.get("storedEmpty", ()):
        assert (await rt.conversation_store.get(hid)) in (None, []), hid
    for line in expect.get("traceContains", ()):
        assert line in rt.trace, "\n".join(rt.trace)
    seen = transitions(rt.trace)
    for hid, arrows in expect.get("transitions", {}).items():
        assert arrows_match(seen.get(hid, []), arrows), (hid, seen.get(hid), "\n".join(rt.trace))
