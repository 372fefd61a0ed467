"""A toolkit's declared resources, prompts and completions (`toolnexus.offers`) as the SDK
server's handlers, in front of the gateway's upstream ones (`_relay.py`).

Lists give the declared entries first, then the upstream ones; a read, `prompts/get` or
completion the toolkit does not declare goes upstream when there is an upstream. An unknown
name or URI is -32602; a declaring function that raises is -32603 with its message.
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError

from toolnexus._aio import call_in_thread_maybe_async, call_maybe_async
from toolnexus.offers import DeclaredResource, Offers
from toolnexus.serve._mcp._caller import connection_of
from toolnexus.types import error_message

__all__ = ["offer_handlers", "part_block"]

_TEXT_TYPES = ("application/json", "application/xml", "application/yaml", "application/javascript")


def is_text_type(mime: str) -> bool:
    """Whether content of this media type is text (sent as `text`, never a base64 `blob`)."""
    base = mime.split(";")[0].strip().lower()
    return base.startswith("text/") or base in _TEXT_TYPES or base.endswith(("+json", "+xml"))


def part_block(part: Mapping[str, Any]) -> dict[str, Any]:
    """One content part as an MCP content block: an embedded text resource goes out as text."""
    kind = part.get("type")
    mime = part.get("mimeType") or "application/octet-stream"
    if kind == "text":
        return {"type": "text", "text": part.get("text") or ""}
    url = part.get("url")
    if url:
        return {
            "type": "resource_link",
            "uri": url,
            "name": part.get("name") or url,
            "mimeType": mime,
        }
    if kind in ("image", "audio"):
        return {"type": kind, "data": part.get("data") or "", "mimeType": mime}
    name = str(part.get("name") or "")
    uri = name if "://" in name else (f"file:///{name}" if name else "file:///part")
    data = part.get("data") or ""
    resource: dict[str, Any] = {"uri": uri, "mimeType": mime, "blob": data}
    if is_text_type(mime):
        with contextlib.suppress(ValueError):  # not UTF-8 after all: it stays a blob
            resource = {"uri": uri, "mimeType": mime, "text": base64.b64decode(data).decode()}
    return {"type": "resource", "resource": resource}


async def _run(fn: Callable[..., Any], kwargs: Mapping[str, Any], what: str) -> Any:
    try:
        return await call_in_thread_maybe_async(lambda: fn(**kwargs))
    except MCPError:
        raise
    except TypeError as exc:
        raise MCPError(code=types.INVALID_PARAMS, message=f"{what}: {exc}") from None
    except Exception as exc:
        raise MCPError(code=types.INTERNAL_ERROR, message=f"{what}: {error_message(exc)}") from None


def _contents(uri: str, declared: DeclaredResource, value: Any) -> dict[str, Any]:
    mime = declared.mime_type
    if isinstance(value, bytes | bytearray | memoryview):
        blob = base64.b64encode(bytes(value)).decode()
        return {"uri": uri, "mimeType": mime or "application/octet-stream", "blob": blob}
    if isinstance(value, Mapping):
        return {"uri": uri, **({"mimeType": mime} if mime else {}), **value}
    return {"uri": uri, "mimeType": mime or "text/plain", "text": str(value)}


def _message(item: Any) -> dict[str, Any]:
    if isinstance(item, str):
        return {"role": "user", "content": {"type": "text", "text": item}}
    if isinstance(item, Mapping) and "role" in item:
        return dict(item)
    from toolnexus.content import to_dict

    return {"role": "user", "content": part_block(to_dict(item))}


def offer_handlers(offers: Offers | None, relayed: dict[str, Any]) -> dict[str, Any]:
    """The lowlevel `Server` handlers for `offers`, falling back on the `relayed` ones."""
    if offers is None or not (offers or offers.completers):
        return relayed
    handlers = dict(relayed)
    upstream: Callable[[str], Callable[..., Awaitable[Any]] | None] = relayed.get

    def seen(ctx: Any) -> None:
        connection = connection_of(ctx)
        if connection is not None:
            offers.sessions.setdefault(connection, set())

    if offers.resources:
        from mcp.shared.uri_template import UriTemplate

        parsed: dict[str, UriTemplate] = {}  # declarations may follow: parsed when first read

        def match(uri: str) -> tuple[DeclaredResource | None, dict[str, Any]]:
            declared = offers.resources.get(uri)
            if declared is not None and not declared.is_template:
                return declared, {}
            for candidate in list(offers.resources.values()):
                if candidate.is_template:
                    template = parsed.get(candidate.uri)
                    if template is None:
                        template = parsed[candidate.uri] = UriTemplate.parse(candidate.uri)
                    found = template.match(uri)
                    if found is not None:
                        return candidate, found
            return None, {}

        async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
            seen(ctx)
            mine = [
                types.Resource.model_validate(r.wire())
                for r in list(offers.resources.values())
                if not r.is_template
            ]
            relay = upstream("on_list_resources")
            theirs = list((await relay(ctx, params)).resources) if relay else []
            return types.ListResourcesResult(resources=mine + theirs)

        async def list_templates(ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
            seen(ctx)
            mine = [
                types.ResourceTemplate.model_validate(r.wire())
                for r in list(offers.resources.values())
                if r.is_template
            ]
            relay = upstream("on_list_resource_templates")
            theirs = list((await relay(ctx, params)).resource_templates) if relay else []
            return types.ListResourceTemplatesResult(resource_templates=mine + theirs)

        async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> Any:
            seen(ctx)
            uri = str(params.uri)
            declared, variables = match(uri)
            if declared is None:
                relay = upstream("on_read_resource")
                if relay is not None:
                    return await relay(ctx, params)
                raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown resource: {uri}")
            value = await _run(declared.fn, variables, f"could not read {uri}")
            items = value if isinstance(value, list) else [value]
            contents = [_contents(uri, declared, v) for v in items]
            return types.ReadResourceResult.model_validate({"contents": contents})

        async def subscribe(ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
            seen(ctx)
            relay = upstream("on_subscribe_resource")
            if relay is not None and match(str(params.uri))[0] is None:  # an upstream URI
                result: types.EmptyResult = await relay(ctx, params)
                return result
            connection = connection_of(ctx)
            if connection is not None:
                offers.sessions.setdefault(connection, set()).add(str(params.uri))
            return types.EmptyResult()

        async def unsubscribe(ctx: Any, params: types.UnsubscribeRequestParams) -> Any:
            relay = upstream("on_unsubscribe_resource")
            if relay is not None and match(str(params.uri))[0] is None:  # an upstream URI
                return await relay(ctx, params)
            connection = connection_of(ctx)
            subscribed = None if connection is None else offers.sessions.get(connection)
            if subscribed is not None:
                subscribed.discard(str(params.uri))
            return types.EmptyResult()

        handlers.update(
            on_list_resources=list_resources,
            on_list_resource_templates=list_templates,
            on_read_resource=read_resource,
            on_subscribe_resource=subscribe,
            on_unsubscribe_resource=unsubscribe,
        )

    if offers.prompts:

        async def list_prompts(ctx: Any, params: Any) -> types.ListPromptsResult:
            seen(ctx)
            mine = [types.Prompt.model_validate(p.wire()) for p in offers.prompts.values()]
            relay = upstream("on_list_prompts")
            theirs = list((await relay(ctx, params)).prompts) if relay else []
            return types.ListPromptsResult(prompts=mine + theirs)

        async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> Any:
            seen(ctx)
            declared = offers.prompts.get(params.name)
            if declared is None:
                relay = upstream("on_get_prompt")
                if relay is not None:
                    return await relay(ctx, params)
                raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown prompt: {params.name}")
            arguments = params.arguments or {}
            missing = [
                a["name"]
                for a in declared.arguments
                if a["required"] and a["name"] not in arguments
            ]
            if missing:
                raise MCPError(
                    code=types.INVALID_PARAMS,
                    message=f"prompt {params.name} needs the arguments: {', '.join(missing)}",
                )
            value = await _run(declared.fn, arguments, f"prompt {params.name} failed")
            items = value if isinstance(value, list) else [value]
            wire: dict[str, Any] = {"messages": [_message(i) for i in items]}
            if declared.description:
                wire["description"] = declared.description
            return types.GetPromptResult.model_validate(wire)

        handlers.update(on_list_prompts=list_prompts, on_get_prompt=get_prompt)

    if offers.completers:

        async def complete(ctx: Any, params: types.CompleteRequestParams) -> types.CompleteResult:
            ref = params.ref
            key = (
                ("prompt", ref.name)
                if isinstance(ref, types.PromptReference)
                else ("template", str(ref.uri))
            )
            completer = offers.completers.get((key, params.argument.name))
            if completer is None:
                relay = upstream("on_completion")
                if relay is not None:
                    result: types.CompleteResult = await relay(ctx, params)
                    return result
                return types.CompleteResult(completion=types.Completion(values=[]))
            context = dict(params.context.arguments or {}) if params.context is not None else {}
            try:
                values = list(await call_maybe_async(completer, params.argument.value, context))
            except Exception as exc:
                raise MCPError(code=types.INTERNAL_ERROR, message=error_message(exc)) from None
            shown = [str(v) for v in values[:100]]
            return types.CompleteResult(
                completion=types.Completion(
                    values=shown, total=len(values), has_more=len(values) > len(shown)
                )
            )

        handlers["on_completion"] = complete
    if offers:  # 2026-07-28 clients hear of changes by listening
        from mcp.server.subscriptions import ListenHandler

        # the gateway's relay listens on the same bus (its upstream URIs held while listening)
        handlers.setdefault("on_subscriptions_listen", ListenHandler(offers.bus))
    return handlers
