"""One tool call by name: lookup, argument check, the owner's HTTP clients, failures as results.

`Toolkit.execute` and the servers' private tool lists both call through here, so a call is
checked and mapped the same way wherever it comes from.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from toolnexus import _otel
from toolnexus._http import HttpClients, call_owner
from toolnexus._log import tool_raised
from toolnexus._secrets import redact
from toolnexus._validation import check_arguments
from toolnexus.types import Tool, ToolContext, ToolResult, error_message

__all__ = ["dispatch"]


async def dispatch(
    by_name: Mapping[str, Tool],
    name: str,
    args: dict[str, Any] | None,
    ctx: ToolContext | None,
    http: HttpClients | None,
) -> ToolResult:
    """Run the tool `name` of `by_name`; every failure (unknown tool, bad arguments, a raise)
    is a result, traced as one tool execution. `http` is the clients the tool's HTTP requests
    use (`None`: the process-wide ones)."""
    tool = by_name.get(name)
    with _otel.tool_call(name, tool) as traced:
        if tool is None:
            available = ", ".join(by_name) or "none"
            result = ToolResult(f"Unknown tool: {name}. Available tools: {available}", True)
        elif args is not None and not isinstance(args, dict):
            result = ToolResult(
                f"Invalid arguments for tool {name}: expected a JSON object, "
                f"got {type(args).__name__}",
                True,
            )
        else:
            args, problems = check_arguments(tool, {} if args is None else args)
            if problems is not None:
                result = ToolResult(problems, True)
            else:
                owner = call_owner.set(http)
                try:
                    result = await tool.execute(args, ctx)
                except asyncio.CancelledError:
                    raise
                # An `execute` override that raised (`Tool.execute` itself never does).
                except Exception as exc:
                    tool_raised(name, exc)
                    result = ToolResult(redact(error_message(exc)), True)
                finally:
                    call_owner.reset(owner)
                # A server or endpoint that echoes a credential back never hands it to the model.
                if isinstance(result.output, str):
                    result.output = redact(result.output)
        traced.result(result)
    return result
