"""The documented event types match the events a run really produces.

Every stream event, hook argument and metric event of a run is checked against its `TypedDict`:
each required key is there, no key is undeclared, and the discriminating key names the class.
"""

from __future__ import annotations

from typing import Any, get_args, get_type_hints

import pydantic
import pytest
from typing_extensions import is_typeddict

import toolnexus
import toolnexus.client as tc
from support.client_helpers import add_tool, kit
from toolnexus.testing import ScriptedModel, text, tool_call, tools
from toolnexus.types import Answer, pending


def _origin(cls: Any) -> Any:
    return getattr(cls, "__origin__", cls)


def _by_tag(union: Any, key: str) -> dict[str, Any]:
    """The members of a union of TypedDicts, by the literal value of their `key`."""
    out = {}
    for member in get_args(union):
        cls = _origin(member)
        (tag,) = get_args(get_type_hints(cls)[key])
        out[tag] = cls
    return out


STREAM_EVENTS = _by_tag(tc.StreamEvent, "type")
METRIC_EVENTS = _by_tag(tc.MetricEvent, "event")


def check(event: dict[str, Any], cls: Any) -> None:
    """`event` has every required key of `cls` and no key `cls` does not declare."""
    assert is_typeddict(cls)
    keys = set(event)
    assert cls.__required_keys__ <= keys, (cls.__name__, event)
    assert keys <= cls.__required_keys__ | cls.__optional_keys__, (cls.__name__, event)


def test_the_unions_list_every_event_once() -> None:
    assert len(STREAM_EVENTS) == len(get_args(tc.StreamEvent))
    assert sorted(STREAM_EVENTS) == sorted(
        [
            *("text", "reasoning", "tool_call", "ui", "progress", "tool_result", "pending"),
            *("refusal", "output", "usage", "done"),
        ]
    )
    assert {"llm": tc.LlmEvent, "tool": tc.ToolEvent, "run": tc.RunEvent} == METRIC_EVENTS
    assert toolnexus.StreamEvent is tc.StreamEvent


class City(pydantic.BaseModel):
    name: str


@pytest.mark.parametrize("style", ["openai", "anthropic"])
async def test_a_streamed_run_produces_only_documented_events(style: str) -> None:
    metrics: list[dict[str, Any]] = []
    hooks_seen: list[tuple[str, dict[str, Any]]] = []

    def hook(name: str) -> Any:
        def record(info: dict[str, Any]) -> None:
            hooks_seen.append((name, dict(info)))

        return record

    def guarded(args: dict[str, Any], ctx: Any) -> Any:
        return "went on" if ctx.answer is not None else pending(kind="confirm", prompt="go on?")

    model = ScriptedModel(
        tools(tool_call("add", {"a": 1, "b": 2}), tool_call("guarded")),
        text('{"name": "Oslo"}'),
    )
    client = model.client(
        style,
        on_metric=metrics.append,
        hooks={n: hook(n) for n in ("before_llm", "after_llm", "before_tool", "after_tool")},
        wait_for=lambda request: Answer(id=request.id, ok=True),
    )
    toolkit = kit(
        add_tool(),
        toolnexus.define_tool(
            name="guarded",
            description="asks first",
            input_schema={"type": "object"},
            execute=guarded,
        ),
    )
    events = [e async for e in client.stream("?", toolkit, output_type=City, deps={"user": "ada"})]
    kinds = [e["type"] for e in events]
    assert kinds[-3:] == ["output", "usage", "done"]
    assert {"text", "tool_call", "tool_result", "pending"} <= set(kinds)
    for event in events:
        check(event, STREAM_EVENTS[event["type"]])
    assert events[-1]["result"].output == City(name="Oslo")

    assert {m["event"] for m in metrics} == {"llm", "tool", "run"}
    assert any(m.get("pending") is True for m in metrics)
    for event in metrics:
        check(event, METRIC_EVENTS[event["event"]])

    infos = {
        "before_llm": tc.BeforeLlmInfo,
        "after_llm": tc.AfterLlmInfo,
        "before_tool": tc.BeforeToolInfo,
        "after_tool": tc.AfterToolInfo,
    }
    assert {name for name, _ in hooks_seen} == set(infos)
    for name, info in hooks_seen:
        check(info, infos[name])
        assert info["deps"] == {"user": "ada"}


async def test_a_raising_run_reports_its_error_in_a_documented_run_event() -> None:
    metrics: list[dict[str, Any]] = []
    model = ScriptedModel()  # no turn: the request fails
    client = model.client("openai", on_metric=metrics.append, retries=0)
    with pytest.raises(toolnexus.ProviderError):
        await client.run("?")
    assert [m["event"] for m in metrics] == ["llm", "run"]
    for event in metrics:
        check(event, METRIC_EVENTS[event["event"]])
    assert "error" in metrics[-1]
