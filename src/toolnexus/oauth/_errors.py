"""How a sign-in ends when it cannot go on: light enough for every MCP connection to check for,
without loading the OAuth flow itself (the SDK's provider) for servers that never sign in."""

from __future__ import annotations

from toolnexus.errors import ToolnexusError

__all__ = ["SignInFailed", "SignInRequired"]


class SignInRequired(ToolnexusError):
    """The resource needs a person to sign in, and nobody can be asked right now."""


class SignInFailed(ToolnexusError):
    """The sign-in was declined, or its answer could not be used.

    `during_call` is true when the sign-in was handed to a caller's host in the middle of a
    call (see `Authorization.park_for`): the request that needed it is then answered with the
    server's refusal instead of failing the connection."""

    during_call = False
