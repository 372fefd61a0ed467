"""Resources, resource templates, prompts and completions of one connected server, as plain
data. Imported with the SDK; every request is bounded by the server's `timeout`."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, TypeVar

import mcp_types as types
from mcp.shared.exceptions import MCPError

from toolnexus._otel import mcp_request
from toolnexus.content import ContentPart, ContentPartError, incoming_part
from toolnexus.mcp_source._connection import MAX_PAGES, Connection, input_responses
from toolnexus.mcp_source._errors import LoadError
from toolnexus.mcp_source._input import Resume
from toolnexus.mcp_source._rounds import Fetch
from toolnexus.mcp_source._state import (
    McpPrompt,
    McpPromptResult,
    McpResource,
    McpResourceTemplate,
)
from toolnexus.types import Request, ToolResult

T = TypeVar("T")
WaitFor = Callable[[Request], Any]


async def _request(
    session: Any, method: str, target: str | None, send: Callable[[], Awaitable[T]], timeout: float
) -> T:
    """One request `method` (traced, about `target`) on `session`, bounded by `timeout`; sent
    once more after negotiating again when the server no longer accepts the version (-32022)."""
    peer: Connection = session.peer

    async def traced() -> T:
        with mcp_request(method, target, peer):
            return await asyncio.wait_for(send(), timeout)

    return await peer.with_renegotiation(traced)


async def _pages(
    session: Any,
    method: str,
    fetch: Callable[[types.PaginatedRequestParams | None], Awaitable[Any]],
    items: str,
    timeout: float,
) -> list[Any]:
    found: list[Any] = []
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(MAX_PAGES):
        params = types.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
        page = await _request(session, method, None, partial(fetch, params), timeout)
        found.extend(getattr(page, items))
        cursor = page.next_cursor or None
        if cursor is None or cursor in seen:
            return found
        seen.add(cursor)
    raise LoadError(f"MCP list returned more than {MAX_PAGES} pages")


async def wire_resources(session: Any, timeout: float) -> list[types.Resource]:
    """Every resource the server lists (all pages), as the SDK read them."""
    return await _pages(
        session, "resources/list", lambda p: session.list_resources(params=p), "resources", timeout
    )


async def wire_templates(session: Any, timeout: float) -> list[types.ResourceTemplate]:
    """Every resource template the server lists (all pages), as the SDK read them; none from
    a server offering resources that does not know the method (templates are optional)."""
    try:
        return await _pages(
            session,
            "resources/templates/list",
            lambda p: session.list_resource_templates(params=p),
            "resource_templates",
            timeout,
        )
    except MCPError as exc:
        if exc.code == types.METHOD_NOT_FOUND:
            return []
        raise


async def _with_input(
    session: Any,
    server: str,
    origin: dict[str, Any],
    target: str,
    what: str,
    send: Callable[[Any, str | None], Awaitable[T]],
    timeout: float,
    wait_for: WaitFor | None,
    resume: Resume | None,
) -> T:
    """What `send(input_responses, request_state)` answers for the request `origin` names
    (`{"method", ...}`, about `target`) once the server stops asking for input; `what` says
    what it does (`read <uri>`) in an `InputPending`'s message."""
    method = origin["method"]

    def send_once(responses: dict[str, Any] | None, state: str | None) -> Awaitable[T]:
        return _request(
            session, method, target, lambda: send(input_responses(responses), state), timeout
        )

    fetch = Fetch(server, wait_for, session.peer, send_once, what, origin)
    result: T = await fetch.run(resume)
    return result


async def wire_read(
    session: Any,
    server: str,
    uri: str,
    timeout: float,
    wait_for: WaitFor | None,
    resume: Resume | None = None,
) -> types.ReadResourceResult:
    """The server's `ReadResourceResult` for `uri`. Input the server asks for first
    (2026-07-28) is answered as for a tool call (`wait_for`), else raises `InputPending`;
    `resume` continues from the Request it handed out and the answer to it."""
    return await _with_input(
        session,
        server,
        {"method": "resources/read", "uri": uri},
        uri,
        f"read {uri}",
        lambda responses, state: session.read_resource(
            uri, input_responses=responses, request_state=state, allow_input_required=True
        ),
        timeout,
        wait_for,
        resume,
    )


async def wire_prompts(session: Any, timeout: float) -> list[types.Prompt]:
    """Every prompt the server lists (all pages), as the SDK read them."""
    return await _pages(
        session, "prompts/list", lambda p: session.list_prompts(params=p), "prompts", timeout
    )


