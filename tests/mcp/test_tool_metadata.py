"""What a tool may do, where a host can read it: MCP `title`/`annotations`/`outputSchema` in
`Tool.metadata` and `ToolInfo`, the `tool` key of the `before_tool`/`after_tool` payloads, a
guard that suspends destructive calls, and the built-ins' own annotations."""

from __future__ import annotations

from typing import Any

from support.client_helpers import kit
from support.fake_llm import call, text, tools
from support.llm_fixtures import llm, llm_server, make_client
from support.mcp_fixtures import ErasShared
from toolnexus import Answer, Hooks, create_toolkit, pending
from toolnexus.mcp_source import list_mcp_tools
from toolnexus.types import Request, Tool

__all__ = ["llm", "llm_server", "make_client"]

READ_ONLY = {"read", "grep", "glob", "webfetch", "question", "todowrite"}
DESTRUCTIVE = {"bash", "write", "edit", "apply_patch"}


async def test_the_inventory_keeps_title_annotations_and_output_schema(
    eras: ErasShared,
) -> None:
    inventory = await list_mcp_tools({"up": {"url": eras.http["dual"].url()}})
    info = {t.name: t for t in inventory.tools["up"]}
    weather = info["weather"]
    assert weather.title == "Weather report"
    assert weather.annotations == {"title": "Weather", "readOnlyHint": True, "openWorldHint": False}
    assert weather.output_schema is not None
    assert weather.output_schema["required"] == ["city", "degrees"]
    assert info["wipe"].annotations == {"destructiveHint": True}
    assert (info["echo"].title, info["echo"].annotations, info["echo"].output_schema) == (
        None,
        None,
        None,
    )


def _destructive(tool: Tool | None) -> bool:
    annotations = ((tool.metadata or {}) if tool is not None else {}).get("annotations") or {}
    return bool(annotations.get("destructiveHint"))


async def test_a_guard_suspends_destructive_calls(
    eras: ErasShared, llm: Any, make_client: Any
) -> None:
    seen: list[tuple[str, Tool | None]] = []
    after: list[Tool | None] = []

    def guard(event: dict[str, Any]) -> dict[str, Any] | None:
        seen.append((event["name"], event["tool"]))
        if _destructive(event["tool"]):
            return {"result": pending(kind="approval", prompt=f"Run {event['name']}?")}
        return None

    hooks = Hooks(before_tool=guard, after_tool=lambda e: after.append(e["tool"]))
    toolkit = kit(eras.tool("h_dual", "wipe"), eras.tool("h_dual", "echo"))
    # without wait_for: the destructive call is held, the run ends pending
    llm.push(tools(call("h_dual_wipe", {}, id="w1")))
    held = await make_client("openai", hooks=hooks).run("clean up", toolkit)
    assert held.status == "pending"
    assert held.pending is not None and held.pending.prompt == "Run h_dual_wipe?"
    assert seen == [("h_dual_wipe", toolkit.get("h_dual_wipe"))]
    # approved through wait_for: the tool runs with the answer
    asked: list[Request] = []

    def approve(request: Request) -> Answer:
        asked.append(request)
        return Answer(request.id, True)

    llm.push(
        tools(call("h_dual_wipe", {}, id="w2"), call("h_dual_echo", {"text": "hi"}, id="e1")),
        text("done"),
    )
    client = make_client("openai", hooks=hooks, wait_for=approve)
    result = await client.run("clean up", toolkit)
    assert result.status == "done"
    assert [r["output"] for r in result.tool_calls] == ["wiped", "hi"]
    assert [r.prompt for r in asked] == ["Run h_dual_wipe?"]
    assert toolkit.get("h_dual_echo") in after and toolkit.get("h_dual_wipe") in after


async def test_an_unknown_tool_has_no_tool_in_the_payload(llm: Any, make_client: Any) -> None:
    seen: list[Any] = []
    llm.push(tools(call("nope", {})), text("ok"))
    client = make_client("openai", hooks=Hooks(before_tool=lambda e: seen.append(e)))
    result = await client.run("x", kit())
    assert seen[0]["tool"] is None
    assert result.tool_calls[0]["output"].startswith("Unknown tool: nope")


async def test_built_ins_declare_what_they_may_do() -> None:
    toolkit = await create_toolkit(builtins=True)
    try:
        builtins = {t.name: t for t in toolkit.tools() if t.source == "builtin"}
        assert set(builtins) == READ_ONLY | DESTRUCTIVE
        for name in READ_ONLY:
            assert builtins[name].metadata == {"annotations": {"readOnlyHint": True}}, name
        for name in DESTRUCTIVE:
            assert builtins[name].metadata == {"annotations": {"destructiveHint": True}}, name
    finally:
        await toolkit.close()
