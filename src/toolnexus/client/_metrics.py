"""The client's metric registry: `on_metric` events in, Prometheus text exposition out.

`record` is on the hot path of every LLM call and tool call, so it only bumps numbers in dicts
keyed by raw label tuples; escaping, label strings and sorting happen in `render`.
"""

from __future__ import annotations

import math
import threading
import time
from bisect import bisect_left
from collections.abc import Iterable, Mapping
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from toolnexus._otel import UNKNOWN_TOOL

if TYPE_CHECKING:
    from toolnexus.client._events import LlmEvent

__all__ = ["Metrics", "elapsed_ms", "js_number", "llm_event"]


def elapsed_ms(since: float) -> float:
    """Milliseconds since `since` (a `time.perf_counter()` reading), for metric events, to the
    microsecond (an integer count of microseconds over 1000 prints with at most 3 decimals)."""
    return int((time.perf_counter() - since) * 1_000_000 + 0.5) / 1000


def llm_event(
    model: str,
    started: float,
    usage: dict[str, int] | None,
    ok: bool,
    parts: list[dict[str, Any]] | None = None,
) -> LlmEvent:
    """The `llm` metric event of one LLM call (its retries included); tokens are 0 on error.

    `parts`: the summaries of the non-text parts the request carried (listed when any)."""
    event: LlmEvent = {
        "event": "llm",
        "model": model,
        "status": "ok" if ok else "error",
        "ms": elapsed_ms(started),
        "prompt_tokens": usage["prompt_tokens"] if usage and ok else 0,
        "completion_tokens": usage["completion_tokens"] if usage and ok else 0,
    }
    if parts:
        event["parts"] = parts
    return event


_BOUNDS: tuple[float, ...] = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)


def js_number(value: float) -> str:
    """Render a number exactly like JavaScript `String(number)`."""
    if type(value) is int and -(2**53) <= value <= 2**53:
        return str(value)  # the common case: counts and token totals
    x = float(value)
    if x != x:
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "0"  # also -0, as in JavaScript
    if x < 0:
        return "-" + js_number(-x)
    # `repr` gives the shortest round-trip digits; only the layout differs from JavaScript.
    mantissa, _, exp = repr(x).partition("e")
    whole, _, frac = mantissa.partition(".")
    if frac == "0":
        frac = ""
    digits = (whole + frac).lstrip("0")
    stripped = digits.rstrip("0")
    # value = int(stripped) * 10 ** (n - k), with k digits (ECMAScript Number::toString).
    k = len(stripped)
    n = (int(exp) if exp else 0) - len(frac) + (len(digits) - k) + k
    if k <= n <= 21:
        return stripped + "0" * (n - k)
    if 0 < n <= 21:
        return stripped[:n] + "." + stripped[n:]
    if -6 < n <= 0:
        return "0." + "0" * -n + stripped
    e = n - 1
    sign = "+" if e >= 0 else "-"
    head = stripped if k == 1 else stripped[0] + "." + stripped[1:]
    return f"{head}e{sign}{abs(e)}"


_LE = (*(f'le="{js_number(b)}"' for b in _BOUNDS), 'le="+Inf"')


class _Histogram:
    __slots__ = ("counts", "sum")

    def __init__(self) -> None:
        self.counts = [0] * (len(_BOUNDS) + 1)  # per bucket, not cumulative; last is +Inf
        self.sum: float = 0

    def observe(self, seconds: float) -> None:
        # The first bound >= the value: exactly 0.05 lands in le="0.05".
        self.counts[bisect_left(_BOUNDS, seconds)] += 1
        self.sum += seconds


_Labels = tuple[Any, ...]
_PROMPT: _Labels = ("prompt",)
_COMPLETION: _Labels = ("completion",)


def _escape(value: object) -> str:
    text = value if isinstance(value, str) else str(value)
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _label_string(names: tuple[str, ...], values: _Labels) -> str:
    return ",".join(f'{n}="{_escape(v)}"' for n, v in zip(names, values, strict=True))


def _seconds(ms: Any) -> float:
    kind = type(ms)
    if kind is float or kind is int:  # what the client emits
        return float(ms / 1000)
    return ms / 1000 if isinstance(ms, (int, float)) else 0


def _count(value: Any) -> float:
    if type(value) is int:  # what the client emits
        return value
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


class _Series:
    """One labelled counter and the histogram of its duration family (shared by every series
    with the same tool or model): one lookup per event counts both."""

    __slots__ = ("count", "histogram")

    def __init__(self, histogram: _Histogram) -> None:
        self.count = 0
        self.histogram = histogram


def _observe(
    table: dict[_Labels, _Series],
    durations: dict[_Labels, _Histogram],
    key: _Labels,
    name: Any,
    seconds: float,
) -> None:
    """Count one event of the series `key` and its duration in `name`'s histogram, making
    both on first sight. Called under the metrics lock."""
    series = table.get(key)
    if series is None:
        histogram = durations.get((name,))
        if histogram is None:
            histogram = durations[(name,)] = _Histogram()
        series = table[key] = _Series(histogram)
    series.count += 1
    series.histogram.observe(seconds)


