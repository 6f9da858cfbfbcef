"""`JournalObserver`: record each event of one run in the journal as it happens; the journal first.

A run never takes a step the journal has not recorded. A write that fails
is tried again on a new connection for up to `wait` seconds
(`adws.journal.store.patience`; a value the journal cannot hold, such as
an integer past SQLite's, is not tried again); one still failing stops the run at that
step boundary: the step about to start does not (`JournalLost`, a
`KeyboardInterrupt`, so the executor records it `interrupted` and runs
the cleanup steps only), and after any other lost event the next step
that is not cleanup does not start either. Cleanup steps run, and each
write they need (and the run's end) is tried the same way; the other
events of a stopping run are tried once.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, final

from adws import io_ops
from adws.engine.events import AttemptFailed, RunFinished, StepStarted, StepSucceeded
from adws.journal.store.backend import ERRORS
from adws.journal.store.patience import JOURNAL_WAIT, persist
from adws.journal.store.snapshots import SnapshotKeeper
from adws.journal.store.statements import starting_statement, statements_for

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from adws.engine.events import RunEvent
    from adws.journal.records.options import RunOptions
    from adws.journal.store.journal import Journal
    from adws.journal.store.schema import Statement

__all__ = ["JournalLost", "JournalObserver"]


class JournalLost(KeyboardInterrupt):
    """The journal could not record the run for `--journal-wait`: it stops at this step boundary.

    A `KeyboardInterrupt`, as a Ctrl-C: the executor fails the step that was
    about to start `Interrupted` with this message, and runs only cleanup.
    """


@final
class JournalObserver:
    """Write each event of one run to the journal as it happens."""

    def __init__(  # noqa: PLR0913 - the run's journal and what it records
        self,
        journal: Journal,
        fingerprint: str,
        steps: Mapping[str, str] | None = None,
        options: RunOptions | None = None,
        *,
        transcripts: bool = True,
        queued: bool = False,
        wait: float = JOURNAL_WAIT,
        sleep: Callable[[float], None] = io_ops.sleep,
    ) -> None:
        """Record runs of a workflow whose definition hashes to `fingerprint`.

        `steps` maps step names to their fingerprints (see
        `adws.journal.identity.fingerprint.step_fingerprints`); each success records
        its step's, so a resume can tell which finished steps changed.
        `options` are the ones the run was started (or resumed) with.
        `transcripts=False` keeps only the hashes and sizes of what agents
        were asked and answered, and of what agents and commands said in
        errors (`--no-transcripts`; see `adws.journal.records.codec`). `queued`: the
        run's row was made before it started (`adws submit`), so its start
        updates the row. `wait` is how long a failed write is tried again
        (`--journal-wait`), pausing with `sleep`.
        """
        self.journal = journal
        self.fingerprint = fingerprint
        self.steps: Mapping[str, str] = steps or {}
        self.options = None if options is None else options.to_json()
        self.transcripts = transcripts
        self.queued = queued
        self.wait = wait
        self.sleep = sleep
        self.failure: str | None = None
        """What could not be recorded, first failure only; None while all is recorded."""
        self.lost = 0
        """How many events could not be recorded."""
        self.retried = 0
        """How many failed writes were recorded on a later try (a journal back within the wait)."""
        self._cleanup: str | None = None
        """The cleanup (`always_run`) step in flight, whose writes are waited for."""
        self._snapshots = SnapshotKeeper(self.steps)
        """When to keep the run's context as a snapshot (see `adws.journal.store.snapshots`)."""

    def __call__(self, event: RunEvent, /) -> None:
        """Record one event in its own transaction, waiting for the journal; stop the run if lost.

        Raises `JournalLost` instead of starting a step (not cleanup) once
        an event could not be recorded: that one's, or an earlier one's.
        `failure` lets the caller say what was not recorded and exit non-zero.
        """
        starts = isinstance(event, StepStarted) and not event.always_run
        if starts and self.failure is not None:
            raise JournalLost(self._stopping())
        if isinstance(event, StepStarted):
            self._cleanup = event.step if event.always_run else None
        wait = self.wait if self.failure is None or self._waited_for(event) else 0.0
        # Asked once, though the write may be tried again; none once an event was lost.
        kept = self._snapshots.statements(event) if self.failure is None else []
        ending = isinstance(event, RunFinished)
        with_row = [] if ending else kept  # a periodic snapshot goes with its step's row
        try:
            tries = persist(
                self.journal, lambda: self._record(event, with_row), wait=wait, sleep=self.sleep
            )
        except Exception as exc:  # noqa: BLE001 - any write that fails stops the run, named
            self.lost += 1
            if self.failure is None:
                self.failure = f"{type(event).__name__} of step {_step_of(event)}: {exc}"
            if starts:
                raise JournalLost(self._stopping()) from None
        else:
            self.retried += bool(tries)
            if ending and kept:
                self._keep(kept)

    def _keep(self, snapshot: list[Statement]) -> None:
        """Keep the snapshot of a run that stopped, after its end: best effort, tried once.

        Without it a resume reads every row, as it would have: a snapshot
        that cannot be written never costs the record of how the run ended.
        """
        with contextlib.suppress(*ERRORS):
            self.journal.apply(snapshot)

    def _waited_for(self, event: RunEvent) -> bool:
        """Tell whether a stopping run waits for this event: a cleanup step's, or the run's end."""
        if isinstance(event, RunFinished):
            return True
        if isinstance(event, StepStarted | StepSucceeded | AttemptFailed):
            return event.step == self._cleanup
        return False

    def _stopping(self) -> str:
        return (
            f"interrupted: the journal {self.journal.path} did not record the run for "
            f"{self.wait:g}s ({self.failure}); no further step starts unrecorded"
        )

    def _record(self, event: RunEvent, kept: list[Statement]) -> None:
        if isinstance(event, StepStarted):
            self.journal.has_room()
            self.journal.apply([starting_statement(event.run_id)])
            return
        statements = statements_for(
            event,
            self.fingerprint,
            self.steps,
            row_exists=self.queued,
            options=self.options,
            transcripts=self.transcripts,
        )
        statements += kept
        if statements:
            self.journal.apply(statements)


def _step_of(event: RunEvent) -> str:
    return repr(getattr(event, "step", "(none)"))
