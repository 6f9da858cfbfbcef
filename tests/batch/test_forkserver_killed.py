"""A batch whose forkserver is killed as it starts its workers: a summary, and runs to resume.

As the fault-injection pass did it: a real `adws batch` process, its
forkserver (the child that forks the workers) found in `/proc` and killed
with SIGKILL as soon as it appears, while it still imports adws and the
coordinator waits for its first worker. Then `adws batch --resume` runs
every run, once.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from adws.journal import Journal
from tests.conftest import REPO

pytestmark = pytest.mark.slow

FLOWS = """
from returns.io import IOSuccess

from adws import Step, Workflow


def note(ctx):
    with open("ran.log", "a") as log:
        log.write(str(ctx.inputs["n"]) + "\\n")
    return IOSuccess(ctx)


noted = Workflow("noted", (Step("note", note, reads=("n",), writes=()),), inputs=("n",))
"""


def _forkserver_of(parent: int) -> int | None:
    """Find the forkserver `parent` started, by its command line (None: not started yet)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes()
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if ppid == parent and b"forkserver" in command:
            return int(entry.name)
    return None


def _adws(project: Path, journal: str, *argv: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "adws", *argv],
        cwd=project,
        env={**os.environ, "PYTHONPATH": str(REPO), "ADWS_JOURNAL": journal},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_a_forkserver_killed_during_start_is_a_summary_and_resumable_runs(
    tmp_path: Path, journal_at: str
) -> None:
    (tmp_path / "workflows").mkdir()
    (tmp_path / "workflows" / "flows.py").write_text(FLOWS)
    (tmp_path / "inputs.jsonl").write_text("".join(f'{{"n": {n}}}\n' for n in range(1, 7)))
    batch = _adws(tmp_path, journal_at, "batch", "noted", "inputs.jsonl", "--concurrency", "4")
    deadline = time.monotonic() + 60
    server = None
    while server is None and time.monotonic() < deadline and batch.poll() is None:
        server = _forkserver_of(batch.pid)
    assert server is not None
    os.kill(server, signal.SIGKILL)
    out, err = batch.communicate(timeout=120)
    [(batch_id,)] = Journal(journal_at).query("SELECT DISTINCT batch_id FROM runs")
    statuses = [run.status for run in Journal(journal_at).runs(batch=batch_id)]
    assert batch.returncode == 1, err
    assert "Traceback" not in err
    assert out.startswith(f"batch {batch_id} · noted · failed\n  queued       6\n")
    assert out.endswith(f"resume them with: adws batch --resume {batch_id}\n")
    said = err.splitlines()[-1]
    # What the start read from the dead server: its end of file, as a rule.
    assert said.startswith("adws: 6 run(s) not started: a worker process could not be started (")
    assert said.endswith(f"); adws batch --resume {batch_id} runs them")
    assert statuses == ["queued"] * 6
    resumed = _adws(tmp_path, journal_at, "batch", "--resume", batch_id)
    out, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err
    assert sorted((tmp_path / "ran.log").read_text().split()) == ["1", "2", "3", "4", "5", "6"]
