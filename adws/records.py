"""What the journal knows about a run: its records, and where a resume starts."""

from __future__ import annotations

import json
import socket
from typing import TYPE_CHECKING, final

import attrs

from adws import io_ops
from adws.codec import decode_context, decode_error
from adws.errors import PipelineError

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Sequence

    from adws.context import WorkflowContext

__all__ = ["AttemptRecord", "RunRecord", "attempt_from_row", "resume_point", "run_from_row"]


@final
@attrs.frozen
class RunRecord:
    """One run as the journal knows it."""

    run_id: str
    workflow: str
    fingerprint: str
    status: str
    steps: tuple[str, ...]
    inputs_json: str
    started: str
    finished: str | None
    seconds: float | None
    error: PipelineError | None
    failed_step: str | None
    pid: int | None
    host: str | None
    resumes: int
    children: tuple[int, ...] = ()
    """Process groups the run's step in flight had started when it was last recorded."""

    def inputs(self) -> WorkflowContext:
        """Decode the inputs the run started with (load its workflow module first)."""
        return decode_context(self.inputs_json)

    @property
    def stale(self) -> bool:
        """Tell whether the run says `running` but its process on this host is gone."""
        return (
            self.status == "running"
            and self.pid is not None
            and self.host == socket.gethostname()
            and not io_ops.process_alive(self.pid)
        )

    def live_children(self) -> tuple[int, ...]:
        """Return the recorded child process groups that are still alive on this host."""
        if self.host != socket.gethostname():
            return ()
        return tuple(pgid for pgid in self.children if io_ops.group_alive(pgid))

    def to_dict(self) -> dict[str, object]:
        """Return the JSON-safe summary `adws runs --json` prints."""
        return {
            "run_id": self.run_id,
            "workflow": self.workflow,
            "status": self.status,
            "stale": self.stale,
            "started": self.started,
            "finished": self.finished,
            "seconds": self.seconds,
            "failed_step": self.failed_step,
            "resumes": self.resumes,
        }


@final
@attrs.frozen
class AttemptRecord:
    """One recorded attempt (or skip) of one step."""

    step: str
    step_index: int
    attempt: int
    status: str
    recorded: str
    seconds: float
    error: PipelineError | None
    context_json: str | None

    def context(self) -> WorkflowContext | None:
        """Decode the context a successful step left (load its workflow module first)."""
        return None if self.context_json is None else decode_context(self.context_json)


def run_from_row(row: sqlite3.Row) -> RunRecord:
    """Build a `RunRecord` from a `runs` row."""
    return RunRecord(
        row["run_id"],
        row["workflow"],
        row["fingerprint"],
        row["status"],
        tuple(json.loads(row["steps"])),
        row["inputs"],
        row["started"],
        row["finished"],
        row["seconds"],
        None if row["error"] is None else decode_error(row["error"]),
        row["failed_step"],
        row["pid"],
        row["host"],
        row["resumes"],
        tuple(json.loads(row["children"] or "[]")),
    )


def attempt_from_row(row: sqlite3.Row) -> AttemptRecord:
    """Build an `AttemptRecord` from an `attempts` row."""
    return AttemptRecord(
        row["step"],
        row["step_index"],
        row["attempt"],
        row["status"],
        row["recorded"],
        row["seconds"],
        None if row["error"] is None else decode_error(row["error"]),
        row["context"],
    )


def resume_point(
    steps: Sequence[str], attempts: Sequence[AttemptRecord]
) -> tuple[str | None, WorkflowContext | None]:
    """Find the first step that did not succeed and the context the steps before it left.

    A step counts as done when its latest record is a success or a skip by
    its condition. Returns `(None, context)` when every step is done.
    """
    latest: dict[str, AttemptRecord] = {}
    for record in attempts:
        if record.status != "retried":
            latest[record.step] = record
    context: WorkflowContext | None = None
    for name in steps:
        last = latest.get(name)
        if last is None or last.status not in {"succeeded", "skipped:condition"}:
            return name, context
        context = last.context() or context
    return None, context
