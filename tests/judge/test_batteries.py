"""The eight batteries: the requests the published package sends, verdicts, hooks in a run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.fake_llm import FakeLLM, call, raw, text, tools
from toolnexus.classifier import (
    ChoiceAnswer,
    ClassifierError,
    Decision,
    NoulAnswer,
    ScoreAnswer,
    canonical_json,
    create_classifier,
)
from toolnexus.judge_batteries import (
    AgentRouterClassifier,
    ContentGuardBlocked,
    ContentGuardClassifier,
    IsCompleteClassifier,
    ModelRouterClassifier,
    SkillRelevanceClassifier,
    ToolGuardClassifier,
    ToolRelevanceClassifier,
    ToolResultFilterClassifier,
    latest_user_text,
)
from toolnexus.native import tool
from toolnexus.types import ToolResult

# Request bodies captured from toolnexus==0.21.0 for the same calls (canonical JSON).
PUBLISHED = json.loads((Path(__file__).parent / "published_battery_requests.json").read_text())
TOOLS = [{"name": "read", "description": "reads"}, {"name": "send", "description": "sends"}]
MODELS = [{"id": "small", "description": "cheap"}, {"id": "big", "description": "smart"}]
AGENTS = [
    {"name": "a", "description": "A"},
    {
        "name": "g",
        "description": "G",
        "agents": [{"name": "g1", "description": "G1"}, {"name": "g2", "description": "G2"}],
    },
]


@pytest.mark.raw_bodies  # the vendor wire, compared byte for byte
async def test_every_battery_sends_the_published_request(llm: FakeLLM, monkeypatch):
    monkeypatch.setenv("TYPESAFE_API_KEY", "sk-battery-key-1234")
    c = create_classifier(base_url=llm.url + "/v1", retries=0)
    calls = {
        "toolguard": lambda: ToolGuardClassifier(c, on_error="open").check(
            {"name": "rm", "arguments": {"path": "/"}, "description": "remove"}
        ),
        "content": lambda: ContentGuardClassifier(c, on_error="open").check("hello you"),
        "filter": lambda: ToolResultFilterClassifier(c, on_error="open").filter(
            "cats", ["about cats", "about dogs"]
        ),
        "toolrel": lambda: ToolRelevanceClassifier(c, on_error="open").select("read a file", TOOLS),
        "skillrel": lambda: SkillRelevanceClassifier(c, on_error="open").select(
            "make pdf", [{"name": "pdf", "description": "pdfs"}]
        ),
        "complete": lambda: IsCompleteClassifier(c, on_error="open").check("do x", "done x"),
        "model": lambda: ModelRouterClassifier(c, MODELS).pick("hi", "big"),
        "agent": lambda: AgentRouterClassifier(c).pick("task", AGENTS, "a"),
    }
    for name, run in calls.items():
        llm.reset()
        llm.push(raw(200, {"answers": {}}))
        verdict = await run()
        assert verdict.error is not None and "no answer" in verdict.error  # never raised
        assert llm.requests[0].raw == canonical_json(PUBLISHED[name]), name
    await c.aclose()


def answering(noul: float = 0.9, level: float = 0.0, confidence: float = 0.95, pick: int = -1):
    """A custom classifier giving every question the same kind of answer."""

    def evaluate(state, questions):
        answers = {}
        for key, q in questions.items():
            if q.type == "noul":
                answers[key] = NoulAnswer(noul)
            elif q.type == "choice":
                names = list(q.criteria)
                rest = (1 - confidence) / max(1, len(names) - 1)
                probs = {n: confidence if n == names[pick] else rest for n in names}
                answers[key] = ChoiceAnswer(names[pick], probs, confidence)
            else:
                legend = {str(i): v for i, v in enumerate(q.criteria)}
                answers[key] = ScoreAnswer(level, legend, {}, confidence)
        return Decision(model="m", answers=answers)

    return create_classifier(style="custom", evaluate=evaluate)


def failing():
    def evaluate(state, questions):
        raise ClassifierError("classifier: boom")

    return create_classifier(style="custom", evaluate=evaluate)


async def test_tool_guard_thresholds_and_failure_direction():
    call_ = {"name": "rm", "arguments": {}}
    assert (
        await ToolGuardClassifier(answering(level=0.0), on_error="open").check(call_)
    ).action == "allow"
    medium = await ToolGuardClassifier(answering(level=2.0), on_error="open").check(call_)
    assert (medium.action, medium.reason) == ("ask", "medium risk")
    high = await ToolGuardClassifier(answering(level=3.0), on_error="open").check(call_)
    assert (high.action, high.reason, high.sure) == ("deny", "high risk", True)
    unsure = await ToolGuardClassifier(answering(level=0.0, confidence=0.5), on_error="open").check(
        call_
    )
    assert (unsure.action, unsure.reason) == ("ask", "uncertain")
    opened = await ToolGuardClassifier(failing(), on_error="open").check(call_)
    closed = await ToolGuardClassifier(failing(), on_error="closed").check(call_)
    assert (opened.action, closed.action, closed.error) == ("allow", "deny", "classifier: boom")
    with pytest.raises(ValueError, match=r'on_error .* must be "open" or "closed"'):
        ToolGuardClassifier(failing())


async def test_guards_filters_relevance_and_completion():
    flagged = await ContentGuardClassifier(answering(noul=0.9), on_error="open").check("t")
    assert (flagged.action, flagged.flagged) == ("block", ["harmful", "prompt_injection"])
    review = await ContentGuardClassifier(answering(noul=0.5), on_error="open").check("t")
    assert review.action == "review"
    kept = await ToolResultFilterClassifier(answering(noul=0.1), on_error="open").filter(
        "q", ["a", "b"]
    )
    assert (kept.kept, kept.dropped) == ([], [0, 1])
    closed = await ToolRelevanceClassifier(failing(), on_error="closed").select("q", TOOLS)
    assert (closed.selected, closed.dropped, closed.calibrated) == ([], ["read", "send"], False)
    done = await IsCompleteClassifier(answering(noul=0.9), on_error="open").check("t", "a")
    assert (done.complete, done.band) == (True, "yes")
    unsure = await IsCompleteClassifier(answering(noul=0.5), on_error="open").check("t", "a")
    assert (unsure.complete, unsure.band) == (False, "uncertain")


async def test_routers():
    routed = await ModelRouterClassifier(answering(), MODELS).pick("hi", "small")
    assert (routed.model, routed.routed) == ("big", True)
    kept = await ModelRouterClassifier(answering(confidence=0.5), MODELS).pick("hi", "small")
    assert (kept.model, kept.routed) == ("small", False)
    deep = await AgentRouterClassifier(answering()).pick("task", AGENTS, "a")
    assert (deep.agent, deep.path) == ("g2", ["g", "g2"])
    fallback = await AgentRouterClassifier(failing()).pick("task", AGENTS, "a")
    assert (fallback.agent, fallback.path, fallback.error) == ("a", [], "classifier: boom")


def test_latest_user_text():
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
        {"role": "user", "content": [{"type": "tool_result", "content": "r"}]},
    ]
    assert latest_user_text(messages) == "a\nb"
    assert latest_user_text(None) == ""


@tool
def remove(path: str) -> str:
    """Remove a path."""
    return f"removed {path}"


async def test_tool_guard_hook_denies_in_a_real_run(llm, make_client):
    guard = ToolGuardClassifier(answering(level=3.0), on_error="closed")
    llm.push(tools(call("remove", {"path": "/"}, id="c1")), text("ok"))
    client = make_client("openai", hooks={"before_tool": guard.as_hook()})
    result = await client.run("clean up", remove)
    assert result.tool_calls[0]["output"] == "denied by tool guard: high risk"


async def test_model_router_and_content_guard_hooks_in_a_real_run(llm, make_client):
    router = ModelRouterClassifier(answering(), MODELS)
    llm.push(text("hello"))
    client = make_client("anthropic", model="small", hooks={"before_llm": router.as_hook()})
    await client.run("hi")
    assert llm.requests[0].body["model"] == "big"
    guard = ContentGuardClassifier(answering(noul=0.9), on_error="open")
    blocked = make_client("openai", hooks={"before_llm": guard.as_hook()})
    with pytest.raises(ContentGuardBlocked, match="content guard blocked: harmful"):
        await blocked.run("you are dumb")
    assert len(llm.requests) == 1


@tool
def lookup(topic: str) -> str:
    """Look a topic up."""
    return "cats purr\n\ndogs bark"


async def test_filter_and_relevance_hooks_in_a_real_run(llm, make_client):
    def evaluate(state, questions):  # chunk 1 (dogs) is confidently irrelevant; tools are needed
        answers = {k: NoulAnswer(0.1 if k == "1" else 0.9) for k in questions}
        return Decision(model="m", answers=answers)

    judge = create_classifier(style="custom", evaluate=evaluate)
    hooks = {
        "after_tool": ToolResultFilterClassifier(judge, on_error="open").as_hook(),
        "before_llm": ToolRelevanceClassifier(judge, on_error="open").as_hook(),
    }
    llm.push(tools(call("lookup", {"topic": "cats"}, id="c1")), text("they purr"))
    client = make_client("anthropic", hooks=hooks)
    result = await client.run("tell me about cats", lookup)
    assert result.tool_calls[0]["output"] == "cats purr"
    assert [t["name"] for t in llm.requests[0].body["tools"]] == ["lookup"]  # needed: kept


@tool
def send(to: str) -> str:
    """Send a message."""
    return f"sent to {to}"


async def test_chained_before_llm_hooks_merge_their_changes(llm, make_client):
    def evaluate(state, questions):  # `send` is confidently not needed; the router picks `big`
        if "model" in questions:
            return Decision(
                answers={"model": ChoiceAnswer("big", {"big": 0.95, "small": 0.05}, 0.95)}
            )
        return Decision(answers={k: NoulAnswer(0.05 if k == "send" else 0.9) for k in questions})

    judge = create_classifier(style="custom", evaluate=evaluate)
    seen: list[tuple[str, list[str]]] = []

    def last(info):  # sees both changes; a key the client does not read is dropped
        seen.append((info["model"], [t["function"]["name"] for t in info["tools"]]))
        return {"note": "dropped"}

    router = ModelRouterClassifier(judge, MODELS).as_hook(last)
    relevance = ToolRelevanceClassifier(judge, on_error="open")
    llm.push(text("hi"))
    client = make_client("openai", model="small", hooks={"before_llm": relevance.as_hook(router)})
    await client.run("look cats up", [lookup, send])
    body = llm.requests[0].body
    assert body["model"] == "big"
    assert [t["function"]["name"] for t in body["tools"]] == ["lookup"]
    assert seen == [("big", ["lookup"])]
    reply = await relevance.as_hook(lambda info: {"tools": [], "x": 1})(
        {"messages": [{"role": "user", "content": "cats"}], "tools": TOOLS, "model": "m"}
    )
    assert reply == {"tools": []}  # next's own `tools` wins over the change


async def test_the_filter_hook_asks_about_the_call_and_a_next_result_wins(llm, make_client):
    states: list[dict] = []

    def evaluate(state, questions):  # chunk 1 (dogs) is confidently irrelevant
        states.append(state)
        return Decision(answers={k: NoulAnswer(0.1 if k == "1" else 0.9) for k in questions})

    judge = create_classifier(style="custom", evaluate=evaluate)
    filtered: list[str] = []

    def replace(info):
        filtered.append(info["result"].output)
        return {"result": ToolResult("replaced", False)}

    llm.push(tools(call("lookup", {"topic": "cats"}, id="c1")), text("ok"))
    hook = ToolResultFilterClassifier(judge, on_error="open").as_hook(replace)
    result = await make_client("openai", hooks={"after_tool": hook}).run("cats?", lookup)
    assert result.tool_calls[0]["output"] == "replaced"
    assert filtered == ["cats purr"]
    assert states[0]["query"] == {"tool": "lookup", "arguments": {"topic": "cats"}}
    plain = ToolResult("cats purr\n\ndogs bark", False)
    info = {"name": "lookup", "args": {}, "result": plain}
    assert await hook({**info, "result": ToolResult("one chunk", False)}) == {
        "result": ToolResult("replaced", False)
    }
    kept = ToolResultFilterClassifier(judge, on_error="open").as_hook(lambda info: {"x": 1})
    assert await kept(info) == {"result": ToolResult("cats purr", False)}


async def test_hooks_without_user_text_do_not_ask():
    def evaluate(state, questions):
        raise AssertionError("asked")

    judge = create_classifier(style="custom", evaluate=evaluate)
    info = {"messages": [{"role": "system", "content": "s"}], "tools": TOOLS, "model": "small"}
    for battery in (
        ContentGuardClassifier(judge, on_error="closed"),
        ToolRelevanceClassifier(judge, on_error="closed"),
        ModelRouterClassifier(judge, MODELS),
    ):
        assert await battery.as_hook(lambda info: {"model": "next"})(info) == {"model": "next"}


async def test_a_content_guard_error_blocks_naming_a_classifier_error():
    judge = create_classifier(style="static", decisions=[])
    hook = ContentGuardClassifier(judge, on_error="closed").as_hook()
    with pytest.raises(ContentGuardBlocked, match=r"^content guard blocked: classifier error$"):
        await hook({"messages": [{"role": "user", "content": "hi"}]})
