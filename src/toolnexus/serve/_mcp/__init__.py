"""The MCP server profile: the server, its streamable HTTP endpoint, the gateway's relay, offers,
skills and tasks. Modules import one another by their own paths; this face exports nothing."""
