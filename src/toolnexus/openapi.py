"""OpenAPI import: one HTTP tool per operation of an OpenAPI 3.x (or Swagger 2.0) document.

Path and query parameters and the request body's properties become the tool's input schema
(local `$ref`s resolved, `required` kept); header and cookie parameters stay hidden from the model
(supply them with `headers=`).
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

from toolnexus._log import warn
from toolnexus._schema import (
    MAX_INLINED_NODES,
    MAX_REF_DEPTH,
    SchemaTooLarge,
    map_subschemas,
    resolve_pointer,
)
from toolnexus.errors import ConfigError, ConfigTypeError, SourceConnectionError
from toolnexus.http import HttpEndpoint, UrlTemplate
from toolnexus.types import Tool, error_message, sanitize

__all__ = ["http_tools_from_openapi"]

_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
# OpenAPI path templates allow any characters but `/` and braces in a parameter name.
_PATH_PARAM = re.compile(r"\{([^{}/]+)\}")
# OpenAPI-only annotations that are not JSON Schema.
_DROPPED_KEYS = frozenset({"xml", "externalDocs", "discriminator", "example"})


async def http_tools_from_openapi(
    spec: Mapping[str, Any] | str | os.PathLike[str],
    *,
    base_url: str | None = None,
    headers: Mapping[str, str] | None = None,
    include: Iterable[str] | None = None,
    defer_loading: bool = False,
) -> list[Tool]:
    """One HTTP tool per operation of an OpenAPI document.

    `spec` is the parsed document, a JSON or YAML file path, or an http(s) URL (fetched
    asynchronously). Tools are named by `operationId` (sanitised), else `<method>_<path>`.
    `base_url` overrides the document's first server; `headers` (values may use `${ENV}`) go
    with every request; `include` keeps only the named operations. `defer_loading=True`: every
    tool is deferred, found by tool search (docs/tools-search.md).
    """
    if not isinstance(defer_loading, bool):
        raise ConfigTypeError(f"defer_loading must be a bool, not {defer_loading!r}")
    if isinstance(include, str):
        raise ConfigTypeError("include must be a list of operation names, not a string")
    wanted = None if include is None else [str(w) for w in include]
    document, origin = await _load(spec)
    base: str | None = None  # worked out at the first operation: a spec without any needs none
    resolver = _Resolver(document)
    tools: list[Tool] = []
    matched: set[str] = set()
    names: set[str] = set()
    for path, item in (document.get("paths") or {}).items():
        if not isinstance(item, Mapping):
            continue
        item = resolver.deref(item)
        for method in item:
            if method not in _METHODS or not isinstance(item[method], Mapping):
                continue
            operation = item[method]
            op_id = operation.get("operationId")
            name = sanitize(str(op_id) if op_id else f"{method}_{path}")
            if wanted is not None:
                hits = {w for w in wanted if w == name or (op_id is not None and w == op_id)}
                if not hits:
                    continue
                matched |= hits
            if name in names:
                warn(f'OpenAPI operation name "{name}" is used twice — keeping the first')
                continue
            names.add(name)
            if base is None:
                base = _base_url(document, origin, base_url)
            resolver.operation()
            try:
                tool = _operation_tool(
                    name, method, str(path), item, operation, resolver, base, headers
                )
            except SchemaTooLarge as exc:
                raise ConfigError(f'OpenAPI operation "{name}": {exc}') from None
            tool.defer_loading = defer_loading
            tools.append(tool)
    for missing in [w for w in wanted or () if w not in matched]:
        warn(f'OpenAPI include "{missing}" matches no operation — ignored')
    return tools


# -- loading --------------------------------------------------------------------------------------


async def _load(spec: Any) -> tuple[dict[str, Any], str | None]:
    """The document and, when it was fetched, the URL it came from."""
    if isinstance(spec, Mapping):
        return _checked(dict(spec), "the OpenAPI document"), None
    if not isinstance(spec, (str, os.PathLike)):
        raise ConfigTypeError(
            f"spec must be a dict, a file path or a URL, got {type(spec).__name__}"
        )
    text_spec = os.fspath(spec)
    if isinstance(spec, str) and re.match(r"(?i)https?://", text_spec):
        return _checked(_parse(await _fetch(text_spec), text_spec), text_spec), text_spec
    path = Path(text_spec)
    try:
        text = await asyncio.to_thread(path.read_text, encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"OpenAPI spec file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read OpenAPI spec {path}: {error_message(exc)}") from None
    return _checked(_parse(text, str(path)), str(path)), None


async def _fetch(url: str) -> str:
    from toolnexus._http import fetch_source

    try:
        response = await fetch_source(
            url, "the OpenAPI spec", headers={"Accept": "application/json, */*"}
        )
    except SourceConnectionError:
        raise
    except Exception as exc:  # e.g. a URL the client cannot send at all
        raise ConfigError(f"cannot fetch OpenAPI spec {url}: {error_message(exc)}") from None
    if not 200 <= response.status_code <= 299:
        raise ConfigError(f"cannot fetch OpenAPI spec {url}: HTTP {response.status_code}")
    return response.text


def _parse(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        pass
    import yaml

    try:
        return yaml.load(text, Loader=_yaml_loader())
    except yaml.YAMLError as exc:
        detail = " ".join(str(exc).split())
        raise ConfigError(f"OpenAPI spec {where} is neither JSON nor YAML: {detail}") from None


@functools.cache
def _yaml_loader() -> Any:
    """PyYAML's safe loader minus timestamps: a date stays the string it is in JSON, so every
    schema value remains JSON-serialisable."""
    import yaml

    base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    timestamp = "tag:yaml.org,2002:timestamp"
    resolvers = {
        first: [(tag, rx) for tag, rx in entries if tag != timestamp]
        for first, entries in base.yaml_implicit_resolvers.items()
    }
    return type("OpenApiYamlLoader", (base,), {"yaml_implicit_resolvers": resolvers})


def _checked(document: Any, where: str) -> dict[str, Any]:
    if not isinstance(document, dict) or not isinstance(document.get("paths", {}), Mapping):
        raise ConfigError(f"{where} is not an OpenAPI document (expected an object with paths)")
    if "openapi" not in document and "swagger" not in document and "paths" not in document:
        raise ConfigError(f"{where} is not an OpenAPI document (no openapi, swagger or paths)")
    return document


def _base_url(document: Mapping[str, Any], origin: str | None, override: str | None) -> str:
    if override:
        return override.rstrip("/")
    if "swagger" in document:
        return _swagger_base(document, origin)
    servers = document.get("servers")
    if not servers and origin is None:
        raise ConfigError("the OpenAPI document has no servers entry: pass base_url=")
    server: Mapping[str, Any] = (
        servers[0] if servers and isinstance(servers[0], Mapping) else {"url": "/"}
    )
    url = str(server.get("url") or "/")
    for var, spec in (server.get("variables") or {}).items():
        if isinstance(spec, Mapping) and "default" in spec:
            url = url.replace("{" + str(var) + "}", str(spec["default"]))
    if not urlsplit(url).scheme:
        if origin is None:
            raise ConfigError(
                f"the OpenAPI server URL {url!r} is relative: pass base_url= to say where the "
                "API lives"
            )
        url = urljoin(origin, url)  # relative to where the document was fetched from
    return url.rstrip("/")


def _swagger_base(document: Mapping[str, Any], origin: str | None) -> str:
    parts = urlsplit(origin) if origin else None
    schemes = document.get("schemes") or [parts.scheme if parts else "https"]
    host = document.get("host") or (parts.netloc if parts else None)
    if not host:
        raise ConfigError("the Swagger document has no host: pass base_url=")
    return f"{schemes[0]}://{host}{document.get('basePath', '')}".rstrip("/")


# -- $ref resolution and schema cleanup -----------------------------------------------------------


class _Resolver:
    """Resolves local `$ref`s (`#/...`); a reference back into itself becomes `{}` (any value).

    What `schema` inlines for one operation is bounded (`_schema.MAX_INLINED_NODES` subschemas,
    `$ref`s nested `MAX_REF_DEPTH` deep): past that it raises `SchemaTooLarge`. `operation()`
    starts the next operation's count.
    """

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        self._count = 0

    def operation(self) -> None:
        """Start counting what the next operation's schemas inline."""
        self._count = 0

    def target(self, ref: str) -> Any:
        """What `ref` points at in the document; `None` (with a warning) when it resolves nowhere
        or into another document (not followed)."""
        found = resolve_pointer(self.document, ref)
        if found is None:
            warn(f'OpenAPI $ref "{ref}" cannot be resolved — treated as any value')
        return found

    def deref(self, node: Any) -> Any:
        """Follow `$ref`s at the top of `node` (parameters, request bodies, path items)."""
        seen: set[str] = set()
        while isinstance(node, Mapping) and isinstance(node.get("$ref"), str):
            ref = node["$ref"]
            if ref in seen:
                return {}
            seen.add(ref)
            node = self.target(ref)
            if node is None:
                return {}
        return node

    def schema(self, node: Any, active: frozenset[str] = frozenset()) -> Any:
        """A copy of a schema with every local `$ref` inlined and OpenAPI 3.0 quirks fixed."""
        if not isinstance(node, Mapping):
            return node
        self._count += 1
        ref = node.get("$ref")
        if isinstance(ref, str):
            if ref in active:
                return {}  # recursive schema: stop here rather than loop
            if self._count > MAX_INLINED_NODES or len(active) >= MAX_REF_DEPTH:
                raise SchemaTooLarge(ref)
            target = self.target(ref)
            if target is None:
                return {}
            resolved = self.schema(target, active | {ref})
            siblings = {k: v for k, v in node.items() if k != "$ref"}
            if siblings and isinstance(resolved, dict):
                resolved = {**resolved, **self.schema(siblings, active)}
            return resolved
        kept = {k: v for k, v in node.items() if k not in _DROPPED_KEYS}
        return _json_schema_quirks(map_subschemas(kept, lambda sub: self.schema(sub, active)))


