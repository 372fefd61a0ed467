"""Suspension in the loop (client.md §14): wait_for, pending runs, the `question` built-in."""

from __future__ import annotations

import asyncio

import pytest

from support.client_helpers import STYLES, add_tool, kit
from support.fake_llm import call, text, tools
from toolnexus.builtin import create_builtin_tools
from toolnexus.types import Answer, Request, Tool, ToolResult, answer_declined, pending


def approval_tool(log):
    async def deploy(args, ctx):
        log.append(ctx.answer)
        if ctx.answer is None:
            return pending(
                kind="approval", prompt=f"Deploy {args['env']}?", id=f"req-{args['env']}"
            )
        return f"deployed {args['env']} ({ctx.answer.data['by']})"

    schema = {"type": "object", "properties": {"env": {"type": "string"}}}
    return Tool("deploy", "Deploy.", schema, "native", deploy)


@pytest.mark.parametrize("style", STYLES)
async def test_wait_for_ok_reexecutes_once_with_the_answer(llm, make_client, style):
    log, asked, after, metrics = [], [], [], []

    async def wait_for(request):
        asked.append(request)
        return Answer(id=request.id, ok=True, data={"by": "ana"})

    llm.push(tools(call("deploy", {"env": "prod"})), text("done"))
    client = make_client(
        style,
        wait_for=wait_for,
        hooks={"after_tool": lambda info: after.append(info["result"].output)},
        on_metric=metrics.append,
    )
    result = await client.run("ship it", kit(approval_tool(log)))
    assert [r.id for r in asked] == ["req-prod"]
    assert asked[0].kind == "approval" and asked[0].prompt == "Deploy prod?"
    assert log[0] is None and log[1].ok
    assert result.tool_calls == [
        {
            "name": "deploy",
            "args": {"env": "prod"},
            "output": "deployed prod (ana)",
            "is_error": False,
            "metadata": None,
        }
    ]
    assert after == ["deployed prod (ana)"]  # after_tool never saw the suspension
    tool_events = [m for m in metrics if m["event"] == "tool"]
    assert [(m["is_error"], m.get("pending")) for m in tool_events] == [
        (False, True),
        (False, None),
    ]
    assert result.status == "done"


async def test_wait_for_may_answer_with_the_wire_form(llm, make_client):
    log: list = []
    llm.push(tools(call("deploy", {"env": "qa"})), text("done"))
    client = make_client(
        "openai", wait_for=lambda r: {"id": r.id, "ok": True, "data": {"by": "bo"}}
    )
    result = await client.run("ship it", kit(approval_tool(log)))
    assert result.tool_calls[0]["output"] == "deployed qa (bo)"
    assert log[1] == Answer(id="req-qa", ok=True, data={"by": "bo"})


async def test_wait_for_sync_declined_and_none(llm, make_client):
    log = []
    answers = iter([answer_declined("req-a"), None])

    def wait_for(request):  # a sync resolver: it may block, it runs off the event loop
        return next(answers)

    llm.push(
        tools(call("deploy", {"env": "a"})), tools(call("deploy", {"env": "b"})), text("gave up")
    )
    result = await make_client("openai", wait_for=wait_for).run("x", kit(approval_tool(log)))
    outputs = [(c["output"], c["is_error"]) for c in result.tool_calls]
    assert outputs == [("declined/expired: Deploy a?", True), ("declined/expired: Deploy b?", True)]
    assert result.text == "gave up"


async def test_second_suspension_is_unresolved(llm, make_client):
    async def stubborn(args, ctx):
        return pending(kind="input", prompt="Need more")

    asked = []
    llm.push(tools(call("stubborn")), text("ok"))
    result = await make_client(
        "anthropic", wait_for=lambda r: asked.append(r) or Answer(id=r.id, ok=True)
    ).run("x", kit(Tool("stubborn", "", None, "native", stubborn)))
    assert len(asked) == 1  # never a second wait
    assert result.tool_calls[0]["output"] == "unresolved: Need more"
    assert result.tool_calls[0]["is_error"] is True


