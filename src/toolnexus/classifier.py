"""`Classifier`: the contract for a judgment, as `Tool` is the contract for an action.

A classifier takes a state plus pre-declared typed questions — yes/no/uncertain (`noul`),
`choice`, `score` — and answers each with calibrated values and no free text. It never enters
the client's tool-calling loop. It interprets; it never authorises: limits, permissions and
allowlists stay in code.

Backends (`create_classifier(style=...)`):

- `"systemone"`: the judgment vendor's wire, one POST of the canonical request to
  `<base_url>/systemone` (the bytes the published package sends).
- `"llm"`: the same questions on any model our `Client` speaks (`toolnexus.classifier_llm`).
- `"custom"`: a caller's `evaluate(state, questions)` returning a decision or its wire form.
- `"static"`: recorded decisions, replayed by canonical request and state (for tests).

Retries, `Retry-After`, `on_error`, the HTTP transport and secret redaction are the client's
own (`toolnexus.client._retry`, `_transport`, `toolnexus._secrets`): there is no second retry
loop here."""

# Over 600 lines because it is the published `toolnexus.classifier`: the contract's questions and
# answers, their wire forms, the backends and the class, read top to bottom; the LLM backend lives
# in `classifier_llm.py`.
from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import json
import math
import os
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from toolnexus._aio import call_maybe_async
from toolnexus._secrets import redact, remember
from toolnexus.errors import ProviderConnectionError, ProviderError, ToolnexusError, public_url

if TYPE_CHECKING:
    from toolnexus.client._retry import RetryPolicy
    from toolnexus.client._transport import HttpxTransport

__all__ = [
    "CLASSIFIER_BACKENDS",
    "DEFAULT_CLASSIFIER_API_KEY_ENV",
    "DEFAULT_CLASSIFIER_BASE_URL",
    "DEFAULT_CLASSIFIER_MODEL",
    "DEFAULT_CLASSIFIER_TIMEOUT",
    "MAX_CHOICE_OPTIONS",
    "MAX_SCORE_LEVELS",
    "METRIC_CLASSIFIER_EVALUATE",
    "METRIC_CLASSIFIER_WARNING",
    "MIN_SCORE_LEVELS",
    "NEAR_UNIFORM_TOLERANCE",
    "ChoiceAnswer",
    "ChoiceQuestion",
    "Classifier",
    "ClassifierBackend",
    "ClassifierError",
    "ClassifierResponse",
    "ClassifierStyle",
    "ClassifierTransport",
    "ClassifierUsage",
    "Decision",
    "DecisionAnswer",
    "LlmBackend",
    "NoulAnswer",
    "NoulCriteria",
    "NoulQuestion",
    "Question",
    "RecordedDecision",
    "ScoreAnswer",
    "ScoreQuestion",
    "canonical_json",
    "canonical_request",
    "choice_over",
    "create_classifier",
    "decision_from_wire",
    "label_probabilities",
    "near_uniform",
    "question_from_wire",
    "question_wire",
    "questions_wire",
]

DEFAULT_CLASSIFIER_BASE_URL = "https://api.typesafe.ai/v1"
DEFAULT_CLASSIFIER_MODEL = "jev-latest"
DEFAULT_CLASSIFIER_API_KEY_ENV = "TYPESAFE_API_KEY"
DEFAULT_CLASSIFIER_TIMEOUT = 10.0
MAX_CHOICE_OPTIONS = 255
MIN_SCORE_LEVELS = 2
MAX_SCORE_LEVELS = 10
NEAR_UNIFORM_TOLERANCE = 0.05
METRIC_CLASSIFIER_EVALUATE = "classifier.evaluate"
METRIC_CLASSIFIER_WARNING = "classifier.warning"

ClassifierStyle = Literal["systemone", "llm", "custom", "static"]
ClassifierBackend = Literal["typesafe", "openrouter"]

# Where each named backend of the systemone wire lives (`create_classifier(backend=...)`).
CLASSIFIER_BACKENDS: dict[str, dict[str, str]] = {
    "typesafe": {
        "base_url": "https://api.typesafe.ai/v1",
        "model": "jev-latest",
        "api_key_env": "TYPESAFE_API_KEY",
    },
    "openrouter": {
        "base_url": "https://openrouter.ai/api/v1",
        "model": "typesafe/jev-1.13",
        "api_key_env": "OPENROUTER_API_KEY",
    },
}


class ClassifierError(ToolnexusError):
    """Every failure of a classifier. Never carries a credential, an expanded header value or
    the body of a 401/403 answer (gateways reflect a bad `Authorization` into their text)."""


# -- questions ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class NoulCriteria:
    """What `true` and `false` mean for a noul question (both optional)."""

    true: str = ""
    false: str = ""