def _json_schema_quirks(schema: dict[str, Any]) -> dict[str, Any]:
    """OpenAPI 3.0 spellings → JSON Schema: `nullable`, boolean `exclusiveMinimum/Maximum`."""
    if schema.pop("nullable", False) is True:
        kind = schema.get("type")
        if isinstance(kind, str):
            schema["type"] = [kind, "null"]
        if isinstance(schema.get("enum"), list) and None not in schema["enum"]:
            schema["enum"] = [*schema["enum"], None]
    for exclusive, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        flag = schema.get(exclusive)
        if isinstance(flag, bool):
            del schema[exclusive]
            if flag and bound in schema:
                schema[exclusive] = schema.pop(bound)
    return schema


# -- one operation → one tool ---------------------------------------------------------------------


def _operation_tool(
    name: str,
    method: str,
    path: str,
    item: Mapping[str, Any],
    operation: Mapping[str, Any],
    resolver: _Resolver,
    base: str,
    headers: Mapping[str, str] | None,
) -> Tool:
    properties: dict[str, Any] = {}
    required: list[str] = []
    query: list[str] = []
    body_mode = "json"
    json_body_arg: str | None = None
    form_fields = False

    for param in _parameters(item, operation, resolver):
        where, pname = param.get("in"), str(param.get("name", ""))
        if not pname or where in ("header", "cookie"):
            continue  # never shown to the model: the host supplies headers
        if where == "body":  # Swagger 2.0
            json_body_arg = _merge_body(
                resolver.schema(param.get("schema", {})),
                bool(param.get("required")),
                properties,
                required,
            )
            continue
        properties[pname] = _parameter_schema(param, resolver)
        if where == "path" or param.get("required"):
            required.append(pname)
        if where == "query":
            query.append(pname)
        elif where == "formData":  # Swagger 2.0
            form_fields = True
    if form_fields:
        body_mode = "form"

    request_body = resolver.deref(operation.get("requestBody"))
    if isinstance(request_body, Mapping):
        content = request_body.get("content") or {}
        media = _pick_media(content)
        body_required = bool(request_body.get("required"))
        if media is None:
            if content:
                warn(
                    f"OpenAPI operation {name}: request body type "
                    f"{', '.join(map(str, content))} is not supported — body not exposed"
                )
        else:
            kind, media_type = media
            body_schema = resolver.schema((content[media_type] or {}).get("schema", {}))
            if kind == "raw":
                body_mode = "raw"
                properties.setdefault("body", {"type": "string", "description": media_type})
                if body_required:
                    required.append("body")
            else:
                body_mode = kind
                json_body_arg = _merge_body(body_schema, body_required, properties, required)

    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(dict.fromkeys(required))
    endpoint = HttpEndpoint(
        method=method,
        url=UrlTemplate(base + path, _PATH_PARAM),
        headers=headers,
        query=query,
        body=body_mode,
        json_body_arg=json_body_arg,
    )
    return Tool(name, _description(operation), schema, "http", endpoint)


