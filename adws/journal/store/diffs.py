"""Each worktree attempt's change, kept for reviewers: the diff from the base, by attempt.

After every attempt of a step in a worktree, `WorktreeRecorded` carries
the patch from the worktree's base commit to the content the attempt left
(see `adws.workspaces.patches`). It is kept as a text (`texts`: once per
distinct diff, compressed, cut at `DIFF_LIMIT` bytes, the whole size
recorded) in a `diffs` row naming the attempt as the journal records it
(step or branch path, attempt number) and the worktree's label. With
transcripts off only its hash and size are kept. `adws status R --step S
-v`, `adws approvals -v` and `adws report` show it, so a change is read,
and approved, on a machine that has no worktree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from adws import io_ops
from adws.journal.records.diffs import DiffRecord
from adws.journal.records.exchanges import Text
from adws.journal.records.runs import checked_text, checked_whole
from adws.journal.store.exchanges import kept_text, read_text

if TYPE_CHECKING:
    from collections.abc import Sequence

    from adws.engine.events import WorktreeRecorded
    from adws.journal.store.journal import Journal
    from adws.journal.store.schema import Statement

__all__ = ["DIFF_LIMIT", "diff_statements", "diffs_of", "latest_diffs"]

DIFF_LIMIT: Final = 1 << 20
"""The most of one diff the journal keeps, in bytes (an agent's output cap, by default)."""
_INSERT: Final = (
    "INSERT INTO diffs (run_id, step, attempt, label, recorded, diff, diff_size)"
    " VALUES (?, ?, ?, ?, ?, ?, ?)"
)


def diff_statements(event: WorktreeRecorded, *, transcripts: bool = True) -> list[Statement]:
    """Return what keeping an attempt's diff writes: its text (when kept) and its row.

    An event of no attempt (a worktree made or removed) writes nothing; an
    attempt whose diff git could not make writes a row with no diff, so a
    reviewer is told, never shown an earlier attempt's diff as the latest.
    """
    if event.state != "present" or not event.attempt_path:
        return []
    statements: list[Statement] = []
    digest, size = kept_text(event.diff, DIFF_LIMIT, statements, keep=transcripts)
    row = (event.run_id, event.attempt_path or event.step, event.attempt, event.label)
    statements.append((_INSERT, (*row, io_ops.utc_now(), digest, size)))
    return statements


def _record(row: Sequence[Any]) -> DiffRecord:
    problems: list[str] = []
    step = checked_text(row[0], "step", problems)
    attempt = checked_whole(row[1], "attempt", problems)
    label = checked_text(row[2], "label", problems)
    recorded = checked_text(row[3], "recorded", problems)
    diff = read_text("diff", row[4:7], problems)
    taken = diff is not None
    return DiffRecord(
        step, attempt, label, recorded, diff or Text("", 0, None), tuple(problems), taken=taken
    )


_SELECT: Final = (
    "SELECT x.step, x.attempt, x.label, x.recorded, x.diff, x.diff_size, t.data"
    " FROM diffs AS x LEFT JOIN texts AS t ON t.hash = x.diff WHERE x.run_id = ?"
)


def _read(journal: Journal, clauses: str, params: tuple[object, ...]) -> list[DiffRecord]:
    """Read the diffs rows `clauses` choose (after the run's own), texts included."""
    if not journal.has_table("diffs"):
        return []  # a journal read without being migrated (schema 15) kept none
    return [_record(row) for row in journal.query(f"{_SELECT} {clauses}", params)]


def diffs_of(
    journal: Journal, run_id: str, *, step: str | None = None, attempt: int | None = None
) -> list[DiffRecord]:
    """List a run's worktree diffs in the order they were taken (of one step or attempt)."""
    clauses = "AND (? IS NULL OR x.step = ?) AND (? IS NULL OR x.attempt = ?) ORDER BY x.id"
    return _read(journal, clauses, (run_id, step, step, attempt, attempt))


def latest_diffs(journal: Journal, run_id: str) -> list[DiffRecord]:
    """Return each worktree's latest diff, in the order the worktrees were first diffed.

    What a reviewer approves: the change each worktree holds now. Only
    those rows are read (an earlier attempt's diff is never inflated).
    """
    clauses = (
        "AND x.id IN (SELECT MAX(id) FROM diffs WHERE run_id = ? GROUP BY label)"
        " ORDER BY (SELECT MIN(y.id) FROM diffs AS y WHERE y.run_id = x.run_id"
        " AND y.label = x.label)"
    )
    return _read(journal, clauses, (run_id, run_id))