@dataclass(frozen=True)
class NoulQuestion:
    """Yes / no / uncertain: answered with the probability of yes."""

    instructions: str
    criteria: NoulCriteria | None = None
    type: Literal["noul"] = "noul"


@dataclass(frozen=True)
class ChoiceQuestion:
    """One of named options (`criteria`: option → its description)."""

    instructions: str
    criteria: dict[str, str] = field(default_factory=dict)
    type: Literal["choice"] = "choice"


@dataclass(frozen=True)
class ScoreQuestion:
    """A level on an ordered scale (`criteria`: the levels' descriptions, lowest first)."""

    instructions: str
    criteria: list[str] = field(default_factory=list)
    type: Literal["score"] = "score"


Question = NoulQuestion | ChoiceQuestion | ScoreQuestion


def choice_over(instructions: str, items: Mapping[str, str]) -> ChoiceQuestion:
    """A choice among `items` (name → description), e.g. tools, skills or agents."""
    return ChoiceQuestion(instructions, dict(items))


def question_wire(q: Question) -> dict[str, Any]:
    """The wire form of one question (`criteria` left out when a noul has none)."""
    wire: dict[str, Any] = {"type": q.type, "instructions": q.instructions}
    if isinstance(q, NoulQuestion):
        if q.criteria is not None:
            wire["criteria"] = {"true": q.criteria.true, "false": q.criteria.false}
    elif isinstance(q, ChoiceQuestion):
        wire["criteria"] = dict(q.criteria)
    else:
        wire["criteria"] = list(q.criteria)
    return wire


def question_from_wire(w: Mapping[str, Any]) -> Question:
    """The question a wire form describes."""
    wire = w
    kind, text = wire.get("type"), wire.get("instructions")
    if not isinstance(text, str):
        raise ClassifierError("classifier: a question needs string instructions")
    criteria = wire.get("criteria")
    if kind == "noul":
        if criteria is None:
            return NoulQuestion(text)
        if not isinstance(criteria, Mapping):
            raise ClassifierError("classifier: noul criteria must be an object")
        return NoulQuestion(
            text, NoulCriteria(str(criteria.get("true", "")), str(criteria.get("false", "")))
        )
    if kind == "choice" and isinstance(criteria, Mapping):
        return ChoiceQuestion(text, {str(k): str(v) for k, v in criteria.items()})
    if kind == "score" and isinstance(criteria, list):
        return ScoreQuestion(text, [str(v) for v in criteria])
    raise ClassifierError(f"classifier: unknown question type {kind!r}")


def _check_questions(questions: Mapping[str, Question]) -> None:
    if not questions:
        raise ClassifierError("classifier: no questions to evaluate")
    for key, q in questions.items():
        if not isinstance(key, str):
            raise ClassifierError("classifier: a question key must be a string")
        if isinstance(q, ChoiceQuestion):
            if not 1 <= len(q.criteria) <= MAX_CHOICE_OPTIONS:
                raise ClassifierError(
                    f"classifier: choice {key!r} needs 1 to {MAX_CHOICE_OPTIONS} options"
                )
        elif isinstance(q, ScoreQuestion):
            if not MIN_SCORE_LEVELS <= len(q.criteria) <= MAX_SCORE_LEVELS:
                raise ClassifierError(
                    f"classifier: score {key!r} needs {MIN_SCORE_LEVELS} to "
                    f"{MAX_SCORE_LEVELS} levels"
                )
        elif not isinstance(q, NoulQuestion):
            raise ClassifierError(f"classifier: question {key!r} is not a Question")


# -- answers -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class NoulAnswer:
    """`noul`: the probability that the answer is yes."""

    noul: float
    type: Literal["noul"] = "noul"


@dataclass(frozen=True)
class ChoiceAnswer:
    """The chosen option, every option's probability and the choice's confidence."""

    choice: str
    probabilities: dict[str, float]
    confidence: float
    near_uniform: bool = False
    type: Literal["choice"] = "choice"


@dataclass(frozen=True)
class ScoreAnswer:
    """The expected level (`score`, 0-based), its `legend` and the levels' probabilities."""

    score: float
    legend: dict[str, str]
    probabilities: dict[str, float]
    confidence: float
    type: Literal["score"] = "score"

    def levels(self) -> list[str]:
        """The legend in level order (`"2"` before `"10"`, which string order loses)."""
        return [self.legend[k] for k in sorted(self.legend, key=lambda k: (len(k), k))]


DecisionAnswer = NoulAnswer | ChoiceAnswer | ScoreAnswer


@dataclass(frozen=True)
class ClassifierUsage:
    """Tokens (and the vendor's cost, when it says) of one evaluation."""

    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None


