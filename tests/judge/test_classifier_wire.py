"""The systemone wire: request bytes as the published package sends them, errors, metrics."""

from __future__ import annotations

import json

import pytest

from support.fake_llm import FakeLLM, raw
from toolnexus.classifier import (
    CLASSIFIER_BACKENDS,
    ClassifierError,
    ClassifierResponse,
    NoulAnswer,
    RecordedDecision,
    create_classifier,
    near_uniform,
)
from toolnexus.errors import ToolnexusError
from toolnexus.judge import choice, noul, questions, score, state

# Captured from toolnexus==0.21.0 for the same call (state and questions below).
PUBLISHED_BODY = (
    b'{"model":"jev-latest","questions":{"a":{"instructions":"Is it bad?","type":"noul"},'
    b'"b":{"criteria":{"false":"not good","true":"yes good"},"instructions":"Is it good?",'
    b'"type":"noul"},"c":{"criteria":{"x":"the x","y":"the y"},"instructions":"Pick one",'
    b'"type":"choice"},"d":{"criteria":["low","mid","high"],"instructions":"Rate it",'
    b'"type":"score"}},"state":{"msg":"hi","role":"You are a judge."}}'
)
QUESTIONS = questions(
    [
        noul("a", "Is it bad?"),
        noul("b", "Is it good?", true="yes good", false="not good"),
        choice("c", "Pick one", {"x": "the x", "y": "the y"}),
        score("d", "Rate it", ["low", "mid", "high"]),
    ]
)
ANSWERS = {
    "model": "jev-1",
    "answers": {
        "a": {"type": "noul", "noul": 0.8},
        "b": {"type": "noul", "noul": 0.1},
        "c": {
            "type": "choice",
            "choice": "x",
            "probabilities": {"x": 0.9, "y": 0.1},
            "confidence": 0.9,
        },
        "d": {
            "type": "score",
            "score": 1.2,
            "legend": {"0": "low", "1": "mid", "2": "high"},
            "probabilities": {"0": 0.1, "1": 0.6, "2": 0.3},
            "confidence": 0.6,
        },
    },
    "usage": {"input_tokens": 5, "output_tokens": 2, "cost": 0.01},
}
KEY = "sk-judge-secret-123456"

# The vendor wire is not an LLM wire: its bodies are checked byte for byte here instead.
pytestmark = pytest.mark.raw_bodies


@pytest.fixture
def vendor(llm: FakeLLM, monkeypatch: pytest.MonkeyPatch) -> FakeLLM:
    monkeypatch.setenv("TYPESAFE_API_KEY", KEY)
    return llm


def make(llm: FakeLLM, **options):
    options.setdefault("retry_base_ms", 1)
    return create_classifier(base_url=llm.url + "/v1", **options)


async def test_request_bytes_match_the_published_package(vendor):
    vendor.push(raw(200, ANSWERS))
    metrics: list[dict] = []
    c = make(vendor, on_metric=metrics.append)
    decision = await c.evaluate(state("You are a judge.", {"msg": "hi"}), QUESTIONS)
    await c.aclose()
    sent = vendor.requests[0]
    assert sent.path == "/v1/systemone"
    assert sent.raw == PUBLISHED_BODY
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.headers["content-type"] == "application/json"
    assert decision.model == "jev-1"
    assert decision.noul("a") == NoulAnswer(0.8)
    assert decision.choice("c").choice == "x"
    assert decision.score("d").score == 1.2
    assert decision.usage.cost == 0.01
    (event,) = metrics
    assert event["event"] == "classifier.evaluate"
    assert (event["status"], event["model"], event["prompt_tokens"]) == ("ok", "jev-1", 5)


async def test_http_transport_gets_the_canonical_bytes(vendor):
    seen: list[tuple[str, bytes]] = []

    class Sender:
        def post(self, url, headers, body, timeout):
            seen.append((url, body))
            return ClassifierResponse(200, json.dumps(ANSWERS).encode())

    c = create_classifier(base_url="https://judge.invalid/v1", http_transport=Sender())
    await c.evaluate(state("You are a judge.", {"msg": "hi"}), QUESTIONS)
    assert seen == [("https://judge.invalid/v1/systemone", PUBLISHED_BODY)]


async def test_auth_failure_drops_the_body_and_never_shows_the_key(vendor):
    vendor.push(raw(401, {"error": {"message": f"bad key {KEY}"}}))
    metrics: list[dict] = []
    c = make(vendor, on_metric=metrics.append)
    with pytest.raises(ClassifierError) as info:
        await c.evaluate({"role": "r"}, QUESTIONS)
    await c.aclose()
    assert isinstance(info.value, ToolnexusError)
    assert str(info.value).endswith("/v1/systemone: HTTP 401")
    assert KEY not in repr(metrics)
    assert metrics[0]["status"] == "error"


async def test_retryable_status_retries_then_reports_the_body(vendor):
    for _ in range(3):
        vendor.push(raw(429, {"error": {"message": "slow down"}}, headers={"retry-after": "0"}))
    c = make(vendor, retries=2)
    with pytest.raises(ClassifierError, match=r"HTTP 429: .*slow down"):
        await c.evaluate({"role": "r"}, QUESTIONS)
    await c.aclose()
    assert len(vendor.requests) == 3


