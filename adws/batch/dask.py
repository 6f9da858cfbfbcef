"""The Dask pool: the runs of a batch as tasks on a `dask.distributed` cluster (extra `adws[dask]`).

`local:N` starts a cluster of N worker processes on 127.0.0.1 that only
this batch can use: every connection is TLS with a key and certificate
made for the batch (`distributed.Security.temporary()`, held in memory,
both sides authenticated), and nothing serves HTTP (no dashboard, no
metrics: the scheduler and workers listen on their TLS ports only). Its
workers are not daemonic, so a step may use `multiprocessing`. Any other
value is a scheduler address; Dask's own configuration says how to reach
it securely (see docs/guides/batches.md). Every worker must be able to import adws and
read the workflows folder at the same path.

Messages travel on a `distributed.Queue` named after the batch, several
to a put (`adws.batch.outbox`: a step's start, a new child process and
the run's end send what is held), each put a round trip to the scheduler
that returns once the scheduler holds them, so every finished step a task
reported before its worker died is not lost. Each worker process opens
the batch's queue once (and keeps it, one name a batch), not once a run;
the coordinator polls the queue, and a task's end wakes it at once.
A task whose worker dies fails (the local cluster allows no silent retry)
and the coordinator resumes that run from its last finished step as a
new task. A first Ctrl-C reaches each worker
(`Client.run`): a run in a step that is not cleanup is interrupted there,
as locally (its processes stopped, its `always_run` steps run, it ends
`interrupted`); a second kills the process groups of the batch's runs and
cancels every task.
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import logging
import threading
import time
from typing import TYPE_CHECKING, Any, Final, final

from distributed import Nanny, Scheduler, Worker

from adws import io_ops
from adws.batch.outbox import Flusher, Outbox
from adws.batch.tasks import OVER_BUDGET, Cancel, Message, Task, execute
from adws.engine.errors import Cancellation
from adws.engine.events import AttemptFailed, RunEvent, StepStarted, StepSucceeded

if TYPE_CHECKING:
    from distributed import Client, Future

__all__ = ["INSTALL_HINT", "DaskPool", "run_task"]

INSTALL_HINT: Final = "pip install 'adws[dask]'"
_POLL: Final = 0.05
"""How often the coordinator asks the scheduler for messages while none come.

A task's end wakes it at once (the scheduler pushes it to the client, no
round trip): its slot takes the next run without waiting for a poll.
"""


class _QuietScheduler(Scheduler):
    """A scheduler that serves no HTTP: no dashboard, no metrics, no open port but its own."""

    def start_http_server(self, *_args: object, **_kwargs: object) -> None:
        """Serve nothing."""


class _QuietWorker(Worker):
    """A worker that serves no HTTP, like `_QuietScheduler`."""

    def start_http_server(self, *_args: object, **_kwargs: object) -> None:
        """Serve nothing."""


@final
class _Running:
    """One task on this worker: deliver a Ctrl-C to its thread, in a step that is not cleanup.

    As `adws.runs.interrupts.Interrupts` does for a process, but for one
    thread: the interruption is raised in the task's thread
    (`PyThreadState_SetAsyncExc`) while a step that is not cleanup runs,
    else held until the next one starts. One lock keeps the check and
    the raise together.
    """

    def __init__(self) -> None:
        self.thread = threading.get_ident()
        self.lock = threading.Lock()
        self.running = False
        self.pending: type[KeyboardInterrupt] | None = None

    def observe(self, event: RunEvent, /) -> None:
        with self.lock:
            match event:
                case StepStarted():
                    if self.pending is not None and not event.always_run:
                        kind, self.pending = self.pending, None
                        raise kind
                    self.running = not event.always_run
                case StepSucceeded() | AttemptFailed(will_retry=False):
                    self.running = False
                case _:
                    pass

    def interrupt(self, message: str) -> None:
        self.stop(_interrupted(message))

    def cancel(self, by: str, at: str, reason: str) -> None:
        # A cancel, as `adws cancel` asked: the step fails `Cancelled`, saying who and why.
        def made(this: Cancellation) -> None:
            Cancellation.__init__(this, by, at, reason)

        self.stop(type("Cancelled", (Cancellation,), {"__init__": made}))

    def stop(self, kind: type[KeyboardInterrupt]) -> None:
        with self.lock:
            if not self.running:
                self.pending = self.pending or kind
                return
            self.running = False
            ctypes.pythonapi.PyThreadState_SetAsyncExc(
                ctypes.c_ulong(self.thread), ctypes.py_object(kind)
            )


def _interrupted(message: str) -> type[KeyboardInterrupt]:
    """Make the class a stopped run raises: a class, so it carries the words (`by SIGTERM`)."""
    return type("Interrupted", (KeyboardInterrupt,), {"__str__": lambda _self: message})


_RUNNING: Final[dict[str, dict[str, _Running]]] = {}
"""The tasks running in this worker process, by batch and run."""
_STOPPING: Final[dict[str, str]] = {}
"""The batches told to stop, with why: a task that starts later stops at its first step."""
_LOCK: Final = threading.Lock()
_QUEUES: Final[dict[str, Any]] = {}
"""The batches' queues this worker process opened, by name: opening one is a round trip."""
_FLUSHER: Final = Flusher()
"""Sends what this worker's runs held too long (a thread, started by the first run)."""