@dataclass
class Decision:
    """One answer per question, keyed by the caller's keys.

    `calibrated` is False when the values are not probabilities the model assigned (a backend
    without log-probabilities, or one that could not keep the questions independent).
    """

    model: str = ""
    answers: dict[str, DecisionAnswer] = field(default_factory=dict)
    usage: ClassifierUsage = field(default_factory=ClassifierUsage)
    calibrated: bool = True

    def _get(self, key: str, kind: str) -> Any:
        answer = self.answers.get(key)
        if answer is None:
            raise ClassifierError(f"classifier: no answer {key!r} in this decision")
        if answer.type != kind:
            raise ClassifierError(
                f"classifier: answer {key!r} is a {answer.type} answer, not {kind}"
            )
        return answer

    def noul(self, key: str) -> NoulAnswer:
        answer: NoulAnswer = self._get(key, "noul")
        return answer

    def choice(self, key: str) -> ChoiceAnswer:
        answer: ChoiceAnswer = self._get(key, "choice")
        return answer

    def score(self, key: str) -> ScoreAnswer:
        answer: ScoreAnswer = self._get(key, "score")
        return answer


def near_uniform(probabilities: Mapping[str, float]) -> bool:
    """Whether every value is within `NEAR_UNIFORM_TOLERANCE` of 1/n (n: the entries, values as
    given, not renormalised); one entry is trivially flat, none is not."""
    if len(probabilities) < 2:  # one option is trivially flat; none is no distribution
        return len(probabilities) == 1
    even = 1.0 / len(probabilities)
    return all(abs(p - even) <= NEAR_UNIFORM_TOLERANCE for p in probabilities.values())


def _number(value: Any, where: str) -> float:
    """A finite number; as published, a numeric string or a boolean is read as one."""
    try:
        number = float(value) if isinstance(value, (int, float, str)) else math.nan
    except ValueError:
        number = math.nan
    if not math.isfinite(number):
        raise ClassifierError(f"classifier: {where} is not a number")
    return number


def _probabilities(value: Any, where: str) -> dict[str, float]:
    if value is None:  # left out: none given, as published
        return {}
    if not isinstance(value, Mapping):
        raise ClassifierError(f"classifier: {where} probabilities must be an object")
    return {str(k): _number(v, f"{where} probability {k!r}") for k, v in value.items()}


def _answer_from_wire(key: str, wire: Any) -> DecisionAnswer:
    where = f"answer {key!r}"
    kind = wire.get("type") if isinstance(wire, Mapping) else None
    if not isinstance(wire, Mapping) or kind not in ("noul", "choice", "score"):
        raise ClassifierError(f"classifier: {where}: unknown type {kind!r}")
    if kind == "noul":
        return NoulAnswer(_number(wire.get("noul"), where))
    probabilities = _probabilities(wire.get("probabilities"), where)
    confidence = _number(wire.get("confidence", 0.0), f"{where} confidence")
    if kind == "choice":
        choice = wire.get("choice")
        if choice is None or isinstance(choice, (Mapping, list)):
            raise ClassifierError(f"classifier: {where}: choice is not a string")
        choice = str(choice)
        flat = wire.get("near_uniform")
        return ChoiceAnswer(
            choice,
            probabilities,
            confidence,
            bool(flat) if isinstance(flat, bool) else near_uniform(probabilities),
        )
    legend = wire.get("legend") or {}
    if not isinstance(legend, Mapping):
        raise ClassifierError(f"classifier: {where}: legend must be an object")
    score = _number(wire.get("score"), where)
    return ScoreAnswer(
        score, {str(k): str(v) for k, v in legend.items()}, probabilities, confidence
    )


def decision_from_wire(data: Any, *, model: str = "") -> Decision:
    """The decision a response body (decoded JSON) describes."""
    if not isinstance(data, Mapping):
        raise ClassifierError("classifier: the response is not a JSON object")
    answers = data.get("answers", {})
    if not isinstance(answers, Mapping):
        raise ClassifierError("classifier: the response's answers are not an object")
    usage = data.get("usage") or {}
    if not isinstance(usage, Mapping):
        usage = {}
    cost = usage.get("cost")
    calibrated = data.get("calibrated", True)
    return Decision(
        model=str(data.get("model") or model),
        answers={str(k): _answer_from_wire(str(k), v) for k, v in answers.items()},
        usage=ClassifierUsage(
            int(usage.get("input_tokens") or 0),
            int(usage.get("output_tokens") or 0),
            float(cost) if isinstance(cost, (int, float)) else None,
        ),
        calibrated=calibrated if isinstance(calibrated, bool) else True,
    )


