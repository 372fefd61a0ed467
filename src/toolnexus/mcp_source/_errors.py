"""The MCP client's own errors, free of the SDK so that any module may import them at the top.

Every one is a `ToolnexusError`::

    ToolnexusError
    ├── LoadError          a server could not be loaded (the readable reason)
    ├── CallTimedOut       a tool call ran past its time budget
    ├── CallCancelled      a tool call was cancelled through its signal
    ├── ProtocolRefused    negotiating a version again failed
    └── UpstreamFailed     a request a gateway relayed failed at the server
"""

from __future__ import annotations

from toolnexus.errors import ToolnexusError


class LoadError(ToolnexusError):
    """A server could not be loaded; the message is the readable reason."""


class CallTimedOut(ToolnexusError):
    """A tool call ran past its time budget."""


class CallCancelled(ToolnexusError):
    """A tool call was cancelled through its signal."""


class ProtocolRefused(ToolnexusError):
    """The server stopped accepting the negotiated version and negotiating again failed."""


class UpstreamFailed(ToolnexusError):
    """A request relayed to MCP server `server` (a gateway re-serving its resources and
    prompts) failed there while it tried to `what` (e.g. `read <uri>`): `cause` says how (an
    error the server answered, a timeout after `timeout` seconds, a lost connection)."""

    def __init__(
        self,
        server: str,
        what: str,
        cause: BaseException,
        timeout: float | None = None,
        *,
        reason: str | None = None,
    ) -> None:
        super().__init__(f'MCP server "{server}" could not {what}')
        self.server = server
        self.what = what
        self.cause = cause
        self.timeout = timeout
        self.reason = reason  # why a server that is not connected is not (its status error)
