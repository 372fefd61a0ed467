"""Argument checks agree with jsonschema on every flat object schema (hypothesis, bounded).

`toolkit.execute` settles most calls of plain object schemas without jsonschema; whatever the
schema and the arguments, its verdict (and its message for a rejection) must be the one
jsonschema gives (after the nulls that mean "not given" are dropped, as for every call).
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from support.json_schema_values import ANY_JSON
from toolnexus import Tool
from toolnexus._schema import null_stripper
from toolnexus.toolkit import Toolkit

SETTINGS = settings(
    derandomize=True,
    max_examples=300,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)

NAMES = ("a", "b", "c")
TYPES = ("string", "integer", "number", "boolean", "object", "array", "null")
# Values of every JSON type, including the ones types disagree on (1.0, -0.0, True).
EDGE_VALUES = [0, 7, -1, 1.0, 2.5, -0.0, 1e300, True, False, None, "", "x", [], [1], {}, {"a": 1}]
VALUES = st.one_of(st.sampled_from(EDGE_VALUES), ANY_JSON)

TYPE_FIELD = st.one_of(
    st.sampled_from(TYPES), st.lists(st.sampled_from(TYPES), min_size=1, max_size=3, unique=True)
)
PROPERTY = st.one_of(
    st.builds(lambda t: {"type": t}, TYPE_FIELD),
    st.builds(lambda t: {"type": t, "title": "T", "description": "d"}, TYPE_FIELD),
    st.sampled_from([{}, {"title": "T"}]),
    st.builds(lambda t: {"type": t, "minimum": 1}, TYPE_FIELD),  # beyond the plain shape
)


@st.composite
def cases(draw: st.DrawFn) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A flat object schema and a few argument objects, mostly using its property names."""
    schema: dict[str, Any] = {
        "type": "object",
        "properties": draw(st.dictionaries(st.sampled_from(NAMES), PROPERTY, max_size=3)),
    }
    if draw(st.booleans()):
        schema["required"] = draw(st.lists(st.sampled_from((*NAMES, "d")), max_size=3, unique=True))
    if draw(st.booleans()):
        schema["additionalProperties"] = draw(st.booleans())
    keys = st.sampled_from((*NAMES, "d"))
    calls = draw(st.lists(st.dictionaries(keys, VALUES, max_size=4), min_size=1, max_size=4))
    return schema, calls


@SETTINGS
@given(case=cases())
async def test_verdicts_and_messages_match_jsonschema(case):
    schema, calls = case

    async def echo(args: dict[str, Any], ctx: Any) -> str:
        return "ran"

    tool = Tool("t", "", schema, "mcp", echo)
    validator = Draft202012Validator(schema)
    strip = null_stripper(schema)  # nulls meaning "not given" are dropped before any check
    toolkit = Toolkit(extra_tools=[tool])
    for args in calls:
        result = await toolkit.execute("t", args)
        checked = strip(args) if strip is not None else args
        errors = sorted(validator.iter_errors(checked), key=lambda e: list(e.absolute_path))
        if errors:
            assert result.is_error
            assert result.output.startswith("Invalid arguments for tool t:\n")
            assert result.output.count("\n- ") == len(errors)
        else:
            assert (result.output, result.is_error) == ("ran", False)


async def test_every_type_against_every_kind_of_value():
    async def echo(args: dict[str, Any], ctx: Any) -> str:
        return "ran"

    for kind in (*TYPES, ["integer", "string"], ["number", "null"]):
        schema = {"type": "object", "properties": {"a": {"type": kind}}, "required": ["a"]}
        toolkit = Toolkit(extra_tools=[Tool("t", "", schema, "mcp", echo)])
        validator = Draft202012Validator(schema)
        for value in EDGE_VALUES:
            result = await toolkit.execute("t", {"a": value})
            rejected = result.output.startswith("Invalid arguments")
            assert rejected == (not validator.is_valid({"a": value})), (kind, value)