def decision_wire(d: Decision) -> dict[str, Any]:
    """The wire form of a decision (what `decision_from_wire` reads back)."""
    answers: dict[str, Any] = {}
    for key, a in d.answers.items():
        if isinstance(a, NoulAnswer):
            answers[key] = {"type": "noul", "noul": a.noul}
        elif isinstance(a, ChoiceAnswer):
            answers[key] = {
                "type": "choice",
                "choice": a.choice,
                "probabilities": dict(a.probabilities),
                "confidence": a.confidence,
            }
        else:
            answers[key] = {
                "type": "score",
                "score": a.score,
                "legend": dict(a.legend),
                "probabilities": dict(a.probabilities),
                "confidence": a.confidence,
            }
    return {"model": d.model, "answers": answers, "calibrated": d.calibrated}


# -- the canonical request ---------------------------------------------------------------------


def canonical_json(value: Any) -> bytes:
    """Sorted keys, no spaces, UTF-8 as is: the one serialisation of a request."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def questions_wire(questions: Mapping[str, Question]) -> dict[str, dict[str, Any]]:
    """The wire form of a question map."""
    return {key: question_wire(q) for key, q in questions.items()}


def canonical_request(model: str, questions: Mapping[str, Question]) -> bytes:
    """The canonical bytes of `model` plus `questions` (no state)."""
    return canonical_json({"model": model, "questions": questions_wire(questions)})


def _state_wire(state: Any) -> Any:
    try:
        json.dumps(state)
    except (TypeError, ValueError) as exc:
        raise ClassifierError(f"classifier: the state is not JSON data ({exc})") from None
    return state


# -- transports and backends -------------------------------------------------------------------


@dataclass(frozen=True)
class ClassifierResponse:
    """What a `ClassifierTransport` returns for one POST."""

    status: int
    body: bytes
    retry_after: str | None = None


class ClassifierTransport(Protocol):
    """An injectable sender for the systemone wire: it gets the canonical BYTES (re-serialising
    a dict would lose them). `post` may be blocking (it runs in a worker thread) or async."""

    def post(
        self, url: str, headers: dict[str, str], body: bytes, timeout: float
    ) -> ClassifierResponse | Awaitable[ClassifierResponse]: ...


class _Backend(Protocol):
    """What answers one evaluation."""

    async def evaluate(self, state: Any, questions: Mapping[str, Question]) -> Decision: ...


@dataclass(frozen=True)
class RecordedDecision:
    """One entry of a `static` corpus: keyed on the canonical request AND the state."""

    state: Any
    questions: Mapping[str, Question]
    response: Mapping[str, Any] | bytes | str


OnMetric = Callable[[dict[str, Any]], Any]


class _SystemOne:
    """The vendor wire: POST `<base_url>/systemone` with the canonical body.

    Every option is read from the owning `Classifier` at each call, so changing one of its
    attributes (as the published package allows) changes the next request.
    """

    def __init__(self, owner: Classifier) -> None:
        self._owner = owner
        self._http: HttpxTransport | None = None
        self._http_timeout = owner.timeout
        self._retired: list[HttpxTransport] = []  # closed by `aclose` (a `timeout` was changed)

    def _url(self) -> str:
        return self._owner.base_url.rstrip("/") + "/systemone"

    def _request_headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self._owner.api_key_env, "").strip()
        if key:  # unset: sent without one, as the published package does (a gateway may need none)
            remember(key)
            headers["Authorization"] = f"Bearer {key}"
        for value in self._owner.headers.values():
            remember(value)
        headers.update(self._owner.headers)
        return headers

    def _transport(self) -> HttpxTransport:
        from toolnexus.client._transport import HttpxTransport

        timeout = self._owner.timeout
        if self._http is None or self._http_timeout != timeout:
            if self._http is not None:
                self._retired.append(self._http)
            self._http, self._http_timeout = HttpxTransport(None, timeout), timeout
        return self._http

    def _retry_policy(self) -> RetryPolicy:
        from toolnexus.client._retry import RetryPolicy

        o = self._owner
        return RetryPolicy(
            retries=o.retries,
            base_ms=o.retry_base_ms,
            extra_statuses=o.retryable_statuses,
            on_error=o.on_error,
            transport_errors=(ProviderConnectionError,),
            inline=True,
        )

    async def _body(self, state: Any, questions: Mapping[str, Question]) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self._owner.model,
            "questions": questions_wire(questions),
            "state": _state_wire(state),
        }
        body.update(self._owner.request_params)
        transform = self._owner.body_transform
        if transform is not None:
            changed = await call_maybe_async(transform, body)
            if changed is not None:
                body = changed
        return body

    async def _post_given(
        self, given: ClassifierTransport, url: str, headers: dict[str, str], content: bytes
    ) -> Any:
        post = given.post
        timeout = self._owner.timeout
        if inspect.iscoroutinefunction(post):
            response = await post(url, headers, content, timeout)
        else:  # a blocking sender (the published kind) runs off the event loop
            response = await asyncio.to_thread(post, url, headers, content, timeout)
            if inspect.isawaitable(response):
                response = await response
        if not isinstance(response, ClassifierResponse):
            raise ClassifierError("classifier: http_transport.post must return ClassifierResponse")
        if not 200 <= response.status < 300:
            after = {"retry-after": response.retry_after} if response.retry_after else {}
            raise ProviderError(
                response.status, response.body.decode("utf-8", "replace"), headers=after
            )
        try:
            return json.loads(response.body)
        except ValueError as exc:
            raise ClassifierError(f"classifier: unparseable response: {exc}") from None

    async def evaluate(self, state: Any, questions: Mapping[str, Question]) -> Decision:
        from toolnexus.client._scope import RunScope

        url = self._url()
        headers = self._request_headers()
        body = await self._body(state, questions)
        content = canonical_json(body)
        # Key order is the canonical one, so the client's compact encoder sends the same bytes.
        ordered = json.loads(content)
        given = self._owner.http_transport
        http = self._transport() if given is None else None

        async def attempt() -> Any:
            if http is None:
                assert given is not None
                return await self._post_given(given, url, headers, content)
            _status, data, _raw = await http.post(url, headers, ordered)
            return data

        try:
            data = await self._retry_policy().call(attempt, RunScope(None, None))
        except ProviderError as exc:
            if 200 <= exc.status < 300:
                raise ClassifierError(
                    f"classifier: unparseable response: {exc.provider_message}"
                ) from None
            where = f"classifier: POST {public_url(url)}: HTTP {exc.status}"
            if exc.status in (401, 403) or not exc.body:
                raise ClassifierError(where) from None
            raise ClassifierError(f"{where}: {redact(exc.body)[:2000]}") from None
        except ProviderConnectionError as exc:
            raise ClassifierError(f"classifier: POST {exc.url}: {exc.reason}") from None
        return decision_from_wire(data, model=self._owner.model)

    async def aclose(self) -> None:
        transports, self._retired = [*self._retired, self._http], []
        self._http = None
        for http in transports:
            if http is not None:
                await http.aclose()


class _Custom:
    def __init__(self, owner: Classifier) -> None:
        self._owner = owner

    async def evaluate(self, state: Any, questions: Mapping[str, Question]) -> Decision:
        evaluate = self._owner.evaluate_fn
        if evaluate is None:
            raise ClassifierError("classifier: style 'custom' requires evaluate")
        result = await call_maybe_async(evaluate, state, questions)
        if isinstance(result, Decision):
            return result
        return decision_from_wire(result, model=self._owner.model)


def _static_key(state: Any, questions: Mapping[str, Question]) -> bytes:
    return canonical_json({"questions": questions_wire(questions), "state": state})


class _Static:
    def __init__(self, decisions: Sequence[RecordedDecision], model: str) -> None:
        self.model = model
        self._corpus: dict[bytes, Decision] = {}
        for entry in decisions:
            response = entry.response
            if isinstance(response, (bytes, str)):
                response = json.loads(response)
            self._corpus[_static_key(entry.state, entry.questions)] = decision_from_wire(
                response, model=model
            )

    async def evaluate(self, state: Any, questions: Mapping[str, Question]) -> Decision:
        found = self._corpus.get(_static_key(_state_wire(state), questions))
        if found is None:
            raise ClassifierError("classifier: static: no recorded decision for this request+state")
        return found


# -- any model our client speaks (see `toolnexus.classifier_llm`) -------------------------------

TOP_LOGPROBS = 20
_NOUL_LABELS = ("yes", "no", "uncertain")

# The OpenAI chat answers of the calls made in the current task (see `llm_classifier`).
_seen: contextvars.ContextVar[list[Any] | None] = contextvars.ContextVar("_seen", default=None)


def after_llm_capture(info: Mapping[str, Any]) -> None:
    """An `after_llm` hook keeping each answer for the `LlmBackend` call that asked (its task)."""
    seen = _seen.get()
    if seen is not None:
        seen.append(info.get("response"))


def _labels(question: Question) -> list[str]:
    if isinstance(question, NoulQuestion):
        return list(_NOUL_LABELS)
    if isinstance(question, ChoiceQuestion):
        return [str(i + 1) for i in range(len(question.criteria))]
    return [str(i) for i in range(len(question.criteria))]


def _prompt(state: Any, question: Question) -> str:
    role = state.get("role") if isinstance(state, Mapping) else None
    data = {k: v for k, v in state.items() if k != "role"} if isinstance(state, Mapping) else state
    lines = [
        "You are a classifier. Answer the question about the state with one label only.",
    ]
    if isinstance(role, str) and role:
        lines.append(f"Role: {role}")
    lines.append("State (JSON): " + json.dumps(data, ensure_ascii=False, sort_keys=True))
    lines.append(f"Question: {question.instructions}")
    if isinstance(question, NoulQuestion):
        crit = question.criteria
        lines.append("Labels: yes, no, uncertain.")
        if crit is not None and crit.true:
            lines.append(f"yes means: {crit.true}")
        if crit is not None and crit.false:
            lines.append(f"no means: {crit.false}")
    elif isinstance(question, ChoiceQuestion):
        lines.append("Labels (pick one):")
        lines += [f"{i + 1}: {k} — {v}" for i, (k, v) in enumerate(question.criteria.items())]
    else:
        lines.append("Labels (levels, lowest first):")
        lines += [f"{i}: {v}" for i, v in enumerate(question.criteria)]
    return "\n".join(lines)


def _clean(token: Any) -> str:
    return str(token).strip().strip('"').strip()


def _token_logprobs(response: Any) -> list[Any] | None:
    """The answer's per-token log-probabilities: OpenAI chat `choices[0].logprobs.content`, or
    the Responses wire's `logprobs` of its `output_text` parts."""
    if not isinstance(response, Mapping):
        return None
    try:
        content = response["choices"][0]["logprobs"]["content"]
        return content if isinstance(content, list) else None
    except (KeyError, IndexError, TypeError):
        pass
    tokens: list[Any] = []
    for item in response.get("output") or []:
        parts = item.get("content") if isinstance(item, Mapping) else None
        for part in parts if isinstance(parts, list) else []:
            if isinstance(part, Mapping) and isinstance(part.get("logprobs"), list):
                tokens += part["logprobs"]
    return tokens or None


