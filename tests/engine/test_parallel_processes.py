"""parallel and fan_out against real `adws` processes: Ctrl-C, and a resume per branch."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest

from adws import io_ops
from tests.conftest import start_adws, wait_for

pytestmark = pytest.mark.slow

FLOWS = """
import sys
from pathlib import Path

from returns.io import IOSuccess

from adws import RetryPolicy, Step, Workflow, fan_out, parallel, shell_step


def cleanup(ctx):
    Path("cleaned").write_text(str(ctx.failure))
    return IOSuccess(ctx)


SLEEPER = "echo $$ > {name}.pid; exec sleep 60"

waiting = Workflow(
    "waiting",
    (
        parallel("both", [shell_step(n, SLEEPER.format(name=n)) for n in ("a", "b")]),
        Step("cleanup", cleanup, always_run=True),
    ),
)

patient = Workflow(
    "patient",
    (
        fan_out(
            "waits",
            shell_step("wait", "echo $$ > {item}.pid; exec sleep 60", retry=RetryPolicy(3)),
            over="items",
        ),
    ),
    inputs=("items",),
)

one_at_a_time = Workflow(
    "one_at_a_time",
    (parallel("both", [shell_step(n, SLEEPER.format(name=n)) for n in ("a", "b")], max_concurrency=1),),
)

CHECK = (
    'echo "{item}" >> calls.log; '
    'if [ "{item}" = flaky ] && [ ! -e fixed ]; then exit 1; fi; echo "checked {item}"'
)

checking = Workflow(
    "checking",
    (fan_out("check_all", shell_step("check", CHECK), over="items", max_concurrency=1),),
    inputs=("items",),
)
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "workflows").mkdir()
    (tmp_path / "workflows" / "flows.py").write_text(FLOWS, encoding="utf-8")
    return tmp_path


def pid_of(project: Path, name: str) -> int:
    path = project / f"{name}.pid"
    wait_for(lambda: path.exists() and path.read_text().strip())
    return int(path.read_text())


def gone(pid: int) -> bool:
    if not io_ops.process_alive(pid):
        return True
    return "State:\tZ" in Path(f"/proc/{pid}/status").read_text(encoding="utf-8")


def test_ctrl_c_stops_every_branch_runs_cleanup_and_leaves_no_process(project: Path) -> None:
    process = start_adws(project, "run", "waiting", "--json", "-q")
    pids = [pid_of(project, "a"), pid_of(project, "b")]
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert (project / "cleaned").read_text() == "both: Interrupted: interrupted by Ctrl-C"
    deadline = time.monotonic() + 10
    while not all(gone(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(gone(pid) for pid in pids)
    summary = json.loads(out)
    assert summary["steps"][0]["branches"] == {"both[a]": "cancelled", "both[b]": "cancelled"}


def test_ctrl_c_reports_branches_cancelled_and_retries_nothing(project: Path) -> None:
    (project / "items.json").write_text(json.dumps({"items": ["x", "y", "z"]}))
    process = start_adws(project, "run", "patient", "--inputs", "items.json")
    pids = [pid_of(project, name) for name in ("x", "y", "z")]
    process.send_signal(signal.SIGINT)
    try:
        _, err = process.communicate(timeout=60)
    finally:  # a run that hangs fails this test alone, not the next one's warnings
        process.kill()
        process.wait()
    assert process.returncode == 130, err
    assert "retrying" not in err
    assert "attempt" not in err  # no branch failed: each was stopped
    for index in range(3):
        assert f"[1/1] waits[{index}] … cancelled · 0/3 done, 0 failed\n" in err
    wait_for(lambda: all(gone(pid) for pid in pids), 10)


def test_ctrl_c_cancels_a_branch_still_waiting_for_its_turn(project: Path) -> None:
    process = start_adws(project, "run", "one_at_a_time", "--json", "-q")
    pid = pid_of(project, "a")
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert not (project / "b.pid").exists()
    wait_for(lambda: gone(pid), 10)
    assert json.loads(out)["steps"][0]["branches"] == {
        "both[a]": "cancelled",
        "both[b]": "cancelled",
    }


def test_a_resume_re_runs_only_the_branches_that_did_not_succeed(project: Path) -> None:
    """One branch at a time: steady succeeds, flaky fails, calm is cancelled before it starts."""
    (project / "items.json").write_text(json.dumps({"items": ["steady", "flaky", "calm"]}))
    first = start_adws(project, "run", "checking", "--inputs", "items.json", "--json", "-q")
    out, _ = first.communicate(timeout=60)
    assert first.returncode == 1
    run_id = json.loads(out)["run_id"]
    assert (project / "calls.log").read_text().split() == ["steady", "flaky"]
    (project / "calls.log").unlink()
    (project / "fixed").touch()
    resumed = start_adws(project, "resume", run_id, "--json", "-q")
    out, err = resumed.communicate(timeout=60)
    assert resumed.returncode == 0, err
    assert (project / "calls.log").read_text().split() == ["flaky", "calm"]
    summary = json.loads(out)
    assert [branch["check_stdout"] for branch in summary["inputs"]["check_all"]] == [
        "checked steady\n",
        "checked flaky\n",
        "checked calm\n",
    ]
    assert summary["steps"][0]["branches"] == {
        "check_all[0]": "reused",
        "check_all[1]": "succeeded",
        "check_all[2]": "succeeded",
    }
