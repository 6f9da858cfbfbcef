"""The coordinator's writes to the journal, and what it could not write.

The coordinator is a batch's only journal writer, and it must survive the
journal: a write lock held past the busy timeout, a full disk, a value
SQLite cannot hold (`OverflowError`). The first write that fails halts
the batch (its runs stop after their cleanup, as on Ctrl-C), is kept
with what it would have recorded, and no further write is tried, so the
batch ends quickly; at the very end one last transaction tries to record
how each run ended. The CLI's last line says what was not recorded.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Final, final

from adws import io_ops
from adws.journal.batches import finish_batch
from adws.journal.codec import encode_error
from adws.runs import batches

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from adws.engine.errors import PipelineError
    from adws.journal.holders import Seen
    from adws.journal.schema import Statement
    from adws.journal.store import Journal

__all__ = ["Ledger"]

_CHILDREN: Final = "UPDATE runs SET children = ? WHERE run_id = ?"
_FAIL: Final = (
    "UPDATE runs SET status = 'failed', finished = ?, error = ?, failed_step = ? WHERE run_id = ?"
)
_MARK: Final = "UPDATE runs SET status = ?, finished = COALESCE(finished, ?) WHERE run_id = ?"


@final
class Ledger:
    """Write a batch's journal rows; on the first failure, halt the batch and stop writing."""

    def __init__(self, journal: Journal, on_failure: Callable[[], None] = lambda: None) -> None:
        """Write to `journal`; call `on_failure` once, when a write first fails."""
        self.journal = journal
        self.on_failure = on_failure
        self.failures: list[str] = []
        """What was not recorded: the first failure with its cause, then a count of the rest."""
        self.skipped = 0

    @property
    def broken(self) -> bool:
        """Tell whether a write failed (nothing more is written until `close`)."""
        return bool(self.failures)

    def apply(self, statements: Sequence[Statement], what: str) -> bool:
        """Write `statements` in one transaction; False when they were not recorded."""
        if self.broken:
            self.skipped += 1
            return False
        try:
            self.journal.apply(statements)
        except Exception as exc:  # noqa: BLE001 - any failure to write halts the batch, named
            self.failures.append(f"{what}: {type(exc).__name__}: {exc}")
            self.on_failure()
            return False
        return True

    def claim(
        self,
        run_id: str,
        *,
        force: bool = False,
        seen: Seen | None = None,
        then: Sequence[Statement] = (),
    ) -> str | None:
        """Take a run as it is handed to a worker; say why not (gone, changed, held, not recorded).

        `seen` and `then` are as `claim_batch_run` takes them.
        """
        if self.broken:
            return f"run {run_id} was not started: the journal cannot record it"
        try:
            return batches.take(self.journal, run_id, force=force, seen=seen, then=then)
        except Exception as exc:  # noqa: BLE001 - as above
            self.failures.append(f"the start of run {run_id}: {type(exc).__name__}: {exc}")
            self.on_failure()
            return f"run {run_id} was not started: the journal cannot record it"

    def children(self, groups: Mapping[str, Sequence[int]]) -> None:
        """Record each run's live child process groups, so a resume can find what is left."""
        rows = [(json.dumps(list(g)) if g else None, run_id) for run_id, g in groups.items()]
        self.apply([(_CHILDREN, row) for row in rows], "child process groups")

    def mark(self, run_id: str, status: str) -> None:
        """Set a run's status."""
        self.apply(
            [(_MARK, (status, io_ops.utc_now(), run_id))], f"the {status} end of run {run_id}"
        )

    def fail(self, run_id: str, error: PipelineError) -> None:
        """End a run `failed` with `error`."""
        row = (io_ops.utc_now(), encode_error(error), error.step_name or None, run_id)
        self.apply([(_FAIL, row)], f"the failure of run {run_id}")

    def close(self, batch_id: str, status: str, ends: Mapping[str, str]) -> None:
        """Record how the batch ended; after a failure, try once more to record each run's end."""
        if not self.broken:
            try:
                finish_batch(self.journal, batch_id, status)
            except Exception as exc:  # noqa: BLE001 - as above
                self.failures.append(f"the end of batch {batch_id}: {type(exc).__name__}: {exc}")
            return
        now = io_ops.utc_now()
        statements: list[Statement] = [(_MARK, (end, now, run_id)) for run_id, end in ends.items()]
        statements.append(
            (
                "UPDATE batches SET status = ?, finished = ? WHERE batch_id = ?",
                (status, now, batch_id),
            )
        )
        try:
            self.journal.apply(statements)
        except Exception:  # noqa: BLE001, S110 - the last try: the CLI says it all was not recorded
            pass
        else:
            self.failures.append("(each run's end and the batch's were recorded after all)")

    def describe(self) -> tuple[str, ...]:
        """Say what was not recorded: the first failure, and how many writes were not tried."""
        if not self.failures:
            return ()
        later = f"{self.skipped} later write{'s' * (self.skipped != 1)} not tried"
        return (*self.failures, later) if self.skipped else tuple(self.failures)