async def test_several_suspensions_resolved_in_call_order(llm, make_client):
    log, asked = [], []

    async def wait_for(request):
        asked.append(request.id)
        await asyncio.sleep(0)
        return Answer(id=request.id, ok=True, data={"by": "bo"})

    llm.push(
        tools(
            call("deploy", {"env": "a"}),
            call("add", {"a": 1, "b": 1}),
            call("deploy", {"env": "b"}),
        ),
        text("ok"),
    )
    result = await make_client("openai", wait_for=wait_for).run(
        "x", kit(approval_tool(log), add_tool())
    )
    assert asked == ["req-a", "req-b"]
    assert [c["output"] for c in result.tool_calls] == ["deployed a (bo)", "2", "deployed b (bo)"]


@pytest.mark.parametrize("style", STYLES)
async def test_without_wait_for_the_run_returns_pending(llm, make_client, style):
    log = []
    llm.push(
        tools(
            call("add", {"a": 1, "b": 1}, id="c0"),
            call("deploy", {"env": "a"}, id="c1"),
            call("deploy", {"env": "b"}, id="c2"),
        )
    )
    result = await make_client(style).run("x", kit(approval_tool(log), add_tool()))
    assert result.status == "pending"
    assert result.limit is None
    assert isinstance(result.pending, Request) and result.pending.id == "req-a"
    assert result.text == "Deploy a?"
    # only the first suspension is surfaced: the later call is not recorded
    assert result.tool_calls == [
        {
            "name": "add",
            "args": {"a": 1, "b": 1},
            "output": "2",
            "is_error": False,
            "metadata": None,
        },
        {
            "name": "deploy",
            "args": {"env": "a"},
            "output": "Deploy a?",
            "is_error": True,
            "metadata": None,
        },
    ]
    if style == "openai":
        assert result.messages[-2:] == [
            {"role": "tool", "tool_call_id": "c0", "content": "2"},
            {"role": "tool", "tool_call_id": "c1", "content": "Deploy a?"},
        ]
    else:
        assert result.messages[-1] == {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "c0", "content": "2", "is_error": False},
                {
                    "type": "tool_result",
                    "tool_use_id": "c1",
                    "content": "Deploy a?",
                    "is_error": True,
                },
            ],
        }
    assert len(llm.requests) == 1
    assert result.pending.to_dict() == {"id": "req-a", "kind": "approval", "prompt": "Deploy a?"}


async def test_pending_from_a_before_tool_guard(llm, make_client):
    ran, metrics, after = [], [], []

    async def add(args, ctx):
        ran.append(ctx.answer)
        return "3"

    def guard(info):
        return {"result": pending(kind="approval", prompt="Allow add?", id="g1")}

    tool = Tool("add", "", None, "native", add)
    llm.push(tools(call("add", {})), text("ok"))
    client = make_client(
        "openai",
        hooks={"before_tool": guard, "after_tool": lambda i: after.append(i)},
        wait_for=lambda r: Answer(id=r.id, ok=True),
        on_metric=metrics.append,
    )
    result = await client.run("x", kit(tool))
    assert len(ran) == 1 and ran[0].ok  # approved ⇒ the tool itself runs once, with the answer
    assert result.tool_calls[0]["output"] == "3"
    assert len(after) == 1
    tool_events = [m for m in metrics if m["event"] == "tool"]
    assert tool_events[0]["pending"] is True and tool_events[0]["is_error"] is False


@pytest.mark.parametrize("style", STYLES)
async def test_streaming_pending_event(llm, make_client, style):
    llm.push(tools(call("deploy", {"env": "a"}, id="c1")))
    events = [e async for e in make_client(style).stream("x", kit(approval_tool([])))]
    kinds = [e["type"] for e in events]
    assert kinds == ["tool_call", "pending", "usage", "done"]  # no tool_result for the halted call
    assert events[1]["request"].id == "req-a"
    assert events[-1]["result"].status == "pending"


