"""Fixtures of the A2A tests (the pieces live in `support.a2a_agent`)."""

from support.a2a_agent import agent_toolkit, http, seen, served

__all__ = ["agent_toolkit", "http", "seen", "served"]
