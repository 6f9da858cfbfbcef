"""The meters that add up what agent calls cost, per attempt, branch and run.

`agent_step` charges a call's `Usage` to the meter of the attempt in
flight (`METER`), which adds it to every enclosing meter up to the run's.
The executor reads an attempt's meter into its events (so the journal
keeps usage per attempt, failed attempts included) and the run's meter is
what a `Budget` is checked against. Branch threads copy the context, so a
branch's meter is a child of the attempt that started it, and one lock
keeps the sums exact.
"""

from __future__ import annotations

import contextlib
import threading
from contextvars import ContextVar
from typing import TYPE_CHECKING, Final, final

from adws.engine.usage import Usage

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["METER", "Meter", "charge", "charging"]


_LOCK: Final = threading.Lock()


@final
class Meter:
    """Add up the usage charged inside one scope: a run, a step's attempt, a branch's.

    Charging a meter charges its parents too, under one lock, so a run's
    total is exact however many branch threads charge at once. A meter is
    made for every attempt of every step, so it costs nothing until charged.
    """

    __slots__ = ("_usage", "parent")

    def __init__(self, parent: Meter | None = None, spent: Usage | None = None) -> None:
        """Start at `spent` (a resumed run's earlier spend), under `parent`."""
        self.parent = parent
        self._usage = spent

    @property
    def usage(self) -> Usage:
        """Return what was charged so far (an empty usage when nothing was)."""
        return self._usage or Usage()

    def charge(self, usage: Usage) -> None:
        """Add `usage` here and in every enclosing meter."""
        with _LOCK:
            meter: Meter | None = self
            while meter is not None:
                spent = meter._usage  # noqa: SLF001 - the same class, under its lock
                meter._usage = usage if spent is None else spent + usage  # noqa: SLF001 - as above
                meter = meter.parent

    def report(self) -> Usage | None:
        """Return the usage for an event: None when nothing was reported."""
        usage = self._usage  # one reference read: atomic, no lock needed
        return usage if usage is not None and usage.known else None


METER: Final[ContextVar[Meter | None]] = ContextVar("adws_meter", default=None)
"""The meter of the attempt in flight; the executor gives each attempt its own."""


@contextlib.contextmanager
def charging(meter: Meter) -> Iterator[Meter]:
    """Charge what runs inside to `meter` (the run's, for `run_workflow`)."""
    token = METER.set(meter)
    try:
        yield meter
    finally:
        METER.reset(token)


def charge(usage: Usage | None) -> None:
    """Charge `usage` to the attempt in flight and everything enclosing it."""
    meter = METER.get()
    if usage is not None and meter is not None:
        meter.charge(usage)