def label_probabilities(response: Any, labels: list[str]) -> dict[str, float] | None:
    """The labels' probabilities read from an answer's `top_logprobs` at the label token (the
    first token after the JSON `:` that starts a label); `None` without them."""
    content = _token_logprobs(response)
    if content is None:
        return None
    past_colon = False
    for entry in content:
        if not isinstance(entry, Mapping):
            return None
        token = str(entry.get("token", ""))
        if not past_colon:
            past_colon = ":" in token
            rest = token.split(":", 1)[1] if past_colon else ""
            if not _clean(rest):
                continue
        text = _clean(token.split(":", 1)[-1]) if ":" in token else _clean(token)
        if not text or not any(label.startswith(text) for label in labels):
            continue
        mass = dict.fromkeys(labels, 0.0)
        for alt in entry.get("top_logprobs") or [entry]:
            alt_text = _clean(str(alt.get("token", "")).split(":", 1)[-1])
            starts = [label for label in labels if alt_text and label.startswith(alt_text)]
            exact = [label for label in starts if label == alt_text]
            chosen = exact or (starts if len(starts) == 1 else [])
            if chosen:
                mass[chosen[0]] += math.exp(float(alt.get("logprob", -math.inf)))
        total = sum(mass.values())
        return {k: v / total for k, v in mass.items()} if total > 0 else None
    return None


