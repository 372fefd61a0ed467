"""Simple judgments over any `Classifier`: build questions, ask, read bands, decide.

    answers = await ask(c, state(role, {"message": msg}), [
        noul("rude", "Does message contain inappropriate language?"),
    ])
    answers["rude"].band   # "yes" | "no" | "uncertain"

The builders produce exactly the `evaluate` inputs, so the wire request is the same as for
hand-written question maps.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolnexus.classifier import (
    ChoiceAnswer,
    ChoiceQuestion,
    Classifier,
    ClassifierError,
    Decision,
    DecisionAnswer,
    NoulAnswer,
    NoulCriteria,
    NoulQuestion,
    Question,
    RecordedDecision,
    ScoreAnswer,
    ScoreQuestion,
    create_classifier,
    decision_wire,
    question_from_wire,
    questions_wire,
)
from toolnexus.types import Request

__all__ = [
    "DEFAULT_BANDS",
    "Bands",
    "JudgeAnswer",
    "NamedQuestion",
    "Outcome",
    "Policy",
    "Rule",
    "Tape",
    "ask",
    "choice",
    "context",
    "decide",
    "decision_wire",
    "gate",
    "noul",
    "question_from_wire",
    "questions",
    "read",
    "score",
    "state",
    "static_classifier",
]

NamedQuestion = tuple[str, Question]


@dataclass(frozen=True)
class Bands:
    """Cut-points, exclusive on the confident side: exactly `low` or `high` is uncertain."""

    low: float = 0.3
    high: float = 0.7

    def noul(self, p: float) -> str:
        """`"yes"` above `high`, `"no"` below `low`, else `"uncertain"`."""
        if p > self.high:
            return "yes"
        if p < self.low:
            return "no"
        return "uncertain"

    def sure(self, confidence: float, near_uniform: bool = False) -> bool:
        """Whether a choice or score is confident enough to act on."""
        return not near_uniform and confidence > self.high


DEFAULT_BANDS = Bands()


@dataclass(frozen=True)
class JudgeAnswer:
    """One answer with its reading: `band` for a noul, `sure` for a choice or score."""

    raw: DecisionAnswer
    band: str | None = None
    sure: bool | None = None

    @property
    def type(self) -> str:
        return self.raw.type

    @property
    def uncertain(self) -> bool:
        return self.band == "uncertain" if self.band is not None else not self.sure

    def value(self) -> float:
        """Noul probability, score value, or choice confidence."""
        raw = self.raw
        if isinstance(raw, NoulAnswer):
            return raw.noul
        if isinstance(raw, ScoreAnswer):
            return raw.score
        return raw.confidence

    def choice(self) -> str:
        if not isinstance(self.raw, ChoiceAnswer):
            raise ClassifierError(f"judge: a {self.raw.type} answer has no choice")
        return self.raw.choice


def state(role: str, data: Any) -> dict[str, Any]:
    """A state: `role` plus `data`'s keys (a non-mapping `data` goes under `"data"`)."""
    if isinstance(data, Mapping):
        return {"role": role, **data}
    return {"role": role, "data": data}