async def test_client_error_is_not_retried_and_unparseable_is_named(vendor):
    vendor.push(raw(400, {"error": {"message": "bad q"}}), raw(200, "not json"))
    c = make(vendor, retries=2)
    with pytest.raises(ClassifierError, match="HTTP 400"):
        await c.evaluate({"role": "r"}, QUESTIONS)
    with pytest.raises(ClassifierError, match="unparseable response"):
        await c.evaluate({"role": "r"}, QUESTIONS)
    await c.aclose()
    assert len(vendor.requests) == 2


async def test_unknown_answer_type_is_an_error(vendor):
    vendor.push(raw(200, {"answers": {"a": {"noul": 0.8}}}))
    c = make(vendor)
    with pytest.raises(ClassifierError, match="answer 'a': unknown type None"):
        await c.evaluate({"role": "r"}, QUESTIONS)
    await c.aclose()


async def test_unset_key_sends_no_authorization_and_backends_name_places(llm, monkeypatch):
    monkeypatch.delenv("TYPESAFE_API_KEY", raising=False)
    monkeypatch.setenv("OPENROUTER_API_KEY", KEY)
    llm.push(raw(200, {"answers": {}}), raw(200, {"answers": {}}))
    await make(llm).evaluate({"role": "r"}, questions([noul("a", "x")]))
    assert "authorization" not in llm.requests[0].headers  # as published: a gateway may need none
    c = make(llm, backend="openrouter")
    await c.evaluate({"role": "r"}, questions([noul("a", "x")]))
    assert llm.requests[1].raw == (
        b'{"model":"typesafe/jev-1.13","questions":{"a":{"instructions":"x","type":"noul"}},'
        b'"state":{"role":"r"}}'
    )
    assert llm.requests[1].headers["authorization"] == f"Bearer {KEY}"
    assert CLASSIFIER_BACKENDS["openrouter"]["base_url"] == "https://openrouter.ai/api/v1"


async def test_styles_need_their_option_and_questions_are_checked():
    with pytest.raises(ClassifierError, match="style 'custom' requires evaluate"):
        create_classifier(style="custom")
    with pytest.raises(ClassifierError, match="style 'llm' requires client"):
        create_classifier(style="llm")
    with pytest.raises(ClassifierError, match="unknown style 'nope'"):
        create_classifier(style="nope")  # type: ignore[arg-type]
    c = create_classifier(style="static", decisions=[])
    with pytest.raises(ClassifierError, match="no questions to evaluate"):
        await c.evaluate({"role": "r"}, {})
    with pytest.raises(ClassifierError, match="levels"):
        await c.evaluate({"role": "r"}, questions([score("s", "x", ["one"])]))


async def test_static_and_batch():
    qs = questions([noul("a", "Is it bad?")])
    recorded = RecordedDecision(
        {"role": "r", "x": 1}, qs, {"answers": {"a": {"type": "noul", "noul": 0.9}}}
    )
    c = create_classifier(style="static", decisions=[recorded], model="m")
    d = await c.evaluate({"role": "r", "x": 1}, qs)
    assert d.noul("a").noul == 0.9
    with pytest.raises(ClassifierError, match="no recorded decision"):
        await c.evaluate({"role": "r", "x": 2}, qs)
    with pytest.raises(ClassifierError, match="no states to evaluate"):
        await c.evaluate_batch([], qs)
    with pytest.raises(ClassifierError, match=r"evaluate_batch: state 1: .*no recorded"):
        await c.evaluate_batch([{"role": "r", "x": 1}, {"role": "r", "x": 5}], qs)
    both = await c.evaluate_batch([{"role": "r", "x": 1}, {"role": "r", "x": 1}], qs)
    assert [x.noul("a").noul for x in both] == [0.9, 0.9]


async def test_an_echoed_key_and_account_ids_never_leave_in_errors_or_metrics(vendor):
    vendor.push(raw(500, {"error": {"message": f"upstream saw {KEY}"}, "user_id": "u-40412"}))
    metrics: list[dict] = []
    c = make(vendor, retries=0, on_metric=metrics.append)
    with pytest.raises(ClassifierError) as info:
        await c.evaluate({"role": "r"}, QUESTIONS)
    await c.aclose()
    assert "HTTP 500" in str(info.value) and "upstream saw" in str(info.value)
    assert KEY not in str(info.value) + repr(metrics) + repr(c)
    assert "u-40412" not in str(info.value) + repr(metrics)


async def test_an_async_sender_and_its_retry_after(vendor):
    statuses = [429, 200]

    class Sender:
        async def post(self, url, headers, body, timeout):
            status = statuses.pop(0)
            text = json.dumps(ANSWERS if status == 200 else {"error": "busy"}).encode()
            return ClassifierResponse(status, text, retry_after="0")

    c = create_classifier(base_url="https://judge.invalid/v1", http_transport=Sender())
    decision = await c.evaluate(state("You are a judge.", {"msg": "hi"}), QUESTIONS)
    assert decision.model == "jev-1" and statuses == []


