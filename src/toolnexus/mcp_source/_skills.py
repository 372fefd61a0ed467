"""Skills over MCP (`io.modelcontextprotocol/skills`, SEP-2640): the wire shapes of
`skills/list` and `skills/get`, and the skills of the connected servers that serve them.

The released `mcp` SDK (2.3) has the extension framework but not this extension, so its
request and result models are defined here, after the extension's specification, for both
sides (the gateway's provider in `serve/_mcp/_skills.py` uses them too). When the SDK ships its
own, this module is where its types replace these.

A server's listing is read when the toolkit is built (names and descriptions for the skills
prompt) and kept for its `ttlMs`: `server_skills` reads it again only once that has passed
(so a server's new and removed skills show up; `0`, the SDK's default, means every time),
keeping the `McpSkill` of an unchanged URI, and keeps the last listing when a new one fails.
The extension defines no list-changed notification. A skill's `SKILL.md` is read only when
the skill is loaded, checked against the listing's SHA-256 digest and size and its frontmatter
against the listed one, and kept per digest: a changed skill (a new digest after
`skills/get`) is read again, an unchanged one never. A skill whose files break the per-skill
limits (512 files, 16 MiB) or whose entry is malformed is left out with a warning.

Every other read of a file under a listed skill's root (`mcp_read_resource`, `skill_holding`)
goes through the skill too: a file its listing does not name is refused, and one whose bytes do
not match the listed digest and size is never used. Either failure first fetches the skill's
entry again (`skills/get`: the skill may have changed since it was listed) and is final only
when the fresh entry agrees.
"""

from __future__ import annotations

import base64
import hashlib
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal
from urllib.parse import urlsplit

import mcp_types as types
from pydantic import BaseModel, Field

from toolnexus._log import warn
from toolnexus.errors import ToolnexusError
from toolnexus.mcp_source._connection import MAX_PAGES
from toolnexus.mcp_source._features import _request, resource_result, wire_read
from toolnexus.skill._frontmatter import MalformedFrontmatter, frontmatter_json, split_frontmatter
from toolnexus.types import ToolResult, error_message

__all__ = [
    "MAX_SKILL_BYTES",
    "MAX_SKILL_FILES",
    "GetSkillParams",
    "GetSkillRequest",
    "GetSkillResult",
    "ListSkillsRequest",
    "ListSkillsResult",
    "McpSkill",
    "SkillEntry",
    "SkillFile",
    "SkillVerificationFailed",
    "digest_of",
    "server_skills",
    "skill_holding",
    "skill_root",
]

MAX_SKILL_FILES = 512
MAX_SKILL_BYTES = 16 * 1024 * 1024

# -- the wire ------------------------------------------------------------------------------------


class SkillFile(BaseModel):
    """One file of a skill (`SkillResource`): its URI, `sha256:<hex>` digest and byte size."""

    uri: str
    digest: str
    size: int = Field(ge=0)


class SkillEntry(BaseModel):
    """One skill (`Skill`): its `SKILL.md` URI, verbatim frontmatter, and its files (or
    `"dynamic"` when their content has no stable digest)."""

    uri: str
    frontmatter: dict[str, Any]
    resources: list[SkillFile] | Literal["dynamic"]


class GetSkillParams(types.RequestParams):
    uri: str


class ListSkillsRequest(types.Request[types.PaginatedRequestParams | None, Literal["skills/list"]]):
    method: Literal["skills/list"] = "skills/list"
    params: types.PaginatedRequestParams | None = None


class GetSkillRequest(types.Request[GetSkillParams, Literal["skills/get"]]):
    method: Literal["skills/get"] = "skills/get"
    params: GetSkillParams


class ListSkillsResult(types.PaginatedResult, types.CacheableResult):
    skills: list[SkillEntry]
    result_type: Literal["complete"] = "complete"


class GetSkillResult(types.CacheableResult):
    skill: SkillEntry
    result_type: Literal["complete"] = "complete"


def digest_of(data: bytes) -> str:
    """The extension's digest of a file's raw bytes."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def skill_root(uri: str) -> str:
    """The skill's root directory: its `SKILL.md` URI less `/SKILL.md`."""
    return uri.removesuffix("/SKILL.md")


class SkillVerificationFailed(ToolnexusError):
    """A skill's file did not match its listed digest, size or frontmatter."""


# -- a server's skills ----------------------------------------------------------------------------