def _answer(question: Question, label: str, probs: dict[str, float] | None) -> DecisionAnswer:
    if isinstance(question, NoulQuestion):
        if probs is None:
            return NoulAnswer({"yes": 1.0, "no": 0.0}.get(label, 0.5))
        return NoulAnswer(probs["yes"] + 0.5 * probs["uncertain"])
    labels = _labels(question)
    if probs is None:
        probs = {k: 1.0 if k == label else 0.0 for k in labels}
    if isinstance(question, ChoiceQuestion):
        names = list(question.criteria)
        by_name = {names[int(k) - 1]: p for k, p in probs.items()}
        best = max(by_name, key=lambda n: by_name[n])
        return ChoiceAnswer(best, by_name, by_name[best], near_uniform(by_name))
    expected = sum(int(k) * p for k, p in probs.items())
    best_level = max(probs, key=lambda k: probs[k])
    legend = {str(i): v for i, v in enumerate(question.criteria)}
    return ScoreAnswer(expected, legend, dict(probs), probs[best_level])


class LlmBackend:
    """Runs typed questions on a `Client`: one call per question, all at once."""

    def __init__(self, client: Any, *, reads_logprobs: bool = False) -> None:
        self._client = client
        self._reads_logprobs = reads_logprobs
        self.model = str(getattr(client, "model", "") or "")

    async def _one(self, state: Any, question: Question) -> tuple[DecisionAnswer, bool, Any]:
        labels = _labels(question)
        seen: list[Any] = []
        _seen.set(seen)
        result = await self._client.run(
            _prompt(state, question),
            output_type=Literal[tuple(labels)],
        )
        label = str(result.output)
        probs = label_probabilities(seen[-1], labels) if self._reads_logprobs and seen else None
        return _answer(question, label, probs), probs is not None, result

    async def evaluate(self, state: Any, questions: Mapping[str, Question]) -> Decision:
        try:
            async with asyncio.TaskGroup() as group:
                tasks = {k: group.create_task(self._one(state, q)) for k, q in questions.items()}
        except BaseExceptionGroup as failed:  # the others were cancelled: report the failure
            raise failed.exceptions[0] from None
        answers: dict[str, DecisionAnswer] = {}
        calibrated = True
        usage = ClassifierUsage()
        model = self.model
        for key, task in tasks.items():
            answer, from_logprobs, result = task.result()
            answers[key] = answer
            calibrated = calibrated and from_logprobs
            model = result.model or model
            usage = ClassifierUsage(
                usage.input_tokens + int(result.usage.get("prompt_tokens", 0)),
                usage.output_tokens + int(result.usage.get("completion_tokens", 0)),
            )
        return Decision(model=model, answers=answers, usage=usage, calibrated=calibrated)

    async def aclose(self) -> None:
        await self._client.aclose()


