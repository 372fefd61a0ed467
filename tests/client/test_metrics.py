"""`Metrics`: the on_metric events rendered as BYTE-EXACT Prometheus text (client.md §12)."""

from __future__ import annotations

import math
import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from toolnexus.client._metrics import Metrics, js_number

HEADER = """\
# HELP toolnexus_llm_requests_total Total LLM requests.
# TYPE toolnexus_llm_requests_total counter
# HELP toolnexus_llm_tokens_total Total tokens, by type.
# TYPE toolnexus_llm_tokens_total counter
# HELP toolnexus_llm_request_duration_seconds LLM request duration in seconds.
# TYPE toolnexus_llm_request_duration_seconds histogram
# HELP toolnexus_tool_calls_total Total tool calls.
# TYPE toolnexus_tool_calls_total counter
# HELP toolnexus_tool_duration_seconds Tool execution duration in seconds.
# TYPE toolnexus_tool_duration_seconds histogram
# HELP toolnexus_run_errors_total Total run errors.
# TYPE toolnexus_run_errors_total counter
"""

WORKED_EXAMPLE = """\
# HELP toolnexus_llm_requests_total Total LLM requests.
# TYPE toolnexus_llm_requests_total counter
toolnexus_llm_requests_total{model="gpt-x",status="ok"} 1
# HELP toolnexus_llm_tokens_total Total tokens, by type.
# TYPE toolnexus_llm_tokens_total counter
toolnexus_llm_tokens_total{type="completion"} 2
toolnexus_llm_tokens_total{type="prompt"} 3
# HELP toolnexus_llm_request_duration_seconds LLM request duration in seconds.
# TYPE toolnexus_llm_request_duration_seconds histogram
toolnexus_llm_request_duration_seconds_bucket{model="gpt-x",le="0.05"} 0
toolnexus_llm_request_duration_seconds_bucket{model="gpt-x",le="0.1"} 1
toolnexus_llm_request_duration_seconds_bucket{model="gpt-x",le="0.25"} 1
toolnexus_llm_request_duration_seconds_bucket{model="gpt-x",le="0.5"} 1
toolnexus_llm_request_duration_seconds_bucket{model="gpt-x",le="1"} 1
toolnexus_llm_request_duration_seconds_bucket{model="gpt-x",le="2.5"} 1
toolnexus_llm_request_duration_seconds_bucket{model="gpt-x",le="5"} 1
toolnexus_llm_request_duration_seconds_bucket{model="gpt-x",le="10"} 1
toolnexus_llm_request_duration_seconds_bucket{model="gpt-x",le="30"} 1
toolnexus_llm_request_duration_seconds_bucket{model="gpt-x",le="60"} 1
toolnexus_llm_request_duration_seconds_bucket{model="gpt-x",le="+Inf"} 1
toolnexus_llm_request_duration_seconds_sum{model="gpt-x"} 0.1
toolnexus_llm_request_duration_seconds_count{model="gpt-x"} 1
# HELP toolnexus_tool_calls_total Total tool calls.
# TYPE toolnexus_tool_calls_total counter
toolnexus_tool_calls_total{tool="add",source="native",is_error="false",pending="false"} 1
# HELP toolnexus_tool_duration_seconds Tool execution duration in seconds.
# TYPE toolnexus_tool_duration_seconds histogram
toolnexus_tool_duration_seconds_bucket{tool="add",le="0.05"} 0
toolnexus_tool_duration_seconds_bucket{tool="add",le="0.1"} 0
toolnexus_tool_duration_seconds_bucket{tool="add",le="0.25"} 0
toolnexus_tool_duration_seconds_bucket{tool="add",le="0.5"} 1
toolnexus_tool_duration_seconds_bucket{tool="add",le="1"} 1
toolnexus_tool_duration_seconds_bucket{tool="add",le="2.5"} 1
toolnexus_tool_duration_seconds_bucket{tool="add",le="5"} 1
toolnexus_tool_duration_seconds_bucket{tool="add",le="10"} 1
toolnexus_tool_duration_seconds_bucket{tool="add",le="30"} 1
toolnexus_tool_duration_seconds_bucket{tool="add",le="60"} 1
toolnexus_tool_duration_seconds_bucket{tool="add",le="+Inf"} 1
toolnexus_tool_duration_seconds_sum{tool="add"} 0.3
toolnexus_tool_duration_seconds_count{tool="add"} 1
# HELP toolnexus_run_errors_total Total run errors.
# TYPE toolnexus_run_errors_total counter
"""

LE = ("0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "30", "60", "+Inf")


def llm(model: str = "m", status: str = "ok", ms: float = 10, p: int = 0, c: int = 0) -> dict:
    return {
        "event": "llm",
        "model": model,
        "status": status,
        "ms": ms,
        "prompt_tokens": p,
        "completion_tokens": c,
    }


def tool(name: str = "t", ms: float = 10, source: str = "native", **flags: object) -> dict:
    return {"event": "tool", "tool": name, "source": source, "is_error": False, "ms": ms, **flags}


def run(model: str = "m", **extra: object) -> dict:
    event = {"event": "run", "model": model, "turns": 1, "tool_calls": 0, "total_tokens": 0}
    return {**event, "ms": 5, **extra}


def family(text: str, name: str) -> list[str]:
    """The sample lines of one family, in rendered order."""
    lines = text.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith(f"# TYPE {name} "))
    out = []
    for line in lines[start + 1 :]:
        if not line or line.startswith("#"):
            break
        out.append(line)
    return out


