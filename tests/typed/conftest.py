"""Typed-results test fixtures: one fake LLM server for the session, reset for every test."""

from support.llm_fixtures import llm, llm_server, make_client

__all__ = ["llm", "llm_server", "make_client"]
