"""The harness loop (the published `toolnexus.agents.loop` path): guardrails, the completion
gate and `Loop`, one agent on a client without the runtime."""

from toolnexus.agents._harness import (
    LOOP_UNSUPPORTED_FIELDS,
    Completion,
    Guardrail,
    Verdict,
    all_todos_done,
    guarded_hooks,
    harness,
    loop_unsupported,
    run_gated,
)
from toolnexus.agents._loop import Loop, Outcome, RunOptions

__all__ = [
    "LOOP_UNSUPPORTED_FIELDS",
    "Completion",
    "Guardrail",
    "Loop",
    "Outcome",
    "RunOptions",
    "Verdict",
    "all_todos_done",
    "guarded_hooks",
    "harness",
    "loop_unsupported",
    "run_gated",
]
