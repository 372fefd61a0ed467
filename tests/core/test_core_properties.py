"""Property-based checks (hypothesis, derandomized, bounded).

- every inferred native schema is valid JSON Schema (2020-12 metaschema);
- a native tool's validation never rejects a value its own schema accepts;
- strict and Gemini conversions of arbitrary valid object schemas stay valid, never mutate the
  input, and a strict call (nulls for "not given") maps back onto the original schema;
- a malformed schema (what a buggy server may send) never makes a declaration or a call raise.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import inspect
import itertools
from typing import Any, Literal, NotRequired, Optional, Union

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from pydantic import create_model
from typing_extensions import TypedDict

from support.json_schema_values import ANY_JSON, values_for
from toolnexus import Tool, create_toolkit, define_tool, to_openai
from toolnexus._schema import map_subschemas, null_stripper
from toolnexus.adapters import gemini_schema, strict_schema

SETTINGS = settings(
    derandomize=True,
    max_examples=50,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# -- type hints a user might write --------------------------------------------------------------


class Mood(enum.Enum):
    HAPPY = "happy"
    SAD = "sad"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


_names = itertools.count()

HASHABLE = st.sampled_from([str, int, bool, Literal["a", "b"], Literal[1, 2], Mood, Level])
SCALAR = st.one_of(HASHABLE, st.sampled_from([float]))


def _model(fields: list[Any]) -> Any:
    n = next(_names)
    spec: dict[str, Any] = {}
    for i, t in enumerate(fields):
        spec[f"f{i}"] = (t, ...) if i % 2 == 0 else (Optional[t], None)  # noqa: UP045
    return create_model(f"Model{n}", **spec)


def _dataclass(fields: list[Any]) -> Any:
    n = next(_names)
    return dataclasses.make_dataclass(f"Data{n}", [(f"d{i}", t) for i, t in enumerate(fields)])


def _typed_dict(fields: list[Any]) -> Any:
    n = next(_names)
    spec = {f"k{i}": (t if i % 2 == 0 else NotRequired[t]) for i, t in enumerate(fields)}
    return TypedDict(f"Typed{n}", spec)  # type: ignore[operator]


def _compound(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    fields = st.lists(inner, min_size=1, max_size=3)
    return st.one_of(
        inner.map(lambda t: list[t]),  # type: ignore[valid-type]
        inner.map(lambda t: dict[str, t]),  # type: ignore[valid-type]
        inner.map(lambda t: tuple[t, ...]),  # type: ignore[valid-type]
        st.tuples(inner, inner).map(lambda p: tuple[p]),  # type: ignore[misc]
        HASHABLE.map(lambda t: set[t]),  # type: ignore[valid-type]
        inner.map(lambda t: Optional[t]),  # noqa: UP045
        st.tuples(inner, inner).map(lambda p: Union[p]),  # noqa: UP007
        fields.map(_model),
        fields.map(_dataclass),
        fields.map(_typed_dict),
    )


ANNOTATIONS = st.recursive(SCALAR, _compound, max_leaves=4)


def _as_tool(annotations: list[Any], defaults: list[bool], extra: bool) -> Tool:
    """A tool whose function takes the given annotated parameters (no source code needed)."""

    def fn(**kwargs: Any) -> str:
        return "ok"

    params = [
        inspect.Parameter(
            f"p{i}",
            inspect.Parameter.KEYWORD_ONLY,
            annotation=Optional[t] if has_default else t,  # noqa: UP045
            default=None if has_default else inspect.Parameter.empty,
        )
        for i, (t, has_default) in enumerate(zip(annotations, defaults, strict=False))
    ]
    if extra:
        params.append(inspect.Parameter("rest", inspect.Parameter.VAR_KEYWORD))
    fn.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    return define_tool(fn, name="generated")


TOOLS = st.builds(
    _as_tool,
    st.lists(ANNOTATIONS, min_size=0, max_size=4),
    st.lists(st.booleans(), min_size=4, max_size=4),
    st.booleans(),
)


@SETTINGS
@given(TOOLS)
def test_inferred_schemas_are_valid_json_schema(tool: Tool) -> None:
    schema = tool.input_schema
    Draft202012Validator.check_schema(schema)
    assert schema["type"] == "object"
    assert set(schema.get("required", [])) <= set(schema["properties"])
    assert schema.get("required") != []


@SETTINGS
@given(st.data(), TOOLS)
async def test_validation_accepts_every_value_the_schema_accepts(
    data: st.DataObject, tool: Tool
) -> None:
    schema = tool.input_schema
    args = data.draw(values_for(schema), label="args")
    Draft202012Validator(schema).validate(args)  # the generator is right
    result = await tool.execute(args)
    assert (result.output, result.is_error) == ("ok", False), result.output


# -- arbitrary object schemas (as MCP servers send them) ------------------------------------------

NAMES = st.sampled_from(["a", "b", "title", "default", "type", "properties", "x-y", "$ref"])
ANNOTATION_KEYS = st.fixed_dictionaries(
    {},
    optional={
        "description": st.text(max_size=5),
        "title": st.text(max_size=5),
        "default": st.integers(0, 3),
        "examples": st.lists(st.integers(0, 3), max_size=2),
    },
)
PRIMITIVE = st.sampled_from(["string", "integer", "number", "boolean"])
LEAF = st.one_of(
    PRIMITIVE.map(lambda t: {"type": t}),
    st.lists(st.text(max_size=3), min_size=1, max_size=3, unique=True).map(
        lambda e: {"type": "string", "enum": e}
    ),
    st.sampled_from(["a", 1, True]).map(lambda c: {"const": c}),
    st.lists(PRIMITIVE, min_size=1, max_size=2, unique=True).map(
        lambda ts: {"type": [*ts, "null"]}
    ),
    st.just({"$ref": "#/$defs/Shared"}),
    st.just({"type": "null"}),
)


@st.composite
def _object_schema(draw: st.DrawFn, children: st.SearchStrategy[Any]) -> dict[str, Any]:
    props = draw(st.dictionaries(NAMES, children, max_size=4))
    required = [n for n in props if draw(st.booleans())]
    out: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        out["required"] = required
    closed = draw(st.sampled_from(["absent", "false", "true", "schema"]))
    if closed == "false":
        out["additionalProperties"] = False
    elif closed == "true":
        out["additionalProperties"] = True
    elif closed == "schema":
        out["additionalProperties"] = draw(LEAF)
    return out


def _extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        _object_schema(children),
        children.map(lambda c: {"type": "array", "items": c}),
        st.tuples(children, st.just({"type": "null"})).map(lambda p: {"anyOf": list(p)}),
        st.lists(children, min_size=1, max_size=3).map(lambda b: {"anyOf": b}),
    )


SUBSCHEMA = st.recursive(LEAF, _extend, max_leaves=8)


@st.composite
def object_schemas(draw: st.DrawFn) -> dict[str, Any]:
    root = draw(_object_schema(SUBSCHEMA))
    extras = draw(ANNOTATION_KEYS)
    shared = draw(
        st.one_of(
            LEAF.filter(lambda s: "$ref" not in s),
            _object_schema(LEAF.filter(lambda s: "$ref" not in s)),
        )
    )
    if draw(st.booleans()):
        root["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return {**extras, **root, "$defs": {"Shared": shared}}


def _schema_nodes(node: Any) -> list[dict[str, Any]]:
    """Every subschema (never a property *name*)."""
    if not isinstance(node, dict):
        return []
    found = [node]
    map_subschemas(node, lambda s: found.extend(_schema_nodes(s)))
    return found


GEMINI_REJECTED = {
    "$ref",
    "$schema",
    "$id",
    "$defs",
    "definitions",
    "additionalProperties",
    "default",
    "examples",
    "title",
    "const",
}


@SETTINGS
@given(object_schemas())
def test_gemini_conversion_stays_valid_and_in_the_subset(schema: dict[str, Any]) -> None:
    Draft202012Validator.check_schema(schema)
    before = copy.deepcopy(schema)
    converted = gemini_schema(schema)
    assert schema == before
    Draft202012Validator.check_schema(converted)
    for node in _schema_nodes(converted):
        assert not GEMINI_REJECTED & node.keys(), node
        assert not isinstance(node.get("type"), list), node
        assert {"type": "null"} not in node.get("anyOf", []), node


@SETTINGS
@given(object_schemas())
def test_strict_conversion_stays_valid_and_closed(schema: dict[str, Any]) -> None:
    before = copy.deepcopy(schema)
    converted, problem = strict_schema(schema)
    assert schema == before
    Draft202012Validator.check_schema(converted)
    if problem is not None:
        assert converted is schema
        return
    for node in _schema_nodes(converted):
        if "properties" in node:
            assert node["additionalProperties"] is False
            assert node["required"] == list(node["properties"])


@SETTINGS
@given(st.data(), object_schemas())
def test_a_strict_call_means_the_same_call_under_the_original_schema(
    data: st.DataObject, schema: dict[str, Any]
) -> None:
    converted, problem = strict_schema(schema)
    if problem is not None:
        return
    args = data.draw(values_for(converted), label="strict args")
    Draft202012Validator(converted).validate(args)
    strip = null_stripper(schema)
    meant = strip(args) if strip is not None else args
    Draft202012Validator(schema).validate(meant)


# -- whatever a server sends: declarations and calls never raise ----------------------------------

KEYWORDS = st.sampled_from(
    [
        "type",
        "properties",
        "required",
        "items",
        "enum",
        "const",
        "anyOf",
        "oneOf",
        "allOf",
        "additionalProperties",
        "$ref",
        "$defs",
        "nullable",
        "default",
    ]
)
JUNK = st.one_of(
    ANY_JSON,
    st.sampled_from(["#", "#/$defs/X", "#/nowhere", "http://x.test/s.json", "object", "null"]),
)
SCHEMA_LIKE = st.recursive(
    st.dictionaries(KEYWORDS, JUNK, max_size=3),
    lambda inner: st.dictionaries(
        KEYWORDS, st.one_of(inner, st.lists(inner, max_size=2), JUNK), max_size=4
    ),
    max_leaves=8,
)


@SETTINGS
@given(SCHEMA_LIKE, ANY_JSON)
async def test_a_malformed_schema_never_makes_declarations_or_calls_raise(
    schema: dict[str, Any], args: Any
) -> None:
    before = copy.deepcopy(schema)
    broken = Tool("broken", "", schema, "mcp", lambda a, c: "ran")
    to_openai([broken], strict=True)
    gemini_schema(schema)
    async with await create_toolkit(extra_tools=[broken], builtins=False) as tk:
        result = await tk.execute("broken", args if isinstance(args, dict) else {"v": args})
    assert result.output == "ran" or result.output.startswith("Invalid arguments for tool broken")
    assert schema == before
