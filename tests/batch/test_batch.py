"""adws batch on the local pool: real worker processes, one journal."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from adws.batch import BatchInputError, read_lines
from adws.batch.report import Progress
from adws.cli import main
from tests.conftest import dead_pid, start_adws, wait_for

FLOWS = """
import os
import signal
import time
from pathlib import Path

from returns.io import IOFailure, IOSuccess

from adws import ErrorType, PipelineError, Step, Workflow, shell_step


def log(line):
    with open("calls.log", "a") as handle:
        handle.write(line + "\\n")


def first(ctx):
    log(f"first {ctx.inputs['n']}")
    return IOSuccess(ctx.merge_outputs({"one": ctx.inputs["n"]}))


def second(ctx):
    n = ctx.inputs["n"]
    log(f"second {n}")
    if n == "bad" and not Path("fixed").exists():
        return IOFailure(PipelineError("", ErrorType.SHELL_FAILED, "bad input"))
    if n == "stuck":
        return IOFailure(PipelineError("", ErrorType.BLOCKED, "needs a human"))
    if n == "die" and not Path("died").exists():
        Path("died").touch()
        os.kill(os.getpid(), signal.SIGKILL)
    if n == "slow":
        Path("slow.pid").write_text(str(os.getpid()))
        while not Path("go").exists():
            time.sleep(0.05)
    time.sleep(float(os.environ.get("ADWS_TEST_SLEEP", "0")))
    return IOSuccess(ctx.merge_outputs({"two": n + "!"}))


def cleanup(ctx):
    Path(f"cleaned-{ctx.inputs['n']}").write_text(str(ctx.failure))
    return IOSuccess(ctx)


def slow_cleanup(ctx):
    Path(f"cleaning-{ctx.inputs['n']}").touch()
    time.sleep(5)
    return IOSuccess(ctx)


slow = Workflow(
    "slow",
    (
        shell_step("wait", "echo $$ > wait-{n}.pid; exec sleep 60"),
        Step("slow_cleanup", slow_cleanup, always_run=True),
    ),
    inputs=("n",),
)
pair = Workflow("pair", (Step("first", first), Step("second", second)), inputs=("n",))
waits = Workflow(
    "waits",
    (
        shell_step("wait", "echo $$ > wait-{n}.pid; [ -e release ] || exec sleep 60"),
        Step("cleanup", cleanup, always_run=True),
    ),
    inputs=("n",),
)
"""


@pytest.fixture
def project(in_tmp: Path) -> Path:
    (in_tmp / "workflows").mkdir()
    (in_tmp / "workflows" / "flows.py").write_text(FLOWS, encoding="utf-8")
    return in_tmp


def lines(project: Path, *values: str) -> Path:
    path = project / "inputs.jsonl"
    path.write_text("".join(json.dumps({"n": value}) + "\n" for value in values))
    return path


def batch_json(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> tuple[int, dict[str, object]]:
    code = main(["batch", *argv, "--json", "-q"])
    return code, json.loads(capsys.readouterr().out)


def runs_of(report: dict[str, object]) -> list[dict[str, Any]]:
    """Return the `runs` records of a batch's `--json` report."""
    runs = report["runs"]
    assert isinstance(runs, list)
    return runs


def calls(project: Path) -> list[str]:
    return sorted((project / "calls.log").read_text().splitlines())


