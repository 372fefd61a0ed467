"""The features the MCP conformance suite's server scenarios ask for (those of
`conformance_server.py`), written on the official `mcp` SDK's lowlevel `Server` and served over
stdio: the upstream the gateway conformance run puts behind `toolnexus serve`.

The lowlevel `Server` rather than `MCPServer`: `MCPServer` serves neither `logging/setLevel`
nor `resources/subscribe`, and its elicitation takes a pydantic model, which cannot state the
titled `oneOf`/`anyOf` enums the SEP-1330 scenario asks for."""

from __future__ import annotations

import asyncio
import base64
import warnings
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp_types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    CompleteResult,
    Completion,
    ContentBlock,
    EmbeddedResource,
    EmptyResult,
    GetPromptResult,
    ImageContent,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    Prompt,
    PromptArgument,
    PromptMessage,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    SamplingMessage,
    TextContent,
    TextResourceContents,
    Tool,
)

PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c63f8cfc0f01f0005000201e2213bc50000000049454e44ae426082"
    )
).decode()
WAV = base64.b64encode(b"RIFF$\x00\x00\x00WAVEfmt " + bytes(24)).decode()
EMBEDDED_TEXT = "This is an embedded resource content."

NO_ARGUMENTS: dict[str, Any] = {"type": "object", "properties": {}}
USER_SCHEMA = {
    "type": "object",
    "properties": {
        "username": {"type": "string", "description": "User's response"},
        "email": {"type": "string", "description": "User's email address"},
    },
    "required": ["username", "email"],
}
DEFAULTS_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "default": "John Doe"},
        "age": {"type": "integer", "default": 30},
        "score": {"type": "number", "default": 95.5},
        "status": {
            "type": "string",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "default": True},
    },
}
ENUMS_SCHEMA = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {
            "type": "string",
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ],
        },
        "legacyEnum": {
            "type": "string",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array",
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            },
        },
    },
}


def _text(text: str) -> list[ContentBlock]:
    return [TextContent(text=text)]


def _embedded(uri: str) -> EmbeddedResource:
    contents = TextResourceContents(uri=uri, mime_type="text/plain", text=EMBEDDED_TEXT)
    return EmbeddedResource(resource=contents)


async def _simple_text(ctx: Any, args: dict[str, Any]) -> list[ContentBlock]:
    return _text("This is a simple text response for testing.")


async def _image(ctx: Any, args: dict[str, Any]) -> list[ContentBlock]:
    return [ImageContent(data=PNG, mime_type="image/png")]


async def _audio(ctx: Any, args: dict[str, Any]) -> list[ContentBlock]:
    return [AudioContent(data=WAV, mime_type="audio/wav")]


async def _embedded_resource(ctx: Any, args: dict[str, Any]) -> list[ContentBlock]:
    return [_embedded("test://embedded-resource")]


async def _mixed(ctx: Any, args: dict[str, Any]) -> list[ContentBlock]:
    return [
        TextContent(text="Multiple content types test:"),
        ImageContent(data=PNG, mime_type="image/png"),
        _embedded("test://mixed-content-resource"),
    ]


async def _logging(ctx: Any, args: dict[str, Any]) -> list[ContentBlock]:
    for message in ("Tool execution started", "Tool processing data", "Tool completed"):
        await ctx.session.send_log_message("info", message, related_request_id=ctx.request_id)
        await asyncio.sleep(0.05)
    return _text("Tool with logging executed successfully")


async def _error(ctx: Any, args: dict[str, Any]) -> list[ContentBlock]:
    raise RuntimeError("This tool intentionally returns an error for testing")


async def _progress(ctx: Any, args: dict[str, Any]) -> list[ContentBlock]:
    match ctx.params:
        case {"_meta": {"progressToken": str() | int() as token}}:
            for step in (0, 50, 100):
                await ctx.session.send_progress_notification(
                    token, step, 100, related_request_id=ctx.request_id
                )
                await asyncio.sleep(0.05)
    return _text("Tool with progress executed successfully")


