"""A run whose process cannot be started is left as one whose child failed: interrupted, resumable."""

from __future__ import annotations

from typing import TYPE_CHECKING

from adws.batch.worker import Worker
from adws.runs import Refused
from tests.conftest import queued_echo

if TYPE_CHECKING:
    from pathlib import Path

    from adws.batch.worker import Child


def test_a_run_whose_process_cannot_start_is_said_and_left_interrupted(tmp_path: Path) -> None:
    runs, run_id = queued_echo(tmp_path)
    said: list[str] = []
    ended: list[tuple[str, int]] = []
    asked: list[tuple[str, str, str]] = []

    def held(run: str, kind: str, journal: str) -> Child:
        asked.append((run, kind, journal))
        raise BlockingIOError(11, "Resource temporarily unavailable")  # fork: EAGAIN

    worker = Worker(
        runs,
        held=held,
        ended=lambda run, code: ended.append((run, code)),
        say=said.append,
        poll=0.01,
        once=True,
    )
    assert worker.run() is None
    # Marked interrupted, it is taken back once (as a run its child could not load), then left.
    where = str(tmp_path / "runs.db")
    assert asked == [(run_id, "queued", where), (run_id, "interrupted", where)]
    cannot = (
        f"adws worker: cannot start the process of run {run_id}: "
        "[Errno 11] Resource temporarily unavailable"
    )
    assert said == [cannot, cannot]
    assert (worker.codes, ended) == ([1, 1], [(run_id, 1), (run_id, 1)])
    state = runs.status(run_id)
    assert not isinstance(state, Refused)
    assert state.record.status == "interrupted"
