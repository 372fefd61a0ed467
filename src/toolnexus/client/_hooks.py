"""Lifecycle hooks: `before_llm`, `after_llm`, `before_tool`, `after_tool` and the observe-only
`on_progress` (each sync or async)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

from toolnexus._aio import call_maybe_async
from toolnexus.client._events import (
    AfterLlmInfo,
    AfterToolInfo,
    BeforeLlmInfo,
    BeforeToolInfo,
    ProgressInfo,
)
from toolnexus.errors import ConfigTypeError

__all__ = [
    "HOOK_NAMES",
    "AfterLlmHook",
    "AfterToolHook",
    "BeforeLlmHook",
    "BeforeToolHook",
    "Hooks",
    "OnProgressHook",
    "before_llm",
    "call_hook",
    "resolve_hooks",
]

HOOK_NAMES = ("before_llm", "after_llm", "before_tool", "after_tool", "on_progress")

# Each hook takes its typed argument (or, as before these were typed, any `dict`) and returns
# its reply dict or `None`, directly or through an awaitable.
BeforeLlmHook: TypeAlias = Callable[[BeforeLlmInfo], Any] | Callable[[dict[str, Any]], Any]
AfterLlmHook: TypeAlias = Callable[[AfterLlmInfo], Any] | Callable[[dict[str, Any]], Any]
BeforeToolHook: TypeAlias = Callable[[BeforeToolInfo], Any] | Callable[[dict[str, Any]], Any]
AfterToolHook: TypeAlias = Callable[[AfterToolInfo], Any] | Callable[[dict[str, Any]], Any]
OnProgressHook: TypeAlias = Callable[[ProgressInfo], Any] | Callable[[dict[str, Any]], Any]


@dataclass(slots=True, kw_only=True)
class Hooks:
    """The optional hooks. A plain mapping or any object with these attributes also works.

    `on_progress` observes a running tool's progress reports: `{"name", "id", "turn",
    "progress", "total", "message"}`; what it returns is ignored."""

    before_llm: BeforeLlmHook | None = None
    after_llm: AfterLlmHook | None = None
    before_tool: BeforeToolHook | None = None
    after_tool: AfterToolHook | None = None
    on_progress: OnProgressHook | None = None

    @property
    def empty(self) -> bool:
        return (
            self.before_llm is None
            and self.after_llm is None
            and self.before_tool is None
            and self.after_tool is None
            and self.on_progress is None
        )


def resolve_hooks(hooks: Any) -> Hooks | None:
    """Normalise the `hooks` option; `None` when no hook is set. Typos raise at once."""
    if hooks is None:
        return None
    if isinstance(hooks, Hooks):
        found = hooks
    elif isinstance(hooks, Mapping):
        unknown = [k for k in hooks if k not in HOOK_NAMES]
        if unknown:
            raise ConfigTypeError(f"unknown hook {unknown[0]!r}: hooks are {', '.join(HOOK_NAMES)}")
        found = Hooks(**{k: hooks[k] for k in HOOK_NAMES if hooks.get(k) is not None})
    else:
        found = Hooks(**{k: getattr(hooks, k, None) for k in HOOK_NAMES})
    for name in HOOK_NAMES:
        fn = getattr(found, name)
        if fn is not None and not callable(fn):
            raise ConfigTypeError(f"hook {name} must be callable, not {type(fn).__name__}")
    return None if found.empty else found


async def call_hook(fn: Callable[..., Any], payload: Mapping[str, Any]) -> dict[str, Any] | None:
    """Call a hook; its reply must be `None` or a dict."""
    reply = await call_maybe_async(fn, payload)
    if reply is None:
        return None
    if not isinstance(reply, Mapping):
        raise ConfigTypeError(f"a hook must return None or a dict, not {type(reply).__name__}")
    return dict(reply) if reply else None


async def before_llm(
    hook: BeforeLlmHook,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    model: str,
    turn: int,
    deps: Any = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], str]:
    """Run the `before_llm` hook; return the messages, tools and model to use.

    A returned `messages`/`tools` replaces them for this and later turns (the caller keeps
    them); a returned `model` is for this turn only. A hook that raises aborts the caller.
    """
    payload: BeforeLlmInfo = {"messages": messages, "tools": tools, "model": model, "turn": turn}
    if deps is not None:  # the run's `deps`, as every hook of a run given some sees them
        payload["deps"] = deps
    reply = await call_hook(hook, payload)
    if reply:
        if reply.get("messages") is not None:
            messages = list(reply["messages"])
        if "tools" in reply:
            tools = list(reply["tools"] or ())
        if reply.get("model"):
            model = str(reply["model"])
    return messages, tools, model