async def _sampling(ctx: Any, args: dict[str, Any]) -> list[ContentBlock]:
    prompt = SamplingMessage(role="user", content=TextContent(text=str(args.get("prompt", ""))))
    reply = await ctx.session.create_message(
        [prompt], max_tokens=100, related_request_id=ctx.request_id
    )
    text = reply.content.text if isinstance(reply.content, TextContent) else ""
    return _text(f"LLM response: {text}")


async def _elicitation(ctx: Any, args: dict[str, Any]) -> list[ContentBlock]:
    message = str(args.get("message", "Please provide your information"))
    answer = await ctx.session.elicit_form(message, USER_SCHEMA, related_request_id=ctx.request_id)
    return _text(f"User response: action={answer.action} content={answer.content}")


def _asks_with(schema: dict[str, Any], message: str) -> _ToolFunction:
    async def ask(ctx: Any, args: dict[str, Any]) -> list[ContentBlock]:
        answer = await ctx.session.elicit_form(message, schema, related_request_id=ctx.request_id)
        return _text(f"Elicitation completed: action={answer.action}, content={answer.content}")

    return ask


_ToolFunction = Callable[[Any, dict[str, Any]], Awaitable[list[ContentBlock]]]

TOOLS: dict[str, tuple[str, dict[str, Any], _ToolFunction]] = {
    "test_simple_text": ("Simple text", NO_ARGUMENTS, _simple_text),
    "test_image_content": ("An image", NO_ARGUMENTS, _image),
    "test_audio_content": ("Audio", NO_ARGUMENTS, _audio),
    "test_embedded_resource": ("An embedded resource", NO_ARGUMENTS, _embedded_resource),
    "test_multiple_content_types": ("Mixed content", NO_ARGUMENTS, _mixed),
    "test_tool_with_logging": ("Logs", NO_ARGUMENTS, _logging),
    "test_error_handling": ("Fails", NO_ARGUMENTS, _error),
    "test_tool_with_progress": ("Reports progress", NO_ARGUMENTS, _progress),
    "test_sampling": (
        "Samples",
        {"type": "object", "properties": {"prompt": {"type": "string"}}, "required": ["prompt"]},
        _sampling,
    ),
    "test_elicitation": (
        "Asks",
        {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]},
        _elicitation,
    ),
    "test_elicitation_sep1034_defaults": (
        "Asks with defaults",
        NO_ARGUMENTS,
        _asks_with(DEFAULTS_SCHEMA, "Please review the defaults"),
    ),
    "test_elicitation_sep1330_enums": (
        "Asks with enums",
        NO_ARGUMENTS,
        _asks_with(ENUMS_SCHEMA, "Please choose"),
    ),
}

RESOURCES = {
    "test://static-text": Resource(
        name="static-text", uri="test://static-text", mime_type="text/plain"
    ),
    "test://static-binary": Resource(
        name="static-binary", uri="test://static-binary", mime_type="image/png"
    ),
    "test://watched-resource": Resource(
        name="watched-resource", uri="test://watched-resource", mime_type="text/plain"
    ),
}
TEMPLATE = ResourceTemplate(
    name="template", uri_template="test://template/{id}/data", mime_type="application/json"
)

PROMPTS = [
    Prompt(name="test_simple_prompt", description="A simple prompt without arguments."),
    Prompt(
        name="test_prompt_with_arguments",
        description="A prompt with two required arguments.",
        arguments=[
            PromptArgument(name="arg1", required=True),
            PromptArgument(name="arg2", required=True),
        ],
    ),
    Prompt(
        name="test_prompt_with_embedded_resource",
        description="A prompt with an embedded resource.",
        arguments=[PromptArgument(name="resourceUri", required=True)],
    ),
    Prompt(name="test_prompt_with_image", description="A prompt with an image."),
]


def _user(*contents: ContentBlock) -> list[PromptMessage]:
    return [PromptMessage(role="user", content=content) for content in contents]