async def test_streaming_stops_at_the_first_suspension(llm, make_client):
    llm.push(
        tools(
            call("add", {"a": 1, "b": 1}, id="c0"),
            call("deploy", {"env": "a"}, id="c1"),
            call("deploy", {"env": "b"}, id="c2"),
        )
    )
    events = [
        e async for e in make_client("openai").stream("x", kit(approval_tool([]), add_tool()))
    ]
    assert [(e["type"], e.get("id")) for e in events] == [
        ("tool_call", "c0"),
        ("tool_call", "c1"),
        ("tool_call", "c2"),
        ("tool_result", "c0"),
        ("pending", None),
        ("usage", None),
        ("done", None),
    ]
    assert events[4]["request"].id == "req-a"
    assert [c["output"] for c in events[-1]["result"].tool_calls] == ["2", "Deploy a?"]


async def test_streaming_pending_event_comes_before_wait_for(llm, make_client):
    order = []

    def wait_for(request):
        order.append("wait_for")
        return Answer(id=request.id, ok=True, data={"by": "x"})

    llm.push(tools(call("deploy", {"env": "a"})), text("ok"))
    async for event in make_client("anthropic", wait_for=wait_for).stream(
        "x", kit(approval_tool([]))
    ):
        order.append(event["type"])
    assert order.index("pending") < order.index("wait_for") < order.index("tool_result")


@pytest.mark.parametrize("style", STYLES)
async def test_question_builtin_end_to_end(llm, make_client, style):
    question = next(t for t in create_builtin_tools() if t.name == "question")
    asked = []

    def wait_for(request):
        asked.append(request)
        return Answer(id=request.id, ok=True, data={"answers": ["blue"]})

    questions = [{"question": "Which colour?", "options": ["red", "blue"]}]
    llm.push(tools(call("question", {"questions": questions})), text("Blue it is."))
    result = await make_client(style, wait_for=wait_for).run("pick", kit(question))
    assert asked[0].kind == "question"
    assert asked[0].prompt == "Which colour? (options: red, blue)"
    assert asked[0].data == {"questions": questions}
    assert result.tool_calls[0]["output"] == '{"answers":["blue"]}'
    assert result.text == "Blue it is."


async def test_question_builtin_pending_then_resumed_later(llm, make_client):
    question = next(t for t in create_builtin_tools() if t.name == "question")
    questions = [{"question": "Name?"}]
    llm.push(tools(call("question", {"questions": questions}, id="q1")))
    client = make_client("openai")
    first = await client.run("x", kit(question))
    assert first.status == "pending" and first.pending.kind == "question"
    # a durable host persists first.pending, gets the answer out of band, then runs again
    llm.push(text("Hello, Ana."))
    second = await client.run("My name is Ana.", kit(question), history=first.messages)
    assert second.status == "done"
    sent = llm.requests[1].body["messages"]
    assert {"role": "tool", "tool_call_id": "q1", "content": "Name?"} in sent


async def test_short_circuit_suspension_without_wait_for(llm, make_client):
    llm.push(tools(call("add", {"a": 1, "b": 2})))
    client = make_client(
        "openai",
        hooks={"before_tool": lambda i: {"result": pending(kind="approval", prompt="ok?")}},
    )
    result = await client.run("x", kit(add_tool()))
    assert result.status == "pending"
    assert result.tool_calls[0]["output"] == "ok?"


async def test_declined_result_type(llm, make_client):
    llm.push(tools(call("deploy", {"env": "a"})), text("ok"))
    result = await make_client(
        "openai", wait_for=lambda r: Answer(id=r.id, ok=False, reason="expired")
    ).run("x", kit(approval_tool([])))
    assert isinstance(result.tool_calls[0]["output"], str)
    assert result.tool_calls[0]["output"] == "declined/expired: Deploy a?"
    assert ToolResult("x").is_error is False