@dataclass(eq=False)
class McpSkill:
    """One skill a connected server serves, named `<server>/<skill>` in the toolkit.

    `files` are the paths of its files relative to its root (`None` for a dynamic skill);
    `load()` reads its `SKILL.md` (verified, cached per digest) and answers the instructions
    after the frontmatter.
    """

    server: Any  # the `_Server` it came from
    name: str
    entry: SkillEntry
    _bodies: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def server_name(self) -> str:
        return str(self.server.name)

    @property
    def description(self) -> str | None:
        value = self.entry.frontmatter.get("description")
        return value if isinstance(value, str) else None

    @property
    def uri(self) -> str:
        return self.entry.uri

    @property
    def root(self) -> str:
        return skill_root(self.entry.uri)

    @property
    def files(self) -> tuple[str, ...] | None:
        if self.entry.resources == "dynamic":
            return None
        prefix = self.root + "/"
        return tuple(f.uri.removeprefix(prefix) for f in self.entry.resources)

    async def load(self) -> str:
        """The skill's instructions (its `SKILL.md` after the frontmatter), verified."""
        try:
            return await self._load()
        except SkillVerificationFailed:
            # Perhaps the skill changed since it was listed: its entry now, then once more.
            fresh = await self.refresh()
            if fresh is None:
                raise
            return await self._load()

    async def refresh(self) -> SkillEntry | None:
        """The skill's entry as the server has it now (`skills/get`), kept for later loads;
        `None` when the server no longer serves it or the entry is unusable."""
        server = self.server
        session = server.session()
        request = GetSkillRequest(params=GetSkillParams(uri=self.uri))
        result = await _request(
            session,
            "skills/get",
            self.uri,
            lambda: session.send_request(request, GetSkillResult),
            server.timeout,
        )
        entry: SkillEntry = result.skill
        if _unusable(entry) is not None or entry.uri != self.uri:
            return None
        self.entry = entry
        return entry

    async def _load(self) -> str:
        entry = self.entry
        listed = _listed_file(entry, entry.uri)
        if listed is not None and listed.digest in self._bodies:
            return self._bodies[listed.digest]
        data = await self.read(entry.uri)
        try:
            text = data.decode("utf-8-sig")
            block, body = split_frontmatter(text)
            front = frontmatter_json(block) if block is not None else {}
        except (UnicodeDecodeError, MalformedFrontmatter) as exc:
            raise SkillVerificationFailed(
                f"{entry.uri} is not a readable SKILL.md: {error_message(exc)}"
            ) from None
        if front != entry.frontmatter:
            raise SkillVerificationFailed(
                f"the frontmatter of {entry.uri} differs from the skill's listing"
            )
        if listed is not None:
            self._bodies[listed.digest] = body
        return body

    async def read(self, uri: str) -> bytes:
        """The raw bytes of one file of the skill (`resources/read`), checked against its
        listed digest and size; a file the listing does not name is refused, unless the
        skill is dynamic."""
        _, data = await self._verified(uri)
        return data

    async def read_result(self, uri: str) -> ToolResult:
        """`read` as the result of a resource read (`mcp_read_resource`): on a failed check the
        skill's entry is fetched again and the read tried once more; a second failure is an
        error result that says why."""
        try:
            try:
                result, _ = await self._verified(uri)
            except SkillVerificationFailed:
                if await self.refresh() is None:
                    raise
                result, _ = await self._verified(uri)
        except SkillVerificationFailed as exc:
            return ToolResult(
                f"{error_message(exc)}; the content is not used",
                True,
                {"server": self.server_name, "uri": uri, "skill": self.name},
            )
        return resource_result(result, self.server_name, uri)

    async def _verified(self, uri: str) -> tuple[Any, bytes]:
        """The `ReadResourceResult` of `uri` and its bytes, checked against the listing."""
        entry = self.entry
        listed = _listed_file(entry, uri)
        if listed is None and entry.resources != "dynamic":
            files = ", ".join(self.files or ())
            raise SkillVerificationFailed(
                f"{uri} is not a file of the skill {self.name} (its listed files: {files})"
            )
        server = self.server
        result = await wire_read(server.session(), server.name, uri, server.timeout, None)
        data = _contents_bytes(result, uri)
        if listed is not None:
            if len(data) != listed.size or digest_of(data) != listed.digest:
                raise SkillVerificationFailed(
                    f"{uri} does not match the digest and size the skill's listing gives"
                )
        elif len(data) > MAX_SKILL_BYTES:
            raise SkillVerificationFailed(f"{uri} is larger than {MAX_SKILL_BYTES} bytes")
        return result, data


def skill_holding(server: Any, uri: str) -> McpSkill | None:
    """The skill of `server`'s latest listing whose root holds `uri` (the innermost, when
    skills nest), else `None`."""
    held = _LISTINGS.get(server)
    holders = [s for s in (held.skills if held else ()) if uri.startswith(s.root + "/")]
    return max(holders, key=lambda s: len(s.root), default=None)


def _listed_file(entry: SkillEntry, uri: str) -> SkillFile | None:
    if entry.resources == "dynamic":
        return None
    return next((f for f in entry.resources if f.uri == uri), None)


