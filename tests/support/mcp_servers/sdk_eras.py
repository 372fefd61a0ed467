"""An MCP server written with the official SDK, speaking either protocol era or both.

Run it as a script::

    python sdk_eras.py                         # stdio, both eras (the SDK's own era routing)
    python sdk_eras.py --era legacy            # stdio, 2025-11-25 only (handshake loop)
    python sdk_eras.py --era modern            # stdio, 2026-07-28 only (initialize ⇒ -32022)
    python sdk_eras.py --refuse-calls 1        # stdio, dual; the first tools/call ⇒ -32022
    python sdk_eras.py --http 0 [--era ...]    # streamable HTTP on 127.0.0.1, first line PORT <n>

HTTP options: `--json` (JSON answers; default SSE), `--stateless` (default stateful),
`--state-key K` (seal request state with a shared key, for replicas), `--name NAME`. Either
transport: `--instructions TEXT`, or `--instructions-file PATH` (read when the server starts).

Legacy over HTTP is an ASGI filter that answers `server/discover` and 2026-07-28 requests with
404; modern over HTTP answers `initialize` with -32022 naming only 2026-07-28.

`app(*argv)` builds the HTTP app in-process (for a thread-run uvicorn); `build()` the server;
`switchable(*argv)` the dual-era app behind an `EraSwitch` that changes, while it runs, which
versions it accepts (-32022 for the rest).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import socket
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resolve import Elicit, ListRoots, Resolve, Sample
from mcp.server.request_state import RequestStateSecurity
from mcp.shared.exceptions import MCPError, UrlElicitationRequiredError
from mcp_types import (
    AudioContent,
    CallToolResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitRequestURLParams,
    EmbeddedResource,
    Icon,
    ImageContent,
    InputRequiredResult,
    ListRootsResult,
    ResourceLink,
    SamplingMessage,
    TextContent,
    TextResourceContents,
    ToolAnnotations,
)
from pydantic import BaseModel, Field

IMAGE_BYTES = bytes(range(256)) * 4  # 1024 bytes
AUDIO_BYTES = b"RIFF" + b"\x02" * 60  # 64 bytes
INSTRUCTIONS = "  Call echo first.\nThen the rest.  "
SUN_ICON = "data:image/svg+xml;base64,PHN2Zy8+"
Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Any, Any], Awaitable[None]]


class Name(BaseModel):
    name: str


class Colour(BaseModel):
    colour: str


class Weather(BaseModel):
    city: str
    degrees: int


def ask_name() -> Elicit[Name]:
    return Elicit("What is your name?", Name)


def ask_colour() -> Elicit[Colour]:
    return Elicit("Favourite colour?", Colour)


def roots() -> ListRoots:
    return ListRoots()


def sample() -> Sample:
    return Sample([SamplingMessage(role="user", content=TextContent(text="hi"))], max_tokens=5)


def build(
    name: str = "eras", state_key: str | None = None, instructions: str = INSTRUCTIONS
) -> MCPServer:
    security = RequestStateSecurity(keys=[state_key]) if state_key else None
    mcp: MCPServer = MCPServer(
        name,
        version="1.2.3",
        instructions=instructions,
        log_level="WARNING",
        request_state_security=security,
    )
    url_calls: dict[str, int] = {}

    @mcp.tool(structured_output=False, description="Echo the text back.")
    def echo(text: str) -> str:
        return text

    @mcp.tool(structured_output=False, description="This process's id.")
    def pid() -> str:
        return str(os.getpid())

    @mcp.tool(description="Greet someone after asking their name.")
    def greet(who: Annotated[Name, Resolve(ask_name)], greeting: str = "Hello") -> str:
        return f"{greeting}, {who.name}!"

    @mcp.tool(description="Two questions in one round.")
    def profile(
        who: Annotated[Name, Resolve(ask_name)], colour: Annotated[Colour, Resolve(ask_colour)]
    ) -> str:
        return f"{who.name} likes {colour.colour}"

    @mcp.tool(description="Ask the client to visit a URL (URL-mode input request).")
    async def visit(ctx: Context, topic: str = "x") -> CallToolResult | InputRequiredResult:
        version = ctx.protocol_version or ""
        if version >= "2026-07-28":
            if ctx.input_responses and "visit" in ctx.input_responses:
                answer = ctx.input_responses["visit"]
                action = getattr(answer, "action", None)
                return CallToolResult(content=[TextContent(text=f"visited: {action}")])
            return InputRequiredResult(
                input_requests={
                    "visit": ElicitRequest(
                        params=ElicitRequestURLParams(
                            message="Please sign in",
                            url="https://example.test/login",
                            elicitation_id="el-visit-1",
                        )
                    )
                },
                request_state=None,
            )
        result = await ctx.elicit_url("Please sign in", "https://example.test/login", "el-visit-1")
        await ctx.session.send_elicit_complete("el-visit-1", related_request_id=ctx.request_id)
        return CallToolResult(content=[TextContent(text=f"visited: {result.action}")])

    @mcp.tool(description="Ask the same question on every round, forever (2026-07-28).")
    def nag() -> InputRequiredResult:
        form = ElicitRequestFormParams(
            message="Again?",
            requested_schema={"type": "object", "properties": {"answer": {"type": "string"}}},
        )
        return InputRequiredResult(input_requests={"again": ElicitRequest(params=form)})

    @mcp.tool(description="Show the client's roots.")
    def show_roots(found: Annotated[ListRootsResult, Resolve(roots)]) -> str:
        return "\n".join(str(r.uri) for r in found.roots) or "(none)"

    @mcp.tool(structured_output=False, description="The capabilities the client declared.")
    def client_capabilities(ctx: Context) -> str:
        declared = ctx.client_capabilities
        wire = (
            declared.model_dump(by_alias=True, mode="json", exclude_none=True) if declared else {}
        )
        return json.dumps(wire, sort_keys=True)

    @mcp.tool(description="Sample the client's model.")
    def sampled(answer: Annotated[Any, Resolve(sample)]) -> str:
        return str(answer)

    @mcp.tool(description="Needs a URL elicitation completed first (-32042).")
    def guarded(key: str = "k") -> str:
        url_calls[key] = url_calls.get(key, 0) + 1
        if url_calls[key] == 1:
            raise UrlElicitationRequiredError(
                [
                    ElicitRequestURLParams(
                        message="Authorize the file store",
                        url="https://example.test/authorize",
                        elicitation_id=f"el-{key}",
                    )
                ]
            )
        return f"guarded ok {key}"

    @mcp.tool(description="Report progress every `every` seconds for `seconds` seconds.")
    async def progress(ctx: Context, seconds: float = 1.0, every: float = 0.3) -> str:
        loop = asyncio.get_running_loop()
        end = loop.time() + seconds
        step = 0
        while loop.time() < end:
            await asyncio.sleep(every)
            step += 1
            await ctx.report_progress(step, None, f"step {step}")
        return f"done after {step} steps"

    @mcp.tool(description="Sleep silently.")
    async def silent(seconds: float = 1.0) -> str:
        await asyncio.sleep(seconds)
        return "woke"

    @mcp.tool(description="Log at warning and info, then answer.")
    async def chatty(ctx: Context) -> str:
        await ctx.warning("disk almost full", logger_name="disk")
        await ctx.info("all good")
        return "logged"

    async def fragile_call(ctx: Context, marker: str, how: str) -> str:
        with open(marker, "a") as fh:
            fh.write("call\n")
        with open(marker) as fh:
            count = len(fh.readlines())
        if count == 1:  # the first call never answers: the process dies, or it hangs
            if how == "exit":
                os._exit(3)
            await ctx.report_progress(0, None, "holding")
            await asyncio.sleep(60)
        return f"answered on call {count}"

    @mcp.tool(
        description="Count calls in `marker`; the first dies (`how=exit`) or hangs (`hang`).",
        annotations=ToolAnnotations(readOnlyHint=True),
    )
    async def fragile_read(ctx: Context, marker: str, how: str = "exit") -> str:
        return await fragile_call(ctx, marker, how)

    @mcp.tool(
        description="`fragile_read` annotated idempotent instead of read-only.",
        annotations=ToolAnnotations(idempotentHint=True),
    )
    async def fragile_idempotent(ctx: Context, marker: str, how: str = "exit") -> str:
        return await fragile_call(ctx, marker, how)

    @mcp.tool(description="`fragile_read` without annotations: not safe to repeat.")
    async def fragile(ctx: Context, marker: str, how: str = "exit") -> str:
        return await fragile_call(ctx, marker, how)

    @mcp.tool(description="Log one message at each of the levels above info, in odd shapes.")
    async def log_shapes(ctx: Context) -> str:
        await ctx.log("notice", "noted")
        await ctx.log("error", {"code": 7, "ok": True}, logger_name="db")
        await ctx.log("critical", "x" * 2500)
        await ctx.log("alert", "alerted")
        await ctx.log("emergency", "stop")
        return "shaped"

    @mcp.tool(description="Log `count` warnings as fast as possible, then answer.")
    async def flood(ctx: Context, count: int = 250) -> str:
        for i in range(count):
            await ctx.warning(f"flood {i}")
        return f"flooded {count}"

    @mcp.tool(structured_output=False, description="Text and structured content.")
    def both() -> CallToolResult:
        return CallToolResult(
            content=[TextContent(text="human readable summary")],
            structured_content={"summary": "machine", "n": 2},
        )

    @mcp.tool(structured_output=False, description="Structured content only.")
    def structured_only() -> CallToolResult:
        return CallToolResult(content=[], structured_content={"result": 5})

    @mcp.tool(structured_output=False, description="An image and base64-laden structure.")
    def picture() -> CallToolResult:
        data = base64.b64encode(IMAGE_BYTES).decode()
        return CallToolResult(
            content=[ImageContent(data=data, mime_type="image/png")],
            structured_content={"png": data, "note": "small"},
        )

    @mcp.tool(structured_output=False, description="Every kind of content block.")
    def media() -> CallToolResult:
        return CallToolResult(
            content=[
                TextContent(text="media follows"),
                ImageContent(data=base64.b64encode(IMAGE_BYTES).decode(), mime_type="image/png"),
                AudioContent(data=base64.b64encode(AUDIO_BYTES).decode(), mime_type="audio/wav"),
                ResourceLink(name="notes", uri="eras://notes", mime_type="text/plain"),
                EmbeddedResource(
                    resource=TextResourceContents(
                        uri="eras://inline", mime_type="text/plain", text="inline text"
                    )
                ),
            ]
        )

    @mcp.tool(
        title="Weather report",
        description="Weather for a city (structured, with an output schema).",
        annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False, title="Weather"),
        icons=[Icon(src=SUN_ICON, mime_type="image/svg+xml")],
    )
    def weather(city: str) -> Weather:
        return Weather(city=city, degrees=21)

    @mcp.tool(
        description="Deletes everything (in name only).",
        annotations=ToolAnnotations(destructiveHint=True),
    )
    def wipe() -> str:
        return "wiped"

    @mcp.tool(description="Add a tool named `name` and (unless `announce` is false) say so.")
    async def add_tool_now(ctx: Context, name: str = "added", announce: bool = True) -> str:
        def added() -> str:
            return f"{name} works"

        mcp.add_tool(added, name=name, description="Added at run time.")
        if not announce:
            pass  # only a client listing the tools again finds it
        elif (ctx.protocol_version or "") >= "2026-07-28":
            await ctx.notify_tools_changed()
        else:
            await ctx.session.send_tool_list_changed()
        return f"added {name}"

    @mcp.tool(description="Say which region was asked for.")
    def regional(region: str) -> str:
        return f"region {region}"

    @mcp.tool(description="Re-declare `regional` with `region` mirrored in a header, silently.")
    def route_by_region() -> str:
        # A 2026-07-28 client that listed the old schema sends no `Mcp-Param-Region` header,
        # which this server now requires (-32020) until the client lists the tools again.
        def regional(
            region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})],
        ) -> str:
            return f"routed to {region}"

        mcp.remove_tool("regional")
        mcp.add_tool(regional, name="regional", description="Say which region was asked for.")
        return "regional now routes by header"

    @mcp.resource("eras://notes", name="notes", title="Notes", mime_type="text/plain")
    def notes() -> str:
        return "the notes"

    @mcp.resource("eras://logo", name="logo", mime_type="image/png")
    def logo() -> bytes:
        return IMAGE_BYTES

    @mcp.resource("eras://users/{user}", name="user", mime_type="text/plain")
    def user(user: str) -> str:
        return f"user {user}"

    @mcp.prompt(name="review", title="Code review", description="Review some code.")
    def review(code: str, style: str = "terse") -> str:
        return f"Review this ({style}): {code}"

    @mcp.completion()
    async def complete(ref: Any, argument: Any, context: Any) -> Any:
        from mcp_types import Completion

        if argument.name == "style":
            values = [v for v in ("terse", "thorough", "tender") if v.startswith(argument.value)]
            return Completion(values=values)
        if argument.name == "user" and getattr(ref, "uri", None) == "eras://users/{user}":
            values = [v for v in ("ada", "alan", "grace") if v.startswith(argument.value)]
            return Completion(values=values)
        return None

    return mcp


def tasks_server() -> Any:
    """A lowlevel `Server` whose tools declare `execution.taskSupport` (a 2025-11-25 field)."""
    from mcp.server.lowlevel import Server
    from mcp_types import ListToolsResult, Tool, ToolExecution

    schema: dict[str, Any] = {"type": "object", "properties": {}}
    listing = ListToolsResult(
        tools=[
            Tool(
                name=f"{support}_task",
                input_schema=schema,
                execution=ToolExecution(task_support=support),
            )  # type: ignore[arg-type]
            for support in ("required", "optional", "forbidden")
        ]
    )

    async def list_tools(ctx: Any, params: Any) -> ListToolsResult:
        return listing

    async def call_tool(ctx: Any, params: Any) -> CallToolResult:
        return CallToolResult(content=[TextContent(text=f"ran {params.name}")])

    return Server("tasks", on_list_tools=list_tools, on_call_tool=call_tool)


def task_answers_server() -> Any:
    """A lowlevel `Server` whose tools answer every call with a Tasks-extension result
    (`resultType: "task"`), as a server that ignores the client's (absent) opt-in would:
    `background` with the task alone, `background_text` with a content block beside it."""
    from mcp.server.lowlevel import Server
    from mcp_types import ListToolsResult, Result, Tool

    class TaskResult(Result):
        result_type: str = "task"
        task: dict[str, Any]

    class TaskResultWithText(TaskResult):
        content: list[TextContent]

    schema: dict[str, Any] = {"type": "object", "properties": {}}
    listing = ListToolsResult(
        tools=[Tool(name=name, input_schema=schema) for name in ("background", "background_text")]
    )
    task = {"taskId": "task-1", "status": "working", "pollIntervalMs": 500}

    async def list_tools(ctx: Any, params: Any) -> ListToolsResult:
        return listing

    async def call_tool(ctx: Any, params: Any) -> Result:
        if params.name == "background_text":
            return TaskResultWithText(task=task, content=[TextContent(text="started")])
        return TaskResult(task=task)

    return Server("task-answers", on_list_tools=list_tools, on_call_tool=call_tool)


def output_schema_server() -> Any:
    """A lowlevel `Server` (which, unlike `MCPServer`, never checks its own results) whose
    tools declare an output schema: `wrong` breaks it, `unstructured` returns no structure."""
    from mcp.server.lowlevel import Server
    from mcp_types import ListToolsResult, Tool

    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"],
    }
    listing = ListToolsResult(
        tools=[
            Tool(name=name, input_schema={"type": "object"}, output_schema=schema)
            for name in ("wrong", "unstructured")
        ]
    )

    async def list_tools(ctx: Any, params: Any) -> ListToolsResult:
        return listing

    async def call_tool(ctx: Any, params: Any) -> CallToolResult:
        if params.name == "wrong":
            return CallToolResult(
                content=[TextContent(text="n is x")], structured_content={"n": "x"}
            )
        return CallToolResult(content=[TextContent(text="no structure")])

    return Server("schemas", on_list_tools=list_tools, on_call_tool=call_tool)


def logging_server() -> Any:
    """A lowlevel `Server` that declares `logging` and tells which level `logging/setLevel`
    set (`level` tool: `unset` until one arrives)."""
    from mcp.server.lowlevel import Server
    from mcp_types import EmptyResult, ListToolsResult, Tool

    levels: list[str] = []
    listing = ListToolsResult(
        tools=[Tool(name="level", input_schema={"type": "object", "properties": {}})]
    )

    async def list_tools(ctx: Any, params: Any) -> ListToolsResult:
        return listing

    async def call_tool(ctx: Any, params: Any) -> CallToolResult:
        return CallToolResult(content=[TextContent(text=",".join(levels) or "unset")])

    async def set_level(ctx: Any, params: Any) -> EmptyResult:
        levels.append(str(params.level))
        return EmptyResult()

    return Server(
        "logs",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_set_logging_level=set_level,
    )


# -- era filters ------------------------------------------------------------------------------

_HANDSHAKE = {"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}


async def _read_body(receive: Any) -> bytes:
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            return body


def _replay(body: bytes, original: Any) -> Callable[[], Awaitable[dict[str, Any]]]:
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        message: dict[str, Any] = await original()
        return message

    return receive


async def _respond(send: Any, status: int, payload: dict[str, Any] | None) -> None:
    body = json.dumps(payload).encode() if payload is not None else b""
    headers = [(b"content-type", b"application/json")] if payload is not None else []
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def era_filter(inner: ASGIApp, era: str) -> ASGIApp:
    """Make a dual-era app legacy-only or modern-only."""

    async def app(scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await inner(scope, receive, send)
            return
        headers = dict(scope["headers"])
        version = headers.get(b"mcp-protocol-version", b"").decode()
        body = await _read_body(receive)
        try:
            message = json.loads(body)
        except ValueError:
            message = {}
        method = message.get("method") if isinstance(message, dict) else None
        if era == "legacy" and (
            method == "server/discover" or (version and version not in _HANDSHAKE)
        ):
            await _respond(send, 404, None)
            return
        if era == "modern" and method == "initialize":
            await _respond(send, 200, _unsupported(message))
            return
        await inner(scope, _replay(body, receive), send)

    return app


def _unsupported(
    message: dict[str, Any], supported: list[str] | None = None, requested: str | None = None
) -> dict[str, Any]:
    if requested is None:
        requested = (message.get("params") or {}).get("protocolVersion")
    return {
        "jsonrpc": "2.0",
        "id": message.get("id"),
        "error": {
            "code": -32022,
            "message": "Unsupported protocol version",
            "data": {"supported": supported or ["2026-07-28"], "requested": requested},
        },
    }


def input_server() -> Any:
    """A lowlevel `Server` whose resource and prompt ask for input first (2026-07-28
    `InputRequiredResult`s, request state unsealed as a lowlevel server sends it):
    `ask://name` asks a form question; `ask://pair` two in one round; `ask://sample` asks
    for sampling; `ask://nag` asks the form question on every round, forever; `ask://slow`
    never answers; any other URI is unknown (-32602); a read echoing the state `expired` is
    refused (-32602, as a restarted server refuses state it cannot open); the `hello` prompt
    asks for the client's roots and a form question in one round."""
    from mcp.server.lowlevel import Server
    from mcp_types import (
        CreateMessageRequest,
        CreateMessageRequestParams,
        ElicitRequestFormParams,
        GetPromptResult,
        ListPromptsResult,
        ListResourcesResult,
        ListRootsRequest,
        Prompt,
        PromptMessage,
        ReadResourceResult,
        Resource,
    )

    name_form: dict[str, Any] = {
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "required": ["name"],
    }
    ask_name = ElicitRequest(
        params=ElicitRequestFormParams(message="Who is reading?", requested_schema=name_form)
    )

    async def list_resources(ctx: Any, params: Any) -> ListResourcesResult:
        return ListResourcesResult(
            resources=[
                Resource(uri="ask://name", name="name", mime_type="text/plain"),
                Resource(uri="ask://pair", name="pair", mime_type="text/plain"),
                Resource(uri="ask://sample", name="sample", mime_type="text/plain"),
                Resource(uri="ask://nag", name="nag", mime_type="text/plain"),
            ]
        )

    ask_city = ElicitRequest(
        params=ElicitRequestFormParams(
            message="Which city?",
            requested_schema={
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        )
    )

    def read(params: Any, text: str) -> ReadResourceResult:
        return ReadResourceResult(
            contents=[TextResourceContents(uri=params.uri, mime_type="text/plain", text=text)]
        )

    async def read_resource(ctx: Any, params: Any) -> ReadResourceResult | InputRequiredResult:
        if not str(params.uri).startswith("ask://"):
            raise MCPError(code=-32602, message=f"Unknown resource: {params.uri}")
        if params.uri == "ask://slow":
            await anyio.sleep(30)  # longer than any test waits
        if params.request_state == "expired":
            raise MCPError(code=-32602, message="Invalid requestState: expired")
        answers = params.input_responses or {}
        if params.uri == "ask://pair":
            if not {"name", "city"} <= set(answers):
                return InputRequiredResult(
                    input_requests={"name": ask_name, "city": ask_city}, request_state="r2"
                )
            who = (_field(answers["name"], "content") or {}).get("name")
            city = (_field(answers["city"], "content") or {}).get("city")
            return read(params, f"{who} from {city} (state {params.request_state})")
        if params.uri == "ask://sample" and "sample" not in answers:
            sampling = CreateMessageRequest(
                params=CreateMessageRequestParams(
                    messages=[SamplingMessage(role="user", content=TextContent(text="hi"))],
                    max_tokens=5,
                )
            )
            return InputRequiredResult(input_requests={"sample": sampling})
        if "name" not in answers or params.uri == "ask://nag":
            return InputRequiredResult(input_requests={"name": ask_name}, request_state="r1")
        who = (_field(answers["name"], "content") or {}).get("name")
        return read(params, f"read by {who} (state {params.request_state})")

    async def list_prompts(ctx: Any, params: Any) -> ListPromptsResult:
        return ListPromptsResult(prompts=[Prompt(name="hello")])

    async def get_prompt(ctx: Any, params: Any) -> GetPromptResult | InputRequiredResult:
        answers = params.input_responses or {}
        if not {"roots", "name"} <= set(answers):
            return InputRequiredResult(
                input_requests={"roots": ListRootsRequest(), "name": ask_name},
                request_state="p1",
            )
        roots = [str(_field(r, "uri")) for r in _field(answers["roots"], "roots") or []]
        who = (_field(answers["name"], "content") or {}).get("name")
        text = f"hello {who} in {', '.join(roots)}"
        return GetPromptResult(
            messages=[PromptMessage(role="user", content=TextContent(text=text))]
        )

    return Server(
        "asks",
        on_list_resources=list_resources,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )


def _field(value: Any, name: str) -> Any:
    """`name` of an answer, whether the SDK handed it over as a model or a dict."""
    return value.get(name) if isinstance(value, dict) else getattr(value, name, None)


def input_app() -> Any:
    """`input_server()` over streamable HTTP (stateless: the era is 2026-07-28)."""
    return input_server().streamable_http_app(stateless_http=True)


class EraSwitch:
    """What an HTTP era server accepts, changed while it runs (as if upgraded in place).

    `supported`: when set, every request at a version outside it (a handshake request's
    version is its `protocolVersion`; any other request's is its `MCP-Protocol-Version`
    header) is answered -32022 naming `supported`, the way the SDK's own version check
    answers; the rest reach the dual-era server. `refuse[method]`: that many of the next
    `method` requests at 2026-07-28 are answered -32022 naming only 2026-07-28 (a replica
    briefly out of step). `seen` counts the requests that arrived, by method.
    """

    def __init__(self) -> None:
        self.supported: list[str] | None = None
        self.refuse: Counter[str] = Counter()
        self.seen: Counter[str] = Counter()

    def refusal(self, message: dict[str, Any], header: str) -> dict[str, Any] | None:
        method = message.get("method")
        if not isinstance(method, str) or "id" not in message:
            return None  # notifications and answers pass
        self.seen[method] += 1
        params = message.get("params") or {}
        version = params.get("protocolVersion") if method == "initialize" else header
        if self.refuse[method] > 0 and version == "2026-07-28":
            self.refuse[method] -= 1
            return _unsupported(message, ["2026-07-28"], version)
        if self.supported is not None and version and version not in self.supported:
            return _unsupported(message, self.supported, version)
        return None


def switchable(*argv: str) -> tuple[Any, EraSwitch]:
    """The dual-era HTTP app for `argv` behind an `EraSwitch` the caller holds."""
    args = _parser().parse_args(list(argv))
    server = _build(args)
    starlette = server.streamable_http_app(json_response=args.json, stateless_http=args.stateless)
    switch = EraSwitch()

    async def app(scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await starlette(scope, receive, send)
            return
        header = dict(scope["headers"]).get(b"mcp-protocol-version", b"").decode()
        body = await _read_body(receive)
        try:
            message = json.loads(body)
        except ValueError:
            message = None
        refusal = switch.refusal(message, header) if isinstance(message, dict) else None
        if refusal is not None:
            await _respond(send, 400, refusal)  # the SDK's status for this rejection
            return
        await starlette(scope, _replay(body, receive), send)

    return app, switch


class ListenCutter:
    """An ASGI wrapper that can end the open `subscriptions/listen` streams (2026-07-28) while
    everything else carries on, as a proxy dropping idle streams would. `cut()` may be called
    from any thread; `refused` makes that many of the next listen requests fail (a JSON-RPC
    error, as from a proxy that cannot reach the server yet); `opened` counts the listen
    requests that were let through, `arrivals` the `time.monotonic()` of every one."""

    def __init__(self, inner: ASGIApp) -> None:
        self.inner = inner
        self.opened = 0
        self.refused = 0
        self.arrivals: list[float] = []
        self._open: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []

    def cut(self) -> None:
        for loop, event in list(self._open):
            loop.call_soon_threadsafe(event.set)

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        headers = dict(scope.get("headers") or ())
        if scope["type"] != "http" or headers.get(b"mcp-method") != b"subscriptions/listen":
            await self.inner(scope, receive, send)
            return
        self.arrivals.append(time.monotonic())
        if self.refused > 0:
            self.refused -= 1
            message = json.loads(await _read_body(receive))
            error = {"code": -32603, "message": "listen refused by the test proxy"}
            await _respond(send, 200, {"jsonrpc": "2.0", "id": message.get("id"), "error": error})
            return
        ended = asyncio.Event()
        entry = (asyncio.get_running_loop(), ended)
        self._open.append(entry)
        self.opened += 1  # counted once `cut()` can reach it

        async def until_cut(message: dict[str, Any]) -> None:
            if not ended.is_set():
                await send(message)

        serving = asyncio.ensure_future(self.inner(scope, receive, until_cut))
        cutting = asyncio.ensure_future(ended.wait())
        try:
            await asyncio.wait({serving, cutting}, return_when=asyncio.FIRST_COMPLETED)
            if ended.is_set():
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            self._open.remove(entry)
            serving.cancel()
            cutting.cancel()


def cuttable(*argv: str) -> tuple[Any, ListenCutter]:
    """The HTTP app for `argv` behind a `ListenCutter` the caller holds."""
    cutter = ListenCutter(app(*argv))

    async def with_lifespan(scope: Scope, receive: Any, send: Any) -> None:
        await cutter(scope, receive, send)

    return with_lifespan, cutter


def tasks_app() -> Any:
    """`tasks_server()` over streamable HTTP."""
    return tasks_server().streamable_http_app()


def output_schema_app() -> Any:
    """`output_schema_server()` over streamable HTTP (stateless)."""
    return output_schema_server().streamable_http_app(stateless_http=True)


def task_answers_app() -> Any:
    """`task_answers_server()` over streamable HTTP (stateless: the era is 2026-07-28)."""
    return task_answers_server().streamable_http_app(stateless_http=True)


def app(*argv: str) -> Any:
    """The HTTP app for `argv` (the script's options), built in-process."""
    args = _parser().parse_args(list(argv))
    server = _build(args)
    starlette = server.streamable_http_app(json_response=args.json, stateless_http=args.stateless)
    if args.era == "dual":
        return starlette
    filtered = era_filter(starlette, args.era)

    async def with_lifespan(scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await starlette(scope, receive, send)
        else:
            await filtered(scope, receive, send)

    return with_lifespan


# -- stdio ------------------------------------------------------------------------------------


async def _stdio(args: argparse.Namespace) -> None:
    from mcp.server.runner import serve_dual_era_loop, serve_loop
    from mcp.server.stdio import stdio_server
    from mcp.shared.message import SessionMessage
    from mcp_types import JSONRPCError, JSONRPCRequest

    server = _build(args)._lowlevel_server
    async with stdio_server() as (read, write), server.lifespan(server) as state:
        if args.era == "legacy":
            await serve_loop(server, read, write, lifespan_state=state)
            return
        refuse = args.refuse_calls
        if args.era == "dual" and not refuse:
            await serve_dual_era_loop(server, read, write, lifespan_state=state)
            return
        # modern only: answer `initialize` with -32022; `--refuse-calls N`: answer the first N
        # `tools/call` requests with -32022 too; pass everything else on
        send_in, receive_in = anyio.create_memory_object_stream[Any](64)

        async def pump() -> None:
            nonlocal refuse
            async with send_in:
                async for item in read:
                    message = getattr(item, "message", None)
                    refused = isinstance(message, JSONRPCRequest) and (
                        (args.era == "modern" and message.method == "initialize")
                        or (refuse > 0 and message.method == "tools/call")
                    )
                    if refused:
                        assert isinstance(message, JSONRPCRequest)
                        if message.method == "tools/call":
                            refuse -= 1
                        error = _unsupported(message.model_dump(by_alias=True))["error"]
                        await write.send(
                            SessionMessage(JSONRPCError(jsonrpc="2.0", id=message.id, error=error))
                        )
                        continue
                    await send_in.send(item)

        async with anyio.create_task_group() as tg:
            tg.start_soon(pump)
            await serve_dual_era_loop(server, receive_in, write, lifespan_state=state)
            tg.cancel_scope.cancel()


def _build(args: argparse.Namespace) -> MCPServer:
    instructions = args.instructions
    if args.instructions_file is not None:  # read at start: a restart may find new ones
        with open(args.instructions_file, encoding="utf-8") as fh:
            instructions = fh.read()
    return build(args.name, args.state_key, instructions)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    parser.add_argument("--era", choices=("dual", "legacy", "modern"), default="dual")
    parser.add_argument("--refuse-calls", type=int, default=0)
    parser.add_argument("--http", type=int, default=None)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--sse", dest="json", action="store_false")
    parser.add_argument("--stateless", action="store_true")
    parser.add_argument("--stateful", dest="stateless", action="store_false")
    parser.add_argument("--state-key", default=None)
    parser.add_argument("--name", default="eras")
    parser.add_argument("--instructions", default=INSTRUCTIONS)
    parser.add_argument("--instructions-file", default=None)
    return parser


def main() -> None:
    args = _parser().parse_args()
    if args.http is None:
        anyio.run(_stdio, args)
        return
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.http))
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    argv = [a for a in sys.argv[1:]]
    config = uvicorn.Config(app(*_strip_port(argv)), log_level="warning", lifespan="on")
    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))


def _strip_port(argv: list[str]) -> list[str]:
    out: list[str] = []
    skip = False
    for item in argv:
        if skip:
            skip = False
            continue
        if item == "--http":
            skip = True
            continue
        out.append(item)
    return out


if __name__ == "__main__":
    main()
