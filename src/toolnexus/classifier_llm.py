"""Judgments on any model our `Client` speaks (OpenAI chat, OpenAI Responses, Anthropic).

Each question is its own model call (so no answer is context for another), with typed output
through the client's `output_type` (a JSON schema on the OpenAI wires, a forced tool on
Anthropic): the model can only name one of the question's labels — `yes`/`no`/`uncertain` for a
noul, `1`..`N` for a choice, `0`..`N-1` for a score.

Calibration: `llm_classifier` asks for the label token's alternatives where the wire offers
them — OpenAI chat (`logprobs`, `top_logprobs`) and OpenAI Responses (`top_logprobs` with
`include: ["message.output_text.logprobs"]`) — so the answer's probabilities are the model's own
(renormalised over the labels). Where the wire offers none (Anthropic, an answer without them,
or a caller's own `Client` whose answers we cannot see), the documented fallback applies: the
chosen label gets probability 1 (a noul: yes 1.0, no 0.0, uncertain 0.5) and the decision says
`calibrated=False`.
"""

from __future__ import annotations

from typing import Any, Literal

from toolnexus.classifier import (
    TOP_LOGPROBS,
    Classifier,
    LlmBackend,
    OnMetric,
    after_llm_capture,
    label_probabilities,
)

__all__ = ["LlmBackend", "label_probabilities", "llm_classifier"]


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
    OpenAI wires (see the module docstring). `client_options` go to `Client`."""
    from toolnexus.client import Client
    from toolnexus.client._output import FINAL_RESULT

    params = dict(client_options.pop("request_params", None) or {})
    reads = style in ("openai", "openai-responses")
    if style == "openai":
        params.setdefault("logprobs", True)
        params.setdefault("top_logprobs", TOP_LOGPROBS)
    elif style == "openai-responses":
        params.setdefault("include", ["message.output_text.logprobs"])
        params.setdefault("top_logprobs", TOP_LOGPROBS)
    else:  # Anthropic: the answer must come through the output tool, never as prose
        params.setdefault("tool_choice", {"type": "tool", "name": FINAL_RESULT})
    client = Client(
        base_url=base_url,
        style=style,
        model=model,
        api_key=api_key,
        hooks={"after_llm": after_llm_capture},
        request_params=params or None,
        **client_options,
    )
    backend = LlmBackend(client, reads_logprobs=reads)
    return Classifier._over(backend, model=model, on_metric=on_metric, client=client)