def test_empty_registry_is_the_header_block():
    assert Metrics().render() == HEADER
    assert Metrics().render().endswith("counter\n")


def test_worked_example_byte_for_byte():
    m = Metrics()
    m.record(
        {
            "event": "llm",
            "model": "gpt-x",
            "status": "ok",
            "ms": 100,
            "prompt_tokens": 3,
            "completion_tokens": 2,
        }
    )
    m.record({"event": "tool", "tool": "add", "source": "native", "is_error": False, "ms": 300})
    m.record(
        {
            "event": "run",
            "model": "gpt-x",
            "turns": 2,
            "tool_calls": 1,
            "total_tokens": 5,
            "ms": 400,
        }
    )
    assert m.render() == WORKED_EXAMPLE
    assert m.render() == WORKED_EXAMPLE  # rendering does not change the registry


def test_label_values_are_escaped():
    m = Metrics()
    m.record(llm(model='a\\b"c\nd'))
    lines = family(m.render(), "toolnexus_llm_requests_total")
    assert lines == ['toolnexus_llm_requests_total{model="a\\\\b\\"c\\nd",status="ok"} 1']
    assert 'toolnexus_llm_request_duration_seconds_count{model="a\\\\b\\"c\\nd"} 1' in m.render()


def test_series_sorted_by_label_string_code_points():
    m = Metrics()
    for name in ["b", "a_z", "B", "a", "é", "a\\"]:
        m.record(tool(name))
    lines = family(m.render(), "toolnexus_tool_calls_total")
    names = [line.split('"')[1] for line in lines]
    # Sorted on the escaped label strings: after `tool="a` come `"` < `\\` < `_`.
    assert names == ["B", "a", "a\\\\", "a_z", "b", "é"]
    rendered = [line.split("{", 1)[1].split("}", 1)[0] for line in lines]
    assert rendered == sorted(rendered)


def test_status_and_model_order_and_error_requests():
    m = Metrics()
    m.record(llm(model="z", status="ok", p=5, c=7))
    m.record(llm(model="a", status="error", p=100, c=100))  # errors add no tokens
    m.record(llm(model="a", status="ok", p=1, c=1))
    m.record(llm(model="a", status="ok"))
    text = m.render()
    assert family(text, "toolnexus_llm_requests_total") == [
        'toolnexus_llm_requests_total{model="a",status="error"} 1',
        'toolnexus_llm_requests_total{model="a",status="ok"} 2',
        'toolnexus_llm_requests_total{model="z",status="ok"} 1',
    ]
    assert family(text, "toolnexus_llm_tokens_total") == [
        'toolnexus_llm_tokens_total{type="completion"} 8',
        'toolnexus_llm_tokens_total{type="prompt"} 6',
    ]
    # Every llm event, error or not, is observed by the duration histogram.
    assert 'toolnexus_llm_request_duration_seconds_count{model="a"} 3' in text


def test_only_error_llm_calls_leave_token_family_empty():
    m = Metrics()
    m.record(llm(status="error"))
    assert family(m.render(), "toolnexus_llm_tokens_total") == []


def test_pending_and_error_tool_labels():
    m = Metrics()
    m.record(tool("ask", source="builtin", pending=True))
    m.record(tool("ask", source="builtin"))
    m.record(tool("ask", source="builtin", is_error=True))
    m.record({"event": "tool", "tool": "nope", "source": "custom", "is_error": True, "ms": 1})
    name = "toolnexus_tool_calls_total"
    assert family(m.render(), name) == [
        f'{name}{{tool="ask",source="builtin",is_error="false",pending="false"}} 1',
        f'{name}{{tool="ask",source="builtin",is_error="false",pending="true"}} 1',
        f'{name}{{tool="ask",source="builtin",is_error="true",pending="false"}} 1',
        f'{name}{{tool="nope",source="custom",is_error="true",pending="false"}} 1',
    ]
    assert 'toolnexus_tool_duration_seconds_count{tool="ask"} 3' in m.render()


def test_run_errors_count_only_runs_that_raised():
    m = Metrics()
    m.record(run("gpt-x"))
    m.record(run("gpt-x", error="boom"))
    m.record(run("gpt-x", error="timeout"))
    m.record(run("claude", error="x"))
    text = m.render()
    assert family(text, "toolnexus_run_errors_total") == [
        'toolnexus_run_errors_total{model="claude"} 1',
        'toolnexus_run_errors_total{model="gpt-x"} 2',
    ]
    assert text.endswith('toolnexus_run_errors_total{model="gpt-x"} 2\n')
    # Runs feed no other family.
    assert text.count("\n") == HEADER.count("\n") + 2


