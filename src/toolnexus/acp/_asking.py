"""A tool's suspension asked of the editor, in the ACP form that fits its kind.

ACP 0.12.1 (schema 1.19) has two ways to ask the user: `session/request_permission`, whose
options the user picks one of, and the unstable `elicitation/create` (a JSON-Schema form, or a
URL to open), which an editor offers only when it declares `elicitation` in its capabilities.

- `approval` (and any kind not below): a permission request, allow or reject.
- `question`: with `elicitation.form`, one form of every question (a choice list for
  `options`, a multi-select for `multiple`, free text otherwise). Without it, each question with
  options is a permission request whose options are its choices (plus "Decline"); a question
  without options, or one of several answers, cannot be asked that way and is declined.
- `input` with a `data["schema"]`: that form (with `elicitation.form`), else declined.
- a Request with a `url` (a sign-in): with `elicitation.url`, the editor opens the URL itself
  (and hears `elicitation/complete` once the tool ran again); otherwise a permission request
  whose tool call shows the URL (a text and a `resource_link` content block), to be answered
  once the user has signed in. An MCP server's OAuth sign-in, whose code comes back to a
  redirect URI nobody here listens on, asks (with `elicitation.form`) for the address the
  browser ended on, and is declined otherwise.

A question's answer is `{"answers": [{"question": ..., "answer": ...}]}`, the shape the
terminal's answers have.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from toolnexus._log import warn
from toolnexus.types import Answer, Request

__all__ = ["EditorTurn", "ask_editor", "serving"]


@dataclass
class EditorTurn:
    """The editor connection and session of the prompt being served, and the tool calls of
    its current batch that have no result yet (call order: a suspension is the first of
    them)."""

    conn: Any
    session_id: str
    capabilities: Any = None  # the editor's `ClientCapabilities`, as `initialize` declared them
    open_calls: list[str] = field(default_factory=list)
    tool_call_of: dict[str, str] = field(default_factory=dict)  # Request id -> tool call id
    # URL elicitations the user accepted, by tool call: `elicitation/complete` once it re-ran.
    opened_urls: dict[str, str] = field(default_factory=dict)


# The prompt being served (tools run in its context, and so does `wait_for`).
serving: contextvars.ContextVar[EditorTurn | None] = contextvars.ContextVar(
    "toolnexus_acp_serving", default=None
)

_DECLINE = "decline"


async def ask_editor(request: Request) -> Answer | None:
    """A client's `wait_for` that asks the editor of the prompt being served (see the module
    docstring for the form each kind takes); `None` (declined) outside a served prompt."""
    turn = serving.get()
    if turn is None:
        return None
    tool_call_id = turn.tool_call_of.pop(request.id, request.id)
    data = request.data or {}
    if request.kind == "question" and isinstance(data.get("questions"), list):
        return await _question(turn, tool_call_id, request, data["questions"])
    if request.kind == "input" and isinstance(data.get("schema"), Mapping):
        return await _input(turn, tool_call_id, request, data["schema"])
    if request.url:
        return await _sign_in(turn, tool_call_id, request)
    chosen = await _permission(turn, tool_call_id, request.prompt, _ALLOW_REJECT)
    return Answer(request.id, chosen == "allow", reason=None if chosen == "allow" else "declined")


# -- permission requests ------------------------------------------------------------------------

_OptionKind = Literal["allow_once", "allow_always", "reject_once", "reject_always"]
_Option = tuple[str, str, _OptionKind]  # option id, name shown, kind
_ALLOW_REJECT: list[_Option] = [
    ("allow", "Allow", "allow_once"),
    ("reject", "Reject", "reject_once"),
]


async def _permission(
    turn: EditorTurn,
    tool_call_id: str,
    title: str,
    options: list[_Option],
    content: list[Any] | None = None,
) -> str | None:
    """The option id the user picked, or `None` (the prompt was cancelled)."""
    from acp.schema import PermissionOption, ToolCallUpdate

    reply = await _reply(
        "session/request_permission",
        turn.conn.request_permission(
            session_id=turn.session_id,
            tool_call=ToolCallUpdate(tool_call_id=tool_call_id, title=title, content=content),
            options=[PermissionOption(option_id=i, name=n, kind=k) for i, n, k in options],
        ),
    )
    chosen = getattr(getattr(reply, "outcome", None), "option_id", None)
    return chosen if isinstance(chosen, str) else None


async def _reply(method: str, asked: Awaitable[Any]) -> Any:
    """The editor's reply, or `None` (declined, with a warning) when it answered with an error
    or is gone: a run goes on without the answer rather than failing."""
    import acp

    try:
        return await asked
    except acp.RequestError as exc:
        warn(f"ACP: the editor answered {method} with error {exc.code}: {exc}")
    except ConnectionError:
        warn(f"ACP: the editor went away before answering {method}")
    return None


def _declined(request: Request, why: str) -> Answer:
    warn(f"ACP: the editor cannot be asked {request.prompt!r}: {why}")
    return Answer(request.id, False, reason="declined")


def _can_elicit(turn: EditorTurn, mode: str) -> bool:
    elicitation = getattr(turn.capabilities, "elicitation", None)
    return getattr(elicitation, mode, None) is not None


# -- questions and forms ------------------------------------------------------------------------


def _choices(item: Mapping[str, Any]) -> list[str]:
    options = item.get("options")
    return [str(o) for o in options] if isinstance(options, list) else []


async def _question(
    turn: EditorTurn, tool_call_id: str, request: Request, questions: list[Any]
) -> Answer:
    items = [q if isinstance(q, Mapping) else {"question": str(q)} for q in questions]
    texts = [str(item.get("question", "")) for item in items]
    if _can_elicit(turn, "form"):
        properties: dict[str, Any] = {}
        for number, (item, text) in enumerate(zip(items, texts, strict=True), 1):
            shown: dict[str, Any] = {"title": str(item.get("header") or text), "description": text}
            choices = _choices(item)
            if choices and item.get("multiple") is True:
                shown |= {"type": "array", "items": {"type": "string", "enum": choices}}
            elif choices:
                shown |= {"type": "string", "enum": choices}
            else:
                shown |= {"type": "string"}
            properties[f"q{number}"] = shown
        schema = {"type": "object", "properties": properties, "required": list(properties)}
        content = await _form(turn, tool_call_id, request, schema)
        if content is None:
            return Answer(request.id, False, reason="declined")
        answers = [
            {"question": text, "answer": content.get(f"q{number}")}
            for number, text in enumerate(texts, 1)
        ]
        return Answer(request.id, True, {"answers": answers})
    answers = []
    for item, text in zip(items, texts, strict=True):
        choices = _choices(item)
        if not choices or item.get("multiple") is True:
            return _declined(
                request,
                "a question without options, or with several answers, needs a form "
                "(the editor declares no elicitation form)",
            )
        options: list[_Option] = [
            (f"choice-{i}", choice, "allow_once") for i, choice in enumerate(choices)
        ]
        chosen = await _permission(
            turn, tool_call_id, text, [*options, (_DECLINE, "Decline", "reject_once")]
        )
        picked = {i: choice for i, choice, _ in options}.get(chosen or "")
        if picked is None:
            return Answer(request.id, False, reason="declined")
        answers.append({"question": text, "answer": picked})
    return Answer(request.id, True, {"answers": answers})


async def _input(
    turn: EditorTurn, tool_call_id: str, request: Request, schema: Mapping[str, Any]
) -> Answer:
    if not _can_elicit(turn, "form"):
        return _declined(request, "a form is asked for and the editor declares no elicitation form")
    content = await _form(turn, tool_call_id, request, schema)
    if content is None:
        return Answer(request.id, False, reason="declined")
    return Answer(request.id, True, content)


async def _form(
    turn: EditorTurn, tool_call_id: str, request: Request, schema: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The form's content when the user accepted it, else `None`."""
    from acp.schema import ElicitationFormSessionMode, ElicitationSchema
    from pydantic import ValidationError

    try:
        requested = ElicitationSchema.model_validate(dict(schema))
    except ValidationError:
        _declined(request, "its form is no ACP elicitation schema")
        return None
    reply = await _reply(
        "elicitation/create",
        turn.conn.create_elicitation(
            message=request.prompt,
            mode=ElicitationFormSessionMode(
                session_id=turn.session_id, tool_call_id=tool_call_id, requested_schema=requested
            ),
        ),
    )
    if getattr(reply, "action", None) != "accept":
        return None
    return dict(getattr(reply, "content", None) or {})