async def test_a_choice_whose_options_read_the_same_warns_once_per_question(vendor):
    vendor.push(*[raw(200, ANSWERS) for _ in range(3)])
    events: list[dict] = []
    c = make(vendor, on_metric=events.append)
    same = questions([choice("c", "Pick", {"x": "alike", "y": "alike"}), noul("a", "Bad?")])
    await c.evaluate({"role": "r"}, same)
    await c.evaluate({"role": "r"}, same)  # warned already: once per question key
    empty = questions([choice("e", "Pick", {"x": "", "y": ""})])
    distinct = questions(
        [choice("d", "Pick", {"x": " ", "y": "  "}), choice("o", "Pick", {"x": ""})]
    )
    await c.evaluate({"role": "r"}, {**empty, **distinct, **QUESTIONS})
    await c.aclose()
    warnings = [
        e for e in events if e["event"] == "classifier.warning" and "choice" in e["warning"]
    ]
    assert [w["question"] for w in warnings] == ["c", "e"]
    assert "the same text" in warnings[0]["warning"] and "empty" in warnings[1]["warning"]
    assert events.index(warnings[0]) < [e["event"] for e in events].index("classifier.evaluate")
    # a question the decision leaves unanswered is named too
    assert {"event": "classifier.warning", "question": "e"} | {
        "warning": "classifier: the decision has no answer for 'e'"
    } in events


async def test_invalid_questions_send_nothing_and_report_an_error_metric(vendor):
    events: list[dict] = []
    c = make(vendor, on_metric=events.append)
    bad = questions([choice("c", "Pick", {"x": "a", "y": "a"}), score("s", "Rate", ["one"])])
    with pytest.raises(ClassifierError, match="score 's' needs 2 to 10 levels"):
        await c.evaluate({"role": "r"}, bad)
    await c.aclose()
    assert vendor.requests == []
    (event,) = events  # no warning: the questions never went out
    assert (event["event"], event["status"]) == ("classifier.evaluate", "error")


async def test_every_option_is_an_attribute_read_at_each_call(vendor, monkeypatch):
    monkeypatch.setenv("OTHER_KEY", "sk-other-987654")
    c = create_classifier(backend="openrouter", retryable_statuses=[599], headers={"X-A": "1"})
    assert (c.style, c.base_url, c.model) == (
        "systemone",
        CLASSIFIER_BACKENDS["openrouter"]["base_url"],
        "typesafe/jev-1.13",
    )
    assert (c.api_key_env, c.headers, c.timeout, c.retries, c.retry_base_ms) == (
        "OPENROUTER_API_KEY",
        {"X-A": "1"},
        10.0,
        2,
        500,
    )
    assert c.retryable_statuses == frozenset({599})
    assert (c.http_transport, c.on_error, c.body_transform, c.on_metric) == (None,) * 4
    assert (c.request_params, c.client, c.evaluate_fn, c.decisions) == ({}, None, None, [])
    vendor.push(raw(200, ANSWERS))
    c.base_url, c.model, c.api_key_env = vendor.url + "/v2", "jev-2", "OTHER_KEY"
    c.headers, c.request_params, c.retries = {"X-B": "2"}, {"temperature": 0}, 0
    await c.evaluate({"role": "r"}, questions([noul("a", "x")]))
    await c.aclose()
    sent = vendor.requests[0]
    assert sent.path == "/v2/systemone"
    assert sent.raw == (
        b'{"model":"jev-2","questions":{"a":{"instructions":"x","type":"noul"}},'
        b'"state":{"role":"r"},"temperature":0}'
    )
    assert sent.headers["authorization"] == "Bearer sk-other-987654"
    assert sent.headers["x-b"] == "2" and "x-a" not in sent.headers
    custom = create_classifier(style="custom", evaluate=lambda s, q: {"answers": {}})
    assert custom.evaluate_fn is not None and custom.style == "custom"


async def test_answers_are_read_as_leniently_as_published(vendor):
    lenient = {
        "answers": {
            "a": {"type": "noul", "noul": "0.25"},
            "c": {"type": "choice", "choice": "x"},  # no probabilities, no confidence
            "d": {"type": "score", "score": 1, "probabilities": None, "confidence": "0.5"},
        }
    }
    vendor.push(raw(200, lenient), raw(200, {"answers": {"a": {"type": "noul", "noul": "NaN"}}}))
    c = make(vendor)
    d = await c.evaluate({"role": "r"}, QUESTIONS)
    assert d.noul("a").noul == 0.25
    assert (d.choice("c").probabilities, d.choice("c").confidence) == ({}, 0.0)
    assert not d.choice("c").near_uniform
    assert (d.score("d").legend, d.score("d").confidence) == ({}, 0.5)
    with pytest.raises(ClassifierError, match="answer 'a' is not a number"):
        await c.evaluate({"role": "r"}, QUESTIONS)
    await c.aclose()
    assert near_uniform({"x": 0.5}) and not near_uniform({})
