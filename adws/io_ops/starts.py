"""When a process started, as a token that tells it from a later process given the same pid.

A run's holder is recorded by pid; a pid is reused once its process has
ended, so a pid alive today may be another process. Linux says when a
process started in `/proc/PID/stat` (field 22, clock ticks since boot);
with the boot's id (`/proc/sys/kernel/random/boot_id`) in front, the token
`<boot id>:<ticks>` names one process for good: a holder whose pid is
alive under another token is dead (see `adws.journal.records.holders`).
Without `/proc`, there is no token (None), and a holder is judged by its
pid alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

__all__ = ["process_started"]

_PROC: Final = Path("/proc")
_STARTTIME: Final = 19
"""Where the start time is in `/proc/PID/stat`, counting from the state after the name (22 - 3)."""


def process_started(pid: int, proc: Path = _PROC) -> str | None:
    """Return `<boot id>:<start ticks>` of process `pid` (None: gone, or no `/proc` to ask).

    `proc` is where the processes are listed (`/proc`).
    """
    try:
        boot = (proc / "sys" / "kernel" / "random" / "boot_id").read_text(encoding="ascii")
        stat = (proc / str(pid) / "stat").read_text(encoding="utf-8", errors="replace")
    except (OSError, UnicodeDecodeError):
        return None
    return started_token(boot, stat)


def started_token(boot: str, stat: str) -> str | None:
    """Make the token from the boot id's text and a `/proc/PID/stat` line (None: unreadable).

    The command name, in parentheses, may hold spaces and parentheses: the
    fields are counted after its last `)`.

    >>> started_token("b7 ", "42 (a) b) S 1 42 42 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 9876 0")
    'b7:9876'
    >>> started_token("b7", "42 (sh) S 1"), started_token("", "42 (sh) S") is None
    (None, True)
    """
    fields = stat.rsplit(")", 1)[-1].split()
    boot_id = boot.strip()
    if not boot_id or len(fields) <= _STARTTIME or not fields[_STARTTIME].isdigit():
        return None
    return f"{boot_id}:{fields[_STARTTIME]}"
