"""The words a status is shown as: a fixed set, whatever a journal holds.

A journal is read as hostile (a row can be forged with sqlite3), so no
status column is ever drawn as it is: a run's status and each row's are
mapped to one of a few known words first, and anything else is shown as
`unknown`. A step paused at an `approval_step` is recorded as a failed
attempt whose error is `AwaitingApproval` (that is how the run stops
there, and how a resume finds the question); it is shown as `waiting`,
as the run is. One whose agent's limit resets past the run's `--max-wait`
is recorded failed with a `Parked` error, and shown as `parked`.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Final

from adws import io_ops
from adws.engine.errors import ErrorType
from adws.engine.parking import is_parked, wake_at

if TYPE_CHECKING:
    from adws.engine.errors import PipelineError
    from adws.journal import AttemptRecord

__all__ = [
    "RUN_STATUSES",
    "RUN_WORDS",
    "SHORT_WAIT",
    "STEP_WORDS",
    "UNKNOWN",
    "clock_time",
    "ended",
    "parked_until",
    "row_word",
    "run_word",
    "skip_reason",
    "until",
    "waiting_for",
    "waits",
]

UNKNOWN: Final = "unknown"
"""The word for a status adws never writes."""
RUN_STATUSES: Final = (
    "queued",
    "running",
    "succeeded",
    "failed",
    "blocked",
    "interrupted",
    "waiting",
    "parked",
    "cancelled",
)
"""What a run can be, in the order a run goes through them (`adws runs --status` offers them so)."""
RUN_WORDS: Final = frozenset(RUN_STATUSES)
"""What a run can be, to look a status up in."""
STEP_WORDS: Final = frozenset(
    {"succeeded", "failed", "retried", "round_failed", "cancelled", "skipped", "waiting", "parked"}
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

    A failed row that paused for approval is `waiting`, one that parked `parked`.

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
    if status == "failed" and is_parked(row.error):
        return "parked"
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
    >>> ended("cancelled", PipelineError("b", "Cancelled", "cancelled by ana: late"))
    'cancelled by ana: late'
    """
    word = run_word(status)
    if error is None:
        return word
    if waits(error):
        return waiting_for(error, where=True)
    if is_parked(error):
        return parked_until(wake_at(error), str(error.context.get("reason") or error.message))
    if word == "cancelled" and error.error_type == ErrorType.CANCELLED:
        return error.message  # `cancelled by ana: why` says it all
    return f"{word}: {error}"


def clock_time(moment: float, now: float, *, seconds: bool = False) -> str:
    """Show a moment in local time: `14:05` the same day as `now`, else `2026-11-28 14:05`.

    `seconds` adds them (`14:05:30`), for a moment a few minutes away.

    >>> import time
    >>> noon = time.mktime((2026, 11, 27, 12, 0, 0, 0, 0, -1))
    >>> clock_time(noon + 7500, noon), clock_time(noon + 86400, noon)
    ('14:05', '2026-11-28 12:00')
    >>> clock_time(noon + 20, noon, seconds=True)
    '12:00:20'
    """
    local = time.localtime(moment)
    today = time.localtime(now)[:3] == local[:3]
    shown = "%H:%M:%S" if seconds else "%H:%M"
    return time.strftime(shown if today else f"%Y-%m-%d {shown}", local)


SHORT_WAIT: Final = 300.0
"""Under this many seconds away, a wait is said in seconds: `for 20 s, until 06:17:05`."""


def _duration(left: float) -> str:
    """Say a short wait: `20 s`, `2 min 5 s`, `3 min`.

    >>> _duration(19.2), _duration(125), _duration(180)
    ('20 s', '2 min 5 s', '3 min')
    """
    whole = math.ceil(left)
    minutes, rest = divmod(whole, 60)
    if not minutes:
        return f"{rest} s"
    return f"{minutes} min" + (f" {rest} s" if rest else "")


def until(when: float | None, now: float) -> str:
    """Say until when a wait lasts: `until 14:05`; under a few minutes, in seconds too.

    A reset 20 s away reads `for 20 s, until 06:17:05` (a minute's
    resolution would say `until 06:17`, as if it were the next quarter hour);
    one just past reads `until 06:16:50`.

    >>> import time
    >>> noon = time.mktime((2026, 11, 27, 12, 0, 0, 0, 0, -1))
    >>> until(noon + 20, noon), until(noon + 7500, noon), until(noon - 10, noon)
    ('for 20 s, until 12:00:20', 'until 14:05', 'until 11:59:50')
    >>> until(None, noon)
    'until an unknown time'
    """
    if when is None:
        return "until an unknown time"
    left = when - now
    if abs(left) >= SHORT_WAIT:
        return f"until {clock_time(when, now)}"
    at = clock_time(when, now, seconds=True)
    return f"for {_duration(left)}, until {at}" if left > 0 else f"until {at}"


def parked_until(when: float | None, reason: str) -> str:
    """Say until when a run is parked, and why: `parked until 14:05: claude usage limit`.

    The time is local (what a person compares with their clock, as the
    agent CLIs name a reset), with its date when it is not today; a reset
    under a few minutes away is said in seconds too (`parked for 20 s, until
    06:17:05: ...`, see `until`).

    >>> parked_until(None, "claude usage limit")
    'parked until an unknown time: claude usage limit'
    """
    return f"parked {until(when, io_ops.wall_clock())}: {reason}"
