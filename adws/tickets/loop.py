"""A watcher's loop: poll, sleep, and (with `--work N`) an `adws worker` of its own.

A watcher only queues runs; `adws worker` runs them, on any host. With
`work`, the loop starts one worker process beside itself (`adws worker
--concurrency N`) and stops it when it stops, or, with `once`, runs
`adws worker --once` after its poll and polls once more, so the status
comments show how the runs ended. A poll that fails on the network is
said and tried again at the next; one that says to stop (a bad token, a
workflow that cannot take tickets) ends the loop with its exit code.
SIGTERM and Ctrl-C end the loop between polls: exit 143 or 130.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Mapping, Sequence
from subprocess import Popen
from typing import Final, final

import attrs

from adws import io_ops

__all__ = ["Loop"]

EXIT_SIGNAL: Final = 128
_STOP_GRACE: Final = 30.0


@final
@attrs.define
class Loop:
    """Call `poll` every `every` seconds until stopped (`once`: one poll)."""

    poll: Callable[[], int | None]
    """One pass; returns an exit code to stop with, or None to go on."""
    every: float
    once: bool = False
    worker: Sequence[str] | None = None
    """The command of an `adws worker` to run beside the loop (None: none)."""
    env: Mapping[str, str] = attrs.field(factory=dict)
    say: Callable[[str], None] = lambda _line: None
    stopped: threading.Event = attrs.field(factory=threading.Event)
    signal: int | None = None
    child: Popen[bytes] | None = None

    def _on_signal(self, signum: int, _frame: object) -> None:
        """Note the signal and stop between polls; the worker beside the loop gets it too."""
        self.signal = self.signal or signum
        self.stopped.set()
        if self.child is not None:
            self.child.send_signal(signum)

    def run(self) -> int:
        """Poll until stopped; return 0, a poll's exit code, or a signal's (130, 143)."""
        before = {s: signal.signal(s, self._on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            if self.once:
                return self._once()
            if self.worker is not None:
                self.child = io_ops.start_process(self.worker, self.env)
            while not self.stopped.is_set():
                code = self.poll()
                if code is not None:
                    return code
                self.stopped.wait(self.every)
            return EXIT_SIGNAL + (self.signal or signal.SIGTERM)
        finally:
            if self.child is not None and self.child.poll() is None:
                self.child.terminate()
                self.child.wait(_STOP_GRACE)
            for signum, handler in before.items():
                signal.signal(signum, handler)

    def _once(self) -> int:
        code = self.poll()
        if code is not None or self.worker is None:
            return code or 0
        self.child = io_ops.start_process([*self.worker, "--once"], self.env)
        ended = self.child.wait()
        self.say(f"adws worker --once ended (exit {ended})")
        return self.poll() or 0