def _parameters(
    item: Mapping[str, Any], operation: Mapping[str, Any], resolver: _Resolver
) -> list[Mapping[str, Any]]:
    """Path-item parameters overridden by the operation's (same name and location)."""
    merged: dict[tuple[Any, Any], Mapping[str, Any]] = {}
    for raw in [*(item.get("parameters") or []), *(operation.get("parameters") or [])]:
        param = resolver.deref(raw)
        if isinstance(param, Mapping):
            merged[(param.get("name"), param.get("in"))] = param
    return list(merged.values())


def _parameter_schema(param: Mapping[str, Any], resolver: _Resolver) -> dict[str, Any]:
    if "schema" in param:
        schema = resolver.schema(param["schema"])
    elif isinstance(param.get("content"), Mapping) and param["content"]:
        first = next(iter(param["content"].values())) or {}
        schema = resolver.schema(first.get("schema", {}))
    else:  # Swagger 2.0 keeps the schema keywords on the parameter itself
        keep = ("type", "format", "items", "enum", "default", "minimum", "maximum", "pattern")
        schema = resolver.schema({k: param[k] for k in keep if k in param})
        if schema.get("type") == "file":
            schema["type"] = "string"
    schema = dict(schema) if isinstance(schema, Mapping) else {}
    if param.get("description") and "description" not in schema:
        schema["description"] = param["description"]
    return schema or {"type": "string"}