def _contents_bytes(result: Any, uri: str) -> bytes:
    """The bytes of the first content of `uri` in a `ReadResourceResult`."""
    contents = list(getattr(result, "contents", None) or ())
    item = next((c for c in contents if str(getattr(c, "uri", "")) == uri), None)
    if item is None and contents:
        item = contents[0]
    if item is None:
        raise SkillVerificationFailed(f"reading {uri} returned no content")
    text = getattr(item, "text", None)
    if text is not None:
        return str(text).encode("utf-8")
    try:
        return base64.b64decode(str(getattr(item, "blob", "") or ""), validate=True)
    except ValueError:
        raise SkillVerificationFailed(f"{uri} came back as a malformed blob") from None


def _unusable(entry: SkillEntry) -> str | None:
    """Why the extension's rules forbid loading `entry`, or `None`."""
    name = entry.frontmatter.get("name")
    if not isinstance(name, str) or not name:
        return "its frontmatter has no name"
    parts = urlsplit(entry.uri)
    segments = [parts.netloc, *parts.path.split("/")[1:]]
    if len(segments) < 2 or segments[-1] != "SKILL.md" or segments[-2] != name:
        return f'its URI does not end in "{name}/SKILL.md"'
    if entry.resources == "dynamic":
        return None
    if len(entry.resources) > MAX_SKILL_FILES:
        return f"it has more than {MAX_SKILL_FILES} files"
    if sum(f.size for f in entry.resources) > MAX_SKILL_BYTES:
        return f"its files total more than {MAX_SKILL_BYTES} bytes"
    root = skill_root(entry.uri) + "/"
    if not any(f.uri == entry.uri for f in entry.resources):
        return "its file list leaves out its SKILL.md"
    if any(not f.uri.startswith(root) for f in entry.resources):
        return "its file list names files outside the skill"
    return None


async def _entries(server: Any) -> tuple[list[SkillEntry], int]:
    """Every entry of the server's `skills/list` (all pages), and the least `ttlMs` of them."""
    session = server.session()
    found: list[SkillEntry] = []
    cursor: str | None = None
    seen: set[str] = set()
    ttl_ms: int | None = None
    for _ in range(MAX_PAGES):
        params = types.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
        send = partial(session.send_request, ListSkillsRequest(params=params), ListSkillsResult)
        page: ListSkillsResult = await _request(session, "skills/list", None, send, server.timeout)
        found.extend(page.skills)
        ttl_ms = page.ttl_ms if ttl_ms is None else min(ttl_ms, page.ttl_ms)
        cursor = page.next_cursor or None
        if cursor is None or cursor in seen:
            break
        seen.add(cursor)
    return found, ttl_ms or 0


@dataclass
class _Listing:
    """A server's latest listing: its skills and when it goes stale (`time.monotonic()`)."""

    skills: list[McpSkill]
    stale_at: float


# Each server's latest listing (weak: a closed server's goes with it).
_LISTINGS: weakref.WeakKeyDictionary[Any, _Listing] = weakref.WeakKeyDictionary()


async def _server_listing(server: Any) -> list[McpSkill]:
    """The server's skills: the held listing while it is fresh, else read again (the held
    one kept, with a warning, when that fails; nothing when there is none)."""
    held = _LISTINGS.get(server)
    if held is not None and time.monotonic() < held.stale_at:
        return held.skills
    try:
        entries, ttl_ms = await _entries(server)
    except Exception as exc:  # an error answer, a malformed listing, a lost server
        warn(f'MCP server "{server.name}" could not list its skills: {error_message(exc)}')
        return held.skills if held is not None else []
    before = {s.uri: s for s in held.skills} if held is not None else {}
    skills: list[McpSkill] = []
    names: set[str] = set()
    for entry in entries:
        why = _unusable(entry)
        if why is not None:
            warn(f'MCP server "{server.name}": skipped skill {entry.uri}: {why}')
            continue
        name = f"{server.name}/{entry.frontmatter['name']}"
        if name in names:
            parts = urlsplit(skill_root(entry.uri))
            name = f"{server.name}/{parts.netloc}{parts.path}"
        names.add(name)
        kept = before.get(entry.uri)
        if kept is not None and kept.name == name:
            kept.entry = entry  # its bodies stay cached per digest
            skills.append(kept)
        else:
            skills.append(McpSkill(server, name, entry))
    _LISTINGS[server] = _Listing(skills, time.monotonic() + ttl_ms / 1000)
    return skills


async def server_skills(servers: Sequence[Any]) -> list[McpSkill]:
    """The skills of the `servers` (each declared the extension), in config then listing
    order, named `<server>/<name>` (`<server>/<skill path>` for a second skill of one server
    with the same name); a listing is read again only once its `ttlMs` has passed. A server
    whose first listing fails contributes nothing (with a warning)."""
    skills: list[McpSkill] = []
    for server in servers:
        skills.extend(await _server_listing(server))
    return skills
