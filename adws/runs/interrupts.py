"""Ctrl-C, SIGTERM and SIGHUP during a run: stop the step, clean up, then leave.

The first signal stops the step in flight (its process group is stopped by
`io_ops`), the `always_run` steps still run, and the run is recorded
`interrupted`; the exit code says which signal it was (130, 143, 129). An
`always_run` step already running finishes: the signal is held and
delivered when the next step that is not cleanup starts. A second signal
kills every process group adws started, marks the run interrupted and
exits at once.

A cancel (`adws cancel`, seen in the journal by another thread) stops the
run the same way, but its step fails `Cancelled` (see
`adws.engine.errors.Cancellation`): `cancel` wakes the main thread with
`CANCEL_SIGNAL`, whose handler raises it there, or holds it for the next
step that is not cleanup. It is not a signal of the terminal: a Ctrl-C
after it is still a first Ctrl-C.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from typing import TYPE_CHECKING, Final, cast, final

from adws import io_ops
from adws.engine.events import AttemptFailed, RunEvent, StepStarted, StepSucceeded
from adws.io_ops.terminal import err

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from adws.engine.errors import Cancellation

__all__ = ["CANCEL_SIGNAL", "EXIT_BY_SIGNAL", "SIGNALS", "SIGNAL_NAMES", "Interrupts"]

SIGNALS: Final = io_ops.HANDLED_SIGNALS
CANCEL_SIGNAL: Final = signal.SIGUSR1
"""Sent by a run's own thread to its main thread when the run is cancelled (never by a user)."""
EXIT_BY_SIGNAL: Final[dict[int, int]] = {
    signal.SIGINT: 130,
    signal.SIGTERM: 143,
    signal.SIGHUP: 129,
}
SIGNAL_NAMES: Final[dict[int, str]] = {
    signal.SIGINT: "Ctrl-C",
    signal.SIGTERM: "SIGTERM",
    signal.SIGHUP: "SIGHUP",
}


@final
class Interrupts:
    """Handle the run's signals; also an observer, to know which step is running.

    `on_exit_now` runs before a second signal's exit (the CLI marks the run
    interrupted in the journal); it must not raise, and is guarded anyway.
    """

    def __init__(
        self,
        on_exit_now: Callable[[], None] = lambda: None,
        exit_now: Callable[[int], object] = os._exit,
    ) -> None:
        """Start with no signal seen and no step running."""
        self.on_exit_now = on_exit_now
        self.exit_now = exit_now
        self.first: int | None = None
        self.pending = False
        self.running: StepStarted | None = None
        self.cancelled: Cancellation | None = None
        """The cancel asked for (None: none); it stops the run once, like a first Ctrl-C."""
        self._cancel_pending = False
        self._cancel_delivered = False
        # The main thread has run since the interpreter started: it has an ident.
        self._main = cast("int", threading.main_thread().ident)

    @property
    def message(self) -> str:
        """Say what interrupted the run: `interrupted by SIGTERM`."""
        return f"interrupted by {SIGNAL_NAMES[self.first or signal.SIGINT]}"

    @property
    def exit_code(self) -> int:
        """Return the exit code of the first signal (130 when none came)."""
        return EXIT_BY_SIGNAL[self.first or signal.SIGINT]

    def __call__(self, signum: int, _frame: object) -> None:
        """React to one signal (installed as the handler of all three)."""
        if self.first is not None:
            err("adws: interrupted again; killing every child and exiting without cleanup")
            io_ops.kill_all_groups()
            with contextlib.suppress(Exception):
                self.on_exit_now()
            self.exit_now(self.exit_code)
            return
        self.first = signum
        running = self.running
        if running is not None and not running.always_run:
            raise KeyboardInterrupt(self.message)
        self.pending = True  # no step to stop now; the next one that is not cleanup is

    def cancel(self, cancellation: Cancellation) -> None:
        """Stop the run as a cancel (from any thread): its step fails `Cancelled`.

        The first cancel counts; the main thread hears of it through
        `CANCEL_SIGNAL` (`installed` handles it), so a step waiting on a
        process is woken as by a Ctrl-C.
        """
        if self.cancelled is not None:
            return
        self.cancelled = cancellation
        signal.pthread_kill(self._main, CANCEL_SIGNAL)

    def on_cancel(self, _signum: int, _frame: object) -> None:
        """Deliver a cancel in the main thread: now, or as the next step that is not cleanup starts.

        None after a signal: the run is already stopping.
        """
        if self.cancelled is None or self.first is not None or self._cancel_delivered:
            return
        running = self.running
        if running is not None and not running.always_run:
            self._cancel_delivered = True
            raise self.cancelled
        self._cancel_pending = True

    def next_run(self) -> None:
        """Forget a cancel of the run before: a process that runs one run after another does."""
        self.cancelled = None
        self._cancel_pending = self._cancel_delivered = False

    def observe(self, event: RunEvent, /) -> None:
        """Follow the run: deliver a held signal when a step that is not cleanup starts."""
        match event:
            case StepStarted():
                self.running = event
                if event.always_run:
                    return
                if self.pending:
                    self.pending = False
                    self.running = None
                    raise KeyboardInterrupt(self.message)
                if self._cancel_pending and self.cancelled is not None and self.first is None:
                    self._cancel_pending = False
                    self._cancel_delivered = True
                    self.running = None
                    raise self.cancelled
            case StepSucceeded() | AttemptFailed(will_retry=False):
                self.running = None
            case _:
                pass

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        """Handle the three signals (and a cancel) for a run, then restore the old handlers."""
        before = signal.signal(CANCEL_SIGNAL, self.on_cancel)
        try:
            with io_ops.handling_signals(self):
                yield
        finally:
            signal.signal(CANCEL_SIGNAL, before)
