"""Deliver a run's events to its observers, one event at a time; a raising observer is detached.

Rule 9 of the executor: an observer cannot break the run. One that raises
gets no further events, and the others hear why (`ObserverFailed`).
Branches report from their own threads, so delivery holds a lock.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, final

from adws.engine.events import ObserverFailed
from adws.engine.retry import reraise_interrupt

if TYPE_CHECKING:
    from collections.abc import Iterable

    from adws.engine.events import RunEvent, RunObserver

__all__ = ["Emitter"]


@final
class Emitter:
    """Deliver events to observers; one that raises is detached and reported."""

    def __init__(self, observers: Iterable[RunObserver], run_id: str) -> None:
        self.observers = list(observers)
        self.run_id = run_id
        # Branches report from their threads; observers hear one event at a time.
        self.lock = threading.RLock()

    def __call__(self, event: RunEvent) -> None:
        with self.lock:
            self._deliver(event)

    def _deliver(self, event: RunEvent) -> None:
        for observer in tuple(self.observers):
            try:
                observer(event)
            except BaseException as exc:  # noqa: BLE001 - rule 9: an observer cannot break the run
                reraise_interrupt(exc)
                self.observers.remove(observer)
                name = getattr(observer, "__qualname__", type(observer).__qualname__)
                self._deliver(ObserverFailed(self.run_id, name, f"{type(exc).__name__}: {exc}"))