async def wire_get_prompt(
    session: Any,
    server: str,
    name: str,
    arguments: dict[str, str] | None,
    timeout: float,
    wait_for: WaitFor | None,
    resume: Resume | None = None,
) -> types.GetPromptResult:
    """The server's `GetPromptResult` for its prompt `name`; input as for `wire_read`."""
    return await _with_input(
        session,
        server,
        {"method": "prompts/get", "name": name, "arguments": arguments},
        name,
        f"get prompt {name}",
        lambda responses, state: session.get_prompt(
            name,
            arguments,
            input_responses=responses,
            request_state=state,
            allow_input_required=True,
        ),
        timeout,
        wait_for,
        resume,
    )


async def wire_complete(
    session: Any,
    ref: types.PromptReference | types.ResourceTemplateReference,
    argument: dict[str, str],
    context: dict[str, str] | None,
    timeout: float,
) -> types.CompleteResult:
    return await _request(
        session,
        "completion/complete",
        None,
        lambda: session.complete(ref=ref, argument=argument, context_arguments=context),
        timeout,
    )


async def list_resources(session: Any, server: str, timeout: float) -> list[McpResource]:
    listed = await wire_resources(session, timeout)
    return [
        McpResource(
            server,
            str(r.uri),
            r.name,
            r.title,
            r.description,
            r.mime_type,
            getattr(r, "size", None),
        )
        for r in listed
    ]


async def list_templates(session: Any, server: str, timeout: float) -> list[McpResourceTemplate]:
    listed = await wire_templates(session, timeout)
    return [
        McpResourceTemplate(server, t.uri_template, t.name, t.title, t.description, t.mime_type)
        for t in listed
    ]


async def read_resource(
    session: Any,
    server: str,
    uri: str,
    timeout: float,
    wait_for: WaitFor | None,
    resume: Resume | None = None,
) -> ToolResult:
    """`resources/read` as a result: texts joined, each blob a content part and a line."""
    result = await wire_read(session, server, uri, timeout, wait_for, resume)
    return resource_result(result, server, uri)


def resource_result(result: Any, server: str, uri: str) -> ToolResult:
    """A `ReadResourceResult` of `uri` as a tool result: texts joined, each blob a content part
    and a line."""
    texts: list[str] = []
    parts: list[ContentPart] = []
    for item in result.contents:
        text = getattr(item, "text", None)
        if text is not None:
            texts.append(text)
            continue
        blob = str(getattr(item, "blob", "") or "")
        mime = getattr(item, "mime_type", None) or "application/octet-stream"
        item_uri = str(getattr(item, "uri", uri))
        texts.append(f"[resource: {item_uri}]")
        with contextlib.suppress(ContentPartError):  # described by its line
            parts.append(incoming_part(data=blob, mime_type=mime, name=item_uri))
    return ToolResult("\n".join(texts), False, {"server": server, "uri": uri}, parts=parts or None)


async def list_prompts(session: Any, server: str, timeout: float) -> list[McpPrompt]:
    listed = await wire_prompts(session, timeout)
    return [
        McpPrompt(
            server,
            p.name,
            p.title,
            p.description,
            [
                {"name": a.name, "description": a.description, "required": bool(a.required)}
                for a in p.arguments or ()
            ],
        )
        for p in listed
    ]


async def get_prompt(
    session: Any,
    server: str,
    name: str,
    arguments: dict[str, str] | None,
    timeout: float,
    wait_for: WaitFor | None,
) -> McpPromptResult:
    """`prompts/get` as plain data; input asked for first is answered as for `wire_read`."""
    result = await wire_get_prompt(session, server, name, arguments, timeout, wait_for)
    messages: list[dict[str, Any]] = []
    for message in result.messages:
        content = message.content
        if isinstance(content, types.TextContent):
            messages.append({"role": message.role, "content": content.text})
            continue
        data = getattr(content, "data", None)
        mime = getattr(content, "mime_type", None)
        part = incoming_part(data=data, mime_type=mime) if data is not None else None
        messages.append({"role": message.role, "content": [part] if part is not None else []})
    return McpPromptResult(result.description, messages)


async def complete(
    session: Any,
    ref: dict[str, str],
    argument: str,
    value: str,
    context: dict[str, str] | None,
    timeout: float,
) -> list[str]:
    reference: Any
    if ref.get("type") == "ref/resource":
        reference = types.ResourceTemplateReference(uri=ref["uri"])
    else:
        reference = types.PromptReference(name=ref["name"])
    result = await wire_complete(
        session, reference, {"name": argument, "value": value}, context, timeout
    )
    return list(result.completion.values)
