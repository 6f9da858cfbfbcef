"""What the environment sets for every run: how long to wait for a limit, and for the journal.

`ADWS_MAX_WAIT` is how long a run waits in its process for an agent's
limit to reset before it parks (`--max-wait` overrides it, and a run
records the value it used); `ADWS_JOURNAL_BUSY_TIMEOUT` how long a journal
write waits for another process's transaction; `ADWS_JOURNAL_WAIT` how long
a journal write that failed (a server restarting, a full disk) is tried
again before the run stops `interrupted` (`--journal-wait` overrides it).
A value that is not a number of seconds is a `SettingError` naming the
variable.
"""

from __future__ import annotations

import math
import os
from typing import Final

from adws._exceptions import SettingError
from adws.engine.parking import DEFAULT_MAX_WAIT
from adws.journal.store.journal import BUSY_TIMEOUT_SECONDS
from adws.journal.store.patience import JOURNAL_WAIT

__all__ = [
    "BUSY_VAR",
    "JOURNAL_WAIT_VAR",
    "MAX_WAIT_VAR",
    "MOST_WAIT",
    "busy_timeout",
    "journal_wait",
    "max_wait",
    "seconds_in",
]

MAX_WAIT_VAR: Final = "ADWS_MAX_WAIT"
"""Seconds a run waits in its process for an agent's limit to reset (default 900)."""
MOST_WAIT: Final = 30 * 86_400.0
"""A month: no usage window a service names is longer; waiting longer in one process is a bug."""
BUSY_VAR: Final = "ADWS_JOURNAL_BUSY_TIMEOUT"
"""Seconds a journal write waits for another process's transaction (default 30)."""
JOURNAL_WAIT_VAR: Final = "ADWS_JOURNAL_WAIT"
"""Seconds a failed journal write is tried again before the run stops (default 30)."""


def seconds_in(name: str, most: float | None = None) -> float | None:
    """Read a number of seconds from 0 (to `most`) from the variable `name` (None: not set).

    >>> os.environ["ADWS_DOCTEST_SECONDS"] = "1.5"
    >>> seconds_in("ADWS_DOCTEST_SECONDS"), seconds_in("ADWS_DOCTEST_UNSET")
    (1.5, None)
    >>> seconds_in("ADWS_DOCTEST_SECONDS", most=1.0)
    Traceback (most recent call last):
    ...
    adws._exceptions.SettingError: ADWS_DOCTEST_SECONDS='1.5': expected a number of seconds from 0 to 1, got '1.5'
    """  # noqa: E501
    text = os.environ.get(name)
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if most is not None and not (math.isfinite(value) and 0 <= value <= most):
        msg = f"{name}={text!r}: expected a number of seconds from 0 to {most:,.0f}, got {text!r}"
        raise SettingError(msg)
    if not (math.isfinite(value) and value >= 0):
        msg = f"{name}={text!r}: expected a number of seconds of at least 0"
        raise SettingError(msg)
    return value


def max_wait(given: float | None = None) -> float:
    """Return how long a run waits for a limit: `given`, else `$ADWS_MAX_WAIT`, else 900 s."""
    if given is not None:
        return given
    found = seconds_in(MAX_WAIT_VAR, MOST_WAIT)
    return DEFAULT_MAX_WAIT if found is None else found


def busy_timeout() -> float:
    """Return how long a journal write waits: `$ADWS_JOURNAL_BUSY_TIMEOUT`, else 30 s."""
    found = seconds_in(BUSY_VAR)
    return BUSY_TIMEOUT_SECONDS if found is None else found


def journal_wait(given: float | None = None) -> float:
    """Return how long a failed journal write is tried again: `given`, else `$ADWS_JOURNAL_WAIT`.

    Else 30 s; at most a month, as `--max-wait`.
    """
    if given is not None:
        return given
    found = seconds_in(JOURNAL_WAIT_VAR, MOST_WAIT)
    return JOURNAL_WAIT if found is None else found
