"""SSE decoding: events come out the same however the bytes are split."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from toolnexus.client._sse import SSEDecoder

STREAM = (
    ": a comment\n"
    "event: message_start\r\n"
    'data: {"x":"é✓"}\r\n'
    "\r\n"
    "data: first line\n"
    "data: second line\n"
    "id: 7\n"
    "\n"
    "data:no-space\r"
    "\r"
    "event: ping\n"
    "\n"
    "data: [DONE]\n\n"
).encode()

EXPECTED = [
    ("message_start", '{"x":"é✓"}'),
    ("", "first line\nsecond line"),
    ("", "no-space"),
    ("", "[DONE]"),
]


def decode(chunks):
    decoder = SSEDecoder()
    out = []
    for chunk in chunks:
        out.extend(decoder.feed(chunk))
    out.extend(decoder.flush())
    return out


def test_whole_stream():
    assert decode([STREAM]) == EXPECTED


@settings(derandomize=True, max_examples=200)
@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=12))
def test_any_split_gives_the_same_events(cuts):
    points = sorted(set(cuts))
    chunks = [STREAM[a:b] for a, b in zip([0, *points], [*points, len(STREAM)], strict=True)]
    assert decode(chunks) == EXPECTED


def test_unterminated_last_event_is_flushed():
    assert decode([b"data: tail"]) == [("", "tail")]