def _pick_media(content: Mapping[str, Any]) -> tuple[str, str] | None:
    """`(body mode, media type)` for the best request-body media type we can send."""
    types = [str(t) for t in content]
    for media_type in types:
        base = media_type.split(";")[0].strip().lower()
        if base == "application/json" or base.endswith("+json") or base == "*/*":
            return "json", media_type
    for media_type in types:
        if media_type.split(";")[0].strip().lower() == "application/x-www-form-urlencoded":
            return "form", media_type
    for media_type in types:
        if media_type.lower().startswith("text/"):
            return "raw", media_type
    return None


def _object_shape(schema: Any) -> tuple[dict[str, Any], list[str]] | None:
    """Properties and required names of an object schema (through `allOf`), else `None`."""
    if not isinstance(schema, Mapping):
        return None
    if "allOf" in schema:
        props: dict[str, Any] = {}
        required: list[str] = []
        for part in schema["allOf"]:
            shape = _object_shape(part)
            if shape is None:
                return None
            props.update(shape[0])
            required.extend(shape[1])
        own = _object_shape({k: v for k, v in schema.items() if k != "allOf"}) or ({}, [])
        props.update(own[0])
        required.extend(own[1])
        return props, required
    if "properties" in schema or schema.get("type") == "object":
        return dict(schema.get("properties") or {}), list(schema.get("required") or [])
    if not schema:
        return {}, []
    return None


def _merge_body(
    schema: Any, body_required: bool, properties: dict[str, Any], required: list[str]
) -> str | None:
    """Merge an object body's properties into the tool schema; else expose it as `body`.

    Returns the argument that carries a non-object body whole, or `None`.
    """
    shape = _object_shape(schema)
    if shape is None:
        properties.setdefault("body", schema)
        if body_required:
            required.append("body")
        return "body"
    props, body_required_names = shape
    for pname, pschema in props.items():
        if isinstance(pschema, Mapping) and pschema.get("readOnly") is True:
            continue  # server-assigned (e.g. `id`): never sent
        if pname in properties:
            continue  # a path/query parameter of the same name wins
        properties[pname] = pschema
        if pname in body_required_names:
            required.append(pname)
    return None


def _description(operation: Mapping[str, Any]) -> str:
    summary = str(operation.get("summary") or "").strip()
    detail = str(operation.get("description") or "").strip()
    if summary and detail and detail != summary:
        return f"{summary}\n\n{detail}"
    return summary or detail
