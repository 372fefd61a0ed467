"""Split a `SKILL.md` into YAML frontmatter fields and the markdown body."""

from __future__ import annotations

import datetime
from functools import cache
from typing import Any

from toolnexus.errors import MalformedFrontmatter as MalformedFrontmatter  # re-exported


@cache
def _loader() -> Any:
    # PyYAML costs ~20 ms to import, so it loads on the first SKILL.md that has frontmatter.
    # The C loader is the same safe schema as `yaml.safe_load`, several times faster.
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _yaml_error_types() -> tuple[type[BaseException], ...]:
    import yaml

    return (yaml.YAMLError, ValueError, TypeError, RecursionError)


def split_frontmatter(text: str) -> tuple[str | None, str]:
    """`(frontmatter, body)`; `frontmatter` is `None` when the text has no opening fence.

    The opening fence is `---` plus a line break at the very start. The block ends at the first
    later line break followed by `---`; the body starts after that fence, minus one line break.
    """
    if text.startswith("---\n"):
        start = 4
    elif text.startswith("---\r\n"):
        start = 5
    else:
        return None, text
    end = text.find("\n---", start)  # strictly after the opening line break
    if end < 0:
        raise MalformedFrontmatter("the frontmatter has no closing --- line")
    block = text[start:end]
    if block.endswith("\r"):
        block = block[:-1]
    body_at = end + 4
    if text.startswith("\r\n", body_at):
        body_at += 2
    elif text.startswith("\n", body_at):
        body_at += 1
    return block, text[body_at:]


def _scalar_text(value: Any) -> str | None:
    """A frontmatter scalar as trimmed text; `None` for lists, mappings and nulls."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, datetime.date)):
        return str(value).strip()
    return None


def parse_fields(block: str) -> dict[str, str]:
    """The scalar fields of a YAML frontmatter block, stringified and trimmed.

    A block YAML refuses (most often an unquoted value holding `: `, as in
    `description: Use this when … Trigger on: …`) is read line by line instead, as the
    published package and Claude Code read it; without a plain `name` that way either it
    stays malformed, with YAML's reason.
    """
    try:
        data = _load(block)
    except _yaml_error_types() as exc:
        fields = _line_fields(block)
        name = fields.get("name", "")
        if not name or name[0] in _YAML_INDICATORS:  # `name: [x` is broken YAML, not a name
            raise MalformedFrontmatter(_one_line(exc)) from None
        return fields
    if not isinstance(data, dict):
        return {}
    fields = {}
    for key, value in data.items():
        text = _scalar_text(value)
        if text is not None:
            fields[str(key)] = text
    return fields


_YAML_INDICATORS = frozenset("[]{}&*!|>@`%")


def _line_fields(block: str) -> dict[str, str]:
    """`key: value` lines at the left margin: the value is all after the first colon, trimmed,
    one pair of matching quotes removed. Indented lines, comments, empty values and repeated
    keys (the first wins) are left out."""
    fields: dict[str, str] = {}
    for line in block.splitlines():
        if not line or line[0] in " \t#":
            continue
        key, colon, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if not colon or not key or key in fields:
            continue
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        if value:
            fields[key] = value
    return fields


_STR_TAG = "tag:yaml.org,2002:str"


def _load(block: str) -> Any:
    """`yaml.safe_load(block)`, with a shortcut for the usual all-string mapping.

    The generic constructor costs more than the C parser on small documents; when every key
    and value is a plain string scalar the mapping is read straight off the parsed nodes, with
    exactly the result the constructor would give. Anything else goes through the constructor.
    """
    from yaml.nodes import MappingNode, ScalarNode

    loader = _loader()(block)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if isinstance(node, MappingNode):
            out: dict[str, str] = {}
            for key, value in node.value:
                if not (
                    isinstance(key, ScalarNode)
                    and isinstance(value, ScalarNode)
                    and key.tag == _STR_TAG
                    and value.tag == _STR_TAG
                ):
                    break
                out[key.value] = value.value
            else:
                return out
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def frontmatter_json(block: str) -> dict[str, Any]:
    """The frontmatter block as the JSON object the MCP Skills extension carries (every field,
    verbatim; dates as ISO text). A block that is not a YAML mapping raises
    `MalformedFrontmatter`."""
    try:
        data = _load(block)
    except _yaml_error_types() as exc:
        raise MalformedFrontmatter(_one_line(exc)) from None
    if not isinstance(data, dict):
        raise MalformedFrontmatter("the frontmatter is not a mapping")
    return {str(k): _as_json(v) for k, v in data.items()}


def _as_json(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _as_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_json(v) for v in value]
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    return value
