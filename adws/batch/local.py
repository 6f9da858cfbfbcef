"""The local pool: N worker processes, each talking to the coordinator over its own pipes.

A pipe, not a queue: `send` returns once the message is in the kernel's
buffer, so what a worker reported before it died is never lost, and the
end of the pipe tells the coordinator the worker is gone. Workers run in
their own session, so a Ctrl-C in the terminal reaches the coordinator
only, which forwards it exactly once (a second one would mean "now").

Each worker also holds the read end of a control pipe: the coordinator
says there when the batch has spent its budget, and when that pipe ends
the coordinator is gone (killed, say): the worker kills every process
group its run started and exits at once, so nothing runs unrecorded.
Workers are not daemonic, so a step may use `multiprocessing` itself;
the coordinator joins or kills every one of them on every path.

Workers are forked from a `forkserver` that has imported adws once: a
worker starts in milliseconds instead of importing everything again (with
`spawn`, eight workers took a second of both cores before the first run
began), and, unlike a plain `fork` of the coordinator, inherits no
threads. The server lives as long as the coordinator.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import queue
import signal
import threading
from multiprocessing.connection import Connection, wait
from typing import TYPE_CHECKING, Final, cast, final

from adws import io_ops
from adws.batch.tasks import OVER_BUDGET, Cancel, Message, Task, execute
from adws.engine.errors import Cancellation
from adws.runs.interrupts import CANCEL_SIGNAL, Interrupts

if TYPE_CHECKING:
    from multiprocessing.process import BaseProcess

__all__ = ["ORPHANED", "RECORDED", "LocalPool", "confirmed", "heard", "worker_main"]

ORPHANED: Final = 70
"""A worker's exit status after its coordinator died (it killed its run's processes first)."""
RECORDED: Final[queue.SimpleQueue[str | None]] = queue.SimpleQueue()
"""The coordinator's answers to this worker's step starts: None (recorded), or why not."""


def confirmed() -> str | None:
    """Wait for the coordinator to record the step about to start; None, or why it did not.

    The coordinator writes for its workers, so a step starts only once it
    said the start is in the journal (it tries a failed write for
    `--journal-wait` first): nothing runs unrecorded. Waited for in slices,
    so a signal still reaches the run; a coordinator gone ends this worker.
    """
    while True:
        with contextlib.suppress(queue.Empty):
            return RECORDED.get(timeout=0.5)


def _follow(control: Connection, sending: threading.Lock, interrupts: Interrupts) -> None:
    """Hear the coordinator's word: the budget, a cancel; when it is gone, kill every child, exit.

    A cancel (`("cancel", run_id, by, at, why)`) stops the run in flight as
    a first Ctrl-C would, its step failing `Cancelled`, if it is still the
    run this worker runs. Holding `sending` first keeps the run from going
    on to its next step (every step's end is sent) while its processes are
    killed.
    """
    while True:
        try:
            message = control.recv()
        except (EOFError, OSError):
            break
        heard(message, interrupts)
    sending.acquire(timeout=5)  # a send to the dead coordinator fails at once, releasing it
    io_ops.kill_all_groups()
    os._exit(ORPHANED)


def heard(message: tuple[str, ...], interrupts: Interrupts) -> None:
    """Act on the coordinator's word: the budget, a cancel, or whether a step start was recorded.

    `("over budget", batch)`, `("cancel", run, by, at, why)` or
    `("recorded", run, why)`. A cancel counts only while its run is the one
    this worker runs (the run the process's `ADWS_RUN_ID` names): a late
    one never stops the next run.
    """
    if message[0] == "recorded":
        RECORDED.put(message[2] or None)
        return
    if message[0] != "cancel":
        OVER_BUDGET.add(message[1])
        return
    _, run_id, by, at, why = message
    if os.environ.get(io_ops.RUN_MARK) == run_id:
        interrupts.cancel(Cancellation(by, at, why))


def worker_main(conn: Connection, control: Connection) -> None:
    """Run tasks from `conn` until told to stop; signals end the run in flight cleanly."""
    os.setsid()
    io_ops.become_subreaper()  # its runs' orphans come here, to be stopped as each run ends
    lock = threading.Lock()  # branch threads report process groups as the main thread sends
    interrupts = Interrupts()
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, interrupts)
    signal.signal(CANCEL_SIGNAL, interrupts.on_cancel)
    threading.Thread(target=_follow, args=(control, lock, interrupts), daemon=True).start()

    def send(message: Message) -> None:
        with lock:
            conn.send(message)

    with contextlib.suppress(EOFError, OSError):  # the coordinator is gone: `_follow` ends us
        while (task := conn.recv()) is not None:
            # One run at a time here: its processes carry its id, as `adws run`'s do, so a
            # resume signals a recorded group only while it is still the run's.
            os.environ[io_ops.RUN_MARK] = task.run_id
            interrupts.next_run()  # a cancel of the run before is not this one's
            try:
                execute(task, send, (interrupts.observe,), confirm=confirmed)
            finally:
                io_ops.kill_adopted(frozenset(io_ops.GROUPS.current()))
            if interrupts.first is not None:
                return  # interrupted: this worker takes no more runs


def describe_exit(code: int | None) -> str:
    """Say how a worker process ended.

    >>> describe_exit(-9), describe_exit(3), describe_exit(None)
    ('killed by SIGKILL', 'exit status 3', 'still running')
    """
    if code is None:
        return "still running"
    if code < 0:
        return f"killed by {signal.Signals(-code).name}"
    return f"exit status {code}"


@final
class LocalPool:
    """Start, feed and watch worker processes, forked from a server that imported adws once."""

    def __init__(self) -> None:
        """Start with no workers."""
        self._context = multiprocessing.get_context("forkserver")
        self._context.set_forkserver_preload(["adws.batch.local"])
        self.workers: dict[Connection, tuple[BaseProcess, Connection]] = {}

    def start(self) -> Connection:
        """Start one worker; return the coordinator's end of its pipe."""
        ours, theirs = self._context.Pipe()
        listen, say = self._context.Pipe(duplex=False)
        process = self._context.Process(target=worker_main, args=(theirs, listen), daemon=False)
        process.start()
        theirs.close()
        listen.close()
        self.workers[ours] = (process, say)
        return ours

    @staticmethod
    def send(conn: Connection, task: Task | None) -> None:
        """Give a worker a task (None: stop when done)."""
        with contextlib.suppress(OSError):
            conn.send(task)

    def receive(self, timeout: float) -> list[tuple[Connection, Message]]:
        """Wait up to `timeout` for messages; `("lost", how)` for a worker whose pipe ended."""
        received: list[tuple[Connection, Message]] = []
        ready = {id(conn) for conn in wait(list(self.workers), timeout)}
        for conn, (process, _) in self.workers.items():
            if id(conn) not in ready:
                continue
            try:
                received.append((conn, conn.recv()))
            except (EOFError, OSError):
                process.join(timeout=5)
                received.append((conn, ("lost", describe_exit(process.exitcode))))
        return received

    def forget(self, conn: Connection) -> None:
        """Drop a worker and reap its process; one still running is ended, its children first.

        Closing its control pipe makes a worker kill its process groups and
        exit (see `_follow`); SIGKILL is the last resort.
        """
        process, say = self.workers.pop(conn)
        say.close()
        conn.close()
        process.join(timeout=5)
        process.kill()  # a no-op for one that has ended
        process.join()

    def signal_all(self, signum: int) -> None:
        """Forward a signal to every live worker."""
        for process, _ in self.workers.values():
            with contextlib.suppress(ProcessLookupError):
                os.kill(cast("int", process.pid), signum)  # started, so it has a pid

    def over_budget(self, batch_id: str) -> None:
        """Tell every worker the batch has spent its budget: no more agent calls."""
        for _, say in self.workers.values():
            with contextlib.suppress(OSError):
                say.send(("over budget", batch_id))

    def cancel(self, conn: Connection, cancel: Cancel) -> None:
        """Tell the worker of `conn` to stop its run as `adws cancel` asked."""
        found = self.workers.get(conn)
        if found is not None:
            with contextlib.suppress(OSError):
                found[1].send(("cancel", *cancel))

    def recorded(self, conn: Connection, run_id: str, why: str | None) -> None:
        """Tell the worker of `conn` whether the step it is about to start was recorded."""
        found = self.workers.get(conn)
        if found is not None:
            with contextlib.suppress(OSError):
                found[1].send(("recorded", run_id, why))

    def close(self, grace: float = 5.0) -> None:
        """Stop every worker: ask, wait `grace` seconds, then end it with its processes."""
        for conn in list(self.workers):
            self.send(conn, None)
        for conn in list(self.workers):
            self.workers[conn][0].join(timeout=grace)
            self.forget(conn)
