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
