"""Serve addresses: parsing, loopback detection and the URL reported by the handle."""

from __future__ import annotations

import re

import pytest

from toolnexus.serve._addr import is_loopback, parse_addr, public_url


@pytest.mark.parametrize(
    ("addr", "expected"),
    [
        ("127.0.0.1:8080", ("127.0.0.1", 8080)),
        (":0", ("127.0.0.1", 0)),
        ("0.0.0.0:80", ("0.0.0.0", 80)),
        ("[::1]:8080", ("::1", 8080)),
        ("[::]:1", ("::", 1)),
        ("localhost:65535", ("localhost", 65535)),
    ],
)
def test_parse_addr(addr, expected):
    assert parse_addr(addr) == expected


@pytest.mark.parametrize(
    ("addr", "problem"),
    [
        ("8080", 'expected "host:port"'),
        ("::1:8080", "put an IPv6 host in brackets"),
        ("[::1:8080", 'unclosed "["'),
        ("[nothost]:80", "is not an IPv6 address"),
        ("127.0.0.1:65536", "port must be a number from 0 to 65535"),
        ("127.0.0.1:-1", "port must be a number"),
        ("127.0.0.1:http", "port must be a number"),
        ("127.0.0.1:", "port must be a number"),
    ],
)
def test_bad_addresses_say_what_to_fix(addr, problem):
    with pytest.raises(ValueError, match=re.escape(problem)) as caught:
        parse_addr(addr)
    assert addr in str(caught.value)


def test_loopback_and_urls():
    assert all(is_loopback(h) for h in ["127.0.0.1", "127.9.9.9", "::1", "localhost", "LOCALHOST"])
    assert not any(is_loopback(h) for h in ["0.0.0.0", "::", "10.0.0.1", "example.com", ""])
    assert public_url("0.0.0.0", 81) == "http://127.0.0.1:81"
    assert public_url("::", 81) == "http://127.0.0.1:81"
    assert public_url("::1", 81) == "http://[::1]:81"
    assert public_url("localhost", 81) == "http://localhost:81"
