"""Process groups adws started, how to stop them, and the signals a run stops on."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from adws.io_ops.clock import monotonic, sleep
from adws.io_ops.marks import kill_marked, live_marks
from adws.io_ops.reaper import kill_adopted

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

__all__ = [
    "CANCEL",
    "GRACE_SECONDS",
    "GROUPS",
    "HANDLED_SIGNALS",
    "TAG",
    "group_alive",
    "handling_signals",
    "kill_all_groups",
    "kill_group",
    "kill_groups_of",
    "process_alive",
    "stop_group",
]

GRACE_SECONDS: Final = 2.0
"""How long a stopped process gets between SIGTERM and SIGKILL."""


TAG: Final[ContextVar[str | None]] = ContextVar("adws_group_tag", default=None)
"""The run the processes started here belong to, where one process runs several.

A batch task on a Dask worker sets it to its run id (branch threads copy
it), so the groups of each run can be reported, and stopped, apart.
"""


class _Groups:
    """The process groups adws started and has not yet seen end, by pgid.

    One lock protects the set: branches of a parallel step start processes
    from several threads, and a second Ctrl-C or SIGTERM stops them all.
    `on_change` hears the current groups whenever they change (the journal
    records them so `adws resume` can tell a run's child is still alive);
    it is called in the thread that started or reaped the process.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pgids: dict[int, tuple[threading.Event | None, str | None]] = {}
        self.on_change: Callable[[tuple[int, ...]], None] | None = None

    def _changed(self, snapshot: tuple[int, ...]) -> None:
        listener = self.on_change
        if listener is not None:
            listener(snapshot)

    def add(self, pgid: int, owner: threading.Event | None = None) -> None:
        with self._lock:
            self._pgids[pgid] = (owner, TAG.get())
            snapshot = tuple(sorted(self._pgids))
        self._changed(snapshot)

    def discard(self, pgid: int) -> None:
        with self._lock:
            self._pgids.pop(pgid, None)
            snapshot = tuple(sorted(self._pgids))
        self._changed(snapshot)

    def current(
        self, owner: threading.Event | None = None, *, tag: str | None = None
    ) -> tuple[int, ...]:
        """Return the live groups: all, or those started under `owner`, or for run `tag`.

        `owner` is a parallel branch's cancel event; `tag` a run id (see `TAG`).
        """
        with self._lock:
            return tuple(
                sorted(
                    pgid
                    for pgid, (own, tagged) in self._pgids.items()
                    if (owner is None or own is owner) and (tag is None or tagged == tag)
                )
            )


GROUPS: Final = _Groups()
"""Every live process group adws started in this process."""


def kill_group(pgid: int, sig: int = signal.SIGKILL) -> None:
    """Send `sig` to a process group that may already be gone."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


CANCEL: Final[ContextVar[threading.Event | None]] = ContextVar("adws_cancel", default=None)
"""Set inside a branch of a parallel step: once the event is set, no new process starts.

The parallel step stops the groups its cancelled branches started
(`kill_groups_of`); a branch that then tries again finds nothing started.
"""


def kill_groups_of(owner: threading.Event) -> tuple[int, ...]:
    """SIGKILL the process groups started under `owner`; return them."""
    groups = GROUPS.current(owner)
    for pgid in groups:
        kill_group(pgid)
    return groups


def kill_all_groups() -> tuple[int, ...]:
    """SIGKILL every process group adws started and has not reaped; return them.

    The way out of a second Ctrl-C: nothing adws started may outlive it,
    not even what left those groups (see `adws.io_ops.marks`), nor the
    orphans adws adopted as a subreaper (see `adws.io_ops.reaper`).
    """
    groups = GROUPS.current()
    for pgid in groups:
        kill_group(pgid)
    for mark in live_marks():
        kill_marked(mark)
    kill_adopted(frozenset(groups))  # the group leaders are `run_process`'s to reap
    return groups


def stop_group(pgid: int, grace: float = GRACE_SECONDS) -> None:
    """Stop a process group adws did not start in this process: SIGTERM, then SIGKILL.

    `adws resume --force` uses it on a child a crashed run left behind,
    and a worker on one an orphan's dead holder left: it returns once the
    group has ended (or, SIGKILLed, after another `grace`), so nothing of
    the group's work happens after it.
    """
    for sig in (signal.SIGTERM, signal.SIGKILL):
        kill_group(pgid, sig)
        deadline = monotonic() + grace
        while group_alive(pgid) and monotonic() < deadline:
            sleep(0.05)


def group_alive(pgid: int) -> bool:
    """Tell whether any process of group `pgid` still runs (a zombie does not).

    An orphan nobody reaps stays a zombie, still in its group; where
    `/proc` shows states, a group of zombies only is gone.
    """
    try:
        os.killpg(pgid, 0)
    except OSError as exc:
        # PermissionError means it exists but belongs to someone else.
        return not isinstance(exc, ProcessLookupError)
    return _proc_states(pgid) != {"Z"}


def _proc_states(pgid: int) -> set[str]:
    """Return the states (`R`, `S`, `Z`...) of the processes of group `pgid`, from `/proc`."""
    states: set[str] = set()
    for entry in Path("/proc").glob("[0-9]*/stat"):
        text = ""
        with contextlib.suppress(OSError):  # it ended as we looked
            text = entry.read_text(encoding="utf-8", errors="replace")
        fields = text.rsplit(")", 1)[-1].split()  # after the command name, which may hold spaces
        if len(fields) > _PGRP and fields[_PGRP] == str(pgid):
            states.add(fields[0])
    return states or {"?"}  # no /proc to ask: the group exists


_PGRP: Final = 2
"""Where the process group is in `/proc/PID/stat`, counting from the state after the name."""


def process_alive(pid: int) -> bool:
    """Tell whether a process with this id runs on this machine (a zombie does not)."""
    try:
        os.kill(pid, 0)
    except OSError as exc:
        # PermissionError means it exists but belongs to someone else.
        return not isinstance(exc, ProcessLookupError)
    stat = ""
    with contextlib.suppress(OSError):  # no /proc, or it ended as we looked: trust kill
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    return stat.rsplit(")", 1)[-1].split()[:1] != ["Z"]


HANDLED_SIGNALS: Final = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""The signals a run stops on: Ctrl-C, SIGTERM (CI, `timeout`, `docker stop`), SIGHUP."""


@contextlib.contextmanager
def handling_signals(handler: Callable[[int, Any], object]) -> Iterator[None]:
    """Install `handler` for `HANDLED_SIGNALS` while the block runs, then restore the old ones."""
    previous = {signum: signal.signal(signum, handler) for signum in HANDLED_SIGNALS}
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)
