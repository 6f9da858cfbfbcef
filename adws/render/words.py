"""The words a status is shown as: a fixed set, whatever a journal holds.

A journal is read as hostile (a row can be forged with sqlite3), so no
status column is ever drawn as it is: a run's status and each row's are
mapped to one of a few known words first, and anything else is shown as
`unknown`. A step paused at an `approval_step` is recorded as a failed
attempt whose error is `AwaitingApproval` (that is how the run stops
there, and how a resume finds the question); it is shown as `waiting`,
as the run is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from adws.engine.errors import ErrorType

if TYPE_CHECKING:
    from adws.engine.errors import PipelineError
    from adws.journal import AttemptRecord

__all__ = [
    "RUN_WORDS",
    "STEP_WORDS",
    "UNKNOWN",
    "ended",
    "row_word",
    "run_word",
    "skip_reason",
    "waiting_for",
    "waits",
]

UNKNOWN: Final = "unknown"
"""The word for a status adws never writes."""
RUN_WORDS: Final = frozenset(
    {"queued", "running", "succeeded", "failed", "blocked", "interrupted", "waiting"}
)
"""What a run can be."""
STEP_WORDS: Final = frozenset(
    {"succeeded", "failed", "retried", "round_failed", "cancelled", "skipped", "waiting"}
)
"""What a row of a step or branch can say."""
_SKIPS: Final = frozenset({"condition", "halted"})


def run_word(status: object) -> str:
    """Show a run's status as one of `RUN_WORDS`, else `unknown`.

    >>> run_word("waiting"), run_word('"><svg onload=alert(1)>')
    ('waiting', 'unknown')
    """
    return status if isinstance(status, str) and status in RUN_WORDS else UNKNOWN


def waits(error: PipelineError | None) -> bool:
    """Tell whether an error is a run's pause for approval (not a failure)."""
    return error is not None and error.error_type == ErrorType.AWAITING_APPROVAL


def row_word(row: AttemptRecord) -> str:
    """Show a row's status as one of `STEP_WORDS` (`skipped:halted` is `skipped`), else `unknown`.

    A failed row that paused for approval is `waiting`.

    >>> from adws import PipelineError
    >>> from adws.journal import AttemptRecord
    >>> def row(status, error=None):
    ...     return AttemptRecord("s", 0, 1, status, "t", 0.0, error, None)
    >>> row_word(row("failed", PipelineError("s", "AwaitingApproval", "go?")))
    'waiting'
    >>> row_word(row("skipped:halted")), row_word(row("failed")), row_word(row("<b>"))
    ('skipped', 'failed', 'unknown')
    """
    status = str(row.status)  # sqlite keeps whatever type a forged row was given
    if status == "failed" and waits(row.error):
        return "waiting"
    if status.startswith("skipped:"):
        return "skipped"
    return status if status in STEP_WORDS else UNKNOWN


def skip_reason(row: AttemptRecord) -> str | None:
    """Say why a step was skipped (`condition`, `halted`), None when the journal holds another."""
    _, _, reason = str(row.status).partition(":")
    return reason if reason in _SKIPS else None


def waiting_for(error: PipelineError, *, where: bool = False) -> str:
    r"""Say what a run waits for, in one line: the question's first line (`where`: at which step).

    >>> from adws import PipelineError
    >>> error = PipelineError("ok", "AwaitingApproval", "Merge?\nit is ready")
    >>> waiting_for(error), waiting_for(error, where=True)
    ('waiting for approval: Merge?', 'waiting for approval at ok: Merge?')
    """
    lines = error.message.strip().splitlines()
    at = f" at {error.step_name}" if where and error.step_name else ""
    return f"waiting for approval{at}: {lines[0] if lines else ''}"


def ended(status: str, error: PipelineError | None) -> str:
    """Say how a run ended, in one line: its status and error, or where and for what it waits.

    >>> from adws import PipelineError
    >>> ended("interrupted", None), ended("waiting", PipelineError("ok", "AwaitingApproval", "Go?"))
    ('interrupted', 'waiting for approval at ok: Go?')
    >>> ended("failed", PipelineError("b", "ShellFailed", "boom"))
    'failed: b: ShellFailed: boom'
    """
    word = run_word(status)
    if error is None:
        return word
    if waits(error):
        return waiting_for(error, where=True)
    return f"{word}: {error}"
