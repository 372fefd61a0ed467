"""Judgments on any model our `Client` speaks (OpenAI chat, OpenAI Responses, Anthropic).

Each question is its own model call (so no answer is context for another), with typed output
through the client's `output_type` (a JSON schema on the OpenAI wires, a forced tool on
Anthropic): the model can only name one of the question's labels — `yes`/`no`/`uncertain` for a
noul, `1`..`N` for a choice, `0`..`N-1` for a score.

Calibration: on the OpenAI chat wire, `llm_classifier` asks for `logprobs` / `top_logprobs` and
reads the label token's alternatives, so the answer's probabilities are the model's own
(renormalised over the labels). Where the wire offers none (Anthropic, Responses, or a caller's
own `Client` whose answers we cannot see), the documented fallback applies: the chosen label
gets probability 1 (a noul: yes 1.0, no 0.0, uncertain 0.5) and the decision says
`calibrated=False`.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import math
from collections.abc import Mapping
from typing import Any, Literal

from toolnexus.classifier import (
    ChoiceAnswer,
    ChoiceQuestion,
    Classifier,
    ClassifierUsage,
    Decision,
    DecisionAnswer,
    NoulAnswer,
    NoulQuestion,
    OnMetric,
    Question,
    ScoreAnswer,
    near_uniform,
)

__all__ = ["LlmBackend", "llm_classifier"]

TOP_LOGPROBS = 20
_NOUL_LABELS = ("yes", "no", "uncertain")

# The OpenAI chat answers of the calls made in the current task (see `llm_classifier`).
_seen: contextvars.ContextVar[list[Any] | None] = contextvars.ContextVar("_seen", default=None)


def _after_llm(info: Mapping[str, Any]) -> None:
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


def label_probabilities(response: Any, labels: list[str]) -> dict[str, float] | None:
    """The labels' probabilities read from an OpenAI chat answer's `top_logprobs` at the label
    token (the first token after the JSON `:` that starts a label); `None` without them."""
    try:
        content = response["choices"][0]["logprobs"]["content"]
    except (KeyError, IndexError, TypeError):
        return None
    if not isinstance(content, list):
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


def llm_classifier(
    *,
    base_url: str,
    style: Literal["openai", "openai-responses", "anthropic"],
    model: str,
    api_key: str | None = None,
    on_metric: OnMetric | None = None,
    **client_options: Any,
) -> Classifier:
    """A `Classifier` on any model our client speaks; calibrated from log-probabilities on the
    OpenAI chat wire (see the module docstring). `client_options` go to `Client`."""
    from toolnexus.client import Client

    params = dict(client_options.pop("request_params", None) or {})
    reads = style == "openai"
    if reads:
        params.setdefault("logprobs", True)
        params.setdefault("top_logprobs", TOP_LOGPROBS)
    client = Client(
        base_url=base_url,
        style=style,
        model=model,
        api_key=api_key,
        hooks={"after_llm": _after_llm},
        request_params=params or None,
        **client_options,
    )
    backend = LlmBackend(client, reads_logprobs=reads)
    return Classifier._over(backend, model=model, on_metric=on_metric)
