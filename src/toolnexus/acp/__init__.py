"""ACP (Agent Client Protocol) coding agents as a model source.

`load_acp(ACPOptions(command=...))` starts an ACP agent (Zed's agents, Gemini CLI, ...) as a child
process, runs `initialize` -> `session/new` (-> `session/set_mode`), and returns an `ACPClient`
whose `generate` is what `create_in_process_client(model=..., generate=...)` takes. Framing and
types are the official `agent-client-protocol` SDK's (the `acp` extra).

`ask_editor` is the `wait_for` of a client served to an editor (`Toolkit.serve_acp`): a tool's
suspension asked of the editor in the ACP form its kind fits.
"""

from __future__ import annotations

from toolnexus.acp._asking import ask_editor
from toolnexus.acp._client import (
    ACPClient,
    ACPError,
    ACPOptions,
    ACPPermissionRequest,
    ACPPermissionTimeoutError,
    load_acp,
)

__all__ = [
    "ACPClient",
    "ACPError",
    "ACPOptions",
    "ACPPermissionRequest",
    "ACPPermissionTimeoutError",
    "ask_editor",
    "load_acp",
]
