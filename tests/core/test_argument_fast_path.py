"""The arguments fast path never accepts what jsonschema refuses, and settles the usual call."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from toolnexus import Tool, ToolResult
from toolnexus._validation import _plain_object_check, check_arguments

_KINDS = ["string", "integer", "number", "boolean", "object", "array", "null"]
_NAMES = ["a", "b", "c"]


class _Text(str):
    pass


_VALUES = st.one_of(
    st.text(max_size=3),
    st.builds(_Text, st.text(max_size=3)),
    st.integers(-3, 3),
    st.booleans(),
    st.floats(allow_nan=False, allow_infinity=False, width=16),
    st.just(1.0),
    st.none(),
    st.lists(st.integers(0, 2), max_size=2),
    st.dictionaries(st.sampled_from(_NAMES), st.integers(0, 2), max_size=2),
)

_KIND = st.one_of(st.none(), st.sampled_from(_KINDS), st.lists(st.sampled_from(_KINDS), max_size=3))


@st.composite
def _schemas(draw: st.DrawFn) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    for name in draw(st.lists(st.sampled_from(_NAMES), unique=True, max_size=3)):
        kind = draw(_KIND)
        properties[name] = {} if kind is None else {"type": kind}
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    schema["required"] = draw(st.lists(st.sampled_from(_NAMES), unique=True, max_size=3))
    extra = draw(st.sampled_from([None, True, False]))
    if extra is not None:
        schema["additionalProperties"] = extra
    return schema


@settings(
    derandomize=True,
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    schema=_schemas(), args=st.dictionaries(st.sampled_from([*_NAMES, "z"]), _VALUES, max_size=4)
)
def test_a_surely_valid_call_is_valid_for_jsonschema(
    schema: dict[str, Any], args: dict[str, Any]
) -> None:
    predicate = _plain_object_check(schema)
    assert predicate is not None
    if predicate(args):
        assert Draft202012Validator(schema).is_valid(args), (schema, args)


async def _noop(args: dict[str, Any], ctx: Any) -> ToolResult:
    return ToolResult("ok")


def test_the_usual_calls_are_settled_without_jsonschema() -> None:
    schema = {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "where"},
            "days": {"type": ["integer", "null"]},
            "ratio": {"type": "number"},
            "anything": {},
        },
        "required": ["city"],
        "additionalProperties": False,
    }
    predicate = _plain_object_check(schema)
    assert predicate is not None
    assert predicate({"city": "Paris"})
    assert predicate({"city": "Paris", "days": None, "ratio": 2, "anything": [1]})
    assert predicate({"city": "Paris", "ratio": 0.5, "days": 3})
    assert not predicate({"city": "Paris", "extra": 1})  # refused by the schema
    assert not predicate({"days": 3})  # `city` is required
    assert not predicate({"city": "Paris", "days": True})  # a bool is no integer
    assert not predicate({"city": "Paris", "days": 3.0})  # drafts differ: jsonschema decides
    unknown = _plain_object_check({"type": "object", "properties": {"a": {"type": "mystery"}}})
    assert unknown is not None and not unknown({"a": 1}) and unknown({})
    tool = Tool("weather", "", schema, "custom", _noop)
    assert check_arguments(tool, {"city": "Paris", "days": 3}) == (
        {"city": "Paris", "days": 3},
        None,
    )
    _, problems = check_arguments(tool, {"city": 3})
    assert problems is not None and "city" in problems
