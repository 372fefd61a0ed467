"""A Python function's argument model: its JSON Schema and the per-call path.

The function's parameters become a pydantic-validated argument model built once, when the tool
is defined (or, for plain signatures, on first use); the same model yields the JSON Schema the
model sees and checks every call's arguments (pydantic's lax mode, so `"2"` for an `int` is
accepted). Each call then costs one validation and the function call itself.
"""

from __future__ import annotations

import enum
import functools
import inspect
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, NotRequired, Required

from toolnexus._aio import is_async_callable, run_in_thread
from toolnexus._docstrings import parse_docstring
from toolnexus._schema import inline_refs, map_subschemas, null_stripper
from toolnexus._typing_compat import for_pydantic, globals_of, resolve_annotation, typed_dict
from toolnexus._validation import format_errors
from toolnexus.errors import ConfigTypeError
from toolnexus.types import Tool, ToolContext, ToolResult

# pydantic is imported when the first function-form tool is defined, so the explicit form
# (`execute=`) and `import toolnexus` never pay for it.

_CONTEXT_NAMES = ("ctx", "context")
_SKIPPED_NAMES = ("self", "cls")

AnyCallable = Callable[..., Any]


def callable_name(fn: Any) -> str | None:
    """The name a callable gives its tool; `None` when it has no usable one (a lambda)."""
    target = fn.func if isinstance(fn, functools.partial) else fn
    name = getattr(target, "__name__", None)
    if name is None and not inspect.isroutine(target):
        name = type(target).__name__
    if not isinstance(name, str) or not name.isidentifier():
        return None  # e.g. "<lambda>"
    return name


def _is_context_name(annotation: str) -> bool:
    """An unresolved annotation naming the context: `Context`, `ToolContext[Deps]`, ..."""
    return annotation.split("[", 1)[0].strip() in ("Context", "ToolContext")


