"""The gateway as a Skills provider (`io.modelcontextprotocol/skills`): the toolkit's skills
(`SKILL.md` folders, data skills, and the skills of its upstream MCP servers) answered to
`skills/list` and `skills/get`, their files to `resources/read`.

Built on the `mcp` SDK's extension framework (`Extension` with `MethodBinding`s); the lowlevel
`Server` the gateway runs has no `extensions=` argument, so `install` applies the bindings and
the capability itself, as `MCPServer` would. The wire models come from
`mcp_source/_skills.py` until the SDK ships its own.

A skill is served at `skill://<toolkit name>/SKILL.md` (an upstream skill `<server>/<skill>`
thus keeps its server as a prefix), with every file of its folder and its SHA-256 digest; a
data skill is one synthesized `SKILL.md` (its name and description as frontmatter). Only skills
the extension can carry are served: a name of lowercase letters, digits and hyphens, a
description, and at most 512 files and 16 MiB. An upstream skill's files are read from its
server, checked against that server's digests, and served under the gateway's URIs.

The served set follows the source: each request first awaits `SkillSource.refresh`, so an
upstream server's new and removed skills come and go here too.

`skills/list` pages: its entries in code-point order of their URIs, `SKILLS_PAGE_SIZE` a page,
the `nextCursor` an opaque token for "after this URI" (so a page stays right when skills come or
go between pages); a cursor the gateway did not issue is an Invalid params error.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import mimetypes
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import mcp_types as types
from mcp.server.extension import Extension, MethodBinding
from mcp.shared.exceptions import MCPError

from toolnexus._log import logger
from toolnexus.mcp_source._extensions import SKILLS_EXTENSION
from toolnexus.mcp_source._skills import (
    MAX_SKILL_BYTES,
    MAX_SKILL_FILES,
    GetSkillParams,
    GetSkillResult,
    ListSkillsResult,
    McpSkill,
    SkillEntry,
    SkillFile,
    digest_of,
    skill_root,
)
from toolnexus.skill._frontmatter import frontmatter_json, split_frontmatter
from toolnexus.types import error_message

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

    from toolnexus.skill import SkillInfo, SkillSource

__all__ = ["SKILLS_PAGE_SIZE", "SkillsProvider", "skills_provider"]

SKILLS_PAGE_SIZE = 100
"""The most entries one `skills/list` page carries."""

_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
_SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_SCHEME = "skill://"
_SKIPPED_DIRS = frozenset({".git", "node_modules"})
_CURSOR_PREFIX = "after:"


@dataclass(frozen=True)
class _Served:
    """One served skill: its gateway root (`skill://<path>`) and where its files come from."""

    root: str
    info: SkillInfo
    upstream: McpSkill | None

    @property
    def uri(self) -> str:
        return self.root + "/SKILL.md"


def skills_provider(skills: SkillSource | None, cfg: Mapping[str, Any]) -> SkillsProvider | None:
    """The provider of `skills`, unless there are none or the profile says `skills: false`."""
    if skills is None or not skills.skills or cfg.get("skills", True) is False:
        return None
    return SkillsProvider(skills)


class SkillsProvider(Extension):
    """`skills/list`, `skills/get` and the skills' `resources/read` over one skill source."""

    identifier = SKILLS_EXTENSION

    def __init__(self, skills: SkillSource) -> None:
        self._skills = skills
        self._served: dict[str, _Served] = {}
        self._served_from: dict[str, SkillInfo] | None = None  # the `skills.skills` served
        self._serve_current()
        self._digests: dict[tuple[str, int, int], str] = {}  # (path, mtime, size) ⇒ digest

    def _serve_current(self) -> None:
        skills = self._skills
        if skills.skills is self._served_from:
            return
        served: dict[str, _Served] = {}
        for name, info in skills.skills.items():
            if _servable(name, info):
                upstream = skills.remote.get(name)
                served[_SCHEME + name] = _Served(
                    _SCHEME + name, info, upstream if isinstance(upstream, McpSkill) else None
                )
            else:
                logger.debug("[toolnexus] skill %r is not served over MCP (name/description)", name)
        self._served, self._served_from = served, skills.skills

    async def _current(self) -> dict[str, _Served]:
        """The served skills, after the source's refresh (its upstream listings may be stale)."""
        await self._skills.refresh()
        self._serve_current()
        return self._served

    def methods(self) -> Sequence[MethodBinding]:
        return (
            MethodBinding("skills/list", types.PaginatedRequestParams, self._list),
            MethodBinding("skills/get", GetSkillParams, self._get),
        )

    def install(self, server: Server[Any]) -> None:
        """Serve the methods on the lowlevel `server` and advertise the extension."""
        for binding in self.methods():
            server.add_request_handler(binding.method, binding.params_type, binding.handler)
        server.extensions[self.identifier] = self.settings()

    def resource_handlers(self, handlers: dict[str, Any]) -> dict[str, Any]:
        """`handlers` with the skills' files in front: their `SKILL.md`s listed first, their
        files read here, every other URI left to the handlers given (unknown without them)."""
        listing = handlers.get("on_list_resources")
        reading = handlers.get("on_read_resource")

        async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
            own = [
                types.Resource(
                    uri=s.uri,
                    name=s.info.name.rsplit("/", 1)[-1],
                    description=s.info.description,
                    mime_type="text/markdown",
                )
                for s in (await self._current()).values()
            ]
            if listing is None:
                return types.ListResourcesResult(resources=own)
            rest: types.ListResourcesResult = await listing(ctx, params)
            return rest.model_copy(update={"resources": [*own, *rest.resources]})

        async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> Any:
            uri = str(params.uri)
            await self._current()
            served = self._owner(uri)
            if served is not None:
                return await self._read(served, uri)
            if reading is None:
                raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown resource: {uri}")
            return await reading(ctx, params)

        return {**handlers, "on_list_resources": list_resources, "on_read_resource": read_resource}

    # -- skills/list and skills/get -------------------------------------------------------------

    async def _list(
        self, ctx: Any, params: types.PaginatedRequestParams | None
    ) -> ListSkillsResult:
        cursor = params.cursor if params is not None else None
        after = _after(cursor) if cursor is not None else None
        entries: list[SkillEntry] = []
        ordered = sorted((await self._current()).values(), key=lambda s: s.uri)
        rest = [s for s in ordered if after is None or s.uri > after]
        for index, served in enumerate(rest):
            if len(entries) == SKILLS_PAGE_SIZE:
                # more follow: the page ends after the last entry it carries
                return ListSkillsResult(skills=entries, next_cursor=_cursor(rest[index - 1].uri))
            entry = await self._entry_or_none(served)
            if entry is not None:
                entries.append(entry)
        return ListSkillsResult(skills=entries)

    async def _get(self, ctx: Any, params: GetSkillParams) -> GetSkillResult:
        current = await self._current()
        served = current.get(skill_root(params.uri)) if params.uri.endswith("/SKILL.md") else None
        entry = await self._entry_or_none(served) if served is not None else None
        if entry is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown skill: {params.uri}")
        return GetSkillResult(skill=entry)

    async def _entry_or_none(self, served: _Served) -> SkillEntry | None:
        try:
            return await self._entry(served)
        except (OSError, ValueError) as exc:  # the folder changed or broke since loading
            logger.debug("[toolnexus] skill %s not served: %s", served.root, error_message(exc))
            return None

    async def _entry(self, served: _Served) -> SkillEntry | None:
        info = served.info
        if served.upstream is not None:
            upstream = served.upstream.entry
            resources: list[SkillFile] | Literal["dynamic"] = upstream.resources
            if isinstance(upstream.resources, list):
                prefix = served.upstream.root
                resources = [
                    f.model_copy(update={"uri": served.root + f.uri.removeprefix(prefix)})
                    for f in upstream.resources
                ]
            return SkillEntry(uri=served.uri, frontmatter=upstream.frontmatter, resources=resources)
        if info.directory is not None:
            return await asyncio.to_thread(self._folder_entry, served, info.directory)
        data = _data_skill_bytes(info)
        front, _ = _frontmatter_of(data)
        file = SkillFile(uri=served.uri, digest=digest_of(data), size=len(data))
        return SkillEntry(uri=served.uri, frontmatter=front, resources=[file])

    def _folder_entry(self, served: _Served, directory: str) -> SkillEntry | None:
        """The entry of a `SKILL.md` folder (in a worker thread): every regular file, digested
        (digests kept while a file's mtime and size stay)."""
        files: list[SkillFile] = []
        total = 0
        for rel in _folder_files(directory):
            path = os.path.join(directory, *rel.split("/"))
            stat = os.stat(path)
            total += stat.st_size
            if len(files) >= MAX_SKILL_FILES or total > MAX_SKILL_BYTES:
                return None
            key = (path, stat.st_mtime_ns, stat.st_size)
            digest = self._digests.get(key)
            if digest is None:
                with open(path, "rb") as f:
                    digest = self._digests[key] = digest_of(f.read(MAX_SKILL_BYTES + 1))
            files.append(SkillFile(uri=f"{served.root}/{rel}", digest=digest, size=stat.st_size))
        with open(os.path.join(directory, "SKILL.md"), "rb") as f:
            front, _ = _frontmatter_of(f.read(MAX_SKILL_BYTES + 1))
        return SkillEntry(uri=served.uri, frontmatter=front, resources=files)

    # -- resources/read -------------------------------------------------------------------------

    def _owner(self, uri: str) -> _Served | None:
        if not uri.startswith(_SCHEME):
            return None
        root = uri
        while "/" in root[len(_SCHEME) :]:
            root = root.rsplit("/", 1)[0]
            found = self._served.get(root)
            if found is not None:
                return found
        return None

    async def _read(self, served: _Served, uri: str) -> types.ReadResourceResult:
        rel = uri[len(served.root) + 1 :]
        data: bytes | None
        try:
            if served.upstream is not None:
                data = await served.upstream.read(f"{served.upstream.root}/{rel}")
            elif served.info.directory is not None:
                data = await asyncio.to_thread(_folder_file, served.info.directory, rel)
            elif rel == "SKILL.md":
                data = _data_skill_bytes(served.info)
            else:
                data = None
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            raise MCPError(
                code=types.INTERNAL_ERROR, message=f"could not read {uri}: {error_message(exc)}"
            ) from None
        if data is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown resource: {uri}")
        mime = "text/markdown" if rel.endswith(".md") else _mime(rel)
        try:
            contents: Any = types.TextResourceContents(uri=uri, mime_type=mime, text=data.decode())
        except UnicodeDecodeError:
            blob = base64.b64encode(data).decode()
            contents = types.BlobResourceContents(uri=uri, mime_type=mime, blob=blob)
        return types.ReadResourceResult(contents=[contents])


