"""A run the server queued is claimed compare-and-set: a worker that took it first runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from adws.mcp_server import Held
from adws.runs import Refused
from tests.conftest import REPO, queued_echo


def test_a_run_a_worker_took_first_is_left_to_it_and_nothing_is_started(tmp_path: Path) -> None:
    runs, run_id = queued_echo(tmp_path)
    # An adws worker sharing the journal, alive in a process of its own, takes it first.
    taking = (
        "import sys, time\nfrom pathlib import Path\nfrom adws.runs import Runs\n"
        "runs = Runs(where=Path(sys.argv[1]))\nruns.journal()\n"
        "print(runs.take_queued(), flush=True)\ntime.sleep(60)\n"
    )
    worker = subprocess.Popen(
        [sys.executable, "-c", taking, str(tmp_path / "runs.db")],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        assert worker.stdout is not None
        assert worker.stdout.readline() == f"{run_id}\n"
        held = Held(runs, str(tmp_path / "workflows"))
        assert held.start(run_id) is False
        assert held.children == {}
        state = runs.status(run_id)
        assert not isinstance(state, Refused)
        assert (state.record.status, state.record.pid) == ("running", worker.pid)
    finally:
        worker.kill()
        worker.communicate()
