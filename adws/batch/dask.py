"""The Dask pool: the runs of a batch as tasks on a `dask.distributed` cluster (extra `adws[dask]`).

`local:N` starts a `LocalCluster` of N single-threaded worker processes on
127.0.0.1; any other value is a scheduler address. Every worker must be
able to import adws and read the workflows folder at the same path (a
shared checkout, or the same container image).

Messages travel on a `distributed.Queue` named after the batch; each put
returns once the scheduler holds it, so what a task reported before its
worker died is not lost. A task whose worker dies fails (`KilledWorker`:
the local cluster allows no silent retry) and the coordinator resumes that
run from its last finished step as a new task. A first Ctrl-C sets a
`distributed.Event`: each run stops at its next step that is not cleanup,
runs its `always_run` steps and ends `interrupted`; a step in flight on a
remote worker is not interrupted. A second Ctrl-C cancels every task.
"""

from __future__ import annotations

import itertools
import time
from typing import TYPE_CHECKING, Any, Final, final

from adws.batch.tasks import Message, Task, execute

if TYPE_CHECKING:
    from distributed import Client, Future

__all__ = ["INSTALL_HINT", "DaskPool", "run_task"]

INSTALL_HINT: Final = "pip install 'adws[dask]'"


def run_task(task: Task, queue_name: str, stop_name: str, slot: int) -> None:
    """Run one task on a Dask worker, reporting through the batch's queue."""
    from distributed import Event, Queue  # noqa: PLC0415 - runs on the worker

    from adws.events import StepStarted  # noqa: PLC0415 - as above

    queue, stop = Queue(queue_name), Event(stop_name)

    def send(message: Message) -> None:
        queue.put((slot, message))

    def watch(event: object) -> None:
        if isinstance(event, StepStarted) and not event.always_run and stop.is_set():
            message = "interrupted by Ctrl-C"
            raise KeyboardInterrupt(message)

    execute(task, send, (watch,))


@final
class DaskPool:
    """Slots on a Dask cluster, with the interface `LocalPool` offers the coordinator."""

    def __init__(self, address: str, batch_id: str, concurrency: int = 1) -> None:
        """Connect to `address`, or start a local cluster for `local:N`.

        A local cluster gives each of its N worker processes enough threads for
        `concurrency` runs in flight across them (agents are processes, so
        threads overlap them well).
        """
        import dask  # noqa: PLC0415 - the optional extra, loaded only for --dask
        from distributed import Client, Event, LocalCluster, Queue  # noqa: PLC0415 - as above

        self.cluster: Any = None
        if address.startswith("local:"):
            workers = int(address.removeprefix("local:"))
            with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
                self.cluster = LocalCluster(
                    n_workers=workers,
                    threads_per_worker=max(1, -(-concurrency // workers)),
                    processes=True,
                    host="127.0.0.1",
                    dashboard_address=None,
                )
            self.client: Client = Client(self.cluster)
        else:
            self.client = Client(address)
        self.queue_name, self.stop_name = f"adws-{batch_id}", f"adws-{batch_id}-stop"
        self.queue: Any = Queue(self.queue_name, client=self.client)
        self.stop: Any = Event(self.stop_name, client=self.client)
        self.futures: dict[int, Future[None]] = {}
        self._slots = itertools.count()
        self.requested = self.applied = 0

    def start(self) -> int:
        """Open one slot (tasks run wherever the scheduler places them)."""
        return next(self._slots)

    def send(self, slot: int, task: Task) -> None:
        """Submit a task for this slot."""
        self.futures[slot] = self.client.submit(
            run_task, task, self.queue_name, self.stop_name, slot, pure=False
        )

    def receive(self, timeout: float) -> list[tuple[int, Message | None]]:
        """Return the messages waiting, then a None for each slot whose task died."""
        self._apply_signals()
        # A blocking get that times out is logged as an error by the scheduler: poll instead.
        received: list[tuple[int, Message | None]] = list(
            self.queue.get(batch=True)
        ) or self._after(timeout)
        for slot, future in list(self.futures.items()):
            if future.status == "finished":
                del self.futures[slot]
            elif future.status in {"error", "cancelled"}:
                del self.futures[slot]
                received.extend(self.queue.get(batch=True))  # what it said before it died
                received.append((slot, None))
        return received

    def forget(self, slot: int) -> None:
        """Drop a slot whose task died: `receive` already forgot its future."""

    def _after(self, timeout: float) -> list[tuple[int, Message | None]]:
        time.sleep(timeout)
        return list(self.queue.get(batch=True))

    def signal_all(self, signum: int) -> None:  # noqa: ARG002 - the same signature as LocalPool's
        """Note a signal; `receive`, in the main loop, passes it on (not the signal handler)."""
        self.requested += 1

    def _apply_signals(self) -> None:
        """First signal: every run stops at its next step; second: cancel every task."""
        while self.applied < self.requested:
            self.applied += 1
            if self.applied == 1:
                self.stop.set()
            else:
                self.client.cancel(list(self.futures.values()), force=True)

    def close(self, grace: float = 5.0) -> None:  # noqa: ARG002 - the same signature as LocalPool's
        """Close the client and, if this pool started it, the local cluster."""
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()
