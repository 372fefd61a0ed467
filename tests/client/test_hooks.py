"""Hooks (deny, rewrite, short-circuit, replace messages/tools, model override) and body shaping."""

from __future__ import annotations

import logging

import pytest

from support.client_helpers import STYLES, add_tool, kit
from support.fake_llm import call, text, tools
from toolnexus.client import Hooks
from toolnexus.types import ToolResult


@pytest.mark.parametrize("style", STYLES)
async def test_before_tool_deny_short_circuits(llm, make_client, style):
    ran = []
    metrics = []

    async def add(args, ctx):
        ran.append(args)
        return "x"

    def before_tool(info):
        if info["name"] == "add":
            return {"result": ToolResult("denied by policy", is_error=True)}
        return None

    after = []
    llm.push(tools(call("add", {"a": 1, "b": 2}, id="c1")), text("ok"))
    toolkit = kit(add_tool())
    client = make_client(
        style,
        hooks={"before_tool": before_tool, "after_tool": lambda i: after.append(i)},
        on_metric=metrics.append,
    )
    result = await client.run("x", toolkit)
    assert ran == []
    assert after == []  # after_tool is skipped on a short-circuit
    assert result.tool_calls[0]["output"] == "denied by policy"
    assert result.tool_calls[0]["is_error"] is True
    tool_events = [m for m in metrics if m["event"] == "tool"]
    assert [(m["tool"], m["source"], m["is_error"]) for m in tool_events] == [
        ("add", "native", True)
    ]


async def test_before_tool_rewrites_args(llm, make_client):
    seen = []

    def before_tool(info):
        seen.append(dict(info))
        return {"args": {"a": 40, "b": 2}}

    llm.push(tools(call("add", {"a": 1, "b": 1}, id="c9")), text("ok"))
    toolkit = kit(add_tool())
    result = await make_client("openai", hooks={"before_tool": before_tool}).run("x", toolkit)
    assert seen == [
        {"name": "add", "args": {"a": 1, "b": 1}, "id": "c9", "turn": 0, "tool": toolkit.get("add")}
    ]
    assert result.tool_calls[0] == {
        "name": "add",
        "args": {"a": 40, "b": 2},
        "output": "42",
        "is_error": False,
        "metadata": None,
    }


async def test_after_tool_replaces_the_result(llm, make_client):
    seen = []

    async def after_tool(info):
        seen.append((info["name"], info["result"].output, info["id"], info["turn"]))
        return {"result": ToolResult(info["result"].output + "!")}

    llm.push(tools(call("add", {"a": 1, "b": 1}, id="z")), text("ok"))
    result = await make_client("anthropic", hooks=Hooks(after_tool=after_tool)).run(
        "x", kit(add_tool())
    )
    assert seen == [("add", "2", "z", 0)]
    assert result.tool_calls[0]["output"] == "2!"
    assert llm.requests[1].body["messages"][-1]["content"][0]["content"] == "2!"


@pytest.mark.parametrize("style", STYLES)
async def test_before_llm_replaces_messages_and_tools(llm, make_client, style):
    calls = []

    def before_llm(info):
        calls.append(info["turn"])
        if info["turn"] == 0:
            trimmed = [m for m in info["messages"] if m["role"] != "system"]
            return {
                "messages": [{"role": "user", "content": "rewritten"}, *trimmed[1:]],
                "tools": [],
            }
        return None

    llm.push(tools(call("add", {"a": 1, "b": 1})), text("fine"))
    result = await make_client(style, system_prompt="S", hooks={"before_llm": before_llm}).run(
        "original", kit(add_tool())
    )
    first, second = llm.requests
    assert first.body["messages"] == [{"role": "user", "content": "rewritten"}]
    assert "tools" not in first.body and "tool_choice" not in first.body  # emptied ⇒ omitted
    assert "tools" not in second.body  # the replacement holds for later turns
    assert result.messages[0] == {"role": "user", "content": "rewritten"}
    assert calls == [0, 1]


async def test_before_llm_model_override_is_for_one_turn(llm, make_client):
    llm.push(tools(call("add", {"a": 1, "b": 1})), text("ok"))
    metrics = []

    def before_llm(info):
        assert info["model"] == "test-model"
        return {"model": "router/cheap"} if info["turn"] == 0 else {}

    result = await make_client(
        "openai", hooks={"before_llm": before_llm}, on_metric=metrics.append
    ).run("x", kit(add_tool()))
    assert [r.body["model"] for r in llm.requests] == ["router/cheap", "test-model"]
    assert result.model == "test-model"
    assert [m["model"] for m in metrics if m["event"] == "llm"] == ["router/cheap", "test-model"]


