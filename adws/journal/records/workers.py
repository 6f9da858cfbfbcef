"""An `adws worker` as its heartbeats show it (`WorkerRecord`), and when it counts as live.

The SQL that writes and reads the heartbeats is `adws.journal.store.queue`.
"""

from __future__ import annotations

from typing import Final, final

import attrs

from adws.journal.records.holders import alive

__all__ = ["MISSED_BEATS", "WorkerRecord"]


MISSED_BEATS: Final = 3
"""A worker whose last heartbeat is older than this many poll intervals is not live."""


@final
@attrs.frozen
class WorkerRecord:
    """One `adws worker` as its heartbeats show it."""

    worker_id: str
    host: str
    pid: int
    since: str
    beat: float
    """When it last wrote its heartbeat, in Unix seconds."""
    poll: float
    runs: tuple[str, ...]
    """The runs it held at its last heartbeat."""

    def live(self, now: float) -> bool:
        """Tell whether it beat within `MISSED_BEATS` poll intervals and, on this host, exists.

        >>> WorkerRecord("w", "elsewhere", 1, "", 100.0, 5.0, ()).live(115.0)
        True
        >>> WorkerRecord("w", "elsewhere", 1, "", 100.0, 5.0, ()).live(115.5)
        False
        """
        return now - self.beat <= MISSED_BEATS * self.poll and alive(self.pid, self.host)

    def to_dict(self) -> dict[str, object]:
        """Return what `adws workers --json` prints of it."""
        return {
            "worker_id": self.worker_id,
            "host": self.host,
            "pid": self.pid,
            "since": self.since,
            "beat": self.beat,
            "poll": self.poll,
            "runs": list(self.runs),
        }
