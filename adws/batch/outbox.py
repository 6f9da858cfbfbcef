"""A run's messages to its coordinator, several to a send: fewer round trips, none lost.

A Dask worker reaches the coordinator through the scheduler, a round trip
for each put; a run of three agent steps said fourteen things a put each.
An `Outbox` holds what can wait and sends it with what cannot, in order:

- a new child process group goes at once, with what was held before it
  (the coordinator must know a child before it can outlive its worker);
- a step's start sends what is held (`Outbox.observe`, a run observer), so
  every finished step's rows reach the coordinator before the next step
  runs: a worker that dies costs only the step in flight, as one put a
  message did;
- the run's end (`finished`, `failed`) goes at once, with everything;
- the rest (an agent exchange, a finished step, a retried attempt, a
  reaped process group) waits for one of those, or for `HOLD` seconds
  (`Flusher`), so a long step still streams its rows.

A worker that dies loses only what its step in flight held, which the
coordinator's resume does not read: it resumes from the last finished
step, and records the lost attempt itself.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import TYPE_CHECKING, Final, cast, final

from adws.engine.events import StepStarted

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from adws.batch.tasks import Message
    from adws.engine.events import RunEvent

__all__ = ["HOLD", "Flusher", "Outbox"]

HOLD: Final = 0.25
"""The longest a message waits in an outbox for a step boundary, in seconds."""


def urgent(message: Message, groups: frozenset[int]) -> bool:
    """Tell whether `message` must go at once: a run's end, or a process group not reported yet.

    `groups` are the process groups the run reported last.

    >>> urgent(("groups", "r", "host", (7, 8)), frozenset({7}))
    True
    >>> urgent(("groups", "r", "host", (7,)), frozenset({7, 8}))
    False
    >>> urgent(("finished", "r", "succeeded", None, [], ()), frozenset())
    True
    >>> urgent(("journal", "r", [], 0.0), frozenset())
    False
    """
    kind = message[0]
    if kind == "groups":
        return not _pgids(message) <= groups
    return kind in {"finished", "failed"}


def _pgids(message: Message) -> frozenset[int]:
    """Return the process groups a `groups` message reports."""
    return frozenset(cast("Sequence[int]", message[3]))


@final
class Outbox:
    """One run's messages, held until one must go, then sent together in order.

    `put` sends a list of messages as one (a Dask queue put). One lock keeps
    a send and what is added meanwhile in order, whichever thread sends
    (the run's, or the `Flusher`'s). A send that fails keeps its messages,
    first, for the next one, and raises.
    """

    def __init__(
        self, put: Callable[[list[Message]], None], clock: Callable[[], float] = time.monotonic
    ) -> None:
        """Send through `put`; `clock` dates what is held (for `due`)."""
        self.put, self.clock = put, clock
        self.lock = threading.Lock()
        self.held: list[Message] = []
        self.since = 0.0
        self.groups: frozenset[int] = frozenset()

    def send(self, message: Message) -> None:
        """Hold `message`, or send it now with what is held if it must go at once."""
        with self.lock:
            if not self.held:
                self.since = self.clock()
            self.held.append(message)
            now = urgent(message, self.groups)
            if message[0] == "groups":
                self.groups = _pgids(message)
            if now:
                self._flush()

    def observe(self, event: RunEvent, /) -> None:
        """Send what is held when a step starts: the rows of the steps before it go first."""
        if isinstance(event, StepStarted):
            self.flush()

    def flush(self) -> None:
        """Send what is held, if anything."""
        with self.lock:
            self._flush()

    def due(self, now: float) -> bool:
        """Tell whether a message has been held `HOLD` seconds or more at `now`."""
        with self.lock:
            return bool(self.held) and now - self.since >= HOLD

    def _flush(self) -> None:
        if not self.held:
            return
        held, self.held = self.held, []
        try:
            self.put(held)
        except BaseException:
            self.held[:0] = held  # kept, first, for the next send
            raise


@final
class Flusher:
    """Send what every outbox of this process has held too long, every `HOLD / 2` seconds."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        """Watch no outbox yet; `start` begins the watch in a thread of its own."""
        self.clock = clock
        self.lock = threading.Lock()
        self.outboxes: dict[str, Outbox] = {}
        self.stopped = threading.Event()
        self.thread: threading.Thread | None = None

    def watch(self, key: str, outbox: Outbox) -> None:
        """Watch `outbox` (by `key`, a run id) and start the thread if it has not started."""
        with self.lock:
            self.outboxes[key] = outbox
            if self.thread is None:
                self.thread = threading.Thread(target=self.run, name="adws-outbox", daemon=True)
                self.thread.start()

    def forget(self, key: str) -> None:
        """Stop watching the outbox of `key`."""
        with self.lock:
            self.outboxes.pop(key, None)

    def tick(self) -> None:
        """Send what each outbox has held `HOLD` seconds or more (what fails to go is kept)."""
        now = self.clock()
        with self.lock:
            outboxes = list(self.outboxes.values())
        for outbox in outboxes:
            if outbox.due(now):
                with contextlib.suppress(Exception):  # kept for the run's next send, which raises
                    outbox.flush()

    def run(self) -> None:
        """Tick until `stopped` is set."""
        while not self.stopped.wait(HOLD / 2):
            self.tick()
