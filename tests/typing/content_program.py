# pyright: strict
"""A user's program with content parts: it must type-check under --strict."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from toolnexus import (
    MEDIA_TYPES,
    ContentPart,
    ContentPartError,
    ToolResult,
    UnsupportedPartError,
    audio,
    create_client,
    encode_part,
    estimate_tokens,
    file,
    get_max_part_bytes,
    image,
    part,
    set_max_part_bytes,
    summarize,
    text,
    tool,
)
from toolnexus.content import describe_part, from_dict, incoming_part, to_dict


@tool
def chart(quarter: str) -> list[str | ContentPart]:
    """A quarter's chart."""
    return [f"Sales for {quarter}", image(b"\x89PNG", mime_type="image/png")]


async def main() -> None:
    client = create_client(
        base_url="http://127.0.0.1:9/v1",
        style="openai",
        model="m",
        api_key="k",
        on_unsupported_part="text",
        max_part_bytes=5_000_000,
    )
    shot: ContentPart = image(Path("shot.png"), name="shot.png")
    doc = file(io.BytesIO(b"%PDF"), mime_type="application/pdf")
    voice = audio("https://example.com/a.mp3")
    result = await client.run(["Compare", shot, doc, to_dict(voice), text("closely")])
    await client.run("text still works")
    made = ToolResult("drawn", parts=[shot, "legend"])
    parts: list[dict[str, Any]] = made.parts or []
    size: int = summarize(parts[0])["bytes"] + estimate_tokens(shot)
    block: dict[str, Any] = encode_part(
        part(type="image", mimeType="image/png", data="AA=="), "openai"
    )
    linked = incoming_part(url="file:///data/r.bin")
    mime, kind = MEDIA_TYPES["png"]
    set_max_part_bytes(get_max_part_bytes())
    try:
        encode_part(from_dict(parts[0]), "gemini")
    except UnsupportedPartError as exc:
        print(exc.part_type, exc.mime_type, exc.style)
    except ContentPartError:
        pass
    print(result.text, size, block, describe_part(linked), mime, kind, chart.name)
