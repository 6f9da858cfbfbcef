"""A `--runs` cap is checked and the run's row written in one transaction: no race passes it.

Four real `python -m adws run` processes start at once against a cap with
room for one run, on a SQLite file and on a real PostgreSQL server.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from adws.journal import Journal
from tests.cli.test_cancel import adws, start
from tests.journal.test_cap_holds import project

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.slow

__all__ = ["project"]  # the fixture, shared


@pytest.mark.parametrize("journal_at", ["sqlite", "postgres"], indirect=True)
def test_runs_starting_together_against_a_runs_cap_with_room_for_one_start_one(
    project: Path, journal_at: str
) -> None:
    code, _, err = adws(project, journal_at, "caps", "set", "one", "--runs", "1", "--per", "day")
    assert code == 0, err
    runs = [start(project, journal_at, "run", "three", "-q") for _ in range(4)]
    ended = [run.communicate(timeout=120) for run in runs]
    codes = sorted(run.returncode for run in runs)
    assert codes == [0, 2, 2, 2], ended
    refusals = [err for run, (_, err) in zip(runs, ended, strict=True) if run.returncode == 2]
    for refusal in refusals:
        assert (
            "not started: cap one: 1 of 1 runs started (1 runs per day (UTC)); it frees at"
            in refusal
        )
    rows = Journal(journal_at).query("SELECT status, pid FROM runs")
    assert [str(status) for status, _ in rows] == ["succeeded"]
