"""Simple judgments: builders, bands, rules and policies, recorded classifiers."""

from __future__ import annotations

import pytest

from toolnexus.classifier import (
    ChoiceAnswer,
    ClassifierError,
    Decision,
    NoulAnswer,
    ScoreAnswer,
    canonical_request,
    near_uniform,
)
from toolnexus.judge import (
    Bands,
    Policy,
    Rule,
    Tape,
    ask,
    choice,
    context,
    decide,
    decision_wire,
    gate,
    noul,
    questions,
    read,
    score,
    state,
    static_classifier,
)

DECISION = Decision(
    model="m",
    answers={
        "a": NoulAnswer(0.3),
        "c": ChoiceAnswer("x", {"x": 0.5, "y": 0.5}, 0.5, True),
        "d": ScoreAnswer(1.0, {"0": "low", "1": "high"}, {"0": 0.1, "1": 0.9}, 0.9),
    },
)


def test_builders_make_the_wire_questions():
    assert state("R", {"x": 1}) == {"role": "R", "x": 1}
    assert state("R", "text") == {"role": "R", "data": "text"}
    assert context("ctx", "msg", {"z": 1}) == {"context": "ctx", "message": "msg", "z": 1}
    qs = questions([noul("a", "Is it bad? é"), score("d", "Rate", ["low", "high"])])
    assert (
        canonical_request("m", qs)
        == (
            '{"model":"m","questions":{"a":{"instructions":"Is it bad? é","type":"noul"},'
            '"d":{"criteria":["low","high"],"instructions":"Rate","type":"score"}}}'
        ).encode()
    )
    with pytest.raises(ClassifierError, match='duplicate question name "a"'):
        questions([noul("a", "x"), noul("a", "y")])
    assert choice("c", "pick", {"a": "A"})[1].criteria == {"a": "A"}


def test_bands_are_exclusive_on_the_confident_side():
    b = Bands()
    assert [b.noul(0.3), b.noul(0.29), b.noul(0.7), b.noul(0.71)] == [
        "uncertain",
        "no",
        "uncertain",
        "yes",
    ]
    assert [b.sure(0.7), b.sure(0.71), b.sure(0.9, True)] == [False, True, False]
    assert near_uniform({"a": 0.52, "b": 0.48}) and not near_uniform({"a": 0.6, "b": 0.4})


def test_read_and_decision_accessors():
    answers = read(DECISION)
    assert answers["a"].band == "uncertain" and answers["a"].uncertain
    assert answers["c"].sure is False and answers["c"].choice() == "x"
    assert answers["d"].sure is True and answers["d"].value() == 1.0
    with pytest.raises(ClassifierError, match="answer 'c' is a choice answer, not noul"):
        DECISION.noul("c")
    with pytest.raises(ClassifierError, match="no answer 'zz' in this decision"):
        DECISION.noul("zz")
    assert decision_wire(DECISION)["answers"]["a"] == {"type": "noul", "noul": 0.3}


def test_an_uncertain_answer_escalates_with_a_request():
    outcome = decide(read(DECISION), Policy([Rule("a", "block", at_least=0.7)], "allow"))
    assert (outcome.action, outcome.escalated) == ("needs_input", True)
    assert outcome.request is not None
    assert outcome.request.id == "gate:0:a"
    assert outcome.request.prompt == "Classifier is unsure about 'a' (uncertain answer \"a\")."


def test_rules_in_order_and_what_escalates():
    sure = Decision(answers={"a": NoulAnswer(0.9), "c": ChoiceAnswer("y", {"y": 1.0}, 1.0)})
    answers = read(sure)
    assert decide(answers, Policy([Rule("a", "block", at_least=0.7)])).action == "block"
    routed = decide(answers, Policy([Rule("c", "route", is_="y", target="agent-y")]))
    assert (routed.action, routed.target) == ("route", "agent-y")
    # as published: decide leaves the default to gate
    assert decide(answers, Policy([Rule("a", "block", below=0.5)], "allow")).action == ""
    skipped = decide(read(DECISION), Policy([Rule("a", "x", below=1)], "ok", skip_uncertain=True))
    assert not skipped.escalated
    reasons = {
        "missing": Rule("zz", "block", at_least=0.7),
        "no test": Rule("a", "block"),
        "kind": Rule("a", "block", is_="x"),
    }
    prompts = {k: decide(answers, Policy([r])).request.prompt for k, r in reasons.items()}
    assert prompts == {
        "missing": "Classifier is unsure about 'zz' (missing answer \"zz\").",
        "no test": "Classifier is unsure about 'a' (rule on 'a' has no below / at_least / is).",
        "kind": "Classifier is unsure about 'a' (is-rule on noul answer 'a').",
    }


async def test_gate_applies_the_policy_default_or_escalates():
    st = {"role": "r"}
    qs = [noul("n", "x")]
    c = static_classifier((st, qs, {"answers": {"n": {"type": "noul", "noul": 0.1}}}))
    rule = Rule("n", "block", at_least=0.7)
    assert (await gate(c, st, qs, Policy([rule], default="allow"))).action == "allow"
    assert (await gate(c, st, qs, [rule])).action == ""
    undecided = await gate(c, st, qs, Policy([rule]))
    assert undecided.action == "needs_input" and undecided.request is not None
    assert undecided.request.id == "gate:default"
    assert undecided.request.prompt == "Classifier is unsure about '' (no rule fired)."


async def test_ask_and_gate_on_a_static_classifier():
    st = {"role": "r", "x": 1}
    c = static_classifier(
        (
            st,
            [noul("a", "Is it bad?")],
            {"model": "m1", "answers": {"a": {"type": "noul", "noul": 0.9}}},
        )
    )
    answers = await ask(c, st, [noul("a", "Is it bad?")])
    assert answers["a"].band == "yes"
    outcome = await gate(c, st, [noul("a", "Is it bad?")], [Rule("a", "block", at_least=0.7)])
    assert outcome.action == "block"
    with pytest.raises(ClassifierError, match="no recorded decision"):
        await ask(c, st, [noul("b", "Is it bad?")])  # the keys are part of the request


async def test_tape_records_then_replays_without_sending():
    sent: list[dict] = []

    def live_answer(st, qs):
        sent.append(st)
        return Decision(model="cm", answers={"a": NoulAnswer(0.1)})

    from toolnexus.classifier import create_classifier

    live = create_classifier(style="custom", evaluate=live_answer)
    tape = Tape(live)
    qs = questions([noul("a", "x")])
    await tape.call("first").evaluate({"role": "r"}, qs)
    assert tape.recorded["first"]["response"]["answers"] == {"a": {"type": "noul", "noul": 0.1}}
    replay = Tape(recorded=tape.recorded)
    again = await replay.call("first").evaluate({"role": "r"}, qs)
    assert again.noul("a").noul == 0.1 and len(sent) == 1
    with pytest.raises(ClassifierError, match='tape: no recorded decision for call "second"'):
        await replay.call("second").evaluate({"role": "r"}, qs)


def test_score_levels_in_level_order():
    legend = {str(i): f"level {i}" for i in range(11)}
    answer = ScoreAnswer(1.0, legend, {}, 0.5)
    assert answer.levels()[2] == "level 2" and answer.levels()[-1] == "level 10"
