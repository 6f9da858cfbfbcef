"""Adopt the orphans of a run's processes, and stop them when the run ends.

A descendant that clears its environment (`env -i`) and leaves its session
(`setsid`) escapes both the process-group kill and the mark sweep (see
`adws.io_ops.marks`). When its parent ends, the kernel hands it to the
nearest ancestor that is a child subreaper, else to init: so adws (the
process that runs a run, and each batch worker) becomes one
(`become_subreaper`), and `kill_adopted` finds what it was handed (its own
children in a session other than its own, outside the groups adws is
watching) and kills them, reaping each.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
from pathlib import Path
from typing import Final

from adws.io_ops.clock import monotonic, sleep

__all__ = ["become_subreaper", "kill_adopted"]

_PR_SET_CHILD_SUBREAPER: Final = 36
_PROC: Final = Path("/proc")
_ROUNDS: Final = 10
"""Each kill may orphan the adopted process's own children: they come back to us, so look again."""
_REAP_SECONDS: Final = 1.0


def become_subreaper(platform: str = sys.platform) -> bool:
    """Make this process a child subreaper (Linux's `PR_SET_CHILD_SUBREAPER`); say if it is one.

    Orphans among its descendants are then handed to it rather than to
    init, so `kill_adopted` can find them. Elsewhere (macOS, a libc
    without `prctl`) this is a harmless no-op that returns False.
    """
    if platform != "linux":
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    return bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)


def _adopted(proc: Path, own: frozenset[int]) -> list[tuple[int, int]]:
    """Return (pid, pgid) of this process's children outside its session and `own` groups."""
    me, session = os.getpid(), os.getsid(0)
    found = []
    try:
        entries = [entry.name for entry in os.scandir(proc) if entry.name.isdigit()]
    except OSError:  # no /proc on this system
        return []
    for pid in entries:
        try:
            stat = (proc / pid / "stat").read_text(encoding="utf-8", errors="replace")
        except OSError:  # it ended as we looked
            continue
        # After the command name, which may hold spaces: state, ppid, pgrp, session.
        fields = stat.rsplit(")", 1)[-1].split()
        ppid, pgid, sid = int(fields[1]), int(fields[2]), int(fields[3])
        if ppid == me and sid != session and int(pid) not in own:
            found.append((int(pid), pgid))
    return found


def _reap(pid: int, deadline: float) -> None:
    """Wait for a killed child to end (it is ours now), for at most until `deadline`."""
    while True:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # already reaped
            return
        if done or monotonic() >= deadline:
            return
        sleep(0.01)


def kill_adopted(own: frozenset[int] = frozenset(), *, proc: Path = _PROC) -> tuple[int, ...]:
    """SIGKILL the orphans this process adopted, with their groups; reap them; return them.

    An adopted orphan is a child of this process in another session (what
    adws starts itself either stays in adws's session or is one of the
    groups in `own`, the ones still being watched). Call it when nothing of
    the run should be left.
    """
    killed: list[int] = []
    for _ in range(_ROUNDS):
        found = _adopted(proc, own)
        if not found:
            break
        for pid, pgid in found:
            for kill, target in ((os.killpg, pgid), (os.kill, pid)):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    kill(target, signal.SIGKILL)
        deadline = monotonic() + _REAP_SECONDS
        for pid, _ in found:
            _reap(pid, deadline)
        killed.extend(pid for pid, _ in found)
    return tuple(killed)
