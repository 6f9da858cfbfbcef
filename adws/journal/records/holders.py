"""Who holds a run: a live process, by its pid and host; and what a claim compares (`Seen`).

A claim records the claiming process's pid and host on the row (`here`),
and on a run's row when that process started (`started_here`, see
`adws.io_ops.starts`); a holder on this host counts while its process
exists and, where its start was recorded, started then (a pid reused by a
later process is a dead holder); one on another host is assumed alive
(`alive`). `Seen` is what a command read of a run before
deciding what to do with it: the claim compares it (see
`adws.journal.store.claims`).
"""

from __future__ import annotations

import os
import socket
from typing import final

import attrs

from adws import io_ops

__all__ = ["Seen", "alive", "here", "started_here"]


def here() -> tuple[int, str]:
    """Return this process's pid and host, as a holder is recorded."""
    return os.getpid(), socket.gethostname()


def started_here(pid: int | None = None) -> str | None:
    """Return when process `pid` (default: this one) started, as a holder's start is recorded."""
    return io_ops.process_started(os.getpid() if pid is None else pid)


def alive(pid: int | None, host: str | None, started: str | None = None) -> bool:
    """Tell whether a holder may live: on this host, its process exists; elsewhere, assume so.

    `started` is when the holder started, as recorded (None: a row written
    before it was, judged by pid alone): a process with its pid that started
    at another time took a dead holder's pid.
    """
    if pid is None:
        return False
    if host != socket.gethostname():
        return True
    if pid != os.getpid() and not io_ops.process_alive(pid):
        return False
    now = None if started is None else io_ops.process_started(pid)
    return now is None or now == started


@final
@attrs.frozen
class Seen:
    """What a command read of a run before deciding what to do with it; its claim compares it.

    `last_attempt` is the id of the run's newest `attempts` row (None: none
    yet), so an attempt recorded since, by anyone, is seen as a change.
    """

    status: str
    resumes: int
    last_attempt: int | None
