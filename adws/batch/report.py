"""How a batch went: each run's end, the progress line, and the batch's report."""

from __future__ import annotations

from typing import final

import attrs

from adws.engine.errors import PipelineError

__all__ = ["BatchReport", "Progress", "RunResult"]


@final
@attrs.frozen
class RunResult:
    """How one run of a batch ended."""

    line: int
    run_id: str
    status: str
    error: PipelineError | None

    def to_dict(self) -> dict[str, object]:
        """Return the `--json` record of this run."""
        return {
            "line": self.line,
            "run_id": self.run_id,
            "status": self.status,
            "error": None if self.error is None else self.error.to_dict(),
        }


@final
@attrs.frozen
class Progress:
    """Counts of a batch in flight, for the progress line."""

    total: int
    done: int
    failed: int
    blocked: int
    interrupted: int
    running: int
    seconds: float

    @property
    def finished(self) -> int:
        """Runs that ended, however they ended."""
        return self.done + self.failed + self.blocked + self.interrupted

    def line(self, batch_id: str) -> str:
        """Render the progress line: done, failed, blocked, running, runs per minute, ETA.

        Blocked counts the runs that wait: for a person, or parked on a limit.

        >>> Progress(10, 4, 1, 0, 0, 2, 30.0).line("b1")
        'batch b1: 4/10 done, 1 failed, 0 blocked, 2 running · 10 runs/min · ETA 0m30s'
        """
        rate = self.finished / self.seconds * 60 if self.seconds > 0 else 0.0
        left = self.total - self.finished
        eta = (
            "?" if rate == 0 else f"{int(left / rate * 60) // 60}m{int(left / rate * 60) % 60:02d}s"
        )
        return (
            f"batch {batch_id}: {self.done}/{self.total} done, {self.failed} failed, "
            f"{self.blocked} blocked, {self.running} running · {rate:.0f} runs/min · ETA {eta}"
        )


@final
@attrs.frozen
class BatchReport:
    """A finished (or interrupted) batch: its id, its runs, and its overall status."""

    batch_id: str
    workflow: str
    runs: tuple[RunResult, ...]
    interrupted: bool = False
    unrecorded: tuple[str, ...] = ()
    """What the journal could not record (the first failure first); empty when all was."""
    skipped: tuple[str, ...] = ()
    """Why runs of the batch were not run: pruned from the journal, or held by another process."""
    over_budget: float | None = None
    """The `--batch-max-cost` the batch reached, if it did (runs not started stay queued)."""
    warnings: tuple[str, ...] = ()
    """What went wrong without failing a run: a `--notify` command that failed."""

    def counts(self) -> dict[str, int]:
        """Count runs by status."""
        counted: dict[str, int] = {}
        for run in self.runs:
            counted[run.status] = counted.get(run.status, 0) + 1
        return counted

    @property
    def status(self) -> str:
        """`interrupted`, else `failed` (a run, the journal, a run not run), else `blocked`...

        A run waiting for approval counts as blocked: a person must act. Then
        `parked`: a run parked on an agent's limit goes on later (`adws
        resume --due`). The progress line counts parked runs with blocked ones.
        """
        counts = self.counts()
        if self.interrupted:
            return "interrupted"
        if self.unrecorded or self.skipped:
            return "failed"
        if counts.get("failed") or counts.get("cancelled"):  # a person ended a run: not success
            return "failed"
        if counts.get("blocked") or counts.get("waiting"):
            return "blocked"
        if counts.get("parked"):
            return "parked"
        return "succeeded" if set(counts) <= {"succeeded"} else "failed"

    def to_dict(self) -> dict[str, object]:
        """Return the `--json` object: batch id, counts and one record per run."""
        return {
            "batch_id": self.batch_id,
            "workflow": self.workflow,
            "status": self.status,
            "counts": self.counts(),
            "runs": [run.to_dict() for run in self.runs],
            "unrecorded": list(self.unrecorded),
            "skipped": list(self.skipped),
            "over_budget": self.over_budget,
            "warnings": list(self.warnings),
        }
