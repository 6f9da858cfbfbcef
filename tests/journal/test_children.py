"""Child process groups are journaled off the step's thread, and what was not is reported."""

from __future__ import annotations

import sqlite3
import threading

from adws.journal import Journal
from adws.journal.store.children import ChildrenRecorder


class StuckJournal:
    """A journal whose writes wait until released, as one another process holds locked."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.written: list[tuple[int, ...]] = []

    def record_children(self, _run_id: str, groups: tuple[int, ...]) -> None:
        self.release.wait(10)
        self.written.append(groups)


def test_reporting_groups_never_waits_for_a_stuck_journal() -> None:
    journal, unrecorded = StuckJournal(), list[str]()
    recorder = ChildrenRecorder(journal, "r", unrecorded)  # type: ignore[arg-type] # a fake journal
    for groups in [(1,), (1, 2), ()]:
        recorder(groups)  # returns at once, though the journal is stuck
    recorder.close(0.1)
    assert unrecorded == ["child process groups: the journal was not writable within 0s"]
    journal.release.set()


def test_the_latest_groups_are_written_and_a_failed_write_is_reported(journal_at: str) -> None:
    journal = Journal(journal_at)
    unrecorded: list[str] = []
    recorder = ChildrenRecorder(journal, "missing-run", unrecorded, wait=0)
    journal.write("DROP TABLE runs", ())
    recorder((7,))
    recorder.close(5.0)
    assert len(unrecorded) == 1
    assert unrecorded[0].startswith("child process groups [7]: ")


class FailingJournal:
    """A journal whose first writes fail, as a server restarting does; it keeps what it took."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.tried: list[tuple[int, ...]] = []
        self.written: list[tuple[int, ...]] = []
        self.failed = threading.Event()
        self.handed = threading.Event()

    def record_children(self, _run_id: str, groups: tuple[int, ...]) -> None:
        self.tried.append(groups)
        if len(self.tried) <= self.failures:
            self.failed.set()
            self.handed.wait(10)  # the step hands newer groups over while this try fails
            msg = "the server is restarting"
            raise sqlite3.OperationalError(msg)
        self.written.append(groups)

    def reopen(self) -> None:
        """Open a new connection (nothing to do here)."""


def test_a_failed_write_is_tried_again_with_the_groups_handed_over_meanwhile() -> None:
    journal, unrecorded = FailingJournal(failures=1), list[str]()
    recorder = ChildrenRecorder(journal, "r", unrecorded, wait=30)  # type: ignore[arg-type] # a fake journal
    recorder((7,))
    assert journal.failed.wait(10)
    recorder((7, 8))
    journal.handed.set()
    recorder.close(10.0)
    assert (journal.tried, journal.written, unrecorded) == ([(7,), (7, 8)], [(7, 8)], [])
