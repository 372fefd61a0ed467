"""An MCP server on the official SDK's lowlevel `Server` (both eras) whose resource
subscriptions and list changes a test can watch and cause, through tools:

- `held`: the URIs subscribed to here now (2025-11-25 `resources/subscribe`, and the URIs of
  the open 2026-07-28 `subscriptions/listen` streams), sorted, as JSON;
- `touch(uri)`: `notifications/resources/updated` to the sessions subscribed to `uri`, and the
  event to the listen streams naming it;
- `grow(what)`: one more tool, resource or prompt (`grown_<n>`), and the list-changed
  notification to every session seen and every listen stream asking for it.

`app(subscribe=...)` is the stateful streamable HTTP app (for a thread-run uvicorn); without
`subscribe` the server does not declare `resources.subscribe`. `prefix` names its URIs.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from mcp.server.lowlevel import Server
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ToolsListChanged,
)
from mcp_types import (
    CallToolResult,
    EmptyResult,
    GetPromptResult,
    ListPromptsResult,
    ListResourcesResult,
    ListToolsResult,
    Prompt,
    PromptMessage,
    ReadResourceResult,
    Resource,
    TextContent,
    TextResourceContents,
    Tool,
)

_OBJECT = {"type": "object"}


def build(*, subscribe: bool = True, prefix: str = "test://") -> Server[Any]:
    sessions: dict[Any, set[str]] = {}  # every 2025-11-25 connection seen ⇒ its subscriptions
    listening: Counter[str] = Counter()  # URIs of the open listen streams
    bus = InMemorySubscriptionBus()
    listen_handler = ListenHandler(bus)
    grown: dict[str, list[str]] = {"tools": [], "resources": [], "prompts": []}

    def seen(ctx: Any) -> set[str]:
        connection = ctx.session._connection
        return sessions.setdefault(connection, set())

    async def list_tools(ctx: Any, params: Any) -> ListToolsResult:
        seen(ctx)
        names = ["held", "touch", "grow", *grown["tools"]]
        return ListToolsResult(tools=[Tool(name=n, input_schema=_OBJECT) for n in names])

    async def call_tool(ctx: Any, params: Any) -> CallToolResult:
        seen(ctx)
        args = params.arguments or {}
        text = "done"
        if params.name == "held":
            held = set().union(*sessions.values()) | {u for u, n in listening.items() if n}
            text = json.dumps(sorted(held))
        elif params.name == "touch":
            uri = str(args["uri"])
            for connection, uris in list(sessions.items()):
                if uri in uris:
                    await connection.send_resource_updated(uri)
            await bus.publish(ResourceUpdated(uri=uri))
        elif params.name == "grow":
            what = str(args["what"])
            grown[what].append(f"grown_{len(grown[what]) + 1}")
            send = {
                "tools": ("send_tool_list_changed", ToolsListChanged()),
                "resources": ("send_resource_list_changed", ResourcesListChanged()),
                "prompts": ("send_prompt_list_changed", PromptsListChanged()),
            }[what]
            for connection in list(sessions):
                await getattr(connection, send[0])()
            await bus.publish(send[1])
        return CallToolResult(content=[TextContent(text=text)])

    def uris() -> list[str]:
        return [f"{prefix}watched", f"{prefix}other", *(prefix + g for g in grown["resources"])]

    async def list_resources(ctx: Any, params: Any) -> ListResourcesResult:
        seen(ctx)
        return ListResourcesResult(resources=[Resource(uri=u, name=u) for u in uris()])

    async def read_resource(ctx: Any, params: Any) -> ReadResourceResult:
        uri = str(params.uri)
        return ReadResourceResult(contents=[TextResourceContents(uri=uri, text=f"of {uri}")])

    async def on_subscribe(ctx: Any, params: Any) -> EmptyResult:
        seen(ctx).add(str(params.uri))
        return EmptyResult()

    async def on_unsubscribe(ctx: Any, params: Any) -> EmptyResult:
        seen(ctx).discard(str(params.uri))
        return EmptyResult()

    async def listen(ctx: Any, params: Any) -> Any:
        named = list(params.notifications.resource_subscriptions or ())
        listening.update(named)
        try:
            return await listen_handler(ctx, params)
        finally:
            listening.subtract(named)

    async def list_prompts(ctx: Any, params: Any) -> ListPromptsResult:
        seen(ctx)
        return ListPromptsResult(prompts=[Prompt(name=n) for n in ["greet", *grown["prompts"]]])

    async def get_prompt(ctx: Any, params: Any) -> GetPromptResult:
        message = PromptMessage(role="user", content=TextContent(text=f"{params.name} says hi"))
        return GetPromptResult(messages=[message])

    handlers: dict[str, Any] = {}
    if subscribe:
        handlers = {
            "on_subscribe_resource": on_subscribe,
            "on_unsubscribe_resource": on_unsubscribe,
            "on_subscriptions_listen": listen,
        }
    return Server(
        "watched",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        **handlers,
    )


def app(*, subscribe: bool = True, prefix: str = "test://") -> Any:
    return build(subscribe=subscribe, prefix=prefix).streamable_http_app()
