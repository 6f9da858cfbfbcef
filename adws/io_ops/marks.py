"""Marks in a child's environment: find what it left behind, and tell a run's processes apart.

Every process `run_process` starts carries `ADWS_PROCESS=<a fresh mark>`
in its environment, and its descendants inherit it. A grandchild that
calls `setsid` leaves its process group, so killing the group misses it;
when the process ends, `kill_marked` finds every process still carrying
its mark (Linux: `/proc/*/environ`, readable for one's own processes) and
kills it. A process that clears its environment (`env -i`) is not found.

`adws run` and `adws resume` also put `ADWS_RUN_ID=<run>` in their own
environment, so every process of the run carries it: `adws resume --force`
signals a recorded process group only when one of its processes still
carries the run's id, never a group whose number was reused.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import uuid
from pathlib import Path
from typing import Final

__all__ = [
    "MARK",
    "RUN_MARK",
    "forget",
    "group_belongs_to",
    "kill_marked",
    "live_marks",
    "new_mark",
]

MARK: Final = "ADWS_PROCESS"
RUN_MARK: Final = "ADWS_RUN_ID"
_PROC: Final = Path("/proc")

_LIVE: Final[set[str]] = set()
_LIVE_LOCK: Final = threading.Lock()


def new_mark() -> str:
    """Return a fresh mark for one process (and, through inheritance, its descendants)."""
    mark = uuid.uuid4().hex
    with _LIVE_LOCK:
        _LIVE.add(mark)
    return mark


def forget(mark: str) -> None:
    """Drop a mark no process carries (its process never started)."""
    with _LIVE_LOCK:
        _LIVE.discard(mark)


def live_marks() -> tuple[str, ...]:
    """Return the marks of processes not yet swept (for a second Ctrl-C's `kill_all_groups`)."""
    with _LIVE_LOCK:
        return tuple(_LIVE)


def _environ(proc: Path, pid: str) -> bytes:
    """Read a process's environment, NUL-separated, with a NUL in front (b"" when unreadable).

    Plain `os.open`/`os.read`: this runs over every process each time a
    step's process ends, so it stays cheap (about half a millisecond for a
    hundred processes).
    """
    try:
        handle = os.open(f"{proc}/{pid}/environ", os.O_RDONLY)
    except OSError:  # gone, or not ours to read
        return b""
    chunks = [b"\0"]
    try:
        while chunk := os.read(handle, 1 << 16):
            chunks.append(chunk)
    except OSError:  # it ended as it was read
        return b""
    finally:
        os.close(handle)
    return b"".join(chunks)


def _carrying(proc: Path, variable: str, value: str, pids: list[str]) -> list[int]:
    wanted = f"\0{variable}={value}\0".encode()
    return [int(pid) for pid in pids if wanted in _environ(proc, pid) + b"\0"]


def _pids(proc: Path) -> list[str]:
    try:
        return [entry.name for entry in os.scandir(proc) if entry.name.isdigit()]
    except OSError:  # no /proc on this system
        return []


def kill_marked(mark: str, *, proc: Path = _PROC) -> tuple[int, ...]:
    """SIGKILL every process still carrying `mark`; forget the mark; return what was killed.

    `proc` is where the processes are listed (`/proc`).
    """
    found = tuple(pid for pid in _carrying(proc, MARK, mark, _pids(proc)) if pid != os.getpid())
    for pid in found:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    forget(mark)
    return found


def _members(proc: Path, pgid: int, pids: list[str]) -> list[str]:
    members = []
    for pid in pids:
        try:
            stat = (proc / pid / "stat").read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[-1].split()  # after the command name, which may hold spaces
        if len(fields) > 2 and fields[2] == str(pgid):  # noqa: PLR2004 - state, ppid, pgrp
            members.append(pid)
    return members


def group_belongs_to(pgid: int, run_id: str, *, proc: Path = _PROC) -> bool | None:
    """Tell whether a live process group is the run's (a member carries its id); None: unknowable.

    Without `/proc` (`proc`) nothing can be told, so the caller keeps to the
    group's number.
    """
    pids = _pids(proc)
    if not pids:
        return None
    return bool(_carrying(proc, RUN_MARK, run_id, _members(proc, pgid, pids)))