def run_task(task: Task, queue_name: str, slot: int) -> None:
    """Run one task on a Dask worker, reporting through the batch's queue, several to a put."""
    from distributed import Queue  # noqa: PLC0415 - runs on the worker

    batch_id = task.batch.batch_id
    running = _Running()
    queue = _QUEUES.get(queue_name)
    if queue is None:  # two first runs may both open it: the scheduler counts both
        queue = _QUEUES.setdefault(queue_name, Queue(queue_name))
    with _LOCK:
        _RUNNING.setdefault(batch_id, {})[task.run_id] = running
        stopping = _STOPPING.get(batch_id)  # a batch told to stop: this run stops at once
        running.pending = None if stopping is None else _interrupted(stopping)

    def put(messages: list[Message]) -> None:
        queue.put((slot, messages))

    outbox = Outbox(put)
    _FLUSHER.watch(task.run_id, outbox)
    try:
        # The outbox first: a step's start sends the rows before it, even one interrupted there.
        execute(task, outbox.send, (outbox.observe, running.observe))
    finally:
        _FLUSHER.forget(task.run_id)
        with _LOCK:
            _RUNNING[batch_id].pop(task.run_id, None)
        outbox.flush()  # a task that failed still sends what its run said


def _interrupt(batch_id: str, message: str) -> None:
    """On a worker: interrupt every run of the batch (the first Ctrl-C)."""
    with _LOCK:
        _STOPPING[batch_id] = message
        running = list(_RUNNING.get(batch_id, {}).values())
    for each in running:
        each.interrupt(message)


def _kill(batch_id: str) -> None:
    """On a worker: kill the process groups of every run of the batch (a second Ctrl-C)."""
    with _LOCK:
        runs = list(_RUNNING.get(batch_id, {}))
    for run_id in runs:
        for pgid in io_ops.GROUPS.current(tag=run_id):
            io_ops.kill_group(pgid)


def _cancel(batch_id: str, run_id: str, by: str, at: str, reason: str) -> None:
    """On a worker: stop one run of the batch as `adws cancel` asked, if it runs here."""
    with _LOCK:
        running = _RUNNING.get(batch_id, {}).get(run_id)
    if running is not None:
        running.cancel(by, at, reason)


def _over_budget(batch_id: str) -> None:
    """On a worker: refuse the batch's agent calls from now on."""
    OVER_BUDGET.add(batch_id)


def _unpacked(puts: list[tuple[int, list[Message]]]) -> list[tuple[int, Message]]:
    """Return each message of each put with its slot, in the order they were put.

    >>> _unpacked([(0, [("a",), ("b",)]), (1, [("c",)])])
    [(0, ('a',)), (0, ('b',)), (1, ('c',))]
    """
    return [(slot, message) for slot, messages in puts for message in messages]


def _local_cluster(workers: int, threads: int) -> tuple[Any, Any]:
    """Start a TLS-only, HTTP-free cluster on 127.0.0.1; return it and its credentials."""
    import dask  # noqa: PLC0415 - the optional extra, loaded only for --dask
    from distributed import Security, SpecCluster  # noqa: PLC0415 - as above

    security = Security.temporary()  # a key and certificate for this batch alone, in memory
    where = {"host": "127.0.0.1", "protocol": "tls://", "security": security}
    quiet = {"dashboard": False, "dashboard_address": None}
    # Read by each nanny whenever it (re)starts its worker: a task's step may use
    # multiprocessing; and nobody reads a local cluster's profiles, whose sampling of every
    # thread's stack each 10 ms took a fifth of its workers' CPU, on the cores agents share.
    dask.config.set(
        {"distributed.worker.daemon": False, "distributed.worker.profile.enabled": False}
    )
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        cluster = SpecCluster(
            scheduler={"cls": _QuietScheduler, "options": {**where, **quiet}},
            workers={
                index: {
                    "cls": Nanny,
                    "options": {
                        **where,
                        **quiet,
                        "nthreads": threads,
                        "worker_class": _QuietWorker,
                        "silence_logs": logging.WARNING,
                    },
                }
                for index in range(workers)
            },
            security=security,
            silence_logs=logging.WARNING,
        )
    return cluster, security


