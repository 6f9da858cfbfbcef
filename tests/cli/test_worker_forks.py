"""`adws worker` forks each run from its forkserver: each run is still a process of its own.

Real `python -m adws worker` processes on a real journal: a run's process
is a fresh fork (nothing a run before it set is seen), in a process group
of its own, with its run's id, subreaper and environment; a forkserver
killed is started again; Ctrl-C stops the runs it holds, resumable.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from adws.journal import Journal
from tests.cli.test_worker import FLOWS, adws, command, environment, lines, submit
from tests.conftest import wait_for

pytestmark = pytest.mark.slow

LEAKY = """

import ctypes
import json

import adws


def observe(ctx):
    subreaper = ctypes.c_int(0)
    ctypes.CDLL(None, use_errno=True).prctl(37, ctypes.byref(subreaper))  # PR_GET_CHILD_SUBREAPER
    opened = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            opened.append(os.readlink(f"/proc/self/fd/{fd}"))
        except FileNotFoundError:  # listdir's own descriptor, closed since
            pass
    seen = {
        "n": ctx.inputs["n"],
        "pid": os.getpid(),
        "pgid": os.getpgrp(),
        "sid": os.getsid(0),
        "cwd": os.getcwd(),
        "run_mark": os.environ.get("ADWS_RUN_ID"),
        "leaked_env": os.environ.get("LEAKED"),
        "journal_env": os.environ.get("ADWS_JOURNAL"),
        "leaked_global": getattr(adws, "LEAKED", None),
        "leaked_file": [path for path in opened if path.endswith("leaked.txt")],
        "subreaper": subreaper.value,
    }
    with open(os.path.join(os.environ["SEEN_DIR"], "seen.jsonl"), "a") as log:
        log.write(json.dumps(seen) + "\\n")
    os.environ["LEAKED"] = "yes"
    adws.LEAKED = "yes"
    globals()["KEPT"] = open("leaked.txt", "w")
    os.makedirs("elsewhere", exist_ok=True)
    os.chdir("elsewhere")
    return IOSuccess(ctx)


observed = Workflow("observed", (Step("observe", observe, reads=("n",), writes=()),), inputs=("n",))
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "workflows").mkdir()
    (tmp_path / "workflows" / "flows.py").write_text(FLOWS + LEAKY)
    return tmp_path


def _journal(project: Path) -> str:
    return str(project / "j" / "runs.db")


def _worker(project: Path, journal: str, *argv: str) -> subprocess.Popen[str]:
    """Start `adws worker` in a session of its own, as a terminal's job (its group: its pid)."""
    return subprocess.Popen(
        command(("worker", "--poll", "0.2", *argv), None),
        cwd=project,
        env={**environment(journal), "SEEN_DIR": str(project)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _children(pid: int) -> list[int]:
    """The processes `pid` started that still run (Linux lists them per thread)."""
    listed = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(child) for child in listed.split()]


def _forkserver(worker: int) -> int:
    """The pid of the forkserver `worker` started (it is started at the first run)."""
    found = [
        pid
        for pid in _children(worker)
        if b"forkserver" in Path(f"/proc/{pid}/cmdline").read_bytes()
    ]
    assert len(found) == 1, found
    return found[0]


def test_each_run_is_a_fresh_fork_in_its_own_group_and_sees_nothing_a_run_before_it_set(
    project: Path,
) -> None:
    journal = _journal(project)
    first = submit(project, journal, "observed", "1")
    second = submit(project, journal, "observed", "2")
    worker = _worker(project, journal, "--once")
    out, err = worker.communicate(timeout=120)
    assert (worker.returncode, out) == (
        0,
        f"{first} observed: succeeded (exit 0)\n{second} observed: succeeded (exit 0)\n",
    ), err
    seen = [json.loads(line) for line in lines(project / "seen.jsonl")]
    for run_id, one in zip((first, second), seen, strict=True):
        assert one["pgid"] == one["sid"] == one["pid"]  # a session and group of its own
        assert one["pgid"] != worker.pid
        assert {key: one[key] for key in one if key not in {"n", "pid", "pgid", "sid"}} == {
            "cwd": str(project),
            "run_mark": run_id,
            "leaked_env": None,
            "journal_env": None,
            "leaked_global": None,
            "leaked_file": [],
            "subreaper": 1,
        }
    assert seen[0]["pid"] != seen[1]["pid"]
    assert (project / "elsewhere").is_dir()  # the first run did chdir; the second began at home


def test_a_sigkilled_forkserver_is_started_again_and_its_run_in_flight_is_followed_to_its_end(
    project: Path,
) -> None:
    journal = _journal(project)
    (project / "hold").touch()
    held = submit(project, journal, "held", "1")
    worker = _worker(project, journal)
    try:
        wait_for(lambda: lines(project / "started.log") == ["1"])
        server = _forkserver(worker.pid)
        os.kill(server, signal.SIGKILL)
        assert worker.stdout is not None
        (project / "hold").unlink()
        # Its status went with the server: the run's own process is followed by its pid.
        assert worker.stdout.readline() == f"{held} held: succeeded (exit 255)\n"
        noted = submit(project, journal, "noted", "2")
        assert worker.stdout.readline() == f"{noted} noted: succeeded (exit 0)\n"
        again = _forkserver(worker.pid)
    finally:
        worker.send_signal(signal.SIGTERM)
        out, err = worker.communicate(timeout=60)
    assert (worker.returncode, out) == (143, ""), err
    said = [line for line in err.splitlines() if line.startswith("adws: the forkserver")]
    assert said == [
        (
            f"adws: the forkserver (process {server}) that starts runs died; "
            f"process {again} starts them from now on"
        )
    ]
    assert lines(project / "ran.log") == ["1", "2"]
    assert not Path(f"/proc/{again}").exists()  # stopped with its worker


def test_ctrl_c_stops_both_forked_runs_a_worker_holds_interrupted_and_resumable(
    project: Path,
) -> None:
    journal = _journal(project)
    (project / "hold").touch()
    runs = [submit(project, journal, "held", str(n)) for n in (1, 2)]
    worker = _worker(project, journal, "--concurrency", "2")
    wait_for(lambda: sorted(lines(project / "started.log")) == ["1", "2"])
    server = _forkserver(worker.pid)
    os.killpg(worker.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the worker's whole group
    out, err = worker.communicate(timeout=60)
    assert worker.returncode == 130, err
    assert sorted(out.splitlines()) == sorted(
        f"{run_id} held: interrupted: slow: Interrupted: interrupted by Ctrl-C (exit 130)"
        for run_id in runs
    )
    assert "stopped by SIGINT after 2 run(s); 2 run(s) it held stopped" in err.splitlines()[-1]
    assert [Journal(journal).find(run_id).status for run_id in runs] == ["interrupted"] * 2  # type: ignore[union-attr] # found
    assert not Path(f"/proc/{server}").exists()
    (project / "hold").unlink()
    for run_id in runs:
        resumed = adws(project, journal, "resume", run_id)
        assert resumed.returncode == 0, resumed.stderr
    assert sorted(lines(project / "ran.log")) == ["1", "2"]
