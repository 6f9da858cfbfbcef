"""The question a waiting run asks, and the rejection that ends a wait past its timeout.

`approvals`, `approve`, `reject` and `resume` all end an expired wait the
same way, whichever of them sees it first: as a rejection with the reason
`timeout`, decided by `adws`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from adws import io_ops
from adws.engine.scope import Decision
from adws.journal.store.workspaces import approvals_of

if TYPE_CHECKING:
    from collections.abc import Callable

    from adws.journal import Journal, RunRecord
    from adws.journal.records.workspaces import ApprovalRecord

__all__ = ["TIMED_OUT", "asks_budget", "expired", "open_question"]

TIMED_OUT: Final = "timeout"
"""The reason recorded when a wait passes its timeout, and the name of who decided it."""


def open_question(journal: Journal, record: RunRecord) -> ApprovalRecord | None:
    """Return the question a waiting run asks (None when it is not waiting)."""
    if record.status != "waiting" or not record.failed_step:
        return None
    asked = [q for q in approvals_of(journal, record.run_id) if q.step == record.failed_step]
    return asked[-1] if asked and asked[-1].decision is None else None


def expired(
    journal: Journal, record: RunRecord, say: Callable[[str], None]
) -> tuple[str, Decision] | None:
    """Return the rejection that ends a wait past its timeout (None when none is due)."""
    question = open_question(journal, record)
    if question is None or not question.expired():
        return None
    say(
        f"adws: run {record.run_id} waited for approval at {question.step} past its "
        f"{question.timeout:g}s timeout; it is rejected (reason: {TIMED_OUT})"
    )
    return question.step, Decision("rejected", "adws", io_ops.utc_now(), TIMED_OUT)


def asks_budget(record: RunRecord) -> bool:
    """Tell whether a waiting run's question is one its budget asked (`--on-budget ask`)."""
    error = record.error
    return error is not None and error.context.get("budget_question") is True