def context(ctx: str, message: str, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """`{"context": ctx, "message": message, **extra}`."""
    return {"context": ctx, "message": message, **(extra or {})}


def noul(name: str, instructions: str, true: str = "", false: str = "") -> NamedQuestion:
    """A yes/no/uncertain question (criteria sent only when `true` or `false` is given)."""
    criteria = NoulCriteria(true, false) if true or false else None
    return name, NoulQuestion(instructions, criteria)


def choice(name: str, instructions: str, options: Mapping[str, str]) -> NamedQuestion:
    """A choice among `options` (name → description)."""
    return name, ChoiceQuestion(instructions, dict(options))


def score(name: str, instructions: str, levels: Sequence[str]) -> NamedQuestion:
    """A score over `levels` (descriptions, lowest first)."""
    return name, ScoreQuestion(instructions, list(levels))


def questions(qs: Sequence[NamedQuestion]) -> dict[str, Question]:
    """The question map of named questions; a repeated name is an error."""
    out: dict[str, Question] = {}
    for name, q in qs:
        if name in out:
            raise ClassifierError(f'duplicate question name "{name}"')
        out[name] = q
    return out


def read(decision: Decision, bands: Bands | None = None) -> dict[str, JudgeAnswer]:
    """Each answer with its band (noul) or sureness (choice, score)."""
    b = bands or DEFAULT_BANDS
    out: dict[str, JudgeAnswer] = {}
    for key, raw in decision.answers.items():
        if isinstance(raw, NoulAnswer):
            out[key] = JudgeAnswer(raw, band=b.noul(raw.noul))
        elif isinstance(raw, ChoiceAnswer):
            out[key] = JudgeAnswer(raw, sure=b.sure(raw.confidence, raw.near_uniform))
        else:
            out[key] = JudgeAnswer(raw, sure=b.sure(raw.confidence))
    return out


async def ask(
    classifier: Classifier,
    st: Mapping[str, Any],
    qs: Sequence[NamedQuestion],
    bands: Bands | None = None,
) -> dict[str, JudgeAnswer]:
    """Evaluate `qs` on `st` and read the answers."""
    return read(await classifier.evaluate(dict(st), questions(qs)), bands)


@dataclass(frozen=True)
class Rule:
    """`below` / `at_least` (numeric, on noul or score) or `is_` (choice) → `action`."""

    question: str
    action: str
    below: float | None = None
    at_least: float | None = None
    is_: str | None = None
    target: str = ""

    def matches(self, answer: JudgeAnswer) -> bool:
        if self.is_ is not None:
            return isinstance(answer.raw, ChoiceAnswer) and answer.raw.choice == self.is_
        v = answer.value()
        if self.below is not None and not v < self.below:
            return False
        if self.at_least is not None and not v >= self.at_least:
            return False
        return self.below is not None or self.at_least is not None


@dataclass(frozen=True)
class Policy:
    """Rules in order (the first that matches decides), a `default`, optional bands."""

    rules: Sequence[Rule]
    default: str = ""
    bands: Bands | None = None
    skip_uncertain: bool = False


@dataclass
class Outcome:
    """What a policy decided. `escalated` with a `needs_input` `request` when unsure."""

    action: str = ""
    target: str = ""
    escalated: bool = False
    request: Request | None = None
    answers: dict[str, JudgeAnswer] = field(default_factory=dict)


def _escalate(ans: dict[str, JudgeAnswer], id: str, question: str, reason: str) -> Outcome:
    request = Request(
        id=id,
        kind="input",
        prompt=f"Classifier is unsure about {question!r} ({reason}).",
        data={"question": question, "reason": reason, "answers": ans},
    )
    return Outcome("needs_input", "", True, request, ans)


def _fired(ans: dict[str, JudgeAnswer], policy: Policy) -> Outcome | None:
    """The outcome of the first rule that fires or escalates; `None` when none does."""
    for index, rule in enumerate(policy.rules):
        q, where = rule.question, f"gate:{index}:{rule.question}"
        answer = ans.get(q)
        if answer is None:
            return _escalate(ans, where, q, f'missing answer "{q}"')
        if rule.is_ is None and rule.below is None and rule.at_least is None:
            return _escalate(ans, where, q, f"rule on {q!r} has no below / at_least / is")
        if rule.is_ is not None and answer.type != "choice":
            return _escalate(ans, where, q, f"is-rule on {answer.type} answer {q!r}")
        if answer.uncertain:
            if policy.skip_uncertain:
                continue
            return _escalate(ans, where, q, f'uncertain answer "{q}"')
        if rule.matches(answer):
            return Outcome(rule.action, rule.target, False, None, ans)
    return None


def decide(ans: dict[str, JudgeAnswer], policy: Policy) -> Outcome:
    """Apply `policy`'s rules in order: the first that matches decides. A rule whose answer is
    uncertain (unless `skip_uncertain`), missing or of the wrong kind escalates with a
    `needs_input` request. When no rule fires the action is `""` (`gate` applies the default)."""
    return _fired(ans, policy) or Outcome(answers=ans)


async def gate(
    classifier: Classifier,
    st: Mapping[str, Any],
    qs: Sequence[NamedQuestion],
    rules: Sequence[Rule] | Policy,
    bands: Bands | None = None,
) -> Outcome:
    """`ask` (with the policy's bands), then `decide`. With a bare rule list, no rule fired is
    `action == ""`; a `Policy` declares it: its `default`, or an escalation when it has none."""
    policy = rules if isinstance(rules, Policy) else Policy(list(rules))
    ans = await ask(classifier, st, qs, bands or policy.bands)
    fired = _fired(ans, policy)
    if fired is not None:
        return fired
    if not isinstance(rules, Policy):
        return Outcome(answers=ans)
    if policy.default:
        return Outcome(policy.default, "", False, None, ans)
    return _escalate(ans, "gate:default", "", "no rule fired")


def static_classifier(
    *records: tuple[Mapping[str, Any], Mapping[str, Question] | Sequence[NamedQuestion], Any],
    model: str | None = None,
) -> Classifier:
    """A classifier answering from `(state, questions, response)` records, for tests."""
    decisions = [
        RecordedDecision(
            dict(st), dict(qs) if isinstance(qs, Mapping) else questions(list(qs)), response
        )
        for st, qs, response in records
    ]
    return create_classifier(style="static", decisions=decisions, model=model)


class _Recording:
    """Answers through `live` and writes each decision on the tape under `name`."""

    def __init__(self, live: Classifier, name: str, tape: dict[str, dict[str, Any]]) -> None:
        self._live, self._name, self._tape = live, name, tape

    async def evaluate(self, st: Any, qs: Mapping[str, Question]) -> Decision:
        decision = await self._live.evaluate(st, qs)
        self._tape[self._name] = {
            "state": st,
            "questions": questions_wire(qs),
            "response": decision_wire(decision),
        }
        return decision


class _Replay:
    """Answers call `name` from the tape; a miss sends nothing."""

    def __init__(self, name: str, entry: Mapping[str, Any] | None, model: str) -> None:
        self._name, self._model = name, model
        self._static: Classifier | None = None
        if entry is not None:
            qs = {k: question_from_wire(w) for k, w in entry["questions"].items()}
            record = RecordedDecision(entry["state"], qs, entry["response"])
            self._static = create_classifier(style="static", decisions=[record], model=model)

    async def evaluate(self, st: Any, qs: Mapping[str, Question]) -> Decision:
        if self._static is None:
            raise ClassifierError(f'tape: no recorded decision for call "{self._name}"')
        return await self._static.evaluate(st, qs)


class Tape:
    """Record live decisions by call name; replay them offline.

    `Tape(live)` records into `recorded`; `Tape(recorded=tape.recorded)` replays. A replay
    miss is an error naming the call, and sends no request.
    """

    def __init__(
        self,
        live: Classifier | None = None,
        recorded: Mapping[str, Mapping[str, Any]] | None = None,
        model: str | None = None,
    ) -> None:
        self.live = live
        self.recorded: dict[str, dict[str, Any]] = {k: dict(v) for k, v in (recorded or {}).items()}
        self.model = model or ""

    def call(self, name: str) -> Classifier:
        """The classifier to use for call `name`: recording (live) or replaying."""
        if self.live is not None:
            backend: Any = _Recording(self.live, name, self.recorded)
        else:
            backend = _Replay(name, self.recorded.get(name), self.model)
        return Classifier._over(backend, model=self.model, on_metric=None, style="custom")