@final
class DaskPool:
    """Slots on a Dask cluster, with the interface `LocalPool` offers the coordinator."""

    def __init__(self, address: str, batch_id: str, concurrency: int = 1) -> None:
        """Connect to `address`, or start a local cluster for `local:N`.

        A local cluster gives each of its N worker processes enough threads for
        `concurrency` runs in flight across them (agents are processes, so
        threads overlap them well).
        """
        from distributed import Client, Queue  # noqa: PLC0415 - as above

        self.cluster: Any = None
        if address.startswith("local:"):
            workers = int(address.removeprefix("local:"))
            self.cluster, security = _local_cluster(workers, max(1, -(-concurrency // workers)))
            self.client: Client = Client(self.cluster, security=security)
        else:
            self.client = Client(address)
        self.batch_id = batch_id
        self.queue_name = f"adws-{batch_id}"
        self.queue: Any = Queue(self.queue_name, client=self.client)
        self.futures: dict[int, Future[None]] = {}
        self.ended = threading.Event()
        """Set when a task ends (finished, failed or cancelled): `receive` stops waiting."""
        self._slots = itertools.count()
        self.requested: list[int] = []
        self.applied = 0

    def start(self) -> int:
        """Open one slot (tasks run wherever the scheduler places them)."""
        return next(self._slots)

    def send(self, slot: int, task: Task) -> None:
        """Submit a task for this slot."""
        future = self.client.submit(
            run_task, task, self.queue_name, slot, pure=False, key=f"adws-{task.run_id}-{slot}"
        )
        future.add_done_callback(lambda _future: self.ended.set())
        self.futures[slot] = future

    def receive(self, timeout: float) -> list[tuple[int, Message]]:
        """Return the messages waiting (polling until some come, or `timeout`), then the lost."""
        self._apply_signals()
        deadline = time.monotonic() + timeout
        while True:
            self.ended.clear()  # before the get: a task that ends after it wakes the wait below
            # A blocking get that times out is logged as an error by the scheduler: poll instead.
            received = _unpacked(self.queue.get(batch=True))
            lost = self._lost()
            if lost:  # what they said before they died
                received.extend(_unpacked(self.queue.get(batch=True)))
            if received or lost or time.monotonic() >= deadline:
                return received + lost
            self.ended.wait(min(_POLL, max(0.0, deadline - time.monotonic())))

    def _lost(self) -> list[tuple[int, Message]]:
        lost: list[tuple[int, Message]] = []
        for slot, future in list(self.futures.items()):
            if future.status == "finished":
                del self.futures[slot]
            elif future.status in {"error", "cancelled"}:
                del self.futures[slot]
                how = "cancelled"
                if future.status == "error":
                    with contextlib.suppress(Exception):
                        how = f"{type(future.exception()).__name__}: {future.exception()}"
                lost.append((slot, ("lost", how)))
        return lost

    def forget(self, slot: int) -> None:
        """Drop a slot whose task died: `receive` already forgot its future."""

    def signal_all(self, signum: int) -> None:
        """Note a signal; `receive`, in the main loop, passes it on (not the signal handler)."""
        self.requested.append(signum)

    def over_budget(self, batch_id: str) -> None:
        """Refuse every agent call of the batch, on every worker, from now on."""
        self.client.run(_over_budget, batch_id)

    def cancel(self, _slot: int, cancel: Cancel) -> None:
        """Stop one run as `adws cancel` asked, on whichever worker runs it."""
        self.client.run(_cancel, self.batch_id, *cancel)

    def recorded(self, _slot: int, _run_id: str, _why: str | None) -> None:
        """Nothing to answer: a Dask worker does not wait for its steps' records (see the docs)."""

    def _apply_signals(self) -> None:
        """First signal: every run stops after cleanup; second: kill their processes, cancel."""
        from adws.runs.interrupts import SIGNAL_NAMES  # noqa: PLC0415 - the words for a signal

        while self.applied < len(self.requested):
            signum = self.requested[self.applied]
            self.applied += 1
            if self.applied == 1:
                self.client.run(_interrupt, self.batch_id, f"interrupted by {SIGNAL_NAMES[signum]}")
            else:
                self.client.run(_kill, self.batch_id)
                self.client.cancel(list(self.futures.values()), force=True)

    def close(self, grace: float = 5.0) -> None:  # noqa: ARG002 - the same signature as LocalPool's
        """Close the client and, if this pool started it, the local cluster."""
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()
