"""Real local peers used by the tests: a fake LLM server, MCP servers, HTTP servers."""
