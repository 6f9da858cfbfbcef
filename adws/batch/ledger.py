"""The coordinator's writes to the journal, and what it could not write.

The coordinator is a batch's only journal writer, and it must survive the
journal: a write lock held past the busy timeout, a full disk, a value
SQLite cannot hold (`OverflowError`). A write that fails is tried again
for `--journal-wait` seconds (`adws.journal.store.patience`); a step's
start is written before its worker may start it (the journal first). The
first write that still fails halts
the batch (its runs stop after their cleanup, as on Ctrl-C), is kept
with what it would have recorded, and no further write is tried, so the
batch ends quickly; at the very end one last transaction tries to record
how each run ended. The CLI's last line says what was not recorded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, final

from adws.journal.store import cancels
from adws.journal.store.batches import (
    children_statement,
    ended_statement,
    failed_statement,
    finish_batch,
    mark_statement,
)
from adws.journal.store.patience import JOURNAL_WAIT, persist
from adws.runs import batches

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from adws.engine.errors import PipelineError
    from adws.journal.records.holders import Seen
    from adws.journal.records.runs import CancelRecord
    from adws.journal.store.journal import Journal
    from adws.journal.store.schema import Statement

__all__ = ["Ledger"]


@final
class Ledger:
    """Write a batch's journal rows; on the first failure, halt the batch and stop writing."""

    def __init__(
        self,
        journal: Journal,
        on_failure: Callable[[], None] = lambda: None,
        wait: float = JOURNAL_WAIT,
    ) -> None:
        """Write to `journal`; call `on_failure` once, when a write first fails for `wait` s."""
        self.journal = journal
        self.on_failure = on_failure
        self.wait = wait
        self.failures: list[str] = []
        """What was not recorded: the first failure with its cause, then a count of the rest."""
        self.skipped = 0

    def stopping(self, run_id: str) -> str:
        """Say why a run stops at its step boundary: the journal did not record its step's start."""
        first = self.failures[0] if self.failures else "a write before it failed"
        return (
            f"interrupted: the journal {self.journal.path} did not record run {run_id} for "
            f"{self.wait:g}s ({first}); no further step starts unrecorded"
        )

    @property
    def broken(self) -> bool:
        """Tell whether a write failed (nothing more is written until `close`)."""
        return bool(self.failures)

    def apply(self, statements: Sequence[Statement], what: str, *, starts: bool = False) -> bool:
        """Write `statements` in one transaction; False when they were not recorded.

        A write that fails is tried again on a new connection for `wait`
        seconds (`--journal-wait`) before the batch halts. `starts`: they
        record a step's start, so the journal must have room for the step
        too (`Journal.has_room`), as `adws run` checks.
        """
        if self.broken:
            self.skipped += 1
            return False

        def write() -> None:
            if starts:
                self.journal.has_room()
            self.journal.apply(statements)

        try:
            persist(self.journal, write, wait=self.wait)
        except Exception as exc:  # noqa: BLE001 - any failure to write halts the batch, named
            self.failures.append(f"{what}: {type(exc).__name__}: {exc}")
            self.on_failure()
            return False
        return True

    def take(
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

    def cancels(self, run_ids: Sequence[str]) -> dict[str, CancelRecord]:
        """Read the cancels asked for the runs in flight; none while the journal cannot be read.

        A read that fails halts nothing: the next one, a second later, asks again.
        """
        if self.broken:
            return {}
        try:
            return cancels.requests(self.journal, run_ids)
        except Exception:  # noqa: BLE001 - asked again at the next tick
            return {}

    def children(self, groups: Mapping[str, Sequence[int]]) -> None:
        """Record each run's live child process groups, so a resume can find what is left."""
        statements = [children_statement(run_id, found) for run_id, found in groups.items()]
        self.apply(statements, "child process groups")

    def mark(self, run_id: str, status: str) -> None:
        """Set a run's status."""
        self.apply([mark_statement(run_id, status)], f"the {status} end of run {run_id}")

    def fail(self, run_id: str, error: PipelineError) -> None:
        """End a run `failed` with `error`."""
        self.apply([failed_statement(run_id, error)], f"the failure of run {run_id}")

    def close(self, batch_id: str, status: str, ends: Mapping[str, str]) -> None:
        """Record how the batch ended; after a failure, try once more to record each run's end."""
        if not self.broken:
            try:
                finish_batch(self.journal, batch_id, status)
            except Exception as exc:  # noqa: BLE001 - as above
                self.failures.append(f"the end of batch {batch_id}: {type(exc).__name__}: {exc}")
            return
        statements = [mark_statement(run_id, end) for run_id, end in ends.items()]
        statements.append(ended_statement(batch_id, status))
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
