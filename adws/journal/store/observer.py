"""`JournalObserver`: record each event of one run in the journal as it happens."""

from __future__ import annotations

from typing import TYPE_CHECKING, final

from adws.journal.store.statements import statements_for

if TYPE_CHECKING:
    from collections.abc import Mapping

    from adws.engine.events import RunEvent
    from adws.journal.records.options import RunOptions
    from adws.journal.store.journal import Journal

__all__ = ["JournalObserver"]


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
        updates the row.
        """
        self.journal = journal
        self.fingerprint = fingerprint
        self.steps: Mapping[str, str] = steps or {}
        self.options = None if options is None else options.to_json()
        self.transcripts = transcripts
        self.queued = queued
        self.failure: str | None = None
        """What could not be recorded, first failure only; None while all is recorded."""

    def __call__(self, event: RunEvent, /) -> None:
        """Record one event in its own transaction; remember, then raise, a failure.

        Raising detaches this observer from the run (the executor reports it);
        `failure` lets the CLI say what was not recorded and exit non-zero.
        """
        try:
            self._record(event)
        except Exception as exc:
            # Raising detaches this observer, so this is its first and only failure.
            self.failure = f"{type(event).__name__} of step {_step_of(event)}: {exc}"
            raise

    def _record(self, event: RunEvent) -> None:
        statements = statements_for(
            event,
            self.fingerprint,
            self.steps,
            row_exists=self.queued,
            options=self.options,
            transcripts=self.transcripts,
        )
        if statements:
            self.journal.apply(statements)


def _step_of(event: RunEvent) -> str:
    return repr(getattr(event, "step", "(none)"))
