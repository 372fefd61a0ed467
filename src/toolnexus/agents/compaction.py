"""Context compaction (the published `toolnexus.agents.compaction` path): `compactor`, a
`before_llm` hook, and `estimate_tokens`."""

from toolnexus.agents._compaction import (
    CountTokens,
    Message,
    Summarize,
    compactor,
    estimate_tokens,
)

__all__ = ["CountTokens", "Message", "Summarize", "compactor", "estimate_tokens"]