class Metrics:
    """Cumulative registry fed with the client's `llm`, `tool` and `run` events.

    Labels carry only model, status, tool, source and flags — never ids — so cardinality stays
    bounded by the number of models and tools (every tool name not in the toolkit counts as
    `UNKNOWN_TOOL`).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._llm_requests: dict[_Labels, _Series] = {}
        self._tokens: dict[_Labels, float] = {_PROMPT: 0, _COMPLETION: 0}
        self._llm_durations: dict[_Labels, _Histogram] = {}
        self._tool_calls: dict[_Labels, _Series] = {}
        self._tool_durations: dict[_Labels, _Histogram] = {}
        self._run_errors: dict[_Labels, int] = {}
        self._tokens_seen = False  # the token family appears with the first successful call

    def record(self, event: Mapping[str, Any]) -> None:
        """Count one event; unknown events are ignored."""
        get = event.get
        kind = get("event")
        if kind == "tool":
            # A name the model invented is one series, however many it invents.
            tool = UNKNOWN_TOOL if get("unknown") else get("tool", "")
            key: _Labels = (
                tool,
                get("source") or "custom",
                "true" if get("is_error") else "false",
                "true" if get("pending") else "false",
            )
            seconds = _seconds(get("ms"))
            with self._lock:
                _observe(self._tool_calls, self._tool_durations, key, tool, seconds)
        elif kind == "llm":
            model = get("model", "")
            status = get("status", "ok")
            key = (model, status)
            seconds = _seconds(get("ms"))
            with self._lock:
                _observe(self._llm_requests, self._llm_durations, key, model, seconds)
                if status == "ok":
                    tokens = self._tokens
                    tokens[_PROMPT] += _count(get("prompt_tokens"))
                    tokens[_COMPLETION] += _count(get("completion_tokens"))
                    self._tokens_seen = True
        elif kind == "run" and get("error") is not None:
            key = (get("model", ""),)
            with self._lock:
                self._run_errors[key] = self._run_errors.get(key, 0) + 1

    def render(self) -> str:
        """The Prometheus text exposition (byte-exact), ending with a newline."""
        with self._lock:
            llm_requests = {k: series.count for k, series in self._llm_requests.items()}
            tokens = dict(self._tokens) if self._tokens_seen else {}
            llm_durations = {k: _snapshot(h) for k, h in self._llm_durations.items()}
            tool_calls = {k: series.count for k, series in self._tool_calls.items()}
            tool_durations = {k: _snapshot(h) for k, h in self._tool_durations.items()}
            run_errors = dict(self._run_errors)
        lines: list[str] = []
        _counter(
            lines,
            "toolnexus_llm_requests_total",
            "Total LLM requests.",
            ("model", "status"),
            llm_requests,
        )
        _counter(
            lines,
            "toolnexus_llm_tokens_total",
            "Total tokens, by type.",
            ("type",),
            tokens,
        )
        _histogram(
            lines,
            "toolnexus_llm_request_duration_seconds",
            "LLM request duration in seconds.",
            ("model",),
            llm_durations,
        )
        _counter(
            lines,
            "toolnexus_tool_calls_total",
            "Total tool calls.",
            ("tool", "source", "is_error", "pending"),
            tool_calls,
        )
        _histogram(
            lines,
            "toolnexus_tool_duration_seconds",
            "Tool execution duration in seconds.",
            ("tool",),
            tool_durations,
        )
        _counter(lines, "toolnexus_run_errors_total", "Total run errors.", ("model",), run_errors)
        lines.append("")
        return "\n".join(lines)


def _snapshot(h: _Histogram) -> tuple[list[int], float, int]:
    return list(h.counts), h.sum, sum(h.counts)


def _sorted_series(names: tuple[str, ...], series: dict[_Labels, Any]) -> Iterable[tuple[str, Any]]:
    rendered = [(_label_string(names, k), v) for k, v in series.items()]
    rendered.sort(key=itemgetter(0))  # plain code-point order of the label strings
    return rendered


def _header(lines: list[str], name: str, help_text: str, kind: str) -> None:
    lines.append(f"# HELP {name} {help_text}")
    lines.append(f"# TYPE {name} {kind}")


def _counter(
    lines: list[str],
    name: str,
    help_text: str,
    names: tuple[str, ...],
    series: dict[_Labels, Any],
) -> None:
    _header(lines, name, help_text, "counter")
    for labels, value in _sorted_series(names, series):
        lines.append(f"{name}{{{labels}}} {js_number(value)}")


def _histogram(
    lines: list[str],
    name: str,
    help_text: str,
    names: tuple[str, ...],
    series: dict[_Labels, tuple[list[int], float, int]],
) -> None:
    _header(lines, name, help_text, "histogram")
    for labels, (counts, total_seconds, count) in _sorted_series(names, series):
        cumulative = 0
        for le, bucket in zip(_LE, counts, strict=True):
            cumulative += bucket
            lines.append(f"{name}_bucket{{{labels},{le}}} {cumulative}")
        lines.append(f"{name}_sum{{{labels}}} {js_number(total_seconds)}")
        lines.append(f"{name}_count{{{labels}}} {count}")
