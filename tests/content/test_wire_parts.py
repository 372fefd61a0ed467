"""Parts on the wire, end to end against the fake LLM: the exact blocks each style receives,
what the transcript and stores keep, the placeholder rules, and that no model-visible text
anywhere carries base64."""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import toolnexus
from support.asgi_server import running
from support.client_helpers import STYLES, kit
from support.fake_llm import FakeLLM, call, text, tools
from support.media import FIXTURE_PNG, GOLDEN_B64
from toolnexus import ContentPartError, ToolResult, UnsupportedPartError, image, part
from toolnexus.client import Client, SQLiteConversationStore, create_in_process_client
from toolnexus.content import to_dict
from toolnexus.types import Tool

FIXTURE = to_dict(image(FIXTURE_PNG))
OPENAI_IMAGE = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{GOLDEN_B64}"}}
ANTHROPIC_IMAGE = {
    "type": "image",
    "source": {"type": "base64", "media_type": "image/png", "data": GOLDEN_B64},
}
AUDIO = {"type": "audio", "mimeType": "audio/mpeg", "data": GOLDEN_B64}  # 82 bytes, labelled mp3
LINK = {"type": "file", "mimeType": "application/octet-stream", "url": "file:///data/r.bin"}

AUDIO_WARNING = (
    '[toolnexus] no "anthropic" block shape for a audio part (audio/mpeg)'
    " — sent as a text placeholder"
)
BASE64_RUN = re.compile(r"[A-Za-z0-9+/]{40,}={0,2}")


# -- the global invariant: model-visible text never carries base64 ---------------------------


