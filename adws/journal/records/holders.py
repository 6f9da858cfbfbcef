"""Who holds a run: a live process, by its pid and host; and what a claim compares (`Seen`).

A claim records the claiming process's pid and host on the row (`here`); a
holder on this host counts while its process exists, one on another host
is assumed alive (`alive`). `Seen` is what a command read of a run before
deciding what to do with it: the claim compares it (see
`adws.journal.store.claims`).
"""

from __future__ import annotations

import os
import socket
from typing import final

import attrs

from adws import io_ops

__all__ = ["Seen", "alive", "here"]


def here() -> tuple[int, str]:
    """Return this process's pid and host, as a holder is recorded."""
    return os.getpid(), socket.gethostname()


def alive(pid: int | None, host: str | None) -> bool:
    """Tell whether a holder may live: on this host, its process exists; elsewhere, assume so."""
    return pid is not None and (
        host != socket.gethostname() or pid == os.getpid() or io_ops.process_alive(pid)
    )


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
