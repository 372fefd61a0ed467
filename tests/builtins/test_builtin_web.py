"""`webfetch` against a real HTTP server on 127.0.0.1: every outcome row of builtins.md."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from support.builtin_tools import tools_for
from toolnexus.types import Tool, ToolContext

PAGE = """<!DOCTYPE html>
<html><head><title>Test page</title>
<style>body { color: red; }</style>
<script>var tracking = "do not show";</script></head>
<body>
<h1>Main title</h1>
<p>Some <b>bold</b> text and a <a href="https://example.com/doc">link</a>.</p>



<h2>List</h2>
<ul><li>first item</li><li>second item</li></ul>
<pre><code class="language-python">def f():
    return 1
</code></pre>
<noscript>enable js</noscript>
</body></html>"""

ROUTES: dict[str, tuple[int, str | None, bytes]] = {
    "/page.html": (200, "text/html; charset=utf-8", PAGE.encode()),
    "/plain.txt": (200, "text/plain", b"just <b>text</b>\n"),
    "/data.json": (200, "application/json", b'{"a": 1}'),
    "/latin1.html": (200, "text/html; charset=iso-8859-1", "<p>caf\xe9</p>".encode("latin-1")),
    "/meta-charset.html": (
        200,
        "text/html",
        '<html><head><meta charset="iso-8859-1"></head><p>na\xefve</p></html>'.encode("latin-1"),
    ),
    "/untyped": (200, None, b"<!doctype html><h3>Sniffed</h3>"),
    "/big.html": (200, "text/html", b"<p>" + b"word " * 20000 + b"</p>"),
    "/not-found": (404, "text/html", b"<h1>Nope</h1>"),
    "/boom": (500, "text/plain", b"internal"),
    "/created": (201, "text/plain", b"made"),
}


class Handler(BaseHTTPRequestHandler):
    release: threading.Event
    slow_hits: list[str]

    def do_GET(self) -> None:
        if self.path == "/slow":
            self.slow_hits.append(self.path)
            self.release.wait(10)
            return
        if self.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", "/plain.txt")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        status, ctype, body = ROUTES[self.path]
        self.send_response(status)
        if ctype is not None:
            self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, type[Handler]]]:
    handler = type("H", (Handler,), {"release": threading.Event(), "slow_hits": []})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    # A short poll interval: shutdown() waits for one poll.
    thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", handler
    finally:
        handler.release.set()
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture(scope="module")
def base(server: tuple[str, type[Handler]]) -> str:
    return server[0]


@pytest.fixture
def fetch() -> Tool:
    return tools_for()["webfetch"]


async def test_html_format_is_the_body_unchanged(base: str, fetch: Tool) -> None:
    result = await fetch.execute({"url": f"{base}/page.html", "format": "html"})
    assert result.output == PAGE
    assert result.metadata == {"status": 200, "format": "html"}
    assert not result.is_error


async def test_markdown_is_real_markdown(base: str, fetch: Tool) -> None:
    result = await fetch.execute({"url": f"{base}/page.html"})
    assert result.metadata == {"status": 200, "format": "markdown"}
    md = result.output
    assert "# Main title" in md.split("\n")
    assert "## List" in md.split("\n")
    assert "Some **bold** text and a [link](https://example.com/doc)." in md
    assert "- first item\n- second item" in md
    assert "```python\ndef f():\n    return 1\n```" in md
    assert "tracking" not in md and "color: red" not in md
    assert "\n\n\n" not in md
    assert md == md.strip()


async def test_text_format(base: str, fetch: Tool) -> None:
    result = await fetch.execute({"url": f"{base}/page.html", "format": "text"})
    assert result.metadata == {"status": 200, "format": "text"}
    assert result.output == (
        "Test page\n\nMain title\n\nSome bold text and a link.\n\nList\n\nfirst item\n\n"
        "second item\n\ndef f():\n    return 1"
    )


async def test_unknown_format_is_markdown(base: str, fetch: Tool) -> None:
    result = await fetch.execute({"url": f"{base}/page.html", "format": "pdf"})
    assert result.metadata == {"status": 200, "format": "markdown"}
    assert "# Main title" in result.output


@pytest.mark.parametrize("fmt", ["markdown", "text"])
async def test_non_html_bodies_are_unchanged(base: str, fetch: Tool, fmt: str) -> None:
    plain = await fetch.execute({"url": f"{base}/plain.txt", "format": fmt})
    assert plain.output == "just <b>text</b>\n"
    data = await fetch.execute({"url": f"{base}/data.json", "format": fmt})
    assert data.output == '{"a": 1}'


async def test_charsets(base: str, fetch: Tool) -> None:
    assert (await fetch.execute({"url": f"{base}/latin1.html"})).output == "café"
    assert (await fetch.execute({"url": f"{base}/meta-charset.html", "format": "text"})).output == (
        "naïve"
    )


async def test_untyped_html_is_sniffed(base: str, fetch: Tool) -> None:
    assert (await fetch.execute({"url": f"{base}/untyped"})).output == "### Sniffed"


async def test_redirects_are_followed(base: str, fetch: Tool) -> None:
    result = await fetch.execute({"url": f"{base}/redirect"})
    assert result.output == "just <b>text</b>\n"
    assert result.metadata == {"status": 200, "format": "markdown"}


@pytest.mark.parametrize(("path", "status"), [("/not-found", 404), ("/boom", 500)])
async def test_non_2xx(base: str, fetch: Tool, path: str, status: int) -> None:
    result = await fetch.execute({"url": base + path})
    assert result.is_error
    assert result.output == f"HTTP {status}"
    assert result.metadata == {"status": status}


async def test_other_2xx_is_success(base: str, fetch: Tool) -> None:
    result = await fetch.execute({"url": f"{base}/created"})
    assert (result.output, result.metadata) == ("made", {"status": 201, "format": "markdown"})


async def test_timeout_in_seconds(base: str, fetch: Tool) -> None:
    result = await fetch.execute({"url": f"{base}/slow", "timeout": 0.2})
    assert result.is_error
    assert result.output == "webfetch: request timed out after 0.2s"
    ctx_bound = await fetch.execute({"url": f"{base}/slow"}, ToolContext(timeout=0.1))
    assert ctx_bound.output == "webfetch: request timed out after 0.1s"


async def test_signal_cancels(server: tuple[str, type[Handler]], fetch: Tool) -> None:
    base, handler = server
    signal = asyncio.Event()
    hits = len(handler.slow_hits)
    task = asyncio.create_task(fetch.execute({"url": f"{base}/slow"}, ToolContext(signal=signal)))
    deadline = time.monotonic() + 10
    while len(handler.slow_hits) == hits and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    signal.set()
    result = await task
    assert result.is_error
    assert result.output == "webfetch: cancelled"


async def test_task_cancellation_propagates(base: str, fetch: Tool) -> None:
    task = asyncio.create_task(fetch.execute({"url": f"{base}/slow"}))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_network_error(fetch: Tool) -> None:
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = await fetch.execute({"url": f"http://127.0.0.1:{port}/"})
    assert result.is_error
    assert result.output.startswith("webfetch: ")
    assert len(result.output) > len("webfetch: ")


@pytest.mark.parametrize(
    ("url", "message"),
    [
        (
            "file:///etc/passwd",
            "webfetch: unsupported URL scheme (file:); only http and https URLs",
        ),
        ("ftp://127.0.0.1/x", "webfetch: unsupported URL scheme (ftp:); only http and https URLs"),
        ("127.0.0.1/page", "webfetch: unsupported URL scheme (none); only http and https URLs"),
        ("http:///path", "webfetch: invalid URL (no host): http:///path"),
        ("", "webfetch: url is required"),
    ],
)
async def test_refused_urls(fetch: Tool, url: str, message: str) -> None:
    result = await fetch.execute({"url": url})
    assert result.is_error
    assert result.output == message


async def test_output_cap(base: str) -> None:
    fetch = tools_for({"max_output_bytes": 1000})["webfetch"]
    result = await fetch.execute({"url": f"{base}/big.html", "format": "html"})
    assert result.output.endswith(
        "\n[truncated: 1000 bytes of 97.7 KB shown; "
        "save the page to a file (bash: curl -o) and read it with offset/limit]"
    )
    assert result.metadata == {"status": 200, "format": "html"}
    uncapped = tools_for({"max_output_bytes": 0})["webfetch"]
    whole = await uncapped.execute({"url": f"{base}/big.html", "format": "html"})
    assert len(whole.output) == 100007
