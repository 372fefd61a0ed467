"""A toolkit with the tools, resources and prompts the MCP conformance suite's server scenarios
ask for, served by `Toolkit.serve`: `python conformance_server.py` prints its URL and serves
until stdin closes."""

from __future__ import annotations

import asyncio
import base64
import sys
from typing import Any

from toolnexus.content import ContentPart
from toolnexus.toolkit import Toolkit
from toolnexus.types import Tool, ToolContext, ToolResult

PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c63f8cfc0f01f0005000201e2213bc50000000049454e44ae426082"
    )
).decode()
WAV = base64.b64encode(b"RIFF$\x00\x00\x00WAVEfmt " + bytes(24)).decode()
TEXT = base64.b64encode(b"This is an embedded resource content.").decode()


def conformance_toolkit() -> Toolkit:
    kit = Toolkit(builtins=False)

    def simple_text(args: dict[str, Any], ctx: ToolContext) -> str:
        return "This is a simple text response for testing."

    def image(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return ToolResult("", parts=[ContentPart("image", mimeType="image/png", data=PNG)])

    def audio(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return ToolResult("", parts=[ContentPart("audio", mimeType="audio/wav", data=WAV)])

    def embedded(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        part = ContentPart(
            "file", mimeType="text/plain", data=TEXT, name="test://embedded-resource"
        )
        return ToolResult("", parts=[part])

    def mixed(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return ToolResult(
            "Multiple content types test:",
            parts=[
                ContentPart("image", mimeType="image/png", data=PNG),
                ContentPart(
                    "file", mimeType="text/plain", data=TEXT, name="test://mixed-content-resource"
                ),
            ],
        )

    async def logging_tool(args: dict[str, Any], ctx: ToolContext) -> str:
        for message in ("Tool execution started", "Tool processing data", "Tool completed"):
            await ctx.log("info", message)
            await asyncio.sleep(0.05)
        return "Tool with logging executed successfully"

    def error(args: dict[str, Any], ctx: ToolContext) -> str:
        raise RuntimeError("This tool intentionally returns an error for testing")

    async def progress(args: dict[str, Any], ctx: ToolContext) -> str:
        for step in (0, 50, 100):
            if ctx.on_progress is not None:
                await ctx.on_progress({"progress": step, "total": 100})
            await asyncio.sleep(0.05)
        return "Tool with progress executed successfully"

    async def sampling(args: dict[str, Any], ctx: ToolContext) -> str:
        reply = await ctx.sample(str(args.get("prompt", "")), max_tokens=100)
        return f"LLM response: {reply}"

    async def elicitation(args: dict[str, Any], ctx: ToolContext) -> str:
        schema = {
            "type": "object",
            "properties": {
                "username": {"type": "string", "description": "User's response"},
                "email": {"type": "string", "description": "User's email address"},
            },
            "required": ["username", "email"],
        }
        answer = await ctx.ask(str(args.get("message", "Please provide your information")), schema)
        return f"User response: ok={answer.ok} data={answer.data}"

    def asks_with(schema: dict[str, Any], message: str) -> Any:
        async def ask(args: dict[str, Any], ctx: ToolContext) -> str:
            answer = await ctx.ask(message, schema)
            action = "accept" if answer.ok else "decline"
            return f"Elicitation completed: action={action}, content={answer.data}"

        return ask

    defaults_schema = {
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
    enums_schema = {
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
    prompt_schema = {
        "type": "object",
        "properties": {"prompt": {"type": "string"}},
        "required": ["prompt"],
    }
    message_schema = {
        "type": "object",
        "properties": {"message": {"type": "string"}},
        "required": ["message"],
    }
    kit.register(
        Tool("test_simple_text", "Simple text", None, "native", simple_text),
        Tool("test_image_content", "An image", None, "native", image),
        Tool("test_audio_content", "Audio", None, "native", audio),
        Tool("test_embedded_resource", "An embedded resource", None, "native", embedded),
        Tool("test_multiple_content_types", "Mixed content", None, "native", mixed),
        Tool("test_tool_with_logging", "Logs", None, "native", logging_tool),
        Tool("test_error_handling", "Fails", None, "native", error),
        Tool("test_tool_with_progress", "Reports progress", None, "native", progress),
        Tool("test_sampling", "Samples", prompt_schema, "native", sampling),
        Tool("test_elicitation", "Asks", message_schema, "native", elicitation),
        Tool(
            "test_elicitation_sep1034_defaults",
            "Asks with defaults",
            None,
            "native",
            asks_with(defaults_schema, "Please review the defaults"),
        ),
        Tool(
            "test_elicitation_sep1330_enums",
            "Asks with enums",
            None,
            "native",
            asks_with(enums_schema, "Please choose"),
        ),
    )

    @kit.resource("test://static-text", mime_type="text/plain")
    def static_text() -> str:
        return "This is the content of the static text resource."

    @kit.resource("test://static-binary", mime_type="image/png")
    def static_binary() -> bytes:
        return base64.b64decode(PNG)

    @kit.resource("test://template/{id}/data", mime_type="application/json")
    def template(id: str) -> str:
        return f'{{"id":"{id}","templateTest":true,"data":"Data for ID: {id}"}}'

    @kit.resource("test://watched-resource", mime_type="text/plain")
    def watched() -> str:
        return "Watched resource content"

    @kit.prompt()
    def test_simple_prompt() -> str:
        """A simple prompt without arguments."""
        return "This is a simple prompt for testing."

    @kit.prompt()
    def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
        """A prompt with two required arguments."""
        return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"

    @kit.prompt()
    def test_prompt_with_embedded_resource(resourceUri: str) -> list[Any]:
        """A prompt with an embedded resource."""
        return [
            {
                "role": "user",
                "content": {
                    "type": "resource",
                    "resource": {
                        "uri": resourceUri,
                        "mimeType": "text/plain",
                        "text": "Embedded resource content for testing.",
                    },
                },
            },
            "Please process the embedded resource above.",
        ]

    @kit.prompt()
    def test_prompt_with_image() -> list[Any]:
        """A prompt with an image."""
        return [
            ContentPart("image", mimeType="image/png", data=PNG),
            "Please analyze the image above.",
        ]

    @kit.completion("arg1", prompt="test_prompt_with_arguments")
    def complete(value: str, context: Any) -> list[str]:
        return [v for v in ("paris", "park", "party") if v.startswith(value)]

    return kit


async def main() -> None:
    kit = conformance_toolkit()
    handle = await kit.serve("127.0.0.1:0", mcp={"name": "conformance"})
    print(handle.url + "/mcp", flush=True)
    await asyncio.to_thread(sys.stdin.read)
    await handle.stop()


if __name__ == "__main__":
    asyncio.run(main())