def _cursor(uri: str) -> str:
    """The opaque `nextCursor` for "the entries after `uri`"."""
    return base64.urlsafe_b64encode((_CURSOR_PREFIX + uri).encode()).decode().rstrip("=")


def _after(cursor: str) -> str:
    """The URI a cursor of ours continues after; an Invalid params error for any other."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raw = ""
    if not raw.startswith(_CURSOR_PREFIX + _SCHEME):
        raise MCPError(
            code=types.INVALID_PARAMS,
            message=f"Invalid cursor for skills/list: {cursor[:64]!r} is not one this server gave",
        )
    return raw[len(_CURSOR_PREFIX) :]


def _servable(name: str, info: SkillInfo) -> bool:
    segments = name.split("/")
    return (
        bool(info.description)
        and all(_SEGMENT.match(s) for s in segments)
        and _NAME.match(segments[-1]) is not None
        and len(segments[-1]) <= 64
    )


def _frontmatter_of(data: bytes) -> tuple[dict[str, Any], str]:
    block, body = split_frontmatter(data.decode("utf-8-sig"))
    return (frontmatter_json(block) if block is not None else {}), body


def _data_skill_bytes(info: SkillInfo) -> bytes:
    """A data skill's `SKILL.md`: its name and description as frontmatter, then its content."""
    import yaml

    front = yaml.safe_dump(
        {"name": info.name, "description": info.description or ""},
        sort_keys=False,
        allow_unicode=True,
    )
    return f"---\n{front}---\n{info.content}".encode()