# -- the classifier ----------------------------------------------------------------------------


class Classifier:
    """The whole seam: `evaluate(state, questions)` → `Decision`.

    Build it with `create_classifier` (which also resolves a named `backend`); the constructor
    takes the same options and rejects a style whose required option is missing. Every option
    is an attribute of the same name (`evaluate` is `evaluate_fn`), read at each call.
    """

    def __init__(
        self,
        *,
        style: ClassifierStyle = "systemone",
        base_url: str = DEFAULT_CLASSIFIER_BASE_URL,
        model: str = DEFAULT_CLASSIFIER_MODEL,
        api_key_env: str = DEFAULT_CLASSIFIER_API_KEY_ENV,
        headers: Mapping[str, str] | None = None,
        timeout: float = DEFAULT_CLASSIFIER_TIMEOUT,
        http_transport: ClassifierTransport | None = None,
        retries: int = 2,
        retry_base_ms: int = 500,
        retryable_statuses: Iterable[int] | None = None,
        on_error: Callable[[dict[str, Any]], Any] | None = None,
        request_params: Mapping[str, Any] | None = None,
        body_transform: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None,
        on_metric: OnMetric | None = None,
        client: Any = None,
        evaluate: Callable[..., Any] | None = None,
        decisions: list[RecordedDecision] | None = None,
    ) -> None:
        if retries < 0:
            raise ClassifierError("classifier: retries must be >= 0")
        self.style: ClassifierStyle = style
        self.base_url = base_url
        self.model = model
        self.api_key_env = api_key_env
        self.headers: dict[str, str] = dict(headers or {})
        self.timeout = timeout
        self.http_transport = http_transport
        self.retries = retries
        self.retry_base_ms = retry_base_ms
        self.retryable_statuses: frozenset[int] | None = (
            None if retryable_statuses is None else frozenset(int(s) for s in retryable_statuses)
        )
        self.on_error = on_error
        self.request_params: dict[str, Any] = dict(request_params or {})
        self.body_transform = body_transform
        self.on_metric = on_metric
        self.client = client
        self.evaluate_fn = evaluate
        self.decisions: list[RecordedDecision] = list(decisions or [])
        self._warned: set[str] = set()  # question keys already warned about (once each)
        self._backend: _Backend
        if style == "systemone":
            self._backend = _SystemOne(self)
        elif style == "llm":
            if client is None:
                raise ClassifierError("classifier: style 'llm' requires client")
            llm = LlmBackend(client)
            self.model = llm.model or model
            self._backend = llm
        elif style == "custom":
            if evaluate is None:
                raise ClassifierError("classifier: style 'custom' requires evaluate")
            self._backend = _Custom(self)
        elif style == "static":
            self._backend = _Static(self.decisions, model)
        else:
            raise ClassifierError(f"classifier: unknown style {style!r}")

    @classmethod
    def _over(
        cls,
        backend: _Backend,
        *,
        model: str,
        on_metric: OnMetric | None,
        style: ClassifierStyle = "llm",
        client: Any = None,
    ) -> Classifier:
        """A classifier answering through `backend` (e.g. `classifier_llm`'s)."""
        classifier = cls(style="static", model=model, on_metric=on_metric)
        classifier.style = style
        classifier.client = client
        classifier._backend = backend
        return classifier

    def __repr__(self) -> str:
        return f"Classifier(model={self.model!r}, backend={type(self._backend).__name__})"

    async def _emit(self, event: dict[str, Any]) -> None:
        if self.on_metric is None:
            return
        with contextlib.suppress(Exception):  # a failing metrics sink never fails a judgment
            await call_maybe_async(self.on_metric, event)

    async def _warn(self, key: str, warning: str) -> None:
        await self._emit({"event": METRIC_CLASSIFIER_WARNING, "question": key, "warning": warning})

    async def _warn_degenerate(self, questions: Mapping[str, Question]) -> None:
        """Once per question key: a choice whose options all read the same (every description
        empty, or every one identical) is answered at chance."""
        for key, q in questions.items():
            if key in self._warned or not isinstance(q, ChoiceQuestion):
                continue
            descriptions = set(q.criteria.values())
            if len(q.criteria) < 2 or len(descriptions) != 1:
                continue
            self._warned.add(key)
            how = "empty" if descriptions == {""} else "the same text"
            await self._warn(
                key,
                f"classifier: choice {key!r}: every option's description is {how}, so the "
                "model cannot tell the options apart; say what choosing each one means",
            )

    async def evaluate(self, state: Any, questions: Mapping[str, Question]) -> Decision:
        """A state plus typed questions in, one `Decision` out (questions are independent)."""
        started = time.perf_counter()
        try:
            _check_questions(questions)
        except ClassifierError as exc:
            await self._metric_error(started, str(exc))
            raise
        await self._warn_degenerate(questions)
        try:
            decision = await self._backend.evaluate(state, questions)
        except ClassifierError as exc:
            await self._metric_error(started, str(exc))
            raise
        except ToolnexusError as exc:
            message = f"classifier: {redact(str(exc))}"
            await self._metric_error(started, message)
            raise ClassifierError(message) from None
        await self._emit(
            {
                "event": METRIC_CLASSIFIER_EVALUATE,
                "model": decision.model or self.model,
                "status": "ok",
                "ms": round((time.perf_counter() - started) * 1000),
                "prompt_tokens": decision.usage.input_tokens,
                "completion_tokens": decision.usage.output_tokens,
            }
        )
        for key in questions:
            if key not in decision.answers:
                await self._warn(key, f"classifier: the decision has no answer for {key!r}")
        return decision

    async def _metric_error(self, started: float, message: str) -> None:
        await self._emit(
            {
                "event": METRIC_CLASSIFIER_EVALUATE,
                "model": self.model,
                "status": "error",
                "ms": round((time.perf_counter() - started) * 1000),
                "error": message,
            }
        )

    async def evaluate_batch(
        self, states: Sequence[Any], questions: Mapping[str, Question], *, concurrency: int = 16
    ) -> list[Decision]:
        """The same questions over many states, at most `concurrency` at once, in state order.

        Fails closed: the first failing state's index is named and nothing is returned.
        """
        if not states:
            raise ClassifierError("classifier: evaluate_batch: no states to evaluate")
        if concurrency < 1:
            raise ClassifierError("classifier: concurrency must be at least 1")
        limit = asyncio.Semaphore(concurrency)

        async def one(index: int, state: Any) -> Decision:
            async with limit:
                try:
                    return await self.evaluate(state, questions)
                except ClassifierError as exc:
                    raise ClassifierError(
                        f"classifier: evaluate_batch: state {index}: {exc}"
                    ) from None

        try:
            async with asyncio.TaskGroup() as group:
                tasks = [group.create_task(one(i, s)) for i, s in enumerate(states)]
        except BaseExceptionGroup as failed:  # the others were cancelled: report the failure
            raise failed.exceptions[0] from None
        return [t.result() for t in tasks]

    async def aclose(self) -> None:
        """Close the connections the backend owns."""
        close = getattr(self._backend, "aclose", None)
        if close is not None:
            await close()


