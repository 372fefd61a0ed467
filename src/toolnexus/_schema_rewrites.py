"""Schema rewrites for providers that accept a JSON Schema subset: OpenAI strict mode, Gemini."""

from __future__ import annotations

from typing import Any

from toolnexus._log import warn
from toolnexus._schema import (
    MAX_INLINED_NODES,
    MAX_REF_DEPTH,
    allows_null,
    inline_refs,
    map_subschemas,
    resolve_pointer,
)

__all__ = ["gemini_schema", "strict_schema"]


# Keywords OpenAI strict mode rejects but whose loss only widens what the model may send (the
# toolkit still validates every call against the tool's own schema).
_STRICT_DROPPED = frozenset(
    {
        "$schema",
        "$id",
        "$comment",
        "title",
        "default",
        "examples",
        "format",
        "minLength",
        "maxLength",
        "uniqueItems",
        "minProperties",
        "maxProperties",
        "contentEncoding",
        "contentMediaType",
        "readOnly",
        "writeOnly",
        "deprecated",
    }
)
# Keywords with no strict-mode equivalent: their loss would change what the tool accepts.
_STRICT_LOSSY = (
    "patternProperties",
    "propertyNames",
    "unevaluatedProperties",
    "dependentSchemas",
    "dependentRequired",
    "not",
    "if",
    "then",
    "else",
    "prefixItems",
    "contains",
)


class _NotStrict(Exception):
    """A schema that strict mode cannot express without loss (the message says why)."""