# -- sign-ins -----------------------------------------------------------------------------------


async def _sign_in(turn: EditorTurn, tool_call_id: str, request: Request) -> Answer:
    from acp.schema import ElicitationUrlSessionMode
    from pydantic import AnyUrl

    import acp

    url = str(request.url)
    prompt = request.prompt or "Sign in to continue"
    redirect = (request.data or {}).get("redirectUri")
    if redirect is not None:
        return await _oauth_sign_in(turn, tool_call_id, request, prompt, url, str(redirect))
    mode = None
    if _can_elicit(turn, "url"):
        with contextlib.suppress(ValueError):  # no URL the schema takes: shown as text below
            mode = ElicitationUrlSessionMode(
                session_id=turn.session_id,
                tool_call_id=tool_call_id,
                elicitation_id=request.id,
                url=AnyUrl(url),
            )
    if mode is not None:
        reply = await _reply(
            "elicitation/create", turn.conn.create_elicitation(message=prompt, mode=mode)
        )
        accepted = getattr(reply, "action", None) == "accept"
        if accepted:
            turn.opened_urls[tool_call_id] = request.id
        return Answer(request.id, accepted, reason=None if accepted else "declined")
    shown = [
        acp.tool_content(acp.text_block(f"{prompt}: open {url}")),
        acp.tool_content(acp.resource_link_block(name=prompt, uri=url)),
    ]
    options: list[_Option] = [
        ("done", "I have signed in", "allow_once"),
        ("cancel", "Cancel", "reject_once"),
    ]
    chosen = await _permission(turn, tool_call_id, prompt, options, shown)
    return Answer(request.id, chosen == "done", reason=None if chosen == "done" else "declined")