async def test_before_llm_raising_aborts_the_run(llm, make_client):
    metrics = []

    def gate(info):
        raise PermissionError("route closed")

    with pytest.raises(PermissionError, match="route closed"):
        await make_client("openai", hooks={"before_llm": gate}, on_metric=metrics.append).run("x")
    assert llm.requests == []
    assert metrics[-1]["event"] == "run" and metrics[-1]["error"] == "route closed"


async def test_after_llm_sees_the_raw_response(llm, make_client):
    seen = []

    class Observer:
        async def after_llm(self, info):
            seen.append(info)

    llm.push(text("hey"))
    await make_client("anthropic", hooks=Observer()).run("x")
    assert seen[0]["turn"] == 0 and seen[0]["model"] == "test-model"
    assert seen[0]["response"]["content"] == [{"type": "text", "text": "hey"}]


async def test_hooks_returning_bad_values_are_reported(llm, make_client):
    llm.push(tools(call("add", {"a": 1, "b": 1})))
    client = make_client(
        "openai", hooks={"before_tool": lambda info: {"result": "not a ToolResult"}}
    )
    with pytest.raises(TypeError, match="before_tool hook: 'result' must be a ToolResult"):
        await client.run("x", kit(add_tool()))


# -- request shaping ------------------------------------------------------------------------------


@pytest.mark.parametrize("style", STYLES)
async def test_request_params_merge_and_forbidden_keys_warn(llm, make_client, style, caplog):
    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        client = make_client(
            style,
            request_params={
                "max_tokens": 100,
                "temperature": 0.2,
                "messages": [],
                "tools": [],
                "stream": True,
            },
        )
    warnings = [r.getMessage() for r in caplog.records]
    assert warnings == [
        f'[toolnexus] request_params key "{key}" is not allowed — ignored (use body_transform)'
        for key in ("messages", "tools", "stream")
    ]
    llm.push(text("ok"))
    await client.run("x")
    body = llm.requests[0].body
    assert body["max_tokens"] == 100
    assert body["temperature"] == 0.2
    assert "stream" not in body
    assert body["messages"] == [{"role": "user", "content": "x"}]
    if style == "anthropic":
        assert list(body) == ["model", "max_tokens", "system", "messages", "temperature"]


async def test_body_transform_runs_last_on_every_turn(llm, make_client):
    seen = []

    def transform(body):
        seen.append(dict(body))
        if len(seen) == 1:
            body["messages"] = [*body["messages"], {"role": "user", "content": "appended"}]
            return body
        return None

    llm.push(tools(call("add", {"a": 1, "b": 1})), text("ok"))
    client = make_client("openai", request_params={"seed": 7}, body_transform=transform)
    await client.run("x", kit(add_tool()))
    assert seen[0]["seed"] == 7  # after the request_params merge
    assert llm.requests[0].body["messages"][-1] == {"role": "user", "content": "appended"}
    assert len(seen) == 2
    assert llm.requests[1].body["seed"] == 7


@pytest.mark.raw_bodies  # the body is the test's own, deliberately without max_tokens
async def test_body_transform_can_replace_the_body(llm, make_client):
    llm.push(text("ok"))
    await make_client(
        "anthropic", body_transform=lambda b: {"model": "x", "messages": b["messages"]}
    ).run("hi")
    assert llm.requests[0].body == {"model": "x", "messages": [{"role": "user", "content": "hi"}]}


async def test_body_transform_changing_messages_in_place_leaves_the_transcript_alone(
    llm, make_client
):
    def transform(body):
        body["messages"].append({"role": "user", "content": "per-request note"})

    llm.push(tools(call("add", {"a": 1, "b": 1})), text("ok"))
    result = await make_client("openai", body_transform=transform).run("x", kit(add_tool()))
    first, second = llm.requests
    assert first.body["messages"][-1] == {"role": "user", "content": "per-request note"}
    assert [m["content"] for m in second.body["messages"]].count("per-request note") == 1
    assert all(m.get("content") != "per-request note" for m in result.messages)


@pytest.mark.parametrize("style", STYLES)
async def test_before_llm_raising_aborts_a_stream(llm, make_client, style):
    metrics = []

    def gate(info):
        if info["turn"] == 1:
            raise PermissionError("budget spent")

    llm.push(tools(call("add", {"a": 1, "b": 1})), text("never"))
    client = make_client(style, hooks={"before_llm": gate}, on_metric=metrics.append)
    seen = []
    with pytest.raises(PermissionError, match="budget spent"):
        async for event in client.stream("x", kit(add_tool())):
            seen.append(event["type"])
    assert "done" not in seen and len(llm.requests) == 1
    assert metrics[-1]["event"] == "run" and metrics[-1]["error"] == "budget spent"