def _is_context_type(annotation: Any) -> bool:
    if annotation is ToolContext:
        return True
    origin = typing.get_origin(annotation)
    if origin is ToolContext:  # `Context[MyDeps]`
        return True
    if origin is typing.Annotated:
        return _is_context_type(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        return len(members) == 1 and _is_context_type(members[0])
    return False


def _with_description(annotation: Any, text: str) -> Any:
    """`Annotated[annotation, Field(description=text)]`, the user's own metadata still winning."""
    from pydantic import Field

    doc_field = Field(description=text)
    if typing.get_origin(annotation) is typing.Annotated:
        inner, *metadata = typing.get_args(annotation)
        return typing.Annotated[(inner, doc_field, *metadata)]  # type: ignore[valid-type]
    return typing.Annotated[annotation, doc_field]


def _clean_schema(node: Any) -> Any:
    """Drop pydantic's generated `title`s; spell a single-value `const` as a one-value enum."""
    if not isinstance(node, dict):
        return node
    out = map_subschemas(node, _clean_schema)
    out.pop("title", None)
    if "const" in out and "enum" not in out:
        out["enum"] = [out.pop("const")]
    return out


def _inline_nonrecursive(schema: dict[str, Any]) -> dict[str, Any]:
    """Inline every `$ref`; only recursive definitions stay under `$defs`."""
    if "$defs" not in schema:
        return schema
    kept: dict[str, str] = {}  # ref -> definition name

    def keep(ref: str) -> dict[str, Any]:
        kept.setdefault(ref, ref.rsplit("/", 1)[-1])
        return {"$ref": ref}

    def missing(ref: str) -> dict[str, Any]:
        return {"$ref": ref}

    out = inline_refs(schema, keep, missing)
    if kept:
        defs: dict[str, Any] = {}
        done: set[str] = set()
        while len(done) < len(kept):
            for ref, def_name in list(kept.items()):
                if ref in done:
                    continue
                done.add(ref)
                body = schema["$defs"][def_name]
                root = {**body, "$defs": schema["$defs"]}
                defs[def_name] = inline_refs(root, keep, missing, expanding=(ref,))
        out["$defs"] = defs
    return out


class _Param:
    __slots__ = ("annotation", "default", "kind", "name")

    def __init__(self, name: str, annotation: Any, default: Any, kind: Any) -> None:
        self.name = name
        self.annotation = annotation
        self.default = default
        self.kind = kind


def function_tool(
    fn: AnyCallable,
    name: str | None,
    description: str | None,
    input_schema: dict[str, Any] | None,
    localns: dict[str, Any] | None,
) -> Tool:
    """`define_tool`'s function form: `fn` as a tool, its schema from its hints (or
    `input_schema`), `localns` the defining frame's locals (`caller_locals`)."""
    if isinstance(fn, Tool):
        raise ConfigTypeError(f"define_tool() got a Tool ({fn.name!r}); it is a tool already")
    if not callable(fn):
        raise ConfigTypeError(f"define_tool() needs a callable, not {type(fn).__name__}")
    tool_name = name or callable_name(fn)
    if tool_name is None:
        raise ConfigTypeError(f"define_tool({fn!r}) cannot name this callable; pass name=")
    label = f"define_tool({tool_name})"
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise ConfigTypeError(
            f"{label}: cannot inspect the signature ({exc}); pass input_schema= explicitly"
        ) from None
    doc = parse_docstring(inspect.getdoc(fn))
    tool_description = description if description is not None else doc.description
    is_async = is_async_callable(fn)
    if input_schema is not None:
        # The host's schema is the contract: the toolkit validates against it (jsonschema), and
        # the function receives the arguments as they came, by keyword.
        return Tool(
            tool_name,
            tool_description,
            input_schema,
            "native",
            _call_with_keywords(fn, signature, is_async),
        )

    globalns = globals_of(fn)
    params: list[_Param] = []
    context_param: str | None = None
    named_context: str | None = None
    accepts_extra = False
    for p in signature.parameters.values():
        if p.kind is p.VAR_POSITIONAL:
            continue
        if p.kind is p.VAR_KEYWORD:
            accepts_extra = True
            continue
        if p.name in _SKIPPED_NAMES and not params and p.default is p.empty:
            continue
        annotation: Any = Any
        if p.annotation is not p.empty:
            where = f'{label}: parameter "{p.name}"'
            annotation = for_pydantic(resolve_annotation(p.annotation, where, globalns, localns))
        if _is_context_type(annotation):
            if context_param is not None:
                raise ConfigTypeError(
                    f'{label}: parameters "{context_param}" and "{p.name}" are both typed '
                    "Context; a tool takes at most one context parameter"
                )
            context_param = p.name
            continue
        if named_context is None and p.name in _CONTEXT_NAMES and annotation is Any:
            named_context = p.name
        params.append(_Param(p.name, annotation, p.default, p.kind))
    if context_param is None and named_context is not None:
        context_param = named_context
        params = [p for p in params if p.name != named_context]

    passed = {p.name for p in params} | {context_param}
    positional = tuple(
        (p.name, p.default)
        for p in signature.parameters.values()
        if p.kind is p.POSITIONAL_ONLY and p.name in passed
    )

    def build() -> tuple[dict[str, Any], Callable[[dict[str, Any], ToolContext], Any]]:
        schema, validate = _argument_model(params, doc.params, accepts_extra, label)
        call = _make_call(
            fn, params, positional, context_param, is_async, validate, schema, tool_name
        )
        return schema, call

    if all(_surely_describable(p.annotation) for p in params):
        schema = _plain_schema(params, doc.params, accepts_extra)
        return _DeferredTool(tool_name, tool_description, build, schema)
    # An annotation pydantic may refuse: build now, so `define_tool` names the parameter.
    schema, call = build()
    return Tool(tool_name, tool_description, schema, "native", call, self_validating=True)


_PLAIN_TYPES: frozenset[Any] = frozenset({Any, str, int, float, bool, bytes, type(None)})
# The JSON Schema pydantic gives each of these (after `_clean_schema`), for `_plain_schema`.
_PLAIN_SCHEMAS: dict[Any, dict[str, str]] = {
    Any: {},
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
}
_PLAIN_DEFAULTS = (str, int, float, bool, type(None))


def _plain_schema(
    params: list[_Param], param_docs: Mapping[str, str], accepts_extra: bool
) -> dict[str, Any] | None:
    """The schema `_argument_model` would give a signature of plain parameters (`str`, `int`,
    `float`, `bool`, unannotated), without building the model; `None` for any other."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    for p in params:
        plain = _PLAIN_SCHEMAS.get(p.annotation) if p.annotation in _PLAIN_TYPES else None
        if plain is None or accepts_extra:
            return None
        node: dict[str, Any] = {}
        text = param_docs.get(p.name)
        if text:
            node["description"] = text
        node.update(plain)
        if p.default is inspect.Parameter.empty:
            required.append(p.name)
        else:
            default = p.default
            if type(default) not in _PLAIN_DEFAULTS or default != default:
                return None  # (NaN and other defaults: as pydantic shows them)
            if isinstance(default, float) and default in (float("inf"), float("-inf")):
                return None
            node["default"] = default
        properties[p.name] = node
    out: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        out["required"] = required
    out["additionalProperties"] = False
    return out


_CONTAINERS: frozenset[Any] = frozenset(
    {list, tuple, set, frozenset, dict, typing.Union, types.UnionType, typing.Literal}
)


def _surely_describable(annotation: Any) -> bool:
    """Whether pydantic certainly describes `annotation` (plain values, enums, containers)."""
    if annotation in _PLAIN_TYPES:
        return True
    origin = typing.get_origin(annotation)
    if origin is None:
        return isinstance(annotation, type) and issubclass(annotation, enum.Enum)
    if origin is typing.Literal:
        return True
    if origin is typing.Annotated:
        return _surely_describable(typing.get_args(annotation)[0])
    return origin in _CONTAINERS and all(
        arg is Ellipsis or _surely_describable(arg) for arg in typing.get_args(annotation)
    )


_Build = Callable[[], tuple[dict[str, Any], Callable[[dict[str, Any], ToolContext], Any]]]

# Where `Tool` keeps its schema (a slot), for the deferred tool's property to read and write.
_SCHEMA_SLOT: Any = Tool.__dict__["input_schema"]


class _DeferredTool(Tool):
    """A native tool whose argument model (validator, and schema unless plain) is built on
    first use.

    Building the pydantic model of a signature is most of what `define_tool` would cost; a
    program defining thousands of tools pays for the ones it calls (and, for signatures that
    are not plain, the ones whose schema it reads).
    """

    __slots__ = ("_build", "_schema_known")

    def __init__(self, name: str, description: str, build: _Build, schema: dict[str, Any] | None):
        self._build: _Build | None = build
        # Known up front for plain signatures; else built with the model on first read.
        self._schema_known = schema is not None
        super().__init__(
            name, description, schema, "native", self._first_call, self_validating=True
        )

    @property  # type: ignore[override]
    def input_schema(self) -> dict[str, Any]:
        if not self._schema_known:
            self._materialize()
        schema: dict[str, Any] = _SCHEMA_SLOT.__get__(self, Tool)
        return schema

    @input_schema.setter
    def input_schema(self, value: dict[str, Any]) -> None:
        _SCHEMA_SLOT.__set__(self, value)

    def _materialize(self) -> None:
        if self._build is None:
            return
        schema, call = self._build()  # a failure leaves the tool unbuilt: the next use retries
        self._build = None
        if not self._schema_known:
            _SCHEMA_SLOT.__set__(self, schema)
            self._schema_known = True
        self._execute = call
        self._is_async = True  # `_make_call` makes coroutine functions

    async def _first_call(self, args: dict[str, Any], ctx: ToolContext) -> Any:
        if self._build is not None:
            self._materialize()
        return await self._execute(args, ctx)


def _argument_model(
    params: list[_Param],
    param_docs: Mapping[str, str],
    accepts_extra: bool,
    label: str,
) -> tuple[dict[str, Any], Callable[[Any], dict[str, Any]]]:
    """The JSON Schema and the validator of the arguments, from one pydantic TypedDict."""
    from pydantic import ConfigDict, PydanticUserError, TypeAdapter
    from pydantic_core import to_jsonable_python

    fields: dict[str, Any] = {}
    for p in params:
        annotation = p.annotation
        text = param_docs.get(p.name)
        if text:
            annotation = _with_description(annotation, text)
        must = p.default is inspect.Parameter.empty
        fields[p.name] = Required[annotation] if must else NotRequired[annotation]
    model = typed_dict("Arguments", fields)
    model.__pydantic_config__ = ConfigDict(extra="allow" if accepts_extra else "forbid")
    try:
        adapter: TypeAdapter[Any] = TypeAdapter(model)
        raw = adapter.json_schema()
    except (PydanticUserError, TypeError, ValueError, NameError) as exc:
        raise _which_parameter(params, label, exc) from None

    schema = _inline_nonrecursive(_clean_schema(raw))
    properties: dict[str, Any] = schema.get("properties", {})
    for p in params:
        if p.default is inspect.Parameter.empty or p.name not in properties:
            continue
        try:
            default = to_jsonable_python(p.default)
        except Exception:  # a default JSON cannot show is simply not advertised
            continue
        properties[p.name] = {**properties[p.name], "default": default}
    out: dict[str, Any] = {"type": "object", "properties": properties}
    required = [p.name for p in params if p.default is inspect.Parameter.empty]
    if required:
        out["required"] = required
    if not accepts_extra:
        out["additionalProperties"] = False
    if "$defs" in schema:
        out["$defs"] = schema["$defs"]
    validate: Callable[[Any], dict[str, Any]] = adapter.validator.validate_python
    return out, validate


def _which_parameter(params: list[_Param], label: str, exc: Exception) -> TypeError:
    """Turn a failure to build the argument model into an error naming the parameter."""
    from pydantic import TypeAdapter

    for p in params:
        try:
            TypeAdapter(p.annotation).json_schema()
        except Exception as inner:
            reason = str(inner).splitlines()[0] if str(inner) else type(inner).__name__
            return TypeError(
                f'{label}: parameter "{p.name}" has an annotation pydantic cannot turn into a '
                f"JSON Schema ({reason}); pass input_schema= explicitly"
            )
    reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return TypeError(f"{label}: cannot build the argument model ({reason})")


def _make_call(
    fn: AnyCallable,
    params: list[_Param],
    positional: tuple[tuple[str, Any], ...],
    context_param: str | None,
    is_async: bool,
    validate: Callable[[Any], dict[str, Any]],
    schema: dict[str, Any],
    tool_name: str,
) -> Callable[[dict[str, Any], ToolContext], Any]:
    """The per-call path: validate, add the context, call. Everything else is precomputed."""
    from pydantic import ValidationError

    # Under OpenAI strict mode an omitted optional argument arrives as `null`: drop those
    # (at any depth) before validation, so the function sees its own default.
    strip_nulls = null_stripper(schema)
    known = ", ".join(p.name for p in params) or "none"

    def arguments(args: Any, ctx: ToolContext) -> tuple[list[Any], dict[str, Any]] | ToolResult:
        if strip_nulls is not None:
            args = strip_nulls(args)
        try:
            values = validate(args)
        except ValidationError as exc:
            return ToolResult(format_errors(tool_name, exc, args, known), True)
        if context_param is not None:
            values[context_param] = ctx
        if positional:
            return [values.pop(n, d) for n, d in positional], values
        return [], values

    if is_async:

        async def run_async(args: dict[str, Any], ctx: ToolContext) -> Any:
            prepared = arguments(args, ctx)
            if isinstance(prepared, ToolResult):
                return prepared
            return await fn(*prepared[0], **prepared[1])

        return run_async

    async def run_sync(args: dict[str, Any], ctx: ToolContext) -> Any:
        prepared = arguments(args, ctx)
        if isinstance(prepared, ToolResult):
            return prepared
        return await run_in_thread(fn, *prepared[0], **prepared[1])

    return run_sync


def _call_with_keywords(
    fn: AnyCallable, signature: inspect.Signature, is_async: bool
) -> Callable[[dict[str, Any], ToolContext], Any]:
    """With an explicit `input_schema`: `fn(**args)`, plus the context parameter if any."""
    context_param = next(
        (
            p.name
            for p in signature.parameters.values()
            if p.name in _CONTEXT_NAMES
            or (
                p.annotation is not p.empty
                and (
                    _is_context_type(p.annotation)
                    or (isinstance(p.annotation, str) and _is_context_name(p.annotation))
                )
            )
        ),
        None,
    )

    def keywords(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        return {**args, context_param: ctx} if context_param is not None else args

    if is_async:

        async def run_async(args: dict[str, Any], ctx: ToolContext) -> Any:
            return await fn(**keywords(args, ctx))

        return run_async

    def run_sync(args: dict[str, Any], ctx: ToolContext) -> Any:
        return fn(**keywords(args, ctx))

    return run_sync
