"""Python functions as tools: `define_tool` / `tool`, schema inferred from type hints.

The function form's argument model, schema and per-call path are built in `_function_schema`;
the explicit form (`execute=`) is here.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, overload

from toolnexus._function_schema import AnyCallable, callable_name, function_tool
from toolnexus._typing_compat import caller_locals
from toolnexus.errors import ConfigTypeError
from toolnexus.types import Tool, ToolContext

__all__ = ["define_tool", "tool"]

_EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


# -- public API ---------------------------------------------------------------------------------


@overload
def define_tool(
    fn: AnyCallable,
    *,
    name: str | None = None,
    description: str | None = None,
    input_schema: dict[str, Any] | None = None,
    source: str = "native",
    defer_loading: bool = False,
) -> Tool: ...


@overload
def define_tool(
    fn: None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    input_schema: dict[str, Any] | None = None,
    source: str = "native",
    defer_loading: bool = False,
    execute: AnyCallable,
) -> Tool: ...


@overload
def define_tool(
    fn: None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    input_schema: dict[str, Any] | None = None,
    source: str = "native",
    defer_loading: bool = False,
) -> Callable[[AnyCallable], Tool]: ...


def define_tool(
    fn: AnyCallable | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    input_schema: dict[str, Any] | None = None,
    source: str = "native",
    defer_loading: bool = False,
    execute: AnyCallable | None = None,
) -> Tool | Callable[[AnyCallable], Tool]:
    """Make a `Tool` (`source="native"`) from a Python callable.

    - `define_tool(fn)`, `@define_tool`, `@define_tool(name=...)`: the function form. The schema
      is inferred from the type hints, the description and parameter texts from the docstring;
      arguments are validated before the call. A parameter annotated `Context`, or named `ctx`
      or `context`, receives the call's context.
    - `define_tool(name=..., description=..., input_schema=..., execute=fn)`: the explicit form;
      `fn(args: dict, ctx)` gets the raw arguments.

    `fn` may be sync (run in a worker thread) or async. It returns a `str` (the output), a
    `ToolResult` (passed through) or any other value (sent as compact JSON). An exception
    becomes an `is_error` result carrying its message. `source` is the tool's `source` label
    (a host wrapping another kind of tool as a function may set it). `defer_loading=True`
    makes a deferred tool: found by tool search, not declared up front (docs/tools-search.md).
    """
    if not isinstance(source, str) or not source:
        raise ConfigTypeError(f"define_tool(source=...) must be a non-empty string, not {source!r}")
    if execute is not None:
        if fn is not None:
            raise ConfigTypeError("define_tool() takes either a function or execute=, not both")
        made = _explicit_tool(execute, name, description, input_schema)
        return _labelled(made, source, defer_loading)
    if fn is None:

        def decorate(func: AnyCallable) -> Tool:
            made = function_tool(func, name, description, input_schema, caller_locals())
            return _labelled(made, source, defer_loading)

        return decorate
    made = function_tool(fn, name, description, input_schema, caller_locals())
    return _labelled(made, source, defer_loading)


def _labelled(made: Tool, source: str, defer_loading: bool) -> Tool:
    if not isinstance(defer_loading, bool):
        raise ConfigTypeError(
            f"define_tool(defer_loading=...) must be a bool, not {defer_loading!r}"
        )
    made.source = source
    made.defer_loading = defer_loading
    return made


tool = define_tool


# -- explicit form ------------------------------------------------------------------------------


def _explicit_tool(
    execute: AnyCallable,
    name: str | None,
    description: str | None,
    input_schema: dict[str, Any] | None,
) -> Tool:
    if not callable(execute):
        raise ConfigTypeError(
            f"define_tool(execute=...) needs a callable, not {type(execute).__name__}"
        )
    tool_name = name or callable_name(execute)
    if tool_name is None:
        raise ConfigTypeError("define_tool(execute=...) needs name=")
    if _positional_arity(execute) == 1:
        # `execute(args)` without a context parameter: adapt it to `(args, ctx)`.
        one = execute
        if inspect.iscoroutinefunction(one):

            async def run_async(args: dict[str, Any], ctx: ToolContext) -> Any:
                return await one(args)

            execute = run_async
        else:

            def run_sync(args: dict[str, Any], ctx: ToolContext) -> Any:
                return one(args)

            execute = run_sync
    schema = input_schema if input_schema is not None else dict(_EMPTY_SCHEMA, properties={})
    return Tool(tool_name, description or "", schema, "native", execute)


def _positional_arity(fn: AnyCallable) -> int | None:
    """How many positional arguments `fn` takes (`None`: unknown or unbounded)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    count = 0
    for p in params:
        if p.kind is p.VAR_POSITIONAL:
            return None
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            count += 1
    return count
