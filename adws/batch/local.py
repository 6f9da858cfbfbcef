"""The local pool: N worker processes, each talking to the coordinator over its own pipe.

A pipe, not a queue: `send` returns once the message is in the kernel's
buffer, so what a worker reported before it died is never lost, and the
end of the pipe tells the coordinator the worker is gone. Workers run in
their own session, so a Ctrl-C in the terminal reaches the coordinator
only, which forwards it exactly once (a second one would mean "now").
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
from multiprocessing.connection import Connection, wait
from typing import TYPE_CHECKING, cast, final

from adws.batch.tasks import Message, Task, execute

if TYPE_CHECKING:
    from multiprocessing.process import BaseProcess

__all__ = ["LocalPool", "worker_main"]


def worker_main(conn: Connection) -> None:
    """Run tasks from `conn` until told to stop; signals end the run in flight cleanly."""
    os.setsid()
    from adws.cli._interrupts import Interrupts  # noqa: PLC0415 - loaded in the worker process

    interrupts = Interrupts()
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, interrupts)
    while True:
        task = conn.recv()
        if task is None:
            return
        execute(task, conn.send, (interrupts.observe,))
        if interrupts.first is not None:
            return  # interrupted: this worker takes no more runs


@final
class LocalPool:
    """Start, feed and watch worker processes (the `spawn` method: no inherited threads)."""

    def __init__(self) -> None:
        """Start with no workers."""
        self._context = multiprocessing.get_context("spawn")
        self.workers: dict[Connection, BaseProcess] = {}

    def start(self) -> Connection:
        """Start one worker; return the coordinator's end of its pipe."""
        ours, theirs = self._context.Pipe()
        process = self._context.Process(target=worker_main, args=(theirs,), daemon=True)
        process.start()
        theirs.close()
        self.workers[ours] = process
        return ours

    @staticmethod
    def send(conn: Connection, task: Task | None) -> None:
        """Give a worker a task (None: stop when done)."""
        with contextlib.suppress(OSError):
            conn.send(task)

    def receive(self, timeout: float) -> list[tuple[Connection, Message | None]]:
        """Wait up to `timeout` for messages; None for a worker whose pipe ended (it died)."""
        received: list[tuple[Connection, Message | None]] = []
        ready = {id(conn) for conn in wait(list(self.workers), timeout)}
        for conn in self.workers:
            if id(conn) not in ready:
                continue
            try:
                received.append((conn, conn.recv()))
            except (EOFError, OSError):
                received.append((conn, None))
        return received

    def forget(self, conn: Connection) -> None:
        """Drop a worker that ended; reap its process."""
        process = self.workers.pop(conn)
        conn.close()
        process.join(timeout=5)

    def signal_all(self, signum: int) -> None:
        """Forward a signal to every live worker."""
        for process in self.workers.values():
            with contextlib.suppress(ProcessLookupError):
                os.kill(cast("int", process.pid), signum)  # started, so it has a pid

    def close(self, grace: float = 5.0) -> None:
        """Stop every worker: ask, wait `grace` seconds, then kill."""
        for conn in list(self.workers):
            self.send(conn, None)
        for conn, process in list(self.workers.items()):
            process.join(timeout=grace)
            process.kill()  # a no-op for a worker that has ended
            process.join()
            conn.close()
        self.workers.clear()
