"""Hypothesis strategies: JSON values that a given JSON Schema accepts.

Covers the keywords toolnexus produces or converts (type and type lists, enum, const, anyOf,
oneOf-free, properties/required/additionalProperties, items/prefixItems, min/max sizes and
bounds, uniqueItems, local `$ref`). Constraints it does not know (pattern, format) are avoided
by the callers.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from toolnexus._schema import resolve_pointer

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-1000, 1000),
    st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False),
    st.text(max_size=6),
)
ANY_JSON = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=5,
)


def _unique_key(value: Any) -> str:
    """JSON Schema equality: 1 == 1.0, but true != 1."""

    def norm(v: Any) -> Any:
        if isinstance(v, bool) or v is None:
            return v
        if isinstance(v, float) and v.is_integer():
            return int(v)
        if isinstance(v, list):
            return [norm(x) for x in v]
        if isinstance(v, dict):
            return {k: norm(x) for k, x in v.items()}
        return v

    return json.dumps(norm(value), sort_keys=True)


def values_for(schema: Any, root: Any = None, depth: int = 0) -> st.SearchStrategy[Any]:
    """Values valid under `schema` (with `$ref`s resolved against `root`)."""
    root = schema if root is None else root
    if schema is True or schema == {}:
        return ANY_JSON
    if schema is False:
        return st.nothing()
    if "$ref" in schema:
        if depth > 4:
            return st.nothing()
        target = resolve_pointer(root, schema["$ref"])
        return values_for(target, root, depth + 1)
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "const" in schema:
        return st.just(schema["const"])
    if "anyOf" in schema:
        return st.one_of([values_for(s, root, depth) for s in schema["anyOf"]])
    typ = schema.get("type")
    if isinstance(typ, list):
        return st.one_of([values_for({**schema, "type": t}, root, depth) for t in typ])
    if typ is None:
        return ANY_JSON
    if typ == "null":
        return st.none()
    if typ == "boolean":
        return st.booleans()
    if typ == "string":
        return st.text(min_size=schema.get("minLength", 0), max_size=schema.get("maxLength", 8))
    if typ == "integer":
        return st.integers(schema.get("minimum", -(10**9)), schema.get("maximum", 10**9))
    if typ == "number":
        low, high = schema.get("minimum", -1e9), schema.get("maximum", 1e9)
        return st.one_of(
            st.integers(int(low), int(high)),
            st.floats(low, high, allow_nan=False, allow_infinity=False),
        )
    if typ == "array":
        return _array(schema, root, depth)
    if typ == "object":
        return _object(schema, root, depth)
    raise ValueError(f"no strategy for {schema!r}")


def _array(schema: dict[str, Any], root: Any, depth: int) -> st.SearchStrategy[Any]:
    low = schema.get("minItems", 0)
    high = schema.get("maxItems", low + 3)
    prefix = schema.get("prefixItems")
    if prefix:
        return st.tuples(*(values_for(s, root, depth + 1) for s in prefix)).map(list)
    items = values_for(schema.get("items", True), root, depth + 1)
    if schema.get("uniqueItems"):
        return st.lists(items, min_size=low, max_size=high, unique_by=_unique_key)
    return st.lists(items, min_size=low, max_size=high)


def _object(schema: dict[str, Any], root: Any, depth: int) -> st.SearchStrategy[Any]:
    props = schema.get("properties", {})
    required = set(schema.get("required", ()))
    fixed = st.fixed_dictionaries(
        {k: values_for(s, root, depth + 1) for k, s in props.items() if k in required},
        optional={k: values_for(s, root, depth + 1) for k, s in props.items() if k not in required},
    )
    extra = schema.get("additionalProperties", True)
    if extra is False:
        return fixed
    extra_keys = (
        st.text(min_size=1, max_size=4).map(lambda k: f"x_{k}").filter(lambda k: k not in props)
    )
    extras = st.dictionaries(extra_keys, values_for(extra, root, depth + 1), max_size=2)
    return st.tuples(fixed, extras).map(lambda pair: {**pair[1], **pair[0]})