def test_unknown_events_are_ignored():
    m = Metrics()
    m.record({"event": "something-else", "model": "x"})
    m.record({})
    assert m.render() == HEADER


def bucket_counts(text: str, name: str, labels: str) -> list[int]:
    return [
        int(text.split(f'{name}_bucket{{{labels},le="{le}"}} ', 1)[1].split("\n", 1)[0])
        for le in LE
    ]


def test_histogram_bucket_boundaries_are_inclusive():
    m = Metrics()
    for ms in (50, 50.000001, 100, 60000, 60001, 0):
        m.record(tool("t", ms=ms))
    text = m.render()
    name = "toolnexus_tool_duration_seconds"
    # 0 and exactly 0.05 s land in le="0.05"; 60 s in le="60"; 60.001 s only in +Inf.
    assert bucket_counts(text, name, 'tool="t"') == [2, 4, 4, 4, 4, 4, 4, 4, 4, 5, 6]
    assert f'{name}_count{{tool="t"}} 6' in text


def test_histogram_sum_accumulates_seconds_like_javascript():
    m = Metrics()
    m.record(tool("t", ms=100))
    m.record(tool("t", ms=200))
    m.record(tool("u", ms=1500))
    m.record(tool("u", ms=500))
    text = m.render()
    assert 'toolnexus_tool_duration_seconds_sum{tool="t"} 0.30000000000000004' in text
    assert 'toolnexus_tool_duration_seconds_sum{tool="u"} 2' in text


def test_tiny_and_huge_sums_use_javascript_exponent_form():
    m = Metrics()
    m.record(tool("tiny", ms=9.999999999999999e-05))  # / 1000 == 1e-7 exactly
    m.record(tool("tinier", ms=1.5e-4))
    m.record(llm(model="huge", ms=1e24))  # 1e21 s
    text = m.render()
    assert 'toolnexus_tool_duration_seconds_sum{tool="tiny"} 1e-7' in text
    assert 'toolnexus_tool_duration_seconds_sum{tool="tinier"} 1.5e-7' in text
    assert 'toolnexus_llm_request_duration_seconds_sum{model="huge"} 1e+21' in text


def test_js_number_edge_cases():
    cases = {
        0.1 + 0.2: "0.30000000000000004",
        0.1: "0.1",
        1e-7: "1e-7",
        1.5e-7: "1.5e-7",
        1e-6: "0.000001",
        1.234e-6: "0.000001234",
        1e21: "1e+21",
        1.5e21: "1.5e+21",
        1e20: "100000000000000000000",
        123456789012345680000.0: "123456789012345680000",
        1.0: "1",
        100.0: "100",
        2.5: "2.5",
        0.05: "0.05",
        -0.0: "0",
        -1.5e-7: "-1.5e-7",
        -3.0: "-3",
        5e-324: "5e-324",
        1.7976931348623157e308: "1.7976931348623157e+308",
        1e16: "10000000000000000",
        math.inf: "Infinity",
        -math.inf: "-Infinity",
        math.nan: "NaN",
    }
    for value, text in cases.items():
        assert js_number(value) == text, value
    assert js_number(3) == "3"
    assert js_number(2**60) == "1152921504606847000"  # ints render as the double they become


@settings(derandomize=True, max_examples=300, database=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_js_number_round_trips_and_follows_the_layout_rules(x: float):
    text = js_number(x)
    assert float(text) == x
    assert not text.endswith(".0")
    magnitude = abs(x)
    if magnitude == 0 or 1e-6 <= magnitude < 1e21:
        assert "e" not in text
    else:
        exp = text.split("e")[1]
        assert exp[0] in "+-" and exp[1] != "0"
    if 1e-4 <= magnitude < 1e16:  # where Python's repr already agrees (client.md §12)
        assert text == repr(x).removesuffix(".0")


def test_js_number_shortest_digits_for_random_bit_patterns():
    # Deterministic sweep over many exponents: the digits are exactly repr's shortest digits.
    for i in range(2000):
        bits = (i * 0x9E3779B97F4A7C15) & 0x7FEFFFFFFFFFFFFF
        x = struct.unpack("<d", struct.pack("<Q", bits))[0]
        text = js_number(x)
        assert float(text) == x
        digits = text.split("e")[0].replace(".", "").replace("-", "").strip("0")
        shortest = repr(x).split("e")[0].replace(".", "").strip("0")
        assert digits == shortest, (x, text)


def test_no_sorting_or_formatting_happens_at_record_time():
    # Recording the same series many times keeps one series; output is built only on render.
    m = Metrics()
    for _ in range(1000):
        m.record(tool("t", ms=1))
        m.record(llm(ms=500, p=1, c=2))
    text = m.render()
    assert (
        'toolnexus_tool_calls_total{tool="t",source="native",is_error="false",pending="false"} 1000'
        in text
    )
    assert 'toolnexus_llm_tokens_total{type="completion"} 2000' in text
    assert 'toolnexus_llm_request_duration_seconds_sum{model="m"} 500' in text