def _texts(node: Any, out: list[str]) -> None:
    """Every text a model reads in a request body (text blocks, string contents, system)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("text", "system", "content") and isinstance(value, str):
                out.append(value)
            elif key not in ("data", "url", "file_data", "image_url", "source", "input_audio"):
                _texts(value, out)
    elif isinstance(node, list):
        for item in node:
            _texts(item, out)


@pytest.fixture
def visible(llm: FakeLLM, caplog: pytest.LogCaptureFixture) -> Iterator[list[str]]:
    """Texts the test adds (outputs, events, error messages); after the test, they and every
    model-visible text of every request must be free of base64."""
    caplog.set_level(logging.WARNING, logger="toolnexus")
    seen: list[str] = []
    yield seen
    for request in llm.requests:
        _texts(request.body, seen)
    seen.extend(record.getMessage() for record in caplog.records)
    for value in seen:
        assert GOLDEN_B64 not in value
        assert not BASE64_RUN.search(value), value


def bodies(llm: FakeLLM) -> list[dict[str, Any]]:
    return [r.body for r in llm.requests]


def image_tool(name: str = "chart", output: str = "", extra: list[Any] | None = None) -> Tool:
    async def run(args: dict[str, Any], ctx: Any) -> ToolResult:
        return ToolResult(output, parts=[image(FIXTURE_PNG), *(extra or [])])

    return Tool(name, "Draw a chart.", None, "native", run)


def parts_tool(name: str, *parts: Any, output: str = "done") -> Tool:
    async def run(args: dict[str, Any], ctx: Any) -> ToolResult:
        return ToolResult(output, parts=list(parts))

    return Tool(name, "Returns parts.", None, "native", run)


# -- prompts -----------------------------------------------------------------------------------


@pytest.mark.parametrize("style", STYLES)
async def test_prompt_parts_reach_the_model_in_order(
    style: str, llm: FakeLLM, make_client: Callable[..., Client], visible: list[str]
) -> None:
    client = make_client(style)
    llm.push(text("plain"), text("four colours"))
    await client.run("hello")
    result = await client.run(["before", image(FIXTURE_PNG), "after"])
    plain, vision = bodies(llm)
    assert plain["messages"][-1] == {"role": "user", "content": "hello"}
    sent = vision["messages"][-1]
    expected_image = OPENAI_IMAGE if style == "openai" else ANTHROPIC_IMAGE
    assert sent == {
        "role": "user",
        "content": [
            {"type": "text", "text": "before"},
            expected_image,
            {"type": "text", "text": "after"},
        ],
    }
    # the vision request carries exactly the golden base64 of the shared fixture
    block = sent["content"][1]
    carried = (
        block["image_url"]["url"].split(",", 1)[1] if style == "openai" else block["source"]["data"]
    )
    assert carried == GOLDEN_B64
    # the transcript holds canonical part dicts, plain JSON
    user = next(m for m in result.messages if m["role"] == "user")
    assert user["content"] == [
        {"type": "text", "text": "before"},
        FIXTURE,
        {"type": "text", "text": "after"},
    ]
    assert json.loads(json.dumps(result.messages)) == result.messages


@pytest.mark.parametrize("style", STYLES)
async def test_unsendable_attached_parts_raise_before_any_request(
    style: str, llm: FakeLLM, make_client: Callable[..., Client], visible: list[str]
) -> None:
    capped = make_client(style, max_part_bytes=10)
    with pytest.raises(ContentPartError) as too_big:
        await capped.run(["look", image(FIXTURE_PNG)])
    assert (
        str(too_big.value) == "content part is 82 decoded bytes, over the maxPartBytes limit of 10"
    )
    with pytest.raises(ContentPartError, match="a prompt needs at least one part"):
        await make_client(style).run([])
    with pytest.raises(ContentPartError, match="not a content part: int"):
        make_client(style).stream([1])  # type: ignore[list-item]
    if style == "anthropic":
        with pytest.raises(UnsupportedPartError) as unsupported:
            await make_client(style).run(["listen", AUDIO])
        assert str(unsupported.value) == 'no "anthropic" block shape for a audio part (audio/mpeg)'
        visible.append(str(unsupported.value))
    assert llm.requests == []
    visible.append(str(too_big.value))


async def test_attached_audio_degrades_with_text_mode(
    llm: FakeLLM,
    make_client: Callable[..., Client],
    visible: list[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    client = make_client("anthropic", on_unsupported_part="text")
    llm.push(text("ok"))
    await client.run(["listen", AUDIO])
    assert bodies(llm)[0]["messages"][-1]["content"] == [
        {"type": "text", "text": "listen"},
        {"type": "text", "text": "[unsupported audio part (audio/mpeg, 82 bytes)]"},
    ]
    assert [r.getMessage() for r in caplog.records] == [AUDIO_WARNING]


def test_client_options_are_checked() -> None:
    for bad in ({"on_unsupported_part": "drop"}, {"max_part_bytes": -1}, {"max_part_bytes": 1.5}):
        with pytest.raises(ValueError):
            toolnexus.create_client(
                base_url="http://127.0.0.1:9", style="openai", model="m", api_key="k", **bad
            )


# -- tool results ----------------------------------------------------------------------------


async def test_openai_moves_tool_images_into_one_synthetic_user_message(
    llm: FakeLLM, make_client: Callable[..., Client], visible: list[str], tmp_path: Path
) -> None:
    store = SQLiteConversationStore(tmp_path / "c.db")
    client = make_client("openai", store=store)
    toolkit = kit(image_tool("chart", "chart drawn"), image_tool("plot", "plot drawn"))
    llm.push(tools(call("chart", {}, id="c1"), call("plot", {}, id="c2")), text("two charts"))
    result = await client.ask("draw", toolkit, id="conv")
    second = bodies(llm)[1]["messages"]
    tool_messages = [m for m in second if m["role"] == "tool"]
    assert tool_messages == [
        {"role": "tool", "tool_call_id": "c1", "content": "chart drawn"},
        {"role": "tool", "tool_call_id": "c2", "content": "plot drawn"},
    ]
    assert second[-1] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "Output of tool chart (c1):"},
            OPENAI_IMAGE,
            {"type": "text", "text": "Output of tool plot (c2):"},
            OPENAI_IMAGE,
        ],
    }
    assert [m["role"] for m in second] == ["user", "assistant", "tool", "tool", "user"]
    # the synthetic message is request-only; the transcript keeps parts on the tool messages
    assert [m["role"] for m in result.messages] == [
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
    ]
    kept = result.messages[2]
    assert kept == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": "chart drawn",
        "parts": [FIXTURE],
        "name": "chart",
    }
    assert await store.get("conv") == result.messages
    assert result.tool_calls[0]["parts"] == [FIXTURE]
    visible.extend(r["output"] for r in result.tool_calls)
    await store.aclose()


async def test_openai_tool_text_parts_stay_on_the_tool_message(
    llm: FakeLLM, make_client: Callable[..., Client], visible: list[str]
) -> None:
    client = make_client("openai")
    toolkit = kit(image_tool("chart", "drawn", extra=["legend: red is sales"]))
    llm.push(tools(call("chart", {}, id="c1")), text("ok"))
    await client.run("draw", toolkit)
    sent = bodies(llm)[1]["messages"]
    assert sent[2] == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": [
            {"type": "text", "text": "drawn"},
            {"type": "text", "text": "legend: red is sales"},
        ],
    }
    assert sent[3]["content"] == [
        {"type": "text", "text": "Output of tool chart (c1):"},
        OPENAI_IMAGE,
    ]


async def test_anthropic_carries_tool_images_inside_their_tool_result(
    llm: FakeLLM, make_client: Callable[..., Client], visible: list[str]
) -> None:
    client = make_client("anthropic")
    toolkit = kit(image_tool("chart", "chart drawn"), image_tool("blank", ""))
    llm.push(tools(call("chart", {}, id="t1"), call("blank", {}, id="t2")), text("done"))
    result = await client.run("draw", toolkit)
    sent = bodies(llm)[1]["messages"]
    assert len(sent) == 3  # no extra user message
    assert sent[2] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "t1",
                "content": [{"type": "text", "text": "chart drawn"}, ANTHROPIC_IMAGE],
                "is_error": False,
            },
            {
                "type": "tool_result",
                "tool_use_id": "t2",
                "content": [ANTHROPIC_IMAGE],  # no empty text block
                "is_error": False,
            },
        ],
    }
    assert result.messages[2]["content"][0]["parts"] == [FIXTURE]
    assert "parts" not in json.dumps(bodies(llm))


async def test_tool_derived_audio_on_anthropic_degrades_and_warns_once(
    llm: FakeLLM,
    make_client: Callable[..., Client],
    visible: list[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    client = make_client("anthropic")
    toolkit = kit(parts_tool("speak", AUDIO))
    llm.push(
        tools(call("speak", {}, id="t1")),
        tools(call("speak", {}, id="t2")),
        text("heard it"),
    )
    result = await client.run("say hi", toolkit)
    assert result.text == "heard it" and len(llm.requests) == 3
    placeholder = {"type": "text", "text": "[unsupported audio part (audio/mpeg, 82 bytes)]"}
    last = bodies(llm)[2]["messages"]
    assert last[2]["content"][0]["content"] == [{"type": "text", "text": "done"}, placeholder]
    assert last[4]["content"][0]["content"] == [{"type": "text", "text": "done"}, placeholder]
    warnings = [r.getMessage() for r in caplog.records]
    assert warnings == [AUDIO_WARNING]
    strict = make_client("anthropic", on_unsupported_part="error")
    llm.push(tools(call("speak", {}, id="t1")))
    with pytest.raises(UnsupportedPartError):
        await strict.run("say hi", toolkit)
    assert len(llm.requests) == 4  # the second request never left


@pytest.mark.parametrize("style", STYLES)
async def test_oversize_and_unreadable_tool_parts_become_placeholders(
    style: str,
    llm: FakeLLM,
    make_client: Callable[..., Client],
    visible: list[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    client = make_client(style, max_part_bytes=10)
    toolkit = kit(parts_tool("shots", FIXTURE, FIXTURE), parts_tool("fetch", LINK))
    llm.push(tools(call("shots", {}, id="c1"), call("fetch", {}, id="c2")), text("ok"))
    await client.run("go", toolkit)
    body = json.dumps(bodies(llm)[1])
    size = "[unsupported image part (image/png, 82 bytes)]"
    link = "[unsupported file part (application/octet-stream, file:///data/r.bin)]"
    assert body.count(size) == 2 and body.count(link) == 1
    warnings = [r.getMessage() for r in caplog.records]
    assert warnings[0] == (
        "[toolnexus] content part is 82 decoded bytes, over the maxPartBytes limit of 10"
        " — sent as a text placeholder"
    )
    assert len(warnings) == 2  # one per key: size (image/png), support (file, style)


async def test_the_process_wide_cap_applies_at_request_assembly(
    llm: FakeLLM, make_client: Callable[..., Client], visible: list[str]
) -> None:
    client = make_client("openai")
    toolkit = kit(parts_tool("chart", FIXTURE))  # built before the cap: a server's part, say
    toolnexus.set_max_part_bytes(81)
    llm.push(tools(call("chart", {}, id="c1")), text("ok"))
    await client.run("draw", toolkit)
    assert bodies(llm)[1]["messages"][-1]["content"][1] == {
        "type": "text",
        "text": "[unsupported image part (image/png, 82 bytes)]",
    }


# -- native tools, HTTP media, read ------------------------------------------------------------


async def test_native_tools_returning_parts() -> None:
    @toolnexus.tool
    def snapshot() -> toolnexus.ContentPart:
        """A screenshot."""
        return image(FIXTURE_PNG)

    @toolnexus.tool
    def captioned() -> list[Any]:
        """A captioned chart."""
        return ["caption", image(FIXTURE_PNG)]

    @toolnexus.tool
    def words() -> list[str]:
        """Plain strings."""
        return ["a", "b"]

    @toolnexus.tool
    def spoken() -> toolnexus.ContentPart:
        """Just text."""
        return toolnexus.text("said")

    @toolnexus.tool
    def broken() -> list[Any]:
        """A bad item."""
        return [image(FIXTURE_PNG), 3]

    only = await snapshot.execute({})
    assert (only.output, only.parts, only.is_error) == (
        "image (image/png, 82 bytes)",
        [FIXTURE],
        False,
    )
    both = await captioned.execute({})
    assert (both.output, both.parts) == ("caption", [FIXTURE])
    assert (await words.execute({})).output == '["a","b"]'
    said = await spoken.execute({})
    assert (said.output, said.parts) == ("said", None)
    bad = await broken.execute({})
    assert bad.is_error and "int" in bad.output and bad.parts is None


async def _media_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    kinds = {
        "/chart": "image/png; charset=binary",
        "/doc": "Application/PDF; q=1",
        "/page": "text/html",
    }
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", kinds[scope["path"]].encode())],
        }
    )
    await send({"type": "http.response.body", "body": FIXTURE_PNG.read_bytes()})


async def test_http_tool_media_responses() -> None:
    async with running(_media_app) as base:
        line = "image (image/png, 82 bytes)"
        for mode, output in (("text", line), ("status+text", f"200\n{line}"), ("json", line)):
            tool = toolnexus.http_tool(
                name="chart",
                description="A chart.",
                method="GET",
                url=base + "/chart",
                result_mode=mode,
            )
            result = await tool.execute({})
            assert (result.output, result.metadata, result.is_error) == (
                output,
                {"status": 200},
                False,
            )
            assert result.parts == [{"type": "image", "mimeType": "image/png", "data": GOLDEN_B64}]
        doc = await toolnexus.http_tool(
            name="doc", description="d", method="GET", url=base + "/doc"
        ).execute({})
        assert doc.parts is not None and doc.parts[0]["type"] == "file"
        assert doc.output == "file (application/pdf, 82 bytes)"
        page = await toolnexus.http_tool(
            name="page", description="p", method="GET", url=base + "/page"
        ).execute({})
        assert page.parts is None and page.output.startswith("\ufffdPNG")


async def test_read_builtin_on_a_media_file(tmp_path: Path) -> None:
    (tmp_path / "shots").mkdir()
    (tmp_path / "shots" / "fixture.png").write_bytes(FIXTURE_PNG.read_bytes())
    (tmp_path / "r.pdf").write_bytes(b"%PDF-1.4")
    builtins = toolnexus.create_builtin_tools({"workspace": str(tmp_path)})
    tools_ = {t.name: t for t in builtins}
    result = await tools_["read"].execute({"path": "shots/fixture.png", "offset": 5, "limit": 1})
    assert result.output == "shots/fixture.png (image/png, 82 bytes)"
    assert result.parts == [FIXTURE]
    pdf = await tools_["read"].execute({"path": "r.pdf"})
    assert pdf.output == "r.pdf (application/pdf, 8 bytes)"
    assert pdf.parts is not None and pdf.parts[0]["type"] == "file"
    outside = await tools_["read"].execute({"path": str(FIXTURE_PNG)})
    assert outside.is_error and outside.parts is None
    # the media branch keeps the read rules: no FIFOs, no hard-linked files in a workspace
    os.mkfifo(tmp_path / "pipe.png")
    fifo = await tools_["read"].execute({"path": "pipe.png"})
    assert fifo.is_error and "not a regular file" in fifo.output
    os.link(tmp_path / "r.pdf", tmp_path / "linked.pdf")
    linked = await tools_["read"].execute({"path": "linked.pdf"})
    assert linked.is_error and "hard links" in linked.output


# -- stores, streaming, in-process, metrics --------------------------------------------------


@pytest.mark.parametrize("style", STYLES)
async def test_sqlite_round_trips_parts_byte_identical(
    style: str, llm: FakeLLM, make_client: Callable[..., Client], visible: list[str], tmp_path: Path
) -> None:
    store = SQLiteConversationStore(tmp_path / "conv.db")
    client = make_client(style, store=store)
    toolkit = kit(image_tool("chart", "drawn"))
    llm.push(tools(call("chart", {}, id="c1")), text("a chart"), text("still four colours"))
    first = await client.ask(["what is this?", image(FIXTURE_PNG)], toolkit, id="v")
    saved = await store.get("v")
    assert json.dumps(saved) == json.dumps(first.messages)  # byte-identical replay
    await client.ask("and now?", toolkit, id="v")
    third = bodies(llm)[2]
    assert json.dumps(third["messages"][: len(bodies(llm)[1]["messages"])]) == json.dumps(
        bodies(llm)[1]["messages"]
    )  # the image prompt and the tool image are re-sent exactly
    assert json.dumps(third).count(GOLDEN_B64) == 2
    await store.aclose()


@pytest.mark.parametrize("style", STYLES)
async def test_streamed_bodies_equal_run_bodies_and_events_carry_parts(
    style: str, llm: FakeLLM, make_client: Callable[..., Client], visible: list[str]
) -> None:
    client = make_client(style)
    toolkit = kit(image_tool("chart", "drawn"))
    script = (tools(call("chart", {}, id="c1")), text("done"))
    llm.push(*script)
    await client.run(["see", image(FIXTURE_PNG)], toolkit)
    ran = bodies(llm)
    llm.reset()
    llm.push(*script)
    events = [e async for e in client.stream(["see", image(FIXTURE_PNG)], toolkit)]
    streamed = bodies(llm)
    for a, b in zip(ran, streamed, strict=True):
        b = {k: v for k, v in b.items() if k not in ("stream", "stream_options")}
        assert a == b
    result_event = next(e for e in events if e["type"] == "tool_result")
    assert result_event["parts"] == [FIXTURE]
    visible.append(result_event["output"])


async def test_in_process_generate_sees_image_url_blocks() -> None:
    seen: list[dict[str, Any]] = []

    def generate(request: dict[str, Any]) -> dict[str, Any]:
        seen.append(request)
        return {"role": "assistant", "content": "red green blue white"}

    client = create_in_process_client(model="local", generate=generate)
    await client.run(["describe", image(FIXTURE_PNG)])
    assert seen[0]["messages"][-1]["content"] == [
        {"type": "text", "text": "describe"},
        OPENAI_IMAGE,
    ]


@pytest.mark.parametrize("style", STYLES)
async def test_llm_events_summarize_the_parts_sent(
    style: str, llm: FakeLLM, make_client: Callable[..., Client], visible: list[str]
) -> None:
    events: list[dict[str, Any]] = []
    client = make_client(style, on_metric=events.append)
    llm.push(text("plain"), text("seen"))
    await client.run("no parts")
    await client.run(["look", image(FIXTURE_PNG)])
    llm_events = [e for e in events if e["event"] == "llm"]
    assert "parts" not in llm_events[0]
    assert llm_events[1]["parts"] == [{"type": "image", "mimeType": "image/png", "bytes": 82}]
    visible.extend(json.dumps(e) for e in events)
    visible.append(client.metrics())


# -- translate ---------------------------------------------------------------------------------


async def test_translate_anthropic_reads_openai_media_blocks(
    llm: FakeLLM,
    make_client: Callable[..., Client],
    visible: list[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    client = make_client("anthropic")
    llm.push(text("an image"), text("audio?"))
    await client.translate(
        [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "what is it?"},
                    {
                        "type": "image_url",
                        "image_url": {"url": f"data:image/png;base64,{GOLDEN_B64}"},
                    },
                    {"type": "image_url", "image_url": {"url": "https://x.test/chart"}},
                    {
                        "type": "file",
                        "file": {
                            "filename": "r.pdf",
                            "file_data": "data:application/pdf;base64,JVBE",
                        },
                    },
                ],
            }
        ]
    )
    assert bodies(llm)[0]["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "what is it?"},
                ANTHROPIC_IMAGE,
                {"type": "image", "source": {"type": "url", "url": "https://x.test/chart"}},
                {
                    "type": "document",
                    "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBE"},
                },
            ],
        }
    ]
    audio_block = {"type": "input_audio", "input_audio": {"data": GOLDEN_B64, "format": "mp3"}}
    await client.translate(
        [{"role": "user", "content": [{"type": "text", "text": "hear"}, audio_block]}]
    )
    assert bodies(llm)[1]["messages"][0]["content"] == [
        {"type": "text", "text": "hear"},
        {"type": "text", "text": "[unsupported audio part (application/octet-stream, 82 bytes)]"},
    ]
    assert len(caplog.records) == 1
    strict = make_client("anthropic", on_unsupported_part="error")
    with pytest.raises(UnsupportedPartError):
        await strict.translate([{"role": "user", "content": [audio_block]}])
    assert len(llm.requests) == 2
    llm.push(text("ok"))
    local = {"type": "image_url", "image_url": {"url": "file:///tmp/a.png"}}
    await client.translate([{"role": "user", "content": [{"type": "text", "text": "x"}, local]}])
    assert bodies(llm)[-1]["messages"][0]["content"][1] == {
        "type": "text",
        "text": "[unsupported image part (application/octet-stream, file:///tmp/a.png)]",
    }
    # a text-only array still becomes one string
    llm.push(text("ok"))
    await client.translate(
        [
            {
                "role": "user",
                "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            }
        ]
    )
    assert bodies(llm)[-1]["messages"][0]["content"] == "ab"


async def test_translate_tool_messages_with_parts(
    llm: FakeLLM, make_client: Callable[..., Client], visible: list[str]
) -> None:
    transcript = [
        {"role": "user", "content": "draw"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "chart", "arguments": "{}"}}
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "c1",
            "content": "drawn",
            "parts": [FIXTURE],
            "name": "chart",
        },
    ]
    anthropic = make_client("anthropic")
    openai = make_client("openai")
    llm.push(text("a"), text("b"))
    await anthropic.translate(transcript)
    await openai.translate(transcript)
    to_anthropic, to_openai = bodies(llm)
    assert to_anthropic["messages"][2]["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "c1",
            "content": [{"type": "text", "text": "drawn"}, ANTHROPIC_IMAGE],
        }
    ]
    assert to_openai["messages"][2:] == [
        {"role": "tool", "tool_call_id": "c1", "content": "drawn"},
        {
            "role": "user",
            "content": [{"type": "text", "text": "Output of tool chart (c1):"}, OPENAI_IMAGE],
        },
    ]
    llm.push(text("c"))
    await openai.translate([{"role": "user", "content": ["x", FIXTURE]}])  # type: ignore[list-item]
    assert bodies(llm)[2]["messages"][0]["content"][1] == OPENAI_IMAGE


async def test_anthropic_moves_system_role_messages_to_system(
    llm: FakeLLM, make_client: Callable[..., Client]
) -> None:
    client = make_client("anthropic", system_prompt="Be brief.")
    llm.push(text("ok"))
    history = [{"role": "system", "content": "You see images."}, {"role": "user", "content": "hi"}]
    await client.run("again", history=history)
    body = bodies(llm)[0]
    assert body["system"] == "Be brief.\n\nYou see images."
    assert [m["role"] for m in body["messages"]] == ["user", "user"]


async def test_conversation_send_takes_parts(
    llm: FakeLLM, make_client: Callable[..., Client], visible: list[str]
) -> None:
    conversation = make_client("openai").conversation()
    llm.push(text("four quadrants"), text("red is top-left"))
    await conversation.send(["what is this?", image(FIXTURE_PNG)])
    await conversation.send("which colour is top-left?")
    again = bodies(llm)[1]["messages"]
    assert again[0]["content"][1] == OPENAI_IMAGE  # the image is re-sent with the history
    assert conversation.messages[0]["content"][1] == FIXTURE


@pytest.mark.parametrize("style", STYLES)
async def test_part_objects_in_a_history_are_stored_as_dicts(
    style: str, llm: FakeLLM, make_client: Callable[..., Client], tmp_path: Path
) -> None:
    store = SQLiteConversationStore(tmp_path / "h.db")
    client = make_client(style, store=store)
    history = [
        {"role": "user", "content": ["earlier", image(FIXTURE_PNG)]},
        {"role": "assistant", "content": "noted"},
    ]
    llm.push(text("ok"))
    result = await client.run("again", history=history)
    assert result.messages[0]["content"] == [{"type": "text", "text": "earlier"}, FIXTURE]
    assert isinstance(history[0]["content"][1], toolnexus.ContentPart)  # the caller's, untouched
    await store.save("h", result.messages)
    assert await store.get("h") == result.messages
    await store.aclose()


def test_url_parts_from_a_link() -> None:
    assert part(type="file", mimeType="application/octet-stream", url="file:///data/r.bin")
