"""`adws worker`'s loop: take what is due on this host, run each in a process, beat, stop cleanly.

Each round (every `poll` seconds, and whenever a run ends) the worker
writes its heartbeat, then fills its free slots: first the runs of this
host to continue (a decision given elsewhere, a parked run whose time
came, a run interrupted or whose holder died: each claimed compare-and-set;
an orphan at most once per worker, so a run that cannot start is not
started again every round), then queued runs (`take_queued`:
`SKIP LOCKED`, so workers on several hosts split them). A claimed run is
recorded as held by the worker; a child process (`held`, built by the
caller) takes it over from the worker and runs it as `adws run` or `adws
resume` would, with its own signals, process groups and journal
connection: that is why runs are processes, not threads (a run's signal
handlers, subreaper and `ADWS_RUN_ID` belong to its whole process).
`adws worker` forks each from a server that imported adws once
(`adws.io_ops.ForkServer`): a run starts in milliseconds, not the quarter
of a second of a new interpreter.

`held` is told where the journal is (a team journal's URL holds its
password) and hands it to the child as an argument, never through the
environment, which every step of the run would inherit (and an agent
could print), nor the command line, which `ps` shows. A child that could
not be started (the system out of processes) leaves its run as one that
could not start its run: marked interrupted, see `_settle`.

A round also comes at the nearest `wake_at` of a parked run of this host
(read from the journal each round), not at the next poll; and, on
PostgreSQL, as soon as the worker hears of a due run: it listens (`LISTEN
adws_due`, on a connection of its own) for the notices the journal sends
in the transaction that makes a run due (queued, decided, cancelled,
parked, interrupted: see `adws.journal.store.notices`). A notice is only
a hint: it brings the next round forward, and the round reads the journal
and claims compare-and-set, so a forged one starts nothing that is not
due. The loop's tick (50 ms, for its children and signals) waits on that
connection's socket, sending nothing. A listening connection that drops
is opened again at the next round (the worker polls meanwhile); one that
cannot be is said once, and so is listening again.

A run that fails does not stop the worker. A journal it cannot reach (a
server restarting, a dropped connection) is said once; the worker waits
its poll interval and tries again (a server's connection reopens by
itself). The first SIGINT or SIGTERM is forwarded once to every run held
(each ends `interrupted`, resumable, as `adws run` does); the worker
waits for them, removes its heartbeat and returns the signal's exit code.
"""

from __future__ import annotations

import os
import signal
import socket
from typing import TYPE_CHECKING, Final, Protocol, final

import attrs

from adws import io_ops
from adws.journal import JournalError
from adws.journal.records.workers import WorkerRecord
from adws.journal.store.backend import ERRORS, JournalUrl
from adws.journal.store.postgres import open_listener
from adws.journal.store.queue import beat, leave, next_wake, prune_workers
from adws.runs import Refused
from adws.runs.interrupts import EXIT_BY_SIGNAL

if TYPE_CHECKING:
    from collections.abc import Callable

    from adws.journal.store.postgres import PostgresConnection
    from adws.runs import Runs

__all__ = ["Child", "Worker"]

TIDY_EVERY: Final = 3600.0
"""How often `adws worker --gc` collects worktrees: every hour."""

_TICK: Final = 0.05
"""How often the loop looks at its children and at the signals it got."""
_ORPHANED: Final = frozenset({"interrupted", "running"})
"""What a run nobody runs any more is due as (see `adws.journal.store.queue.orphans`)."""
_NOT_STARTED: Final = 1
"""The exit code a run whose child could not be started ends with (as a child that failed)."""


class Child(Protocol):
    """The process running a held run, followed as a `subprocess.Popen` is."""

    @property
    def pid(self) -> int:
        """Its process id."""
        ...

    @property
    def returncode(self) -> int | None:
        """None while it runs; its exit status, or minus the signal that ended it."""
        ...

    def poll(self) -> int | None:
        """Return its `returncode` if it ended, else None."""
        ...

    def send_signal(self, signum: int, /) -> None:
        """Send it `signum`."""
        ...

    def ended_fd(self) -> int | None:
        """Return a descriptor readable once it ends, if it has one (the loop wakes on it)."""
        ...


