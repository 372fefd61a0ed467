"""Properties of the part model over generated content (derandomized, bounded)."""

from __future__ import annotations

import base64
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from toolnexus.content import (
    decoded_len,
    encode_part,
    estimate_tokens,
    from_dict,
    image,
    normalize_parts,
    placeholder_text,
    summarize,
    to_dict,
)

BOUNDED = settings(derandomize=True, max_examples=60, deadline=None, database=None)


@BOUNDED
@given(st.binary(max_size=3000), st.sampled_from(["image/png", "image/jpeg", "image/webp"]))
def test_bytes_round_trip_through_json(raw: bytes, mime: str) -> None:
    p = image(raw, mime_type=mime, name="shot")
    assert decoded_len(p.data) == len(raw)
    assert base64.b64decode(p.data or "") == raw
    assert from_dict(json.loads(json.dumps(to_dict(p)))) == p
    assert normalize_parts([p]) == [to_dict(p)]
    assert summarize(p) == {"type": "image", "mimeType": mime, "bytes": len(raw)}
    assert estimate_tokens(p) == max(85, len(raw) // 750)


@BOUNDED
@given(st.binary(min_size=30, max_size=600))
def test_blocks_carry_the_base64_once_and_texts_never(raw: bytes) -> None:
    p = image(raw, mime_type="image/png")
    b64 = p.data or ""
    for style in ("openai", "anthropic"):
        assert json.dumps(encode_part(p, style)).count(b64) == 1  # verbatim, not re-encoded
        assert b64 not in placeholder_text(p, style)
    assert b64 not in repr(p)
    assert b64 not in json.dumps(summarize(p))


@BOUNDED
@given(st.text(max_size=200))
def test_text_parts_and_estimates(value: str) -> None:
    assert normalize_parts([value]) == [{"type": "text", "text": value}]
    assert estimate_tokens(value) == max(1, len(value) // 4)
