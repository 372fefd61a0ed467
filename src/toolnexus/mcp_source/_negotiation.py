"""The protocol era of one MCP session: `_Session` (the SDK's `ClientSession` with toolnexus's
capability rules) and `negotiate`, which settles the era (`auto`, `legacy` or modern).

While a connection loads, each negotiation request is a phase of its own; the session tells
its peer (`NegotiationPeer`, the `Connection` it belongs to) which one it is entering.
"""

from __future__ import annotations

from typing import Any, Protocol

import mcp_types as types
from mcp.client._probe import negotiate_auto
from mcp.client.session import ClientSession, _preconnect_stamp
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from toolnexus.mcp_source._config import MODERN
from toolnexus.mcp_source._errors import ProtocolRefused


class NegotiationPeer(Protocol):
    """What a session needs of the connection it belongs to while it negotiates."""

    def negotiation_phase(self, phase: str) -> None: ...


# What `ClientSession` holds of a negotiation, as it is before one (see `forget_negotiation`).
_NEGOTIATED_FIELDS: dict[str, Any] = {
    "_initialize_result": None,
    "_discover_result": None,
    "_discover_server_info": None,
    "_negotiated_version": None,
    "_stamp": _preconnect_stamp,
}


class _Session(ClientSession):
    """The SDK session with toolnexus's capability rules: sampling declared for the session in
    the handshake era (a gateway's client may answer it during a call), per request otherwise
    (only for a gateway's client that declared it, see `_callers`); roots without
    `listChanged` (they never change)."""

    peer: Any = None  # the `Connection` it belongs to (what its requests' spans record)

    def _build_capabilities(self, version: str) -> types.ClientCapabilities:
        capabilities = super()._build_capabilities(version)
        if version not in HANDSHAKE_PROTOCOL_VERSIONS:
            capabilities.sampling = None
        if capabilities.roots is not None:
            capabilities.roots = types.RootsCapability()
        return capabilities

    async def send_discover(self, version: str) -> dict[str, Any]:
        """The SDK's probe, left to the load phase's budget: the SDK gives an unanswered probe
        10 s of its own, after which `auto` would fall back to `initialize`; toolnexus keeps
        asking until the phase's deadline, so a server that never answers `server/discover`
        fails like any hung phase (remedy: `protocol: "legacy"`) and a slow one still does."""
        _entering(self, "discover")
        while True:
            try:
                return await super().send_discover(version)
            except MCPError as exc:
                if exc.code != types.REQUEST_TIMEOUT:
                    raise

    async def initialize(self) -> types.InitializeResult:
        _entering(self, "initialize")
        return await super().initialize()

    def forget_negotiation(self) -> None:
        """Back to the state before any negotiation, so that negotiating again asks the server
        (the SDK answers `initialize()`/`discover()` from what it negotiated before) and the
        new `initialize` or probe is not stamped with the refused version.

        The SDK has no public way to do this, so this is the one place that touches its
        session's own fields (`_NEGOTIATED_FIELDS`): should an SDK release rename them, a
        renegotiation fails with a reason naming them (never a half-reset session), and
        `tests/mcp/test_renegotiation.py` fails at once."""
        missing = [name for name in _NEGOTIATED_FIELDS if name not in vars(self)]
        if missing:
            raise ProtocolRefused(
                "cannot negotiate again: this mcp SDK's ClientSession has no " + ", ".join(missing)
            )
        for name, value in _NEGOTIATED_FIELDS.items():
            setattr(self, name, value)


def _entering(session: _Session, phase: str) -> None:
    """While a connection loads, each negotiation request is a phase of its own (named in a
    timeout, with a fresh budget); a renegotiation later has its one budget."""
    peer: NegotiationPeer | None = session.peer
    if peer is not None:
        peer.negotiation_phase(phase)


async def negotiate(session: ClientSession, protocol: str) -> None:
    """Settle the era: the SDK's `auto` probe, `initialize` only, or `server/discover` only."""
    if protocol == "legacy":
        await session.initialize()
    elif protocol == MODERN:
        await session.discover()
    else:
        await negotiate_auto(session)
