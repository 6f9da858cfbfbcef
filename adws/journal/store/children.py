"""Record the process groups a run's step in flight has started, off the step's own thread.

`adws resume` reads them to refuse resuming a run whose child still runs.
The step must never wait for this bookkeeping: a journal another process
holds write-locked would otherwise make a `sleep 1` step with `timeout=5`
fail as `Timeout` after the journal's 30 s busy wait. So the step only
hands over the groups; a thread of the recorder writes the latest ones
(older ones it never got to are superseded) while the step goes on. A
write that fails is tried again on a new connection for `wait` seconds
(`--journal-wait`), each try with the latest groups.
"""

from __future__ import annotations

import functools
import threading
from typing import TYPE_CHECKING, final

from adws.journal.store.patience import JOURNAL_WAIT, persist

if TYPE_CHECKING:
    from adws.journal.store.journal import Journal

__all__ = ["ChildrenRecorder"]


@final
class ChildrenRecorder:
    """Write a run's child process groups as they change, never blocking whoever reports them.

    Call it with the current groups (the `io_ops.GROUPS.on_change` hook);
    `close` waits, up to a bound, for the last write. A write that fails,
    or that has not happened by then, is kept in `unrecorded` for the CLI to
    report; nothing is raised into a step.
    """

    def __init__(
        self, journal: Journal, run_id: str, unrecorded: list[str], wait: float = JOURNAL_WAIT
    ) -> None:
        """Start the writer thread for `run_id`'s groups; a failed write is tried for `wait` s."""
        self.journal, self.run_id, self.unrecorded = journal, run_id, unrecorded
        self.wait = wait
        self._changed = threading.Condition()
        self._latest: tuple[int, ...] | None = None
        self._closed = False
        # A daemon, so a journal locked for ever cannot keep the process alive; `close` joins it.
        self._thread = threading.Thread(target=self._write, name="adws-children", daemon=True)
        self._thread.start()

    def __call__(self, groups: tuple[int, ...]) -> None:
        """Hand over the current groups; return at once."""
        with self._changed:
            self._latest = groups
            self._changed.notify()

    def _write(self) -> None:
        while True:
            with self._changed:
                while self._latest is None and not self._closed:
                    self._changed.wait()
                groups, self._latest = self._latest, None
            if groups is None:  # closed with nothing left to write
                return
            latest = [groups]
            try:
                persist(self.journal, functools.partial(self._record, latest), wait=self.wait)
            except Exception as exc:  # noqa: BLE001 - bookkeeping never breaks a step; reported
                self.unrecorded.append(f"child process groups {list(latest[0])}: {exc}")

    def _record(self, latest: list[tuple[int, ...]]) -> None:
        """Write the newest groups: those handed over while an earlier try failed supersede it."""
        with self._changed:
            if self._latest is not None:
                latest[0], self._latest = self._latest, None
        self.journal.record_children(self.run_id, latest[0])

    def close(self, timeout: float) -> None:
        """Let the last groups be written, waiting at most `timeout` seconds for it."""
        with self._changed:
            self._closed = True
            self._changed.notify()
        self._thread.join(timeout)
        if self._thread.is_alive():
            self.unrecorded.append(
                f"child process groups: the journal was not writable within {timeout:.0f}s"
            )