_CALLBACK_FORM = {
    "type": "object",
    "properties": {
        "callbackUrl": {
            "type": "string",
            "title": "The address your browser ended on",
            "format": "uri",
        }
    },
    "required": ["callbackUrl"],
}


async def _oauth_sign_in(
    turn: EditorTurn, tool_call_id: str, request: Request, prompt: str, url: str, redirect: str
) -> Answer:
    """An MCP server's OAuth sign-in: the browser comes back to `redirect` with the code, and
    nobody here listens there; the address it ends on (an error page, for a loopback one) is
    asked for in a form."""
    if not _can_elicit(turn, "form"):
        server = (request.data or {}).get("server") or "<server>"
        return _declined(
            request,
            f"an OAuth sign-in returns to {redirect}, which needs a form to be pasted "
            f"(the editor declares none): sign in ahead with `toolnexus auth {server}`",
        )
    asked = Request(
        request.id,
        request.kind,
        f"{prompt}: open {url} and sign in, then paste the address your browser ends on "
        "(it may show an error page)",
    )
    content = await _form(turn, tool_call_id, asked, _CALLBACK_FORM)
    landed = (content or {}).get("callbackUrl")
    if not isinstance(landed, str) or not landed:
        return Answer(request.id, False, reason="declined")
    return Answer(request.id, True, {"callbackUrl": landed})