@pytest.mark.slow
def test_every_line_is_a_run_and_the_journal_has_them_all_in_line_order(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines(project, "a", "b", "c")
    code, report = batch_json(["pair", "inputs.jsonl", "--concurrency", "2"], capsys)
    assert code == 0
    assert (report["status"], report["counts"]) == ("succeeded", {"succeeded": 3})
    runs = report["runs"]
    assert isinstance(runs, list)
    assert [(run["line"], run["status"], run["error"]) for run in runs] == [
        (1, "succeeded", None),
        (2, "succeeded", None),
        (3, "succeeded", None),
    ]
    assert calls(project) == ["first a", "first b", "first c", "second a", "second b", "second c"]
    assert main(["runs", "--batch", str(report["batch_id"])[:6], "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [run["run_id"] for run in listed] == [run["run_id"] for run in runs]


@pytest.mark.slow
def test_a_half_failed_batch_exits_1_and_resume_reruns_only_what_did_not_succeed(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines(project, "a", "bad", "c")
    code, report = batch_json(["pair", "inputs.jsonl", "--concurrency", "2"], capsys)
    assert (code, report["counts"]) == (1, {"succeeded": 2, "failed": 1})
    runs = report["runs"]
    assert isinstance(runs, list)
    assert runs[1]["error"]["message"] == "bad input"
    (project / "calls.log").unlink()
    (project / "fixed").touch()
    code, resumed = batch_json(["--resume", str(report["batch_id"])], capsys)
    assert (code, resumed["counts"]) == (0, {"succeeded": 3})
    assert calls(project) == ["second bad"]


@pytest.mark.slow
def test_a_blocked_run_and_no_failure_exits_3_and_the_summary_says_how_to_resume(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines(project, "a", "stuck")
    assert main(["batch", "pair", "inputs.jsonl", "-q"]) == 3
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith(" · pair · blocked")
    assert out[1:3] == ["  blocked      1", "  succeeded    1"]
    assert out[4].startswith("  line 2  run ")
    assert out[4].endswith("  blocked: second: Blocked: needs a human")
    assert out[5].startswith("resume them with: adws batch --resume b")


@pytest.mark.slow
def test_a_killed_worker_costs_only_the_step_in_flight(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines(project, "die", "calm")
    code, report = batch_json(["pair", "inputs.jsonl", "--concurrency", "1"], capsys)
    assert (code, report["counts"]) == (0, {"succeeded": 2})
    assert calls(project) == ["first calm", "first die", "second calm", "second die", "second die"]


@pytest.mark.slow
def test_progress_is_streamed_to_the_journal_while_the_batch_runs(project: Path) -> None:
    """A second process sees each run's first step finish before the batch ends."""
    lines(project, "a", "b")
    batch = start_adws(
        project, "batch", "pair", "inputs.jsonl", "--concurrency", "2", env={"ADWS_TEST_SLEEP": "3"}
    )

    def first_steps_recorded() -> bool:
        try:
            db = sqlite3.connect(project / "runs.db")
            rows = db.execute("SELECT COUNT(*) FROM attempts WHERE step = 'first'").fetchone()
            db.close()
        except sqlite3.Error:
            return False
        return bool(rows[0] == 2)

    wait_for(first_steps_recorded, 30)
    assert batch.poll() is None  # still running: the rows came as the steps ended
    listing = start_adws(project, "runs", "--json")
    out, _ = listing.communicate(timeout=60)
    assert sorted(run["status"] for run in json.loads(out)) == ["running", "running"]
    _, err = batch.communicate(timeout=60)
    assert batch.returncode == 0, err


@pytest.mark.slow
def test_ctrl_c_stops_every_run_after_its_cleanup_and_leaves_no_process(project: Path) -> None:
    lines(project, "a", "b", "c")
    batch = start_adws(
        project, "batch", "waits", "inputs.jsonl", "--concurrency", "2", "--json", "-q"
    )
    wait_for(lambda: len(list(project.glob("wait-*.pid"))) == 2)
    time.sleep(0.3)
    pids = [int(path.read_text()) for path in project.glob("wait-*.pid")]
    batch.send_signal(signal.SIGINT)
    out, err = batch.communicate(timeout=60)
    assert batch.returncode == 130, err
    report = json.loads(out)
    assert report["counts"] == {"interrupted": 2, "queued": 1}
    cleaned = sorted(path.name for path in project.glob("cleaned-*"))
    assert len(cleaned) == 2
    assert all(
        (project / name).read_text() == "wait: Interrupted: interrupted by Ctrl-C"
        for name in cleaned
    )
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in pids)
    (project / "release").touch()
    resumed = start_adws(project, "batch", "--resume", report["batch_id"], "--json", "-q")
    out, err = resumed.communicate(timeout=60)
    assert resumed.returncode == 0, err
    assert json.loads(out)["counts"] == {"succeeded": 3}


def test_a_second_ctrl_c_during_cleanup_kills_the_workers_at_once(project: Path) -> None:
    lines(project, "a", "b")
    batch = start_adws(
        project, "batch", "slow", "inputs.jsonl", "--concurrency", "2", "--json", "-q"
    )
    wait_for(lambda: len(list(project.glob("wait-*.pid"))) == 2)
    time.sleep(0.3)
    pids = [int(path.read_text()) for path in project.glob("wait-*.pid")]
    batch.send_signal(signal.SIGINT)
    wait_for(lambda: len(list(project.glob("cleaning-*"))) == 2)
    started = time.monotonic()
    batch.send_signal(signal.SIGINT)
    out, err = batch.communicate(timeout=60)
    assert batch.returncode == 130, err
    assert time.monotonic() - started < 4  # the cleanups (5 s each) were not waited for
    assert json.loads(out)["counts"] == {"interrupted": 2}
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in pids)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    return "State:\tZ" not in status


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "holds no runs: write one JSON object of inputs per line"),
        ('{"n": "a"}\n\n[1]\n', ", line 3: expected a JSON object of inputs, got list"),
        (
            '{"n": "a"}\n{nope\n',
            (
                ", line 2: not JSON (Expecting property name enclosed in double quotes: "
                "line 1 column 2 (char 1))"
            ),
        ),
        ('{"Bad": 1}\n', ", line 1: key 'Bad' is not an input name (use lower_snake_case)"),
        ('{"m": 1}\n', ", line 1: workflow 'pair' needs input n"),
    ],
)
def test_a_bad_inputs_file_is_exit_2_naming_the_line_before_anything_runs(
    project: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    (project / "inputs.jsonl").write_text(content)
    assert main(["batch", "pair", "inputs.jsonl"]) == 2
    assert (
        capsys.readouterr().err
        == f"adws: error: inputs.jsonl{' ' if not content else ''}{message}\n"
    )
    assert not (project / "calls.log").exists()
    assert not (project / ".adws").exists()


def test_an_inputs_file_that_cannot_be_read_is_named(tmp_path: Path) -> None:
    with pytest.raises(BatchInputError, match=r"^cannot read .*missing.jsonl: "):
        read_lines(tmp_path / "missing.jsonl")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["batch", "nope", "inputs.jsonl"], "adws: error: unknown workflow 'nope'"),
        (
            ["batch", "pair"],
            "adws: error: batch needs WORKFLOW and INPUTS.jsonl (or --resume BATCH)",
        ),
        (["batch", "pair", "missing.jsonl"], "adws: error: cannot read missing.jsonl"),
        (["batch", "--resume", "bzz"], "adws: error: no batch 'bzz' in"),
        (["runs", "--batch", "bzz"], "adws: error: no batch 'bzz' in"),
    ],
)
def test_usage_mistakes_are_exit_2(
    project: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    lines(project, "a")
    if argv[1] == "--resume" or argv[0] == "runs":
        main(["batch", "pair", "inputs.jsonl", "-q"])
        capsys.readouterr()
    assert main(argv) == 2
    assert capsys.readouterr().err.startswith(message)


def test_the_progress_line_counts_and_estimates() -> None:
    assert Progress(10, 0, 0, 0, 0, 2, 0.0).line("b1") == (
        "batch b1: 0/10 done, 0 failed, 0 blocked, 2 running · 0 runs/min · ETA ?"
    )


def test_a_workflow_that_does_not_load_in_a_worker_fails_its_runs(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "workflows" / "fickle.py").write_text(
        "import multiprocessing\n"
        "from returns.io import IOSuccess\n"
        "from adws import Step, Workflow\n"
        "if multiprocessing.parent_process() is not None:\n"
        "    raise RuntimeError('loads only in the coordinator')\n"
        "fickle = Workflow('fickle', (Step('s', IOSuccess),), inputs=('n',))\n",
        encoding="utf-8",
    )
    lines(project, "a")
    code, report = batch_json(["fickle", "inputs.jsonl"], capsys)
    assert (code, report["counts"]) == (1, {"failed": 1})


def test_a_batch_id_prefix_must_be_unique(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines(project, "a")
    for _ in range(2):
        assert main(["batch", "pair", "inputs.jsonl", "-q"]) == 0
    capsys.readouterr()
    assert main(["batch", "--resume", "b"]) == 2
    assert capsys.readouterr().err.startswith("adws: error: an ambiguous batch id 'b' in ")


def test_resuming_a_run_whose_end_was_not_recorded_just_marks_it(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines(project, "a")
    _, report = batch_json(["pair", "inputs.jsonl"], capsys)
    db = sqlite3.connect(project / ".adws" / "runs.db")
    db.execute("UPDATE runs SET status = 'running', pid = ?", (dead_pid(),))
    db.commit()
    db.close()
    (project / "calls.log").unlink()
    code, resumed = batch_json(["--resume", str(report["batch_id"])], capsys)
    assert (code, resumed["counts"]) == (0, {"succeeded": 1})
    assert not (project / "calls.log").exists()


def test_a_batch_report_with_a_run_left_queued_is_not_a_success() -> None:
    from adws.batch import BatchReport, RunResult  # noqa: PLC0415 - a report built by hand

    report = BatchReport("b1", "w", (RunResult(1, "r1", "queued", None),))
    assert (report.status, report.counts()) == ("failed", {"queued": 1})


@pytest.mark.slow
def test_an_idle_worker_that_dies_is_replaced(project: Path) -> None:
    lines(project, "slow", "quick", "later")
    batch = start_adws(
        project, "batch", "pair", "inputs.jsonl", "--concurrency", "2", "--json", "-q"
    )
    wait_for(lambda: (project / "slow.pid").exists() and "second quick" in calls_text(project))
    busy = int((project / "slow.pid").read_text())
    workers = workers_of(batch.pid)
    assert busy in workers
    wait_for(lambda: "second later" in calls_text(project))
    idle = [pid for pid in workers if pid != busy]
    assert len(idle) == 1
    for pid in idle:
        os.kill(pid, signal.SIGKILL)
    (project / "go").touch()
    out, err = batch.communicate(timeout=60)
    assert batch.returncode == 0, err
    assert json.loads(out)["counts"] == {"succeeded": 3}


def workers_of(coordinator: int) -> list[int]:
    """The coordinator's workers: the children of the forkserver it started."""

    def children(pid: int) -> list[int]:
        return [
            int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        ]

    return [worker for child in children(coordinator) for worker in children(child)]


def calls_text(project: Path) -> str:
    path = project / "calls.log"
    return path.read_text() if path.exists() else ""