@final
class Worker:
    """Continue, on this host, every run that is due, `concurrency` at a time.

    `held(run_id, kind, journal)` starts the child that runs a run this
    worker claimed (`kind`: `queued`, or its status: `waiting`, `parked`,
    `interrupted`, `running` for a dead holder's; `journal`: where the
    journal is, a path or a URL) and raises OSError or EOFError if it
    cannot; `ended`
    is told each run's exit code as it ends; `say` prints a line. Runs are
    claimed through `runs` (`Runs.take`, `Runs.take_queued`), the one code
    outside the journal that claims a run.
    """

    def __init__(  # noqa: PLR0913 - the runs, and how the loop runs
        self,
        runs: Runs,
        *,
        held: Callable[[str, str, str], Child],
        ended: Callable[[str, int], None],
        say: Callable[[str], None],
        poll: float = 5.0,
        concurrency: int = 1,
        once: bool = False,
        tidy: Callable[[], str] | None = None,
    ) -> None:
        """Keep what the loop needs; nothing runs until `run` (the journal is opened already).

        `tidy` (`adws worker --gc`) runs in the first round and then every
        `TIDY_EVERY` seconds; what it returns is said.
        """
        journal = runs.journal()
        assert not isinstance(journal, Refused)  # noqa: S101 - the caller opened it
        self.runs = runs
        self.journal = journal
        self.held = held
        self.ended = ended
        self.say = say
        self.poll = poll
        self.concurrency = concurrency
        self.once = once
        self.tidy = tidy
        self._next_tidy = 0.0
        self.codes: list[int] = []
        """The exit code of each run this worker ran, in the order they ended."""
        self.signal: int | None = None
        self._stopped: list[str] = []
        """The runs it held when a signal stopped it (each told to stop, ends interrupted)."""
        self._children: dict[str, Child] = {}
        self._ended: list[tuple[str, int]] = []
        """Runs that ended and are not yet settled in the journal (`_settle`)."""
        self._unreachable = False
        self._next_round = 0.0
        self._listener: PostgresConnection | None = None
        self._deaf = False
        """Said that it cannot listen: said again once it listens."""
        self._taken_back: set[str] = set()
        """The orphans this worker took back: each once (see the module's docstring)."""
        pid, host = os.getpid(), socket.gethostname()
        self.me = WorkerRecord(
            f"{host}:{pid}:{io_ops.wall_clock():.6f}", host, pid, io_ops.utc_now(), 0.0, poll, ()
        )

    def _on_signal(self, signum: int, _frame: object) -> None:
        """Note the first signal; `run` forwards it once to every run held."""
        self.signal = self.signal or signum

    def run(self) -> int | None:
        """Loop until stopped (or, `once`, until nothing is due); return a signal's exit code.

        None: not stopped by a signal (see `codes` for the runs' own).
        """
        forwarded = False
        with io_ops.handling_signals(self._on_signal):
            while True:
                finished = self._reap()
                if self.signal is not None:
                    if not forwarded:
                        for run_id, child in self._children.items():
                            child.send_signal(self.signal)
                            self._stopped.append(run_id)
                        forwarded = True
                    if not self._children:
                        break
                elif finished or io_ops.monotonic() >= self._next_round:
                    took = self._round()
                    if self.once and not (
                        took or self._children or self._ended or self._unreachable
                    ):
                        break
                self._wait()
        self._leave()
        if self.signal is None:
            return None
        self._closing(self.signal)
        return EXIT_BY_SIGNAL[self.signal]

    def _closing(self, signum: int) -> None:
        """Say, last, that a signal stopped the worker and what became of the runs it held."""
        code = EXIT_BY_SIGNAL[signum]
        held = (
            f"{len(self._stopped)} run(s) it held stopped: {', '.join(self._stopped)} "
            "(adws resume RUN continues each)"
            if self._stopped
            else "it held no run"
        )
        self.say(
            f"adws worker: process {self.me.pid} stopped by {signal.Signals(signum).name} after "
            f"{len(self.codes)} run(s); {held}; exit {code}"
        )

    def _reap(self) -> bool:
        """Collect the runs that ended (settled at the next round); tell whether any did."""
        children = self._children.items()
        done = [(run_id, code) for run_id, child in children if (code := child.poll()) is not None]
        for run_id, status in done:
            del self._children[run_id]
            code = EXIT_BY_SIGNAL.get(-status, 1) if status < 0 else status
            self.codes.append(code)
            self._ended.append((run_id, code))
        return bool(done)

    def _settle(self) -> None:
        """Release and report the runs that ended, oldest first.

        A child that could not start its run (a workflow this host cannot
        load, a journal it could not open) leaves the run held by this
        worker, as it claimed it: it is marked interrupted, so `adws resume`
        (or a worker, once the run is due) continues it.
        """
        while self._ended:
            run_id, code = self._ended[0]
            found = self.journal.find(run_id)
            if not isinstance(found, str) and (found.status, found.pid) == ("running", self.me.pid):
                self.journal.mark(run_id, "interrupted")
            self.ended(run_id, code)
            self._ended.pop(0)

    def _round(self) -> bool:
        """Settle what ended, beat, listen, fill the free slots; tell whether a run was taken.

        The next round is due after `poll` seconds, or at the nearest
        `wake_at` of a parked run of this host, whichever comes first.
        """
        self._next_round = io_ops.monotonic() + self.poll
        try:
            self._settle()
            self._beat()
            self._tidied()
            listening = self._listen()  # before reading the journal: no notice falls between
            took = self._fill()
            wake = next_wake(self.journal, self.me.host, io_ops.wall_clock())
        except (JournalError, *ERRORS) as exc:
            if not self._unreachable:
                self.say(
                    f"adws worker: cannot reach the journal {self.journal.path} ({exc}); "
                    f"trying again every {self.poll:g}s"
                )
            self._unreachable = True
            return False
        if self._unreachable:
            self.say(f"adws worker: the journal {self.journal.path} answers again")
            self._unreachable = False
        if listening is not None:
            self.say(listening)
        if wake is not None:
            self._next_round = min(
                self._next_round, io_ops.monotonic() + wake - io_ops.wall_clock()
            )
        return took

    def _listen(self) -> str | None:
        """Listen for notices of due runs, on a PostgreSQL journal; return what to say, if anything.

        Only a worker that goes on (not `once`) listens. A connection that
        cannot be opened (at the first round, or again after one dropped)
        is said once, and the worker polls meanwhile; listening again is
        said too.
        """
        url = self.journal.path
        if self._listener is not None or self.once or not isinstance(url, JournalUrl):
            return None
        try:
            self._listener = open_listener(url)
        except ERRORS as exc:
            if self._deaf:
                return None
            self._deaf = True
            return (
                f"adws worker: cannot listen for due runs on {url} ({exc}); "
                f"looking every {self.poll:g}s until it can"
            )
        if not self._deaf:
            return None
        self._deaf = False
        return f"adws worker: listening for due runs on {url} again"

    def _wait(self) -> None:
        """Wait a tick; a notice heard meanwhile makes the next round due now (only a hint).

        A listening connection that dropped is closed: the worker polls, and
        opens another at its next round (which says so if it cannot).
        """
        if self._listener is None:
            ends = [fd for child in self._children.values() if (fd := child.ended_fd()) is not None]
            if ends:  # woken as soon as a run ends: its slot takes the next run at once
                io_ops.until_one_ends(ends, _TICK)
            else:
                io_ops.sleep(_TICK)
            return
        try:
            heard = self._listener.heard(_TICK)
        except ERRORS:
            self._listener.close()
            self._listener = None
            return
        if heard:
            self._next_round = 0.0

    def _tidied(self) -> None:
        """Run `tidy` when it is due (the first round, then every `TIDY_EVERY` seconds)."""
        if self.tidy is None or io_ops.monotonic() < self._next_tidy:
            return
        self._next_tidy = io_ops.monotonic() + TIDY_EVERY
        self.say(f"adws worker: {self.tidy()}")

    def _beat(self) -> None:
        self.me = attrs.evolve(self.me, beat=io_ops.wall_clock(), runs=tuple(self._children))
        beat(self.journal, self.me)
        prune_workers(self.journal, self.me.beat)  # dead workers' rows go, not only out of sight

    def _fill(self) -> bool:
        """Claim and start runs while slots are free: runs to continue first, then the queue."""
        started = len(self._children)
        if started < self.concurrency:
            for run_id, kind in self.runs.due_on(self.me.host):
                if len(self._children) >= self.concurrency:
                    break
                orphan = kind in _ORPHANED
                if orphan and run_id in self._taken_back:
                    continue
                if self.runs.take(run_id):
                    if orphan:
                        self._taken_back.add(run_id)
                    self._start(run_id, kind)
        while len(self._children) < self.concurrency:
            queued = self.runs.take_queued()
            if queued is None:
                break
            self._start(queued, "queued")
        return len(self._children) > started

    def _start(self, run_id: str, kind: str) -> None:
        """Start the child that runs `run_id`; one that cannot start leaves it to `_settle`."""
        where = self.runs.where
        location = where.url if isinstance(where, JournalUrl) else str(where)
        try:
            self._children[run_id] = self.held(run_id, kind, location)
        except (OSError, EOFError) as exc:  # EOFError: its forkserver ended as it forked
            self.say(f"adws worker: cannot start the process of run {run_id}: {exc}")
            self.codes.append(_NOT_STARTED)
            self._ended.append((run_id, _NOT_STARTED))

    def _leave(self) -> None:
        """Settle the runs that ended and remove this worker's heartbeat, as it stops.

        A journal out of reach is said: the heartbeat then stops being live
        by itself, and the runs stay as their own processes left them.
        """
        if self._listener is not None:
            self._listener.close()
        try:
            self._settle()
            leave(self.journal, self.me.worker_id)
        except (JournalError, *ERRORS) as exc:
            self.say(f"adws worker: cannot remove its heartbeat from the journal: {exc}")
