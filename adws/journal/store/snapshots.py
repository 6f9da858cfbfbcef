"""Snapshots: a run's promoted context at a step boundary, so a resume reads one row, not all.

A run's journal keeps per step only the outputs it promoted; a resume
rebuilds the context by folding every finished step's row, which at step
1,000 means reading and decoding 1,000 rows. A snapshot is the promoted
context after step `index` (`step`), encoded with the journal's codec
(`CODEC`), with its size and sha256, the id of that step's attempt row
(`through`) and a digest of the fingerprints of the steps up to it
(`steps`). `JournalObserver` writes one when a run is interrupted, parks
or waits, and periodically (`SNAPSHOT_EVERY`), in the transaction of the
step's own row; a run keeps only its newest. Runs of a batch, journaled by
their coordinator from their workers' statements, keep none.

A resume (`resume_rows`) reads the newest snapshot and the attempt rows
recorded after `through`. The snapshot is used only when it passes every
check (codec, size, hash, decoding, a step and row the run really has) and
when it still stands for the rows: no row after it belongs to a step at or
before it (a `--from` that ran those steps again), the steps up to it have
today's fingerprints (else the rows say which changed, as without a
snapshot), and the resume runs none of them again (`--from`,
`rerun_on_resume`). Otherwise every row is read, as before snapshots: a
snapshot that failed a check is named in a `SnapshotIgnored` warning; one
that no longer applies is passed over quietly.
"""

from __future__ import annotations

import hashlib
import warnings
from typing import TYPE_CHECKING, Final, final

import attrs

from adws import io_ops
from adws._exceptions import AdwsError
from adws.engine.context import WorkflowContext
from adws.engine.events import (
    AttemptFailed,
    RunFinished,
    RunStarted,
    StepSkipped,
    StepSucceeded,
)
from adws.journal.records.codec import decode_context, encode_context
from adws.journal.records.runs import AttemptRecord  # attrs reads the annotation
from adws.journal.records.snapshots import Snapshot, steps_digest

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from adws.engine.events import RunEvent
    from adws.journal.records.runs import RunRecord
    from adws.journal.store.journal import Journal
    from adws.journal.store.schema import Statement

__all__ = [
    "CODEC",
    "SNAPSHOT_EVERY",
    "ResumeRows",
    "SnapshotIgnored",
    "SnapshotKeeper",
    "resume_rows",
    "snapshot_statements",
]

SNAPSHOT_EVERY: Final = 100
"""Steps between two periodic snapshots, at least (besides interruption, parking, waiting).

A snapshot encodes the whole context: O(context), about 0.5 ms for the
1,000 small keys a 1,000-step run has made, where a step's row costs
O(its outputs), about 70 µs. Every 100 steps that adds about 5 µs to a
step of a 1,000-step run, while a resume reads at most 100 rows past its
snapshot. A fixed interval would make a step of a 10,000-step run pay
about 30 µs, so the interval also grows with the run: at least a quarter
(`_SHARE`) of the steps run so far (snapshots after steps 100, 200, 300,
400, 533, 710, 946, 1,261, ...), which keeps the total encoding within a
few times the final context's, a few µs a step at any length.
"""
_SHARE: Final = 4
CODEC: Final = "adws-context-1"
"""The codec a snapshot's body is written with: `adws.journal.records.codec.encode_context`."""

_INSERT: Final = (
    "INSERT INTO snapshots (run_id, step, step_index, through, steps, codec, size, sha256, body,"
    " recorded) VALUES (?, ?, ?, (SELECT MAX(id) FROM attempts WHERE run_id = ? AND step = ?),"
    " ?, ?, ?, ?, ?, ?)"
)
_OLDER: Final = (
    "DELETE FROM snapshots WHERE run_id = ?"
    " AND id < (SELECT MAX(id) FROM snapshots WHERE run_id = ?)"
)
_NEWEST: Final = (
    "SELECT id, step, step_index, through, steps, codec, size, sha256, body FROM snapshots"
    " WHERE run_id = ? ORDER BY id DESC LIMIT 1"
)


