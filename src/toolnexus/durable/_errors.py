"""What a durable run raises to its host: DBOS's own errors, under `ToolnexusError`.

The errors of the run itself (a provider that fails, a usage limit) are raised as the client
raises them. What DBOS reports about the workflow (an id that is unknown or taken by another
kind of run, a cancelled run, a replay that diverged from its record) is raised as one of these,
with DBOS's error as the cause.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from dbos._error import (
    DBOSAwaitedWorkflowCancelledError,
    DBOSException,
    DBOSNonExistentWorkflowError,
)

from toolnexus.errors import RunCancelled, ToolnexusError

__all__ = ["DurableError", "WorkflowNotFound", "dbos_errors"]


class DurableError(ToolnexusError):
    """DBOS could not run, resume or read the durable run `workflow_id` (its error is the
    `__cause__`): e.g. the id belongs to another kind of run, or a replay diverged from the
    record because the code outside the steps is not deterministic."""

    def __init__(self, workflow_id: str | None, message: str) -> None:
        about = f"durable run {workflow_id!r}" if workflow_id is not None else "durable run"
        super().__init__(f"{about}: {message}")
        self.workflow_id = workflow_id


class WorkflowNotFound(DurableError, LookupError):
    """No durable run has this workflow id in the system database."""

    def __init__(self, workflow_id: str) -> None:
        ToolnexusError.__init__(self, f"no durable run with workflow id {workflow_id!r}")
        self.workflow_id = workflow_id


@contextlib.contextmanager
def dbos_errors(workflow_id: str | None) -> Iterator[None]:
    """Raise the DBOS errors of the block as toolnexus errors about run `workflow_id`."""
    try:
        yield
    except DBOSNonExistentWorkflowError as exc:
        if workflow_id is None:
            raise DurableError(None, "no such workflow") from exc
        raise WorkflowNotFound(workflow_id) from exc
    except DBOSAwaitedWorkflowCancelledError as exc:
        raise RunCancelled(f"the durable run {exc.workflow_id!r} was cancelled") from exc
    except DBOSException as exc:
        raise DurableError(workflow_id, str(exc)) from exc