def _folder_files(directory: str) -> list[str]:
    """The regular files under `directory` that resolve inside it, as `/` paths in code point
    order (`.git` and `node_modules` left out, as the `skill` tool's file list leaves them)."""
    base = os.path.realpath(directory)
    found: list[str] = []
    for parent, dirs, names in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS)
        for name in names:
            path = os.path.join(parent, name)
            if os.path.isfile(path) and os.path.realpath(path).startswith(base + os.sep):
                found.append(os.path.relpath(path, directory).replace(os.sep, "/"))
    return sorted(found)


class _TooLarge(Exception):
    """A skill file over `MAX_SKILL_BYTES` (answered as the read's MCP error)."""


def _folder_file(directory: str, rel: str) -> bytes | None:
    """The bytes of the file `rel` of a skill folder; `None` for anything outside it."""
    parts = rel.split("/")
    if not rel or any(p in ("", ".", "..") or p in _SKIPPED_DIRS for p in parts):
        return None
    base = os.path.realpath(directory)
    path = os.path.realpath(os.path.join(base, *parts))
    if not path.startswith(base + os.sep) or not os.path.isfile(path):
        return None
    with open(path, "rb") as f:
        data = f.read(MAX_SKILL_BYTES + 1)
    if len(data) > MAX_SKILL_BYTES:
        raise _TooLarge(f"larger than {MAX_SKILL_BYTES} bytes")
    return data


def _mime(rel: str) -> str:
    return mimetypes.guess_type(rel)[0] or "application/octet-stream"
