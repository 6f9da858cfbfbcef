"""A run's worktrees and the questions its approval steps asked, as the journal keeps them.

Values only (the SQL is `adws.journal.store.workspaces`): `WorktreeRecord`
(a worktree's repository, folder, branch, base and content hash),
`ApprovalRecord` (a question, its timeout, the decision), `decisions_for`
(the decisions a resume hands its approval steps), and `stored`/`text_of`,
how text with lone surrogates is kept exactly. A value of the wrong type is
read as absent, never trusted.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Final, final

import attrs

from adws import io_ops
from adws.engine.errors import ErrorType
from adws.engine.scope import Decision
from adws.engine.usage import Budget

if TYPE_CHECKING:
    from collections.abc import Sequence

    from adws.journal.records.runs import AttemptRecord

__all__ = ["VERDICTS", "ApprovalRecord", "WorktreeRecord", "decisions_for", "stored", "text_of"]


VERDICTS: Final = frozenset({"approved", "rejected"})


def stored(text: str) -> str | bytes:
    r"""Return text as SQLite keeps it exactly: itself, or its bytes if it holds a lone surrogate.

    A path with bytes that are not UTF-8, or a note typed in a terminal that
    is not UTF-8, reaches Python as lone surrogates, which SQLite's text
    cannot hold; their bytes (`surrogatepass`) can, and `text_of` reads them back.

    >>> stored("ok"), stored("\udcff")
    ('ok', b'\xed\xb3\xbf')
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")
    return text


def text_of(value: object) -> str:
    """Read a text column as `stored` wrote it; anything else is read as absent."""
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:  # bytes adws did not write: keep what can be read
            return value.decode("utf-8", "replace")
    return value if isinstance(value, str) else ""


@final
@attrs.frozen
class WorktreeRecord:
    """One worktree of a run as last journaled."""

    label: str
    step: str
    repo: str
    path: str
    branch: str
    base: str
    tree: str
    """The hash of its content after the last attempt ("" when unknown or removed)."""
    state: str
    """`present`, `removed` (by adws itself) or `discarded` (a `best_of` loser, branch and all)."""
    recorded: str
    gitdir: str = ""
    """The git directory git made for it ("" in a run journaled before adws recorded it)."""
    attempts: int | None = None
    """How many of the run's attempt rows came before this record (None: not recorded)."""

    def to_dict(self) -> dict[str, str]:
        """Return the record as `adws status --json` shows it (the attempt count stays inside)."""
        return attrs.asdict(self, filter=lambda field, _: field.name != "attempts")


@final
@attrs.frozen
class ApprovalRecord:
    """One question an approval step asked, and what was decided (None: not yet)."""

    step: str
    message: str
    asked: str
    timeout: float | None
    decision: Decision | None
    raised: Budget | None = None
    """The budget an approval raised the run's to (a question a budget asked; None: none)."""

    @property
    def deadline(self) -> float | None:
        """Return when the wait expires, in seconds since the epoch (None: never)."""
        if self.timeout is None:
            return None
        try:
            asked = datetime.fromisoformat(self.asked).timestamp()
        except ValueError:
            return None
        return asked + self.timeout

    def expired(self, now: float | None = None) -> bool:
        """Tell whether the question is still open and its timeout has passed."""
        deadline = self.deadline
        now = io_ops.wall_clock() if now is None else now
        return self.decision is None and deadline is not None and now >= deadline

    def to_dict(self) -> dict[str, object]:
        """Return the record as `adws approvals --json` and `status --json` show it."""
        return {
            "step": self.step,
            "message": self.message,
            "asked": self.asked,
            "timeout": self.timeout,
            "decision": None if self.decision is None else self.decision.to_dict(),
            **({} if self.raised is None else {"raised": self.raised.to_dict()}),
        }


def decisions_for(
    approvals: Sequence[ApprovalRecord], attempts: Sequence[AttemptRecord]
) -> dict[str, Decision]:
    """Return the decisions a resume hands to its approval steps, by step name.

    A decision counts only while its step's latest attempt is the pause it
    answers: a step that went on after its approval, and is run again
    (`--from`), asks again.
    """
    waiting = {}
    for record in attempts:
        if record.status == "retried":
            continue
        paused = record.error is not None and record.error.error_type == ErrorType.AWAITING_APPROVAL
        waiting[record.step] = paused
    latest = {record.step: record for record in approvals}
    return {
        step: record.decision
        for step, record in latest.items()
        if record.decision is not None and waiting.get(step, False)
    }
