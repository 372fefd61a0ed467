"""Durable runs on DBOS: a run that survives the process it started in (the `dbos` extra).

```python
from dbos import DBOS
from toolnexus.durable import DurableClient

DBOS(config={"name": "agents", "system_database_url": "sqlite:///agents.sqlite"})
durable = DurableClient(client, toolkit)
DBOS.launch()  # inside the running event loop: resumes the runs a crash interrupted
result = await durable.run("Summarise the report", workflow_id="report-42")
```

Every model call and every tool call of the run is a DBOS step: after a crash, completed calls
are read back from the system database, never sent or executed again. The call in flight at
the crash runs again (at least once); a tool makes that safe with `step_key()` as an
idempotency key.
"""

from toolnexus._extras import extra_hint

try:
    import dbos  # noqa: F401
except ImportError as exc:
    raise ImportError(f"toolnexus.durable needs DBOS: {extra_hint('dbos')}", name="dbos") from exc

from toolnexus.durable._client import (
    DurableClient,
    DurableRun,
    cancel_run,
    pending_request,
    send_answer,
)
from toolnexus.durable._errors import DurableError, WorkflowNotFound
from toolnexus.durable._steps import step_key
from toolnexus.durable._stream import stream_events

__all__ = [
    "DurableClient",
    "DurableError",
    "DurableRun",
    "WorkflowNotFound",
    "cancel_run",
    "pending_request",
    "send_answer",
    "step_key",
    "stream_events",
]
