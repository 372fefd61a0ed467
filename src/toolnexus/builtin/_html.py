"""HTML to markdown (markdownify) and to plain text (the stdlib parser), for `webfetch`."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any

_BLANK_RUNS = re.compile(r"\n{3,}")


class _TextExtractor(HTMLParser):
    """Visible text of an HTML document: scripts/styles dropped, blocks on their own lines."""

    _SKIP = frozenset({"script", "style", "noscript", "template", "svg"})
    _BLOCK = frozenset(
        {
            "address", "article", "aside", "blockquote", "br", "dd", "details", "div", "dl",
            "dt", "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4",
            "h5", "h6", "header", "hr", "li", "main", "nav", "ol", "p", "pre", "section",
            "summary", "table", "td", "th", "title", "tr", "ul",
        }
    )  # fmt: skip

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skipping = 0
        self._pre = 0
        self._line_start = True

    def _break(self) -> None:
        self.parts.append("\n")
        self._line_start = True

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._SKIP:
            self._skipping += 1
        elif tag in self._BLOCK:
            self._break()
            if tag == "pre":
                self._pre += 1

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._BLOCK:
            self._break()

    def handle_endtag(self, tag: str) -> None:
        if tag in self._SKIP:
            self._skipping = max(0, self._skipping - 1)
        elif tag in self._BLOCK:
            self._break()
            if tag == "pre":
                self._pre = max(0, self._pre - 1)

    def handle_data(self, data: str) -> None:
        if self._skipping:
            return
        if not self._pre:  # preformatted text keeps its whitespace, the rest is collapsed
            data = re.sub(r"\s+", " ", data)
            if self._line_start:
                data = data.lstrip(" ")
        if data:
            self.parts.append(data)
            self._line_start = data.endswith("\n")


def html_to_text(html: str) -> str:
    """Plain text: scripts and styles removed, tags stripped, blank-line runs collapsed, trimmed."""
    parser = _TextExtractor()
    parser.feed(html)
    parser.close()
    lines = [line.rstrip() for line in "".join(parser.parts).split("\n")]
    return _BLANK_RUNS.sub("\n\n", "\n".join(lines)).strip("\n")


def _code_language(el: Any) -> str:
    """`python` for `<pre><code class="language-python">` (or a `lang-` class on either)."""
    for node in (el, el.find("code")):
        for cls in (node.get("class") or ()) if node is not None else ():
            if cls.startswith(("language-", "lang-")):
                return str(cls.split("-", 1)[1])
    return ""


def html_to_markdown(html: str) -> str:
    """Real markdown (headings, links, lists, code blocks, tables) via markdownify."""
    from bs4 import BeautifulSoup  # heavy: load on first use (markdownify depends on it)
    from markdownify import MarkdownConverter

    soup = BeautifulSoup(html, "html.parser")
    for node in soup(["script", "style", "noscript", "template", "svg"]):
        node.decompose()
    converter = MarkdownConverter(
        heading_style="ATX", bullets="-", code_language_callback=_code_language
    )
    text = converter.convert_soup(soup)
    return _BLANK_RUNS.sub("\n\n", text).strip()