def create_classifier(
    *,
    style: ClassifierStyle = "systemone",
    backend: ClassifierBackend | None = None,
    base_url: str | None = None,
    model: str | None = None,
    api_key_env: str | None = None,
    headers: Mapping[str, str] | None = None,
    timeout: float | None = None,
    http_transport: ClassifierTransport | None = None,
    retries: int = 2,
    retry_base_ms: int = 500,
    retryable_statuses: Iterable[int] | None = None,
    on_error: Callable[[dict[str, Any]], Any] | None = None,
    request_params: Mapping[str, Any] | None = None,
    body_transform: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None,
    on_metric: OnMetric | None = None,
    client: Any = None,
    evaluate: Callable[..., Any] | None = None,
    decisions: list[RecordedDecision] | None = None,
) -> Classifier:
    """A `Classifier` of `style`; `backend` names where the systemone wire lives
    (`CLASSIFIER_BACKENDS`), and explicit `base_url` / `model` / `api_key_env` win over it."""
    place = CLASSIFIER_BACKENDS.get(backend or "typesafe")
    if place is None:
        raise ClassifierError(f"classifier: unknown backend {backend!r}")
    return Classifier(
        style=style,
        base_url=base_url or place["base_url"],
        model=model if model is not None else place["model"],
        api_key_env=api_key_env or place["api_key_env"],
        headers=headers,
        timeout=timeout if timeout is not None else DEFAULT_CLASSIFIER_TIMEOUT,
        http_transport=http_transport,
        retries=retries,
        retry_base_ms=retry_base_ms,
        retryable_statuses=retryable_statuses,
        on_error=on_error,
        request_params=request_params,
        body_transform=body_transform,
        on_metric=on_metric,
        client=client,
        evaluate=evaluate,
        decisions=decisions,
    )
