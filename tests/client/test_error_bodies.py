"""`toolnexus.client`'s error-body helpers, as the published package names and behaves them."""

from __future__ import annotations

import pytest

from toolnexus.client import (
    MAX_ERROR_BODY,
    REDACTED,
    capped_error_body,
    redact_identifiers,
    safe_error_body,
)


def test_constants() -> None:
    assert (MAX_ERROR_BODY, REDACTED) == (200, "«redacted»")


@pytest.mark.parametrize(
    ("text", "safe"),
    [
        ('{"user_id":"u1","org_id":7}', '{"user_id":"«redacted»","org_id":"«redacted»"}'),
        ('x "account_id" : "a b" y', 'x "account_id" : "«redacted»" y'),
        ('{"organization": null, "a": 1}', '{"organization": "«redacted»", "a": 1}'),
        ('[{"user_id": true}] trailing', '[{"user_id": "«redacted»"}] trailing'),
        ('{"user_id": "a\\"b", "k": 1}', '{"user_id": "«redacted»", "k": 1}'),
        # an object value goes whole, and the body keeps its shape
        ('{"organization": {"id": "o1"}, "k": 1}', '{"organization": "«redacted»", "k": 1}'),
        ('{"user_id": "cut off', '{"user_id": "«redacted»"'),
        ('{"User_ID": "a", "userid": "b", "project_id": "c"}', None),  # only the four keys
        ("  padded  ", "padded"),
    ],
)
def test_safe_error_body_redacts_identifier_values(text: str, safe: str | None) -> None:
    assert safe_error_body(400, text) == (text if safe is None else safe)
    assert redact_identifiers(text.strip()) == safe_error_body(400, text)


@pytest.mark.parametrize("status", [401, 403])
def test_auth_answers_lose_their_body(status: int) -> None:
    assert safe_error_body(status, "Invalid key sk-abc") == ""
    assert capped_error_body(status, "Invalid key sk-abc") == ""


def test_the_message_form_is_capped_after_redaction() -> None:
    assert capped_error_body(500, "a" * MAX_ERROR_BODY) == "a" * MAX_ERROR_BODY
    assert capped_error_body(500, "a" * 500) == "a" * MAX_ERROR_BODY + "…"
    body = '{"user_id": "' + "u" * 300 + '"}'
    assert capped_error_body(400, body) == '{"user_id": "«redacted»"}'
    assert safe_error_body(404, "x" * 1000) == "x" * 1000  # never capped
