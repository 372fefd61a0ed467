"""Test doubles for code that uses a `Client`: models that answer from a script or a function.

A `ScriptedModel` is given turns (`text(...)`, `tools(tool_call(...))`, `refusal(...)`,
`error(...)`, each with an optional `delay`) and answers each request with the next one,
rendered in the wire style of the client that asked (OpenAI chat completions, Anthropic
messages or OpenAI responses), whole or streamed chunk by chunk as server-sent events. Nothing
leaves the process. A `FunctionModel` computes each turn from the request instead.
`override(client, model)` points an existing client at a model for the duration of a `with`
block, so host code needs no change::

    model = ScriptedModel(tools(tool_call("add", {"a": 1, "b": 2})), text("3"))
    with override(client, model):
        result = await client.run("1+2?", toolkit)
    assert model.requests[0].tool_names == ["add"]
"""

from toolnexus.testing._models import (
    FunctionModel,
    ScriptedCall,
    ScriptedModel,
    ScriptedTurn,
    SeenRequest,
    error,
    override,
    refusal,
    text,
    tool_call,
    tools,
)

__all__ = [
    "FunctionModel",
    "ScriptedCall",
    "ScriptedModel",
    "ScriptedTurn",
    "SeenRequest",
    "error",
    "override",
    "refusal",
    "text",
    "tool_call",
    "tools",
]
