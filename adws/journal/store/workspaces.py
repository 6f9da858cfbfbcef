"""What the journal keeps of a run's worktrees and approvals, and how it is read back.

A `worktree` step reports each change of its worktree (`WorktreeRecorded`):
the row per run and label holds the repository, folder, branch, the base
commit, the git directory git made for it and the hash of the content the
last attempt left (or `removed`).
A run that reaches an `approval_step` records the question (its message,
when it was asked and its timeout); `adws approve`/`reject` record the
decision on that row: who, when, and the note or reason.

Rows are read as hostile input, like the rest of the journal: a value of
the wrong type is read as absent, never trusted.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Final

from adws import io_ops
from adws.engine.scope import Decision
from adws.engine.usage import Budget
from adws.journal.records.workspaces import (
    VERDICTS,
    ApprovalRecord,
    WorktreeRecord,
    stored,
    text_of,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from adws.journal.store.journal import Journal
    from adws.journal.store.schema import Statement

__all__ = [
    "approvals_of",
    "asked_statement",
    "decide",
    "decided_statement",
    "mark_removed",
    "worktrees_of",
]


_WORKTREES: Final = (
    "SELECT label, step, repo, path, branch, base, tree, state, recorded, gitdir, attempts"
    " FROM worktrees WHERE run_id = ? ORDER BY rowid"
)
_BEFORE_11: Final = _WORKTREES.replace("gitdir, attempts", "'', NULL")


def worktrees_of(journal: Journal, run_id: str) -> list[WorktreeRecord]:
    """List a run's worktrees as last journaled, in the order they were made."""
    if not journal.has_table("worktrees"):
        return []
    # A journal read without being migrated (schema 10) has neither: read as absent.
    columns = journal.columns("worktrees")
    rows = journal.query(_WORKTREES if "gitdir" in columns else _BEFORE_11, (run_id,))
    return [_worktree(row) for row in rows]


def _worktree(row: Sequence[object]) -> WorktreeRecord:
    label, step, repo, path, branch, base, tree, state, recorded, gitdir = map(text_of, row[:10])
    texts = (label, step, repo, path, branch, base, tree, state, recorded)
    return WorktreeRecord(*texts, gitdir=gitdir, attempts=_count(row[10]))


def _count(value: object) -> int | None:
    """Read a count column; anything but a whole number that is not negative is absent."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def _timeout(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value < 1e12:  # noqa: PLR2004 - past any wait a person would set
        return float(value)
    return None


def _raised(value: object) -> Budget | None:
    """Read a raised budget as `decided_statement` wrote it; anything else is absent."""
    try:
        loaded = json.loads(text_of(value)) if value is not None else None
        if not isinstance(loaded, dict):
            return None
        return Budget(loaded.get("max_cost_usd"), loaded.get("max_tokens"))
    except (ValueError, TypeError, RecursionError):
        return None


def approvals_of(journal: Journal, run_id: str) -> list[ApprovalRecord]:
    """List the questions a run's approval steps asked, oldest first, with their decisions."""
    if not journal.has_table("approvals"):
        return []
    # A journal read without being migrated (schema 11) has no raised budgets: read as absent.
    budget = "budget" if "budget" in journal.columns("approvals") else "NULL"
    rows = journal.query(
        "SELECT step, message, asked, timeout, verdict, decided_by, decided, note,"  # noqa: S608 - a fixed column name
        f" {budget} FROM approvals WHERE run_id = ? ORDER BY id",
        (run_id,),
    )
    records = []
    for step, message, asked, timeout, verdict, by, decided, note, raised in rows:
        decision = (
            Decision(verdict, text_of(by), text_of(decided), text_of(note))
            if verdict in VERDICTS
            else None
        )
        texts = (text_of(step), text_of(message), text_of(asked))
        records.append(ApprovalRecord(*texts, _timeout(timeout), decision, _raised(raised)))
    return records


_ASK: Final = (
    "INSERT INTO approvals (run_id, step, message, asked, timeout)"
    " SELECT ?, ?, ?, ?, ? WHERE NOT EXISTS"
    " (SELECT 1 FROM approvals WHERE run_id = ? AND step = ? AND verdict IS NULL)"
)


def asked_statement(run_id: str, step: str, message: str, timeout: object) -> Statement:
    """Record that `step` asks for approval, unless its question is still open (asked earlier).

    A resume that stops at the same question again keeps the first time it
    was asked, so a timeout counts from there.
    """
    asked = (run_id, step, stored(message), io_ops.utc_now(), _timeout(timeout))
    return (_ASK, (*asked, run_id, step))


_DECIDE: Final = (
    "UPDATE approvals SET verdict = ?, decided_by = ?, decided = ?, note = ?, budget = ?"
    " WHERE id = (SELECT MAX(id) FROM approvals WHERE run_id = ? AND step = ?"
    " AND verdict IS NULL)"
)


def decided_statement(
    run_id: str, step: str, decision: Decision, raised: Budget | None = None
) -> Statement:
    """Record a person's decision on the open question of `step`; it changes no row if none is.

    `adws approve` and `reject` record it in the run's claim (`Journal.claim`),
    stamped with the time of the claim, so a question answered meanwhile is
    never answered twice. `raised` is the budget an approval of a question
    the budget asked raised the run's to.
    """
    budget = None if raised is None else json.dumps(raised.to_dict(), sort_keys=True)
    return (
        _DECIDE,
        (
            decision.verdict,
            stored(decision.by),
            decision.at,
            stored(decision.note),
            budget,
            run_id,
            step,
        ),
    )


def decide(journal: Journal, run_id: str, step: str, decision: Decision) -> None:
    """Record a person's decision on the open question of `step` (asking it, if none is open)."""
    with journal.transaction() as db:
        db.execute(*asked_statement(run_id, step, "", None))
        db.execute(*decided_statement(run_id, step, decision))


def mark_removed(journal: Journal, run_id: str, label: str) -> None:
    """Record that a run's worktree was removed (by `adws worktrees gc`): its base stays."""
    journal.write(
        "UPDATE worktrees SET state = ?, tree = '', recorded = ? WHERE run_id = ? AND label = ?",
        ("removed", io_ops.utc_now(), run_id, label),
    )
