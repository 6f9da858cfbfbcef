"""Real `adws` processes: SIGKILL then resume, Ctrl-C, and concurrent journal writers."""

from __future__ import annotations

import json
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from tests.conftest import start_adws, wait_for
from tests.test_cli_runs import RESUMABLE

pytestmark = pytest.mark.slow

MANY = """
from returns.io import IOSuccess
from adws import Step, Workflow

def make(i):
    def run(ctx):
        return IOSuccess(ctx.merge_outputs({f"k{i}": i}))
    return run

many = Workflow("many", tuple(Step(f"s{i}", make(i)) for i in range(40)))
"""


adws = start_adws


def succeeded_steps(project: Path) -> list[str]:
    if not (project / "runs.db").exists():
        return []
    db = sqlite3.connect(project / "runs.db")
    try:
        return [
            row[0] for row in db.execute("SELECT step FROM attempts WHERE status = 'succeeded'")
        ]
    except sqlite3.OperationalError:
        return []
    finally:
        db.close()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "workflows").mkdir()
    (tmp_path / "workflows" / "resumable.py").write_text(RESUMABLE)
    (tmp_path / "workflows" / "many.py").write_text(MANY)
    (tmp_path / "fixed").touch()
    return tmp_path


def test_a_run_killed_mid_step_is_stale_and_resume_completes_it(project: Path) -> None:
    process = adws(project, "run", "slow", "-i", "seed=s", env={"ADWS_TEST_SLEEP": "60"})
    wait_for(lambda: (project / "build.started").exists() and "fetch" in succeeded_steps(project))
    process.kill()
    process.communicate(timeout=30)

    listed = adws(project, "runs", "--json")
    out, _ = listed.communicate(timeout=30)
    [run] = json.loads(out)
    assert (run["status"], run["stale"]) == ("running", True)
    table = adws(project, "runs").communicate(timeout=30)[0]
    assert "running (stale)" in table

    resumed = adws(project, "resume", run["run_id"], "--json", env={"ADWS_TEST_SLEEP": "0"})
    out, err = resumed.communicate(timeout=60)
    assert resumed.returncode == 0, err
    summary = json.loads(out)
    assert summary["inputs"]["shipped"] == "s-fetched-built-shipped"
    assert (project / "calls.log").read_text().split() == [
        "fetch",
        "build",
        "build",
        "ship",
        "cleanup",
    ]


def test_ctrl_c_runs_the_always_run_step_records_interrupted_and_exits_130(project: Path) -> None:
    process = adws(project, "run", "slow", "-i", "seed=s", env={"ADWS_TEST_SLEEP": "60"})
    wait_for((project / "build.started").exists)
    time.sleep(0.2)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 130, err
    assert (project / "cleaned").read_text() == "build: Interrupted: interrupted by Ctrl-C"
    assert "slow interrupted in" in err
    out = adws(project, "runs", "--json").communicate(timeout=30)[0]
    assert json.loads(out)[0]["status"] == "interrupted"


def test_two_processes_writing_one_journal_lose_no_events(project: Path) -> None:
    first = adws(project, "run", "many", "-q")
    second = adws(project, "run", "many", "-q")
    first.communicate(timeout=120)
    second.communicate(timeout=120)
    assert (first.returncode, second.returncode) == (0, 0)
    db = sqlite3.connect(project / "runs.db")
    runs = db.execute("SELECT status FROM runs").fetchall()
    per_run = db.execute("SELECT run_id, COUNT(*) FROM attempts GROUP BY run_id").fetchall()
    db.close()
    assert runs == [("succeeded",), ("succeeded",)]
    assert sorted(count for _, count in per_run) == [40, 40]