class SnapshotIgnored(AdwsError, UserWarning):  # noqa: N818 - a warning, never raised
    """A run's snapshot failed a check: the resume rebuilt the context from the step rows.

    A warning (`warnings.warn`), never raised: an adws error all the same.
    """


@final
@attrs.frozen
class ResumeRows:
    """What a resume reads: a snapshot it may start from, and the attempt rows it needs.

    With a snapshot, `attempts` holds only the rows recorded after it;
    without one, every row of the run.
    """

    snapshot: Snapshot | None
    attempts: tuple[AttemptRecord, ...]


def _encoded(context: WorkflowContext) -> tuple[str, bytes]:
    body = encode_context(WorkflowContext(inputs=context.inputs))
    return body, body.encode("utf-8", "surrogatepass")


def snapshot_statements(
    run_id: str, step: str, index: int, context: WorkflowContext, digest: str
) -> list[Statement]:
    """Return the writes that keep `context` as the run's snapshot after step `index` (`step`).

    `context` is the promoted context that step left (its inputs; see
    `StepSucceeded.context`), `digest` the `steps_digest` of the steps up
    to it. The run's older snapshots are deleted: a run keeps its newest.
    """
    body, data = _encoded(context)
    values = (run_id, step, index, run_id, step, digest, CODEC, len(data))
    return [
        (_INSERT, (*values, hashlib.sha256(data).hexdigest(), body, io_ops.utc_now())),
        (_OLDER, (run_id, run_id)),
    ]


def _damage(row: Sequence[object]) -> str | None:
    """Say how a snapshot row's body fails its codec, size or hash (None: it passes)."""
    codec, size, sha256, body = row[5:9]
    if codec != CODEC:
        return f"its codec is {codec!r}, not {CODEC!r}"
    data = str(body).encode("utf-8", "surrogatepass")
    if size != len(data):
        return f"its size is {len(data)} bytes, not the {size} recorded"
    if sha256 != hashlib.sha256(data).hexdigest():
        return "its sha256 does not match its body"
    return None


def _checked(row: Sequence[object], last_attempt: int) -> Snapshot | str:
    """Decode a snapshot row, or say which of its checks it failed."""
    snapshot_id, step, index, through = row[:4]
    damage = _damage(row)
    if damage is not None:
        return damage
    if not isinstance(index, int) or not isinstance(through, int) or not isinstance(step, str):
        return "its step or attempt row is missing"
    if not 0 < through <= last_attempt or index < 0:
        return f"its attempt row {through} is past the run's rows"
    try:
        context = decode_context(str(row[8]))
    except ValueError as exc:
        return f"its body cannot be decoded: {exc}"
    return Snapshot(int(str(snapshot_id)), step, index, through, context)


def _usable(
    snapshot: Snapshot, digest: object, steps: Sequence[str], current: Mapping[str, str]
) -> bool:
    """Tell whether the workflow as it is now has the snapshot's steps, unchanged."""
    if snapshot.index >= len(steps) or steps[snapshot.index] != snapshot.step:
        return False
    covered = steps[: snapshot.index + 1]
    return digest == steps_digest((name, current.get(name)) for name in covered)


def _newest(
    journal: Journal, record: RunRecord, steps: Sequence[str], current: Mapping[str, str]
) -> Snapshot | None:
    if record.last_attempt is None or not journal.has_table("snapshots"):
        return None  # a record not read by `Journal.find`, or a journal read, never migrated
    rows = journal.query(_NEWEST, (record.run_id,))
    if not rows:
        return None
    found = _checked(rows[0], record.last_attempt)
    if isinstance(found, str):
        warnings.warn(
            f"run {record.run_id}: snapshot {rows[0][0]} (after step {rows[0][1]!r}) is "
            f"ignored: {found}; the context is rebuilt from the step rows",
            SnapshotIgnored,
            stacklevel=3,
        )
        return None
    return found if _usable(found, rows[0][4], steps, current) else None


