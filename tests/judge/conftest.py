"""Judgment test fixtures: the session's fake LLM (it also plays the judgment vendor)."""

from support.llm_fixtures import llm, llm_server, make_client

__all__ = ["llm", "llm_server", "make_client"]
