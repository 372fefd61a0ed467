"""Durable-run fixtures: the session's fake LLM (its requests show what a replay re-sent)."""

from __future__ import annotations

from support.llm_fixtures import llm, llm_server

__all__ = ["llm", "llm_server"]
