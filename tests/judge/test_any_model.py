"""Judgments on the three LLM wires: typed output, calibration from log-probabilities."""

from __future__ import annotations

import math

import pytest

from support.client_helpers import base_url
from support.fake_llm import FakeLLM, call, raw, text, tools
from toolnexus.classifier import ClassifierError, create_classifier
from toolnexus.classifier_llm import llm_classifier
from toolnexus.judge import ask, choice, noul, questions, score, state


def chat_answer(content: str, label_token: str, alternatives: dict[str, float]) -> dict:
    """An OpenAI chat completion whose label token carries `top_logprobs`."""
    tokens = ['{"', "response", '":"', label_token, '"}']
    entries = [{"token": t, "logprob": -0.01, "top_logprobs": []} for t in tokens]
    entries[3]["top_logprobs"] = [
        {"token": t, "logprob": math.log(p)} for t, p in alternatives.items()
    ]
    return {
        "id": "c1",
        "object": "chat.completion",
        "model": "judge-model",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "logprobs": {"content": entries},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
    }


def judge(llm: FakeLLM, style: str):
    return llm_classifier(
        base_url=base_url(llm, style), style=style, model="judge-model", api_key="sk-test-123456"
    )


async def test_openai_chat_answers_are_calibrated_from_logprobs(llm):
    llm.push(raw(200, chat_answer('{"response":"yes"}', "yes", {"yes": 0.6, "no": 0.3, "x": 0.1})))
    c = judge(llm, "openai")
    d = await c.evaluate(state("You judge.", {"msg": "hi"}), questions([noul("bad", "Is it bad?")]))
    await c.aclose()
    body = llm.requests[0].body
    assert body["logprobs"] is True and body["top_logprobs"] == 20
    schema = body["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["response"]["enum"] == ["yes", "no", "uncertain"]
    assert "Is it bad?" in body["messages"][-1]["content"]
    assert d.calibrated is True
    assert d.noul("bad").noul == pytest.approx(0.6 / 0.9)
    assert (d.usage.input_tokens, d.usage.output_tokens) == (7, 3)


async def test_choice_and_score_probabilities_from_logprobs(llm):
    def reply(request):  # one call per question, sent at once: answer by the question asked
        if "Which tool?" in request.body["messages"][-1]["content"]:
            return raw(200, chat_answer('{"response":"2"}', "2", {"2": 0.7, "1": 0.3}))
        return raw(200, chat_answer('{"response":"1"}', "1", {"1": 0.5, "2": 0.5}))

    llm.push(reply, reply)
    c = judge(llm, "openai")
    qs = questions(
        [
            choice("tool", "Which tool?", {"read": "reads a file", "write": "writes a file"}),
            score("risk", "How risky?", ["none", "some", "high"]),
        ]
    )
    d = await c.evaluate({"role": "r", "call": "rm -rf"}, qs)
    await c.aclose()
    picked = d.choice("tool")
    assert picked.choice == "write"
    assert picked.probabilities == pytest.approx({"read": 0.3, "write": 0.7})
    assert picked.confidence == pytest.approx(0.7) and not picked.near_uniform
    level = d.score("risk")
    assert level.score == pytest.approx(1.5)  # levels 1 and 2 at even odds
    assert level.legend == {"0": "none", "1": "some", "2": "high"}
    assert len(llm.requests) == 2


async def test_anthropic_forces_a_tool_and_falls_back_uncalibrated(llm):
    llm.push(tools(call("final_result", {"response": "no"})))
    c = judge(llm, "anthropic")
    answers = await ask(c, state("You judge.", {"msg": "hi"}), [noul("bad", "Is it bad?")])
    await c.aclose()
    body = llm.requests[0].body
    assert body["tools"][0]["input_schema"]["properties"]["response"]["enum"][0] == "yes"
    assert "logprobs" not in body
    assert body["tool_choice"] == {"type": "tool", "name": "final_result"}
    assert answers["bad"].value() == 0.0 and answers["bad"].band == "no"


async def test_responses_wire_uses_a_json_schema_and_falls_back(llm):
    llm.push(text('{"response":"uncertain"}'))
    c = judge(llm, "openai-responses")
    d = await c.evaluate({"role": "r"}, questions([noul("bad", "Is it bad?")]))
    await c.aclose()
    assert llm.requests[0].body["text"]["format"]["type"] == "json_schema"
    assert (d.noul("bad").noul, d.calibrated) == (0.5, False)


async def test_responses_answers_are_calibrated_from_their_logprobs(llm):
    tokens = [
        {"token": t, "logprob": -0.01, "top_logprobs": []}
        for t in ['{"', "response", '":"', "no", '"}']
    ]
    tokens[3]["top_logprobs"] = [
        {"token": "no", "logprob": math.log(0.8)},
        {"token": "yes", "logprob": math.log(0.2)},
    ]
    body = {
        "id": "resp_1",
        "object": "response",
        "status": "completed",
        "model": "judge-model",
        "output": [
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [
                    {
                        "type": "output_text",
                        "text": '{"response":"no"}',
                        "annotations": [],
                        "logprobs": tokens,
                    }
                ],
            }
        ],
        "usage": {"input_tokens": 7, "output_tokens": 3, "total_tokens": 10},
    }
    llm.push(raw(200, body))
    c = judge(llm, "openai-responses")
    d = await c.evaluate({"role": "r"}, questions([noul("bad", "Is it bad?")]))
    await c.aclose()
    sent = llm.requests[0].body
    assert sent["include"] == ["message.output_text.logprobs"] and sent["top_logprobs"] == 20
    assert d.calibrated and d.noul("bad").noul == pytest.approx(0.2)


async def test_a_callers_client_is_the_llm_style(llm, make_client):
    llm.push(text('{"response":"yes"}'))
    c = create_classifier(style="llm", client=make_client("openai"))
    d = await c.evaluate({"role": "r"}, questions([noul("ok", "Is it fine?")]))
    assert (d.noul("ok").noul, d.calibrated, d.model) == (1.0, False, "test-model")


async def test_a_provider_error_is_a_classifier_error_without_the_key(llm):
    llm.push(raw(401, {"error": {"message": "bad key sk-test-123456"}}))
    metrics: list[dict] = []
    c = llm_classifier(
        base_url=base_url(llm, "openai"),
        style="openai",
        model="m",
        api_key="sk-test-123456",
        on_metric=metrics.append,
    )
    with pytest.raises(ClassifierError) as info:
        await c.evaluate({"role": "r"}, questions([noul("ok", "Is it fine?")]))
    await c.aclose()
    assert "sk-test-123456" not in str(info.value) + repr(metrics)
    assert metrics[0]["status"] == "error"
