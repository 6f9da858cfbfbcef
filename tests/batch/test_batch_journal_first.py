"""A batch's runs and the journal first: a full disk stops them at a step boundary, resumed once.

The coordinator writes the journal for its workers. A worker starts a step
only once the coordinator says its start is recorded; a write that fails
for `--journal-wait` halts the batch, and the run waiting at the boundary
stops there `interrupted` (its cleanup runs), so `adws batch --resume`
runs every side effect exactly once. Real `adws batch` processes, a real
SQLite journal on a small tmpfs filled up (root only).
"""

from __future__ import annotations

import json
import os
import time
from typing import TYPE_CHECKING

import pytest

from adws.journal import Journal
from tests.conftest import wait_for
from tests.journal.test_journal_faults import STARTED, adws, fill, project_at, side, small_disk

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = pytest.mark.slow


def batch_of_one(project: Path) -> Path:
    inputs = project / "inputs.jsonl"
    inputs.write_text(json.dumps({}) + "\n", encoding="utf-8")
    return inputs


@pytest.mark.parametrize("wait", ["60", "1"])
def test_a_full_disk_before_a_batch_runs_step_stops_it_there_and_resume_runs_each_once(
    tmp_path: Path, wait: str
) -> None:
    if os.geteuid() != 0:
        pytest.skip("only root mounts a small file system")
    project = project_at(tmp_path / "p")
    inputs = batch_of_one(project)
    with small_disk(tmp_path / "disk") as disk:
        journal = str(disk / "runs.db")
        batch = adws(
            project, journal, "batch", "effects", str(inputs), "-q", "--journal-wait", wait
        )
        wait_for((project / "boundary").exists, 60)
        filler = fill(disk)
        (project / "go").touch()
        if wait == "60":
            time.sleep(2.0)  # the worker waits at the boundary while the coordinator tries again
            assert side(project) == ["one"]
            filler.unlink()
            _, err = batch.communicate(timeout=120)
            assert batch.returncode == 0, err
            assert side(project) == ["one", "two", "three", "cleanup"]
        else:
            _, err = batch.communicate(timeout=120)
            assert batch.returncode == 1, err  # not recorded: exit 1, as `adws batch --help` says
            assert "did not record this batch completely (the start of a step of run" in err
            assert side(project) == ["one", "cleanup"]  # step two never started unrecorded
            filler.unlink()
            (batch_id,) = (row[0] for row in Journal(journal).query("SELECT batch_id FROM batches"))
            resumed = adws(project, journal, "batch", "--resume", str(batch_id), "-q", seed=2)
            _, err = resumed.communicate(timeout=120)
            assert resumed.returncode == 0, err
            assert side(project) == ["one", "cleanup", "two", "three", "cleanup"]
        (status,) = (row[0] for row in Journal(journal).query("SELECT status FROM runs"))
        assert status == "succeeded"


@pytest.fixture(autouse=True)
def _nothing_left_running() -> Iterator[None]:
    """Kill, by its pid, every `adws` a failed test left waiting (for `go`, say)."""
    yield
    while STARTED:
        process = STARTED.pop()
        if process.poll() is None:
            process.kill()
            process.communicate()