def conformance_sdk_server() -> Server[Any]:
    subscribed: set[str] = set()

    async def list_tools(ctx: Any, params: Any) -> ListToolsResult:
        return ListToolsResult(
            tools=[
                Tool(name=name, description=description, input_schema=schema)
                for name, (description, schema, _) in TOOLS.items()
            ]
        )

    async def call_tool(ctx: Any, params: Any) -> CallToolResult:
        _, _, function = TOOLS[params.name]
        try:
            content = await function(ctx, dict(params.arguments or {}))
        except RuntimeError as error:
            return CallToolResult(content=_text(str(error)), is_error=True)
        return CallToolResult(content=content)

    async def list_resources(ctx: Any, params: Any) -> ListResourcesResult:
        return ListResourcesResult(resources=list(RESOURCES.values()))

    async def list_templates(ctx: Any, params: Any) -> ListResourceTemplatesResult:
        return ListResourceTemplatesResult(resource_templates=[TEMPLATE])

    async def read_resource(ctx: Any, params: Any) -> ReadResourceResult:
        uri = str(params.uri)
        if uri == "test://static-binary":
            return ReadResourceResult(
                contents=[BlobResourceContents(uri=uri, mime_type="image/png", blob=PNG)]
            )
        if uri == "test://static-text":
            text = "This is the content of the static text resource."
        elif uri == "test://watched-resource":
            text = "Watched resource content"
        elif uri.startswith("test://template/") and uri.endswith("/data"):
            id = uri.removeprefix("test://template/").removesuffix("/data")
            text = f'{{"id":"{id}","templateTest":true,"data":"Data for ID: {id}"}}'
            return ReadResourceResult(
                contents=[TextResourceContents(uri=uri, mime_type="application/json", text=text)]
            )
        else:
            raise ValueError(f"Unknown resource: {uri}")
        return ReadResourceResult(
            contents=[TextResourceContents(uri=uri, mime_type="text/plain", text=text)]
        )

    async def subscribe(ctx: Any, params: Any) -> EmptyResult:
        subscribed.add(str(params.uri))
        return EmptyResult()

    async def unsubscribe(ctx: Any, params: Any) -> EmptyResult:
        subscribed.discard(str(params.uri))
        return EmptyResult()

    async def list_prompts(ctx: Any, params: Any) -> ListPromptsResult:
        return ListPromptsResult(prompts=PROMPTS)

    async def get_prompt(ctx: Any, params: Any) -> GetPromptResult:
        args = dict(params.arguments or {})
        if params.name == "test_simple_prompt":
            messages = _user(TextContent(text="This is a simple prompt for testing."))
        elif params.name == "test_prompt_with_arguments":
            text = f"Prompt with arguments: arg1='{args.get('arg1')}', arg2='{args.get('arg2')}'"
            messages = _user(TextContent(text=text))
        elif params.name == "test_prompt_with_embedded_resource":
            resource = TextResourceContents(
                uri=args.get("resourceUri", ""),
                mime_type="text/plain",
                text="Embedded resource content for testing.",
            )
            messages = _user(
                EmbeddedResource(resource=resource),
                TextContent(text="Please process the embedded resource above."),
            )
        elif params.name == "test_prompt_with_image":
            messages = _user(
                ImageContent(data=PNG, mime_type="image/png"),
                TextContent(text="Please analyze the image above."),
            )
        else:
            raise ValueError(f"Unknown prompt: {params.name}")
        return GetPromptResult(messages=messages)

    async def complete(ctx: Any, params: Any) -> CompleteResult:
        value = params.argument.value
        values = [v for v in ("paris", "park", "party") if v.startswith(value)]
        return CompleteResult(completion=Completion(values=values, total=len(values)))

    async def set_level(ctx: Any, params: Any) -> EmptyResult:
        return EmptyResult()

    with warnings.catch_warnings():
        # logging is deprecated as of 2026-07-28, still part of 2025-11-25
        warnings.simplefilter("ignore")
        return Server(
            "conformance-sdk",
            on_list_tools=list_tools,
            on_call_tool=call_tool,
            on_list_resources=list_resources,
            on_list_resource_templates=list_templates,
            on_read_resource=read_resource,
            on_subscribe_resource=subscribe,
            on_unsubscribe_resource=unsubscribe,
            on_list_prompts=list_prompts,
            on_get_prompt=get_prompt,
            on_completion=complete,
            on_set_logging_level=set_level,
        )


async def main() -> None:
    server = conformance_sdk_server()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    asyncio.run(main())
