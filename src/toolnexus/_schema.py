"""JSON-Schema walking: apply a rewrite to every subschema, resolve and inline local `$ref`s.

Every function here builds new dicts and lists; the schema it is given is never mutated.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from toolnexus.errors import ConfigError

__all__ = [
    "MAX_INLINED_NODES",
    "MAX_REF_DEPTH",
    "SCHEMA_LIST_KEYWORDS",
    "SCHEMA_MAP_KEYWORDS",
    "SCHEMA_VALUE_KEYWORDS",
    "SchemaTooLarge",
    "allows_null",
    "drop_non_finite",
    "inline_refs",
    "map_subschemas",
    "resolve_pointer",
]

# Keywords whose value is one subschema, a list of subschemas, or a name → subschema map.
# Everything else is data (`enum`, `const`, `required`, `default`, ...) and is never walked,
# so a property called "title" or "default" is never mistaken for a keyword.
SCHEMA_VALUE_KEYWORDS = frozenset(
    {
        "items",
        "additionalItems",
        "additionalProperties",
        "unevaluatedItems",
        "unevaluatedProperties",
        "contains",
        "propertyNames",
        "not",
        "if",
        "then",
        "else",
    }
)
SCHEMA_LIST_KEYWORDS = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})
SCHEMA_MAP_KEYWORDS = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
)

Rewrite = Callable[[Any], Any]

# Inlining `$ref`s copies each target wherever it is used: definitions that each use the next
# twice double at every step, and 2 KB of schema would inline to gigabytes. A copy is bounded
# to this many subschemas, and `$ref`s followed inside each other to this depth.
MAX_INLINED_NODES = 100_000
MAX_REF_DEPTH = 64


class SchemaTooLarge(ConfigError):
    """A schema whose `$ref`s would inline past `MAX_INLINED_NODES` or `MAX_REF_DEPTH`."""

    def __init__(self, ref: str) -> None:
        super().__init__(
            f"the schema is too large once its $refs are inlined (more than {MAX_INLINED_NODES} "
            f"subschemas, or $refs nested more than {MAX_REF_DEPTH} deep), at $ref {ref!r}"
        )


def map_subschemas(schema: dict[str, Any], fn: Rewrite) -> dict[str, Any]:
    """A copy of `schema` with `fn` applied to each direct subschema (boolean ones included)."""
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in SCHEMA_VALUE_KEYWORDS:
            # draft-07 tuple form: `items` may be a list
            out[key] = [fn(v) for v in value] if isinstance(value, list) else fn(value)
        elif key in SCHEMA_LIST_KEYWORDS and isinstance(value, list):
            out[key] = [fn(v) for v in value]
        elif key in SCHEMA_MAP_KEYWORDS and isinstance(value, dict):
            out[key] = {name: fn(v) for name, v in value.items()}
        else:
            out[key] = value
    return out


def resolve_pointer(root: Any, ref: str) -> Any:
    """The target of a local `$ref` (`#`, `#/$defs/X`, any JSON pointer), or `None`."""
    if not ref.startswith("#"):
        return None
    pointer = unquote(ref[1:])
    if pointer == "":
        return root
    if not pointer.startswith("/"):
        return None  # named anchors are not supported
    node = root
    for raw in pointer[1:].split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node if isinstance(node, (dict, bool)) else None


def inline_refs(
    root: dict[str, Any],
    on_cycle: Callable[[str], Any],
    on_missing: Callable[[str], Any],
    *,
    expanding: tuple[str, ...] = (),
    on_too_large: Callable[[str], Any] | None = None,
) -> dict[str, Any]:
    """`root` with every local `$ref` replaced by a copy of its target.

    A reference met again while its own target is being inlined is a cycle: it becomes
    `on_cycle(ref)`. A reference that does not resolve becomes `on_missing(ref)`. Keywords
    beside a `$ref` are kept and win over the target's. `$defs`/`definitions` are not walked.
    `expanding` lists references already being inlined (when `root` is itself a definition).
    The copy is bounded: once it holds `MAX_INLINED_NODES` subschemas, or at a `$ref` nested
    `MAX_REF_DEPTH` deep, a further reference becomes `on_too_large(ref)`, or raises
    `SchemaTooLarge` without one.
    """
    count = 0

    def walk(node: Any, stack: tuple[str, ...]) -> Any:
        nonlocal count
        if not isinstance(node, dict):
            return node
        count += 1
        ref = node.get("$ref")
        if isinstance(ref, str):
            if ref in stack:
                target = on_cycle(ref)
            elif count > MAX_INLINED_NODES or len(stack) >= MAX_REF_DEPTH:
                if on_too_large is None:
                    raise SchemaTooLarge(ref)
                target = on_too_large(ref)
            else:
                found = resolve_pointer(root, ref)
                target = on_missing(ref) if found is None else walk(found, (*stack, ref))
            siblings = {k: v for k, v in node.items() if k != "$ref"}
            if not siblings:
                return target
            merged: dict[str, Any] = dict(target) if isinstance(target, dict) else {}
            merged.update(map_subschemas(siblings, lambda s: walk(s, stack)))
            return merged
        return map_subschemas(node, lambda s: walk(s, stack))

    top = {k: v for k, v in root.items() if k not in ("$defs", "definitions")}
    result: dict[str, Any] = walk(top, expanding)
    return result


def allows_null(schema: Any) -> bool:
    """Whether `schema` accepts JSON `null` (a structural check, not full validation)."""
    if schema is True:
        return True
    if not isinstance(schema, dict):
        return False
    if "$ref" in schema:
        return False
    type_ = schema.get("type")
    if type_ == "null" or (isinstance(type_, list) and "null" in type_):
        return True
    if schema.get("nullable") is True:
        return True
    if isinstance(schema.get("enum"), list):
        return None in schema["enum"]
    if "const" in schema:
        return schema["const"] is None
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return any(allows_null(s) for s in schema[key])
    return type_ is None and "allOf" not in schema and "not" not in schema


Strip = Callable[[Any], Any]


def null_stripper(root: dict[str, Any]) -> Strip | None:
    """A function removing `null`s that stand for "not given", or `None` when none can occur.

    Such a null is the value of an optional property whose schema does not accept `null` — what
    a model sends for an omitted argument under OpenAI strict mode, where every property is
    required and optional ones are nullable. Removing it only ever turns an invalid call into
    the valid one it meant. The stripper walks nested objects, arrays and local `$ref`s.
    """
    by_ref: dict[str, Strip | None] = {}
    building: set[str] = set()

    def via_ref(ref: str) -> Strip | None:
        if ref in by_ref:
            return by_ref[ref]
        if ref in building:  # recursive: look the finished stripper up when called

            def deferred(value: Any) -> Any:
                done = by_ref.get(ref)
                return done(value) if done is not None else value

            return deferred
        building.add(ref)
        target = resolve_pointer(root, ref)
        by_ref[ref] = build(target) if isinstance(target, dict) else None
        building.discard(ref)
        return by_ref[ref]

    def kind(node: Any) -> str | None:
        if isinstance(node, dict) and isinstance(node.get("$ref"), str):
            node = resolve_pointer(root, node["$ref"])
        if not isinstance(node, dict):
            return None
        typ = node.get("type")
        if typ == "object" or "properties" in node or "additionalProperties" in node:
            return "object"
        if typ == "array" or "items" in node:
            return "array"
        return None

    def alternatives(branches: list[Any]) -> Strip | None:
        """For `anyOf`: a value is stripped by the one object (or array) branch, if unique."""
        objects = [b for b in branches if kind(b) == "object"]
        arrays = [b for b in branches if kind(b) == "array"]
        for_dict = build(objects[0]) if len(objects) == 1 else None
        for_list = build(arrays[0]) if len(arrays) == 1 else None
        if for_dict is None and for_list is None:
            return None

        def strip(value: Any) -> Any:
            if isinstance(value, dict) and for_dict is not None:
                return for_dict(value)
            if isinstance(value, list) and for_list is not None:
                return for_list(value)
            return value

        return strip

    def build(node: Any) -> Strip | None:
        if not isinstance(node, dict):
            return None
        if isinstance(node.get("$ref"), str):
            return via_ref(node["$ref"])
        for key in ("anyOf", "oneOf"):
            branches = node.get(key)
            if isinstance(branches, list):
                return alternatives([b for b in branches if not allows_null(b)])
        if isinstance(node.get("allOf"), list) and len(node["allOf"]) == 1:
            return build(node["allOf"][0])
        props = node.get("properties")
        props = props if isinstance(props, dict) else {}
        listed = node.get("required")
        required = {r for r in listed if isinstance(r, str)} if isinstance(listed, list) else set()
        droppable = frozenset(
            name for name, sub in props.items() if name not in required and not allows_null(sub)
        )
        inner = {name: s for name, sub in props.items() if (s := build(sub)) is not None}
        extra = build(node.get("additionalProperties"))
        items = build(node.get("items"))
        if not droppable and not inner and extra is None and items is None:
            return None

        def strip(value: Any) -> Any:
            if isinstance(value, dict):
                if droppable and None in value.values():
                    value = {k: v for k, v in value.items() if v is not None or k not in droppable}
                if inner or extra is not None:
                    out = {}
                    for k, v in value.items():
                        fn = inner.get(k, extra if k not in props else None)
                        out[k] = fn(v) if fn is not None and v is not None else v
                    value = out
            elif isinstance(value, list) and items is not None:
                value = [items(v) if v is not None else v for v in value]
            return value

        return strip

    return build(root)


def drop_non_finite(value: Any, path: str = "") -> tuple[Any, list[str]]:
    """`value` without the numbers JSON cannot carry (NaN, Infinity, -Infinity): a member or item
    holding one is left out. Returns the cleaned value (`value` itself when it held none) and
    the JSON pointers of what was left out."""
    dropped: list[str] = []
    if isinstance(value, dict):
        kept: dict[Any, Any] = {}
        for key, item in value.items():
            if _non_finite(item):
                dropped.append(f"{path}/{key}")
                continue
            kept[key], lost = drop_non_finite(item, f"{path}/{key}")
            dropped.extend(lost)
        return (kept if dropped else value), dropped
    if isinstance(value, list):
        items: list[Any] = []
        for index, item in enumerate(value):
            if _non_finite(item):
                dropped.append(f"{path}/{index}")
                continue
            clean, lost = drop_non_finite(item, f"{path}/{index}")
            items.append(clean)
            dropped.extend(lost)
        return (items if dropped else value), dropped
    return value, dropped


def _non_finite(value: Any) -> bool:
    return isinstance(value, float) and not math.isfinite(value)
