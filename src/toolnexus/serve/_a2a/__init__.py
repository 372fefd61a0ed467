"""The A2A server profile: the endpoint's task lifecycle, its JSON-RPC dialects, the agent card
and the task stores. Modules import one another by their own paths; this face exports nothing."""