def strict_schema(schema: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """`schema` rewritten for OpenAI strict mode, and `None` — or the reason it is lossy.

    Every object is closed (`additionalProperties: false`) and lists every property as
    required; a property that was optional becomes nullable (`null` means "not given").
    The input is never mutated; on a lossy schema the returned schema is the input itself.
    """
    try:
        if schema.get("type") != "object" or "properties" not in schema:
            raise _NotStrict("the top level is not an object with declared properties")
        _check_refs(schema)
        return _strict_node(schema, "(root)"), None
    except _NotStrict as exc:
        return schema, str(exc)


def _strict_node(node: Any, where: str) -> Any:
    if not isinstance(node, dict):
        raise _NotStrict(f"{where} is a boolean schema")
    for key in _STRICT_LOSSY:
        if key in node:
            raise _NotStrict(f"{where} uses {key}")
    if "allOf" in node:
        parts = node["allOf"]
        if not isinstance(parts, list) or len(parts) != 1 or not isinstance(parts[0], dict):
            raise _NotStrict(f"{where} uses allOf")
        merged = {**parts[0], **{k: v for k, v in node.items() if k != "allOf"}}
        return _strict_node(merged, where)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _STRICT_DROPPED:
            continue
        if key == "oneOf":  # exclusivity is re-checked by validation; anyOf is accepted
            key = "anyOf"
        if key == "anyOf":
            out[key] = [_strict_node(v, f"{where}.{key}") for v in _listed(value, where, key)]
        elif key in ("$defs", "definitions"):
            defs = _mapped(value, where, key)
            out[key] = {n: _strict_node(v, f"{where}.{key}.{n}") for n, v in defs.items()}
        elif key == "items":
            if isinstance(value, list):
                raise _NotStrict(f"{where} uses tuple items")
            out[key] = _strict_node(value, f"{where}[]")
        elif key == "enum":
            out[key] = _listed(value, where, key)
        elif key in ("properties", "additionalProperties", "required"):
            continue  # handled below for objects
        else:
            out[key] = value
    typ = node.get("type")
    is_object = typ == "object" or (isinstance(typ, list) and "object" in typ)
    if is_object or "properties" in node:
        extra = node.get("additionalProperties")
        if extra not in (None, False):
            raise _NotStrict(f"{where} is an open map (additionalProperties)")
        if "properties" not in node and extra is None:
            raise _NotStrict(f"{where} is a free-form object")
        props = _mapped(node.get("properties") or {}, where, "properties")
        required = _listed(node.get("required") or [], where, "required")
        new_props: dict[str, Any] = {}
        for name, sub in props.items():
            converted = _strict_node(sub, f"{where}.{name}")
            if name not in required:
                converted = _nullable(converted)
            new_props[name] = converted
        out["properties"] = new_props
        out["required"] = list(new_props)
        out["additionalProperties"] = False
    if not any(k in out for k in ("type", "anyOf", "$ref", "enum", "const")):
        raise _NotStrict(f"{where} has no type")
    return out


def _check_refs(root: dict[str, Any]) -> None:
    """Strict mode resolves `$ref`s only inside the schema: every one must land somewhere."""

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and resolve_pointer(root, ref) is None:
                raise _NotStrict(f"$ref {ref} does not resolve within the schema")
            map_subschemas(node, walk)
        return node

    walk(root)


def _listed(value: Any, where: str, key: str) -> list[Any]:
    if not isinstance(value, list):
        raise _NotStrict(f"{where}.{key} is not a list")
    return value


def _mapped(value: Any, where: str, key: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _NotStrict(f"{where}.{key} is not an object")
    return value


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` that also accepts `null`."""
    if allows_null(schema):
        return schema
    typ = schema.get("type")
    if "anyOf" in schema:
        return {**schema, "anyOf": [*schema["anyOf"], {"type": "null"}]}
    if "$ref" in schema or typ is None:
        extra = {k: v for k, v in schema.items() if k == "description"}
        core = {k: v for k, v in schema.items() if k != "description"}
        return {"anyOf": [core, {"type": "null"}], **extra}
    out = dict(schema)
    out["type"] = [*typ, "null"] if isinstance(typ, list) else [typ, "null"]
    if "enum" in out:
        out["enum"] = [*out["enum"], None]
    return out


# Keywords Gemini's function-declaration schema rejects.
_GEMINI_DROPPED = frozenset(
    {
        "$schema",
        "$id",
        "$defs",
        "definitions",
        "additionalProperties",
        "default",
        "examples",
        "title",
    }
)


def gemini_schema(schema: dict[str, Any], *, tool: str | None = None) -> dict[str, Any]:
    """`schema` in the subset Gemini accepts; the input is never mutated.

    Local `$ref`s are inlined (a recursive one becomes `{"type": "object"}`), rejected keywords
    dropped, `const` becomes a one-value `enum`, and a `null` alternative (`anyOf` branch or
    `type` list entry) becomes `"nullable": true`. A schema too large once inlined
    (`_schema.MAX_INLINED_NODES`) keeps what fits: each further `$ref` becomes
    `{"type": "object"}`, with a warning naming `tool`.
    """

    def object_schema(ref: str) -> dict[str, Any]:
        return {"type": "object"}

    cut: list[str] = []

    def too_large(ref: str) -> dict[str, Any]:
        cut.append(ref)
        return {"type": "object"}

    inlined = inline_refs(schema, object_schema, object_schema, on_too_large=too_large)
    if cut:
        who = f'tool "{tool}"' if tool else "a tool"
        warn(
            f"{who}: its input schema is too large once its $refs are inlined for Gemini "
            f"(more than {MAX_INLINED_NODES} subschemas, or nested more than {MAX_REF_DEPTH} "
            f'deep): {len(cut)} $refs from {cut[0]!r} on are declared as {{"type": "object"}}'
        )
    result: dict[str, Any] = _gemini_node(inlined)
    return result


def _gemini_node(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in map_subschemas(node, _gemini_node).items():
        if key in _GEMINI_DROPPED:
            continue
        if key == "const":
            out.setdefault("enum", [value])
            continue
        out[key] = value
    typ = out.get("type")
    if isinstance(typ, list):
        kinds = [k for k in typ if k != "null"]
        if len(kinds) < len(typ):
            out["nullable"] = True
        if len(kinds) == 1:
            out["type"] = kinds[0]
        else:
            del out["type"]
            if kinds:
                out["anyOf"] = [{"type": k} for k in kinds]
    if isinstance(out.get("enum"), list) and None in out["enum"]:
        out["enum"] = [v for v in out["enum"] if v is not None]
        out["nullable"] = True
    branches = out.get("anyOf")
    if isinstance(branches, list):
        rest = [b for b in branches if not (isinstance(b, dict) and b.get("type") == "null")]
        if len(rest) < len(branches):
            siblings = {k: v for k, v in out.items() if k != "anyOf"}
            if len(rest) == 1 and isinstance(rest[0], dict):
                out = {**rest[0], **siblings}
            elif rest:
                out = {"anyOf": rest, **siblings}
            else:  # only null was allowed
                out = siblings
            out["nullable"] = True
    return out
