"""A toolkit's own resources, prompts and completions, served by `Toolkit.serve` and read with
the official SDK client in both protocol eras; a tool's listing fields kept as given."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from mcp_types import PromptReference, ResourceTemplateReference

from mcp import Client, MCPError
from toolnexus.content import ContentPart
from toolnexus.serve import ServeHandle
from toolnexus.toolkit import Toolkit
from toolnexus.types import Tool, ToolContext, ToolResult

MODES = ["auto", "legacy"]
LISTED_META = {"ui": {"resourceUri": "ui://app/view"}}


def make_toolkit() -> Toolkit:
    def report(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        notes = base64.b64encode(b"# Notes\nall good").decode()
        pdf = base64.b64encode(b"%PDF-1").decode()
        return ToolResult(
            "see the parts",
            parts=[
                ContentPart("file", mimeType="text/markdown", data=notes, name="notes.md"),
                ContentPart("file", mimeType="application/pdf", data=pdf, name="a.pdf"),
            ],
        )

    metadata = {
        "title": "Make a report",
        "annotations": {"readOnlyHint": True},
        "icons": [{"src": "https://example.test/r.png", "mimeType": "image/png"}],
        "_meta": LISTED_META,
    }
    kit = Toolkit(
        builtins=False,
        extra_tools=[Tool("report", "A report", None, "native", report, metadata=metadata)],
    )

    @kit.resource(
        "config://app",
        title="App config",
        mime_type="application/json",
        annotations={"audience": ["user"], "priority": 0.5},
        meta={"origin": "test"},
    )
    def app_config() -> str:
        """The app's configuration."""
        return '{"debug": false}'

    @kit.resource("bin://logo", mime_type="image/png")
    def logo() -> bytes:
        return b"\x89PNG"

    @kit.resource("users://{user_id}/profile", mime_type="text/plain")
    async def profile(user_id: str) -> str:
        return f"profile of {user_id}"

    @kit.prompt(title="Review code")
    def review(code: str, language: str = "python") -> str:
        """Review a piece of code."""
        return f"Review this {language}:\n{code}"

    @kit.prompt()
    def with_parts() -> list[Any]:
        png = base64.b64encode(b"\x89PNG").decode()
        return [
            "look at these",
            ContentPart("image", mimeType="image/png", data=png),
            {"role": "assistant", "content": {"type": "text", "text": "I see."}},
        ]

    @kit.completion("language", prompt="review")
    def languages(value: str, context: Any) -> list[str]:
        return [n for n in ("python", "perl", "rust") if n.startswith(value)]

    @kit.completion("user_id", template="users://{user_id}/profile")
    async def users(value: str, context: Any) -> list[str]:
        return [f"{value}{i}" for i in range(150)]

    return kit


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def served() -> AsyncIterator[ServeHandle]:
    kit = make_toolkit()
    handle = await kit.serve("127.0.0.1:0", mcp={})
    yield handle
    await handle.stop()


@pytest.mark.parametrize("mode", MODES)
async def test_resources_listed_and_read(served, mode):
    async with Client(served.url + "/mcp", mode=mode) as client:
        listed = {str(r.uri): r for r in (await client.list_resources()).resources}
        config = listed["config://app"]
        assert (config.name, config.title, config.mime_type) == (
            "app_config",
            "App config",
            "application/json",
        )
        assert config.description == "The app's configuration."
        assert config.annotations is not None and config.annotations.priority == 0.5
        assert config.meta == {"origin": "test"}
        templates = (await client.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["users://{user_id}/profile"]

        text = (await client.read_resource("config://app")).contents[0]
        assert (text.text, text.mime_type) == ('{"debug": false}', "application/json")
        blob = (await client.read_resource("bin://logo")).contents[0]
        assert base64.b64decode(blob.blob) == b"\x89PNG"
        templated = (await client.read_resource("users://ada/profile")).contents[0]
        assert (str(templated.uri), templated.text) == ("users://ada/profile", "profile of ada")
        with pytest.raises(MCPError) as caught:
            await client.read_resource("nothing://here")
        assert caught.value.code == -32602


@pytest.mark.parametrize("mode", MODES)
async def test_prompts_listed_and_got(served, mode):
    async with Client(served.url + "/mcp", mode=mode) as client:
        prompts = {p.name: p for p in (await client.list_prompts()).prompts}
        review = prompts["review"]
        assert review.title == "Review code"
        assert [(a.name, a.required) for a in review.arguments or []] == [
            ("code", True),
            ("language", False),
        ]
        got = await client.get_prompt("review", {"code": "x = 1"})
        assert got.messages[0].role == "user"
        assert got.messages[0].content.text == "Review this python:\nx = 1"

        parts = (await client.get_prompt("with_parts")).messages
        assert [m.role for m in parts] == ["user", "user", "assistant"]
        assert parts[1].content.type == "image"

        with pytest.raises(MCPError) as caught:
            await client.get_prompt("review", {})
        assert caught.value.code == -32602
        assert "code" in caught.value.message


@pytest.mark.parametrize("mode", MODES)
async def test_completions(served, mode):
    async with Client(served.url + "/mcp", mode=mode) as client:
        done = await client.complete(
            PromptReference(name="review"), {"name": "language", "value": "p"}
        )
        assert done.completion.values == ["python", "perl"]
        many = await client.complete(
            ResourceTemplateReference(uri="users://{user_id}/profile"),
            {"name": "user_id", "value": "u"},
        )
        assert len(many.completion.values) == 100
        assert (many.completion.total, many.completion.has_more) == (150, True)


@pytest.mark.parametrize("mode", MODES)
async def test_tool_listing_kept_and_text_resource_sent_as_text(served, mode):
    async with Client(served.url + "/mcp", mode=mode) as client:
        (tool,) = (await client.list_tools()).tools
        assert tool.title == "Make a report"
        assert tool.annotations is not None and tool.annotations.read_only_hint is True
        assert tool.meta == LISTED_META
        assert tool.icons is not None and str(tool.icons[0].src) == "https://example.test/r.png"
        result = await client.call_tool("report", {})
        text_block, notes, pdf = result.content
        assert text_block.text == "see the parts"
        assert notes.resource.text == "# Notes\nall good"
        assert notes.resource.mime_type == "text/markdown"
        assert base64.b64decode(pdf.resource.blob) == b"%PDF-1"


async def test_declared_twice_is_a_config_error():
    from toolnexus.errors import ConfigError

    kit = Toolkit(builtins=False)
    kit.resource("a://b")(lambda: "x")
    with pytest.raises(ConfigError):
        kit.resource("a://b")(lambda: "y")
    with pytest.raises(ConfigError):
        kit.completion("x")