def resume_rows(
    journal: Journal,
    record: RunRecord,
    steps: Sequence[str],
    current: Mapping[str, str],
    *,
    first_rerun: int | None = None,
) -> ResumeRows:
    """Read what a resume of `record` needs: its newest usable snapshot and the rows after it.

    `steps` names the workflow's steps as it is now, `current` their
    fingerprints today. `first_rerun` is the index of the earliest step the
    resume runs again although it finished (`--from`, a `rerun_on_resume`
    step): a snapshot at or after it is not used. Without a usable
    snapshot, every row of the run is read; so it is for a `record` that
    `Journal.find` did not read (it knows the run's newest row: a
    snapshot past it fails its checks).
    """
    snapshot = _newest(journal, record, steps, current)
    if snapshot is not None and (first_rerun is None or snapshot.index < first_rerun):
        after = journal.attempts(record.run_id, after=snapshot.through)
        if all(row.step_index > snapshot.index for row in after):
            return ResumeRows(snapshot, tuple(after))
    return ResumeRows(None, tuple(journal.attempts(record.run_id)))


_STOPPED: Final = frozenset({"interrupted", "waiting", "parked"})
"""How a run pauses that a resume continues as it is: its last step boundary is kept.

A failed run is not among them (the normal loop fixes the failing step and
resumes): its resume reads the rows after the last periodic snapshot, or
every row, and refuses a row that went bad as before snapshots.
"""


@final
class SnapshotKeeper:
    """Follow one run's events and say when to write a snapshot, and of what.

    The boundary is the latest step of this session that finished (succeeded,
    or skipped by its condition) while no step had failed for good: the
    context its `StepSucceeded` carries is what the rows up to it fold to.
    A resumed session's steps before its first (`rerun_on_resume`) are not
    boundaries: the steps between them and the first were not run again.
    """

    def __init__(self, steps: Mapping[str, str], every: int = SNAPSHOT_EVERY) -> None:
        """Keep snapshots of a run whose steps have fingerprints `steps`, every `every` steps."""
        self.steps = steps
        self.every = every
        self._names: tuple[str, ...] = ()
        self._first = 0
        self._context = WorkflowContext()
        self._boundary: tuple[str, int] | None = None
        self._last = 0
        """How many steps were done when the last snapshot was kept (a resume's first: all)."""
        self._kept = False
        self._halted = False

    def statements(self, event: RunEvent) -> list[Statement]:
        """Return the snapshot writes to record with `event` (most events: none)."""
        match event:
            case RunStarted():
                self._names, self._first = event.steps, event.first_step
                self._last = event.first_step
                self._context = event.context
            case StepSkipped(reason="halted") | AttemptFailed(will_retry=False):
                self._halted = True
            case StepSucceeded() | StepSkipped() if not self._halted:
                if isinstance(event, StepSucceeded):
                    self._context = event.context
                if event.index >= self._first:
                    return self._passed(event.run_id, event.step, event.index, event.total)
            case RunFinished(status=status) if status in _STOPPED and not self._kept:
                return self._write(event.run_id)
        return []

    def _passed(self, run_id: str, step: str, index: int, total: int) -> list[Statement]:
        """Move the boundary to step `index`; keep it when enough steps passed since the last.

        Not after the last step: a run that ends there succeeded, or stops
        after it anyway (its snapshot is then kept as it ends).
        """
        self._boundary, self._kept = (step, index), False
        done = index + 1
        due = done - self._last >= max(self.every, done // _SHARE) and done < total
        return self._write(run_id) if due else []

    def _write(self, run_id: str) -> list[Statement]:
        if self._boundary is None:
            return []
        step, index = self._boundary
        self._kept, self._last = True, index + 1
        digest = steps_digest((name, self.steps.get(name)) for name in self._names[: index + 1])
        return snapshot_statements(run_id, step, index, self._context, digest)
