"""The journal first: a write that fails is tried again on a new connection, for a bounded time.

A server restarting, a dropped connection or a full disk fails a write
for a while. `persist` tries it again, each time on a new connection
(`Journal.reopen`), until it is recorded or `wait` seconds have passed;
then it raises the last failure, and the caller stops what it was about
to do unrecorded (a run stops at that step boundary, `interrupted`; see
`adws.journal.store.observer`).
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Final

from adws import io_ops
from adws.journal.store.backend import ERRORS, JournalError

if TYPE_CHECKING:
    from collections.abc import Callable

    from adws.journal.store.journal import Journal

__all__ = ["FAILURES", "JOURNAL_WAIT", "delay", "persist"]

JOURNAL_WAIT: Final = 30.0
"""Seconds a failed journal write is tried again before the run stops (`--journal-wait`)."""
FAILURES: Final = (*ERRORS, JournalError, OSError)
"""What a journal write raises when the journal is out of reach (`JournalError` included)."""
_DELAYS: Final = (0.05, 0.1, 0.2, 0.5, 1.0)


def delay(tries: int) -> float:
    """Return the pause before the next try, after `tries` failed ones (backing off to 1 s).

    >>> [delay(n) for n in range(7)]
    [0.05, 0.1, 0.2, 0.5, 1.0, 1.0, 1.0]
    """
    return _DELAYS[min(tries, len(_DELAYS) - 1)]


def persist(
    journal: Journal,
    write: Callable[[], None],
    *,
    wait: float,
    sleep: Callable[[float], None] = io_ops.sleep,
    clock: Callable[[], float] = io_ops.monotonic,
) -> int:
    """Run `write`; while it fails, try again on a new connection until `wait` seconds have passed.

    Returns how many tries failed before it was recorded (0: the first
    took). Raises the last failure once the wait is over (`wait=0`: the
    first failure). A connection that cannot be opened again counts as a
    failed try.
    """
    deadline = clock() + wait
    tries = 0
    while True:
        try:
            write()
        except FAILURES:
            left = deadline - clock()
            if left <= 0:
                raise
            sleep(min(delay(tries), left))
            tries += 1
            with contextlib.suppress(*FAILURES):  # the next try fails, and says why
                journal.reopen()
        else:
            return tries
