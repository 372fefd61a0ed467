"""The part model: constructors, validation, canonical dicts, size caps, summaries, blocks."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import toolnexus
from support.media import FIXTURE_PNG, GOLDEN_B64, GOLDEN_SHA256
from toolnexus import content
from toolnexus.content import (
    ContentPart,
    ContentPartError,
    UnsupportedPartError,
    decoded_len,
    describe_part,
    encode_part,
    estimate_tokens,
    from_dict,
    image,
    incoming_part,
    is_part_dict,
    normalize_parts,
    part,
    placeholder_text,
    summarize,
    to_dict,
)


def exact(message: str) -> str:
    """A `match=` pattern accepting exactly `message`."""
    return f"^{re.escape(message)}$"


@pytest.fixture(autouse=True)
def _no_process_cap() -> Iterator[None]:
    content.set_max_part_bytes(None)
    yield
    content.set_max_part_bytes(None)


def test_goldens_are_the_fixture() -> None:
    assert hashlib.sha256(FIXTURE_PNG.read_bytes()).hexdigest() == GOLDEN_SHA256


def test_image_from_the_fixture_path() -> None:
    p = image(str(FIXTURE_PNG))
    assert p.data == GOLDEN_B64
    assert (p.type, p.mimeType, p.name, p.url) == ("image", "image/png", "fixture.png", None)
    dumped = json.dumps(to_dict(p))
    assert str(FIXTURE_PNG) not in dumped and str(FIXTURE_PNG.parent) not in dumped
    assert p == part(type="image", mimeType="image/png", data=GOLDEN_B64, name="fixture.png")
    assert from_dict(json.loads(dumped)) == p
    assert GOLDEN_B64 not in repr(p)  # a repr lands in logs and tracebacks


class _FsPath:
    def __init__(self, path: Path) -> None:
        self._path = path

    def __fspath__(self) -> str:
        return str(self._path)


def test_every_source_kind_gives_the_golden(tmp_path: Path) -> None:
    raw = FIXTURE_PNG.read_bytes()
    assert image(FIXTURE_PNG).data == GOLDEN_B64
    assert image(_FsPath(FIXTURE_PNG)).name == "fixture.png"
    assert image(_FsPath(FIXTURE_PNG)).data == GOLDEN_B64
    assert image(bytearray(raw), mime_type="image/png").data == GOLDEN_B64
    assert image(memoryview(raw), mime_type="image/png").data == GOLDEN_B64
    buffer = io.BytesIO(raw)
    from_buffer = image(buffer, mime_type="image/png")
    assert from_buffer.data == GOLDEN_B64 and from_buffer.name is None
    assert not buffer.closed and buffer.read() == b""  # consumed, left open
    with open(FIXTURE_PNG, "rb") as handle:
        from_handle = image(handle)
        assert not handle.closed
    assert (from_handle.data, from_handle.mimeType, from_handle.name) == (
        GOLDEN_B64,
        "image/png",
        "fixture.png",
    )
    zipped = tmp_path / "fixture.png.gz"
    zipped.write_bytes(gzip.compress(raw))
    with gzip.open(zipped, "rb") as handle:
        assert image(handle, mime_type="image/png").data == GOLDEN_B64
    with (
        open(FIXTURE_PNG, encoding="latin-1") as text_handle,
        pytest.raises(ContentPartError, match="binary mode") as caught,
    ):
        image(text_handle)
    assert "returned str, not bytes" in str(caught.value)
    with pytest.raises(
        ContentPartError, match="^" + re.escape("mime_type is required for a file-like source")
    ):
        image(io.BytesIO(raw))


def test_urls_extensions_and_bytes() -> None:
    from_data_url = image(f"data:image/png;base64,{GOLDEN_B64}")
    assert (from_data_url.data, from_data_url.mimeType, from_data_url.url) == (
        GOLDEN_B64,
        "image/png",
        None,
    )
    remote = image("https://x.test/a.png?sig=1")
    assert (remote.url, remote.mimeType, remote.data) == (
        "https://x.test/a.png?sig=1",
        "image/png",
        None,
    )
    assert image("https://x.test/a.bin", mime_type="image/png").mimeType == "image/png"
    with pytest.raises(ContentPartError) as caught:
        image("https://x.test/a.bin?x=.png")
    assert str(caught.value) == (
        "mime_type is required for a URL whose extension is not in the media table"
    )
    with pytest.raises(ContentPartError, match=exact("only base64 data: URLs are supported")):
        image("data:image/png,abc")
    with pytest.raises(ContentPartError, match=exact("data: URL carries no mime type")):
        image("data:;base64,AAAA")
    with pytest.raises(ContentPartError) as caught:
        image(b"\x89PNG")
    assert str(caught.value) == "mime_type is required when building a part from bytes"
    for empty in ("", 3, None):
        with pytest.raises(
            ContentPartError, match=exact("a content part needs a path, bytes, or a URL")
        ):
            image(empty)  # type: ignore[arg-type]


def test_extensions_come_from_the_table_only(tmp_path: Path) -> None:
    shot = tmp_path / "SHOT.PNG"
    shot.write_bytes(FIXTURE_PNG.read_bytes())
    assert image(shot).mimeType == "image/png"
    odd = tmp_path / "chart.xyz"
    odd.write_bytes(b"x")
    with pytest.raises(ContentPartError) as caught:
        image(odd)
    assert str(caught.value) == 'unknown file extension ".xyz" — pass an explicit mime_type'
    bare = tmp_path / "README"
    bare.write_bytes(b"x")
    with pytest.raises(
        ContentPartError, match=exact("file has no extension — pass an explicit mime_type")
    ):
        image(bare)
    assert content.file(bare, mime_type="application/pdf").type == "file"
    with pytest.raises(FileNotFoundError):
        image(tmp_path / "missing.png")
    # the constructor fixes the type, whatever the mime; an explicit name wins
    p = content.audio(FIXTURE_PNG, name="x.wav")
    assert (p.type, p.mimeType, p.name) == ("audio", "image/png", "x.wav")
    assert dict(content.MEDIA_TYPES) == toolnexus.MEDIA_TYPES
    assert len(content.MEDIA_TYPES) == 8


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"type": "text"}, "a text part needs text"),
        (
            {"type": "video", "mimeType": "video/mp4", "data": "AA=="},
            'unknown content part type "video"',
        ),
        ({"type": "image", "data": "AA=="}, "a image part needs a mimeType"),
        (
            {
                "type": "file",
                "mimeType": "application/pdf",
                "data": "AA==",
                "url": "https://x.test/a",
            },
            "a file part carries both data and url — exactly one is allowed",
        ),
        (
            {"type": "audio", "mimeType": "audio/wav"},
            "a audio part carries neither data nor url — exactly one is required",
        ),
        (
            {"type": "image", "mimeType": "image/png", "url": "data:image/png;base64,AA=="},
            "a data: URL belongs in data — build the part with image()/file()/audio()",
        ),
    ],
)
def test_part_validation_messages(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ContentPartError) as caught:
        part(**fields)
    assert str(caught.value) == message
    assert isinstance(caught.value, ValueError)
    assert isinstance(caught.value, toolnexus.ToolnexusError)


def test_canonical_dicts() -> None:
    assert to_dict(toolnexus.text("hi")) == {"type": "text", "text": "hi"}
    link = part(type="file", mimeType="application/pdf", url="https://x.test/r.pdf", name="")
    assert to_dict(link) == {
        "type": "file",
        "mimeType": "application/pdf",
        "url": "https://x.test/r.pdf",
    }
    assert from_dict({}) == ContentPart(type="")
    assert is_part_dict({"type": "text", "text": "x"})
    assert is_part_dict({"type": "image", "mimeType": "image/png", "data": "AA=="})
    for block in (
        {"type": "image_url", "image_url": {"url": "https://x.test/a.png"}},
        {"type": "input_audio", "input_audio": {"data": "AA==", "format": "mp3"}},
        {
            "type": "file",
            "file": {"filename": "a.pdf", "file_data": "data:application/pdf;base64,AA=="},
        },
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}},
        {"type": "text", "text": 3},
        "text",
    ):
        assert not is_part_dict(block)
    normal = normalize_parts(["a", image(FIXTURE_PNG), {"type": "text", "text": "b"}])
    assert [p["type"] for p in normal] == ["text", "image", "text"]
    assert json.loads(json.dumps(normal)) == normal
    with pytest.raises(ContentPartError, match=exact("not a content part: int")):
        normalize_parts([3])  # type: ignore[list-item]
    with pytest.raises(ContentPartError, match=exact("not a content part: dict")):
        normalize_parts([{"type": "image_url", "image_url": {"url": "https://x.test/a.png"}}])
    with pytest.raises(ContentPartError, match="a image part needs a mimeType"):
        normalize_parts([ContentPart(type="image", data="AA==")])


def test_size_caps() -> None:
    with pytest.raises(ContentPartError) as caught:
        image(FIXTURE_PNG, max_part_bytes=10)
    assert (
        str(caught.value) == "content part is 82 decoded bytes, over the maxPartBytes limit of 10"
    )
    assert image(FIXTURE_PNG, max_part_bytes=82).data == GOLDEN_B64
    toolnexus.set_max_part_bytes(81)
    assert toolnexus.get_max_part_bytes() == 81
    with pytest.raises(
        ContentPartError, match="82 decoded bytes, over the maxPartBytes limit of 81"
    ):
        image(FIXTURE_PNG)
    with pytest.raises(ContentPartError, match="limit of 81"):
        image(f"data:image/png;base64,{GOLDEN_B64}")
    toolnexus.set_max_part_bytes(82)
    assert image(FIXTURE_PNG).data == GOLDEN_B64
    assert image("https://x.test/big.png").url  # a URL part has size 0
    for bad in (-1, 1.5, True, "10"):
        with pytest.raises(ValueError):
            toolnexus.set_max_part_bytes(bad)  # type: ignore[arg-type]
    assert toolnexus.get_max_part_bytes() == 82
    assert [decoded_len(x) for x in (None, "", "AA==", "AAA=", "AAAA", GOLDEN_B64)] == [
        0,
        0,
        1,
        2,
        3,
        82,
    ]


def test_summaries_and_token_estimates() -> None:
    fixture = image(FIXTURE_PNG)
    assert summarize(fixture) == {"type": "image", "mimeType": "image/png", "bytes": 82}
    assert summarize(to_dict(fixture)) == summarize(fixture)
    assert summarize("hello") == {"type": "text", "mimeType": None, "bytes": 0}
    assert estimate_tokens(fixture) == 85
    assert estimate_tokens(image("https://x.test/a.png")) == 85
    big = image(bytes(2_000_000), mime_type="image/png")
    assert estimate_tokens(big) == 2666
    assert estimate_tokens("abcdefgh") == 2
    assert estimate_tokens("") == 1
    assert estimate_tokens({"type": "text", "text": "abcd" * 10}) == 10


def test_descriptions_and_placeholders() -> None:
    fixture = image(FIXTURE_PNG)
    assert describe_part(fixture) == "image (image/png, 82 bytes)"
    assert (
        placeholder_text(fixture, "anthropic") == "[unsupported image part (image/png, 82 bytes)]"
    )
    link = incoming_part(url="file:///data/r.bin")
    assert placeholder_text(link, "openai") == (
        "[unsupported file part (application/octet-stream, file:///data/r.bin)]"
    )
    assert describe_part(link) == "file (application/octet-stream, file:///data/r.bin)"


def test_incoming_parts_for_other_sources() -> None:
    wrapped = GOLDEN_B64[:40] + "\r\n " + GOLDEN_B64[40:]
    assert incoming_part(data=wrapped, mime_type="image/png") == part(
        type="image", mimeType="image/png", data=GOLDEN_B64
    )
    assert incoming_part(data="AA==", name="r.pdf").type == "file"
    assert incoming_part(data="AA==", name="r.pdf").mimeType == "application/pdf"
    assert incoming_part(data="AA==").mimeType == "application/octet-stream"
    assert incoming_part(data="AA==", mime_type="audio/ogg").type == "audio"
    assert incoming_part(data="AA==", mime_type="image/png", type="file").type == "file"
    from_uri = incoming_part(url=f"data:image/png;base64,{GOLDEN_B64}", name="")
    assert (from_uri.data, from_uri.url, from_uri.name) == (GOLDEN_B64, None, None)


FIX = {"type": "image", "mimeType": "image/png", "data": GOLDEN_B64, "name": "dir/fixture.png"}


@pytest.mark.parametrize(
    ("p", "style", "block"),
    [
        ({"type": "text", "text": "hi"}, "openai", {"type": "text", "text": "hi"}),
        ({"type": "text", "text": "hi"}, "anthropic", {"type": "text", "text": "hi"}),
        (
            FIX,
            "openai",
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{GOLDEN_B64}"}},
        ),
        (
            FIX,
            "anthropic",
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": GOLDEN_B64},
            },
        ),
        (
            {"type": "image", "mimeType": "image/webp", "url": "https://x.test/a.webp"},
            "openai",
            {"type": "image_url", "image_url": {"url": "https://x.test/a.webp"}},
        ),
        (
            {"type": "image", "mimeType": "image/gif", "url": "http://x.test/a.gif"},
            "anthropic",
            {"type": "image", "source": {"type": "url", "url": "http://x.test/a.gif"}},
        ),
        (
            {"type": "file", "mimeType": "application/pdf", "data": "JVBE", "name": "docs/r.pdf"},
            "openai",
            {
                "type": "file",
                "file": {"filename": "r.pdf", "file_data": "data:application/pdf;base64,JVBE"},
            },
        ),
        (
            {"type": "file", "mimeType": "application/pdf", "data": "JVBE"},
            "openai",
            {
                "type": "file",
                "file": {"filename": "file", "file_data": "data:application/pdf;base64,JVBE"},
            },
        ),
        (
            {"type": "file", "mimeType": "application/pdf", "data": "JVBE"},
            "anthropic",
            {
                "type": "document",
                "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBE"},
            },
        ),
        (
            {"type": "file", "mimeType": "application/pdf", "url": "https://x.test/r.pdf"},
            "anthropic",
            {"type": "document", "source": {"type": "url", "url": "https://x.test/r.pdf"}},
        ),
        (
            {"type": "audio", "mimeType": "audio/mpeg", "data": "SUQz"},
            "openai",
            {"type": "input_audio", "input_audio": {"data": "SUQz", "format": "mp3"}},
        ),
        (
            {"type": "audio", "mimeType": "audio/mp3", "data": "SUQz"},
            "openai",
            {"type": "input_audio", "input_audio": {"data": "SUQz", "format": "mp3"}},
        ),
        (
            {"type": "audio", "mimeType": "audio/x-wav", "data": "UklG"},
            "openai",
            {"type": "input_audio", "input_audio": {"data": "UklG", "format": "wav"}},
        ),
    ],
)
def test_encode_part_blocks(p: dict[str, Any], style: str, block: dict[str, Any]) -> None:
    assert encode_part(p, style) == block
    assert encode_part(from_dict(p), style) == block


@pytest.mark.parametrize(
    ("p", "style", "message"),
    [
        (
            {"type": "audio", "mimeType": "audio/mpeg", "data": "SUQz"},
            "anthropic",
            'no "anthropic" block shape for a audio part (audio/mpeg)',
        ),
        (
            {"type": "file", "mimeType": "application/pdf", "url": "https://x.test/r.pdf"},
            "openai",
            'no "openai" block shape for a file part (application/pdf)',
        ),
        (
            {"type": "image", "mimeType": "image/svg+xml", "data": "PHN2"},
            "openai",
            'no "openai" block shape for a image part (image/svg+xml)',
        ),
        (
            {"type": "image", "mimeType": "image/svg+xml", "data": "PHN2"},
            "anthropic",
            'no "anthropic" block shape for a image part (image/svg+xml)',
        ),
        (FIX, "gemini", 'no "gemini" block shape for a image part (image/png)'),
        ({"type": "text", "text": "hi"}, "gemini", 'no "gemini" block shape for a text part'),
        (
            {"type": "image", "mimeType": "image/png", "url": "file:///tmp/a.png"},
            "anthropic",
            'no "anthropic" block shape for a image part (image/png)',
        ),
        (
            {"type": "file", "mimeType": "text/csv", "data": "YSxi"},
            "anthropic",
            'no "anthropic" block shape for a file part (text/csv)',
        ),
    ],
)
def test_encode_part_refusals(p: dict[str, Any], style: str, message: str) -> None:
    with pytest.raises(UnsupportedPartError) as caught:
        encode_part(p, style)
    assert str(caught.value) == message
    assert (caught.value.part_type, caught.value.mime_type, caught.value.style) == (
        p["type"],
        p.get("mimeType"),
        style,
    )
    assert GOLDEN_B64 not in str(caught.value)
    assert isinstance(caught.value, toolnexus.ToolnexusError)
    assert isinstance(caught.value, ValueError)


def test_root_exports() -> None:
    for name in (
        "ContentPart",
        "ContentPartError",
        "UnsupportedPartError",
        "MEDIA_TYPES",
        "text",
        "image",
        "file",
        "audio",
        "part",
        "encode_part",
        "estimate_tokens",
        "summarize",
        "get_max_part_bytes",
        "set_max_part_bytes",
    ):
        assert getattr(toolnexus, name) is getattr(content, name)
        assert name in toolnexus.__all__
    assert os.fspath(FIXTURE_PNG)


def test_tool_result_parts() -> None:
    fixture = image(FIXTURE_PNG)
    result = toolnexus.ToolResult("chart", False, None, [fixture, "note"])
    assert result.parts == [to_dict(fixture), {"type": "text", "text": "note"}]
    assert GOLDEN_B64 not in repr(result) and "data=<82 bytes>" in repr(result)
    assert toolnexus.ToolResult("x", parts=[]).parts is None
    assert toolnexus.ToolResult("x").parts is None
    assert toolnexus.ToolResult("x", True, {"a": 1}) == toolnexus.ToolResult(
        "x", True, {"a": 1}, None
    )
    with pytest.raises(ContentPartError, match="not a content part: int"):
        toolnexus.ToolResult("x", parts=[1])  # type: ignore[list-item]
