"""runs, status and resume through main([...]), and the Ctrl-C handler."""

from __future__ import annotations

import json
import signal
import socket
from pathlib import Path

import pytest

from adws import PipelineError, WorkflowContext
from adws.cli import main
from adws.engine.events import AttemptFailed, StepStarted, StepSucceeded
from adws.journal import Journal
from adws.runs.interrupts import Interrupts

RESUMABLE = """
import os
import time
from pathlib import Path

from returns.io import IOFailure, IOSuccess

from adws import ErrorType, PipelineError, Step, Workflow


def log(name):
    with open("calls.log", "a") as handle:
        handle.write(name + "\\n")


def fetch(ctx):
    log("fetch")
    return IOSuccess(ctx.merge_outputs({"data": ctx.inputs["seed"] + "-fetched"}))


def build(ctx):
    log("build")
    Path("build.started").touch()
    if not Path("fixed").exists():
        return IOFailure(PipelineError("", ErrorType.SHELL_FAILED, "build is broken"))
    time.sleep(float(os.environ.get("ADWS_TEST_SLEEP", "0")))
    return IOSuccess(ctx.merge_outputs({"built": ctx.inputs["data"] + "-built"}))


def ask(ctx):
    log("ask")
    if "answer" not in ctx.inputs:
        return IOFailure(PipelineError("", ErrorType.BLOCKED, "need input 'answer'"))
    return IOSuccess(ctx.merge_outputs({"asked": ctx.inputs["answer"]}))


def ship(ctx):
    log("ship")
    return IOSuccess(ctx.merge_outputs({"shipped": ctx.inputs["built"] + "-shipped"}))


def cleanup(ctx):
    log("cleanup")
    Path("cleaned").write_text(str(ctx.failure))
    return IOSuccess(ctx)


pipeline = Workflow("pipeline", (Step("fetch", fetch), Step("build", build), Step("ship", ship)), inputs=("seed",))
blocker = Workflow("blocker", (Step("fetch", fetch), Step("ask", ask)), inputs=("seed",))
slow = Workflow(
    "slow",
    (Step("fetch", fetch), Step("build", build), Step("ship", ship), Step("cleanup", cleanup, always_run=True)),
    inputs=("seed",),
)
"""


@pytest.fixture
def project(in_tmp: Path) -> Path:
    (in_tmp / "workflows").mkdir()
    (in_tmp / "workflows" / "resumable.py").write_text(RESUMABLE)
    return in_tmp


def run_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, object]]:
    code = main([*argv, "--json", "-q"])
    return code, json.loads(capsys.readouterr().out)


def calls(project: Path) -> list[str]:
    return (project / "calls.log").read_text().split()


def test_a_failed_run_resumes_after_the_fix_without_rerunning_finished_steps(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, first = run_json(["run", "pipeline", "-i", "seed=s"], capsys)
    assert (code, first["status"]) == (1, "failed")
    (project / "fixed").touch()
    code, resumed = run_json(["resume", str(first["run_id"])], capsys)
    assert (code, resumed["status"], resumed["run_id"]) == (0, "succeeded", first["run_id"])
    assert calls(project) == ["fetch", "build", "build", "ship"]
    assert [(s["name"], s["status"]) for s in resumed["steps"]] == [  # type: ignore[attr-defined]
        ("fetch", "carried_over"),
        ("build", "succeeded"),
        ("ship", "succeeded"),
    ]
    code, fresh = run_json(["run", "pipeline", "-i", "seed=s", "--no-journal"], capsys)
    assert (
        fresh["inputs"]
        == resumed["inputs"]
        == {
            "seed": "s",
            "data": "s-fetched",
            "built": "s-fetched-built",
            "shipped": "s-fetched-built-shipped",
        }
    )


def test_editing_the_step_that_failed_resumes_without_a_word(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The normal loop: a step that did not finish may change; so may the steps after it."""
    _, first = run_json(["run", "pipeline", "-i", "seed=s"], capsys)
    module = project / "workflows" / "resumable.py"
    module.write_text(module.read_text().replace('"-shipped"', '"-SHIPPED"'))
    (project / "fixed").touch()
    code, resumed = run_json(["resume", str(first["run_id"])], capsys)
    assert (code, resumed["inputs"]["shipped"]) == (0, "s-fetched-built-SHIPPED")  # type: ignore[index]


def test_a_changed_finished_step_is_refused_then_rerun_or_kept(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, first = run_json(["run", "pipeline", "-i", "seed=s"], capsys)
    run_id = str(first["run_id"])
    module = project / "workflows" / "resumable.py"
    module.write_text(module.read_text().replace('"-fetched"', '"-FETCHED"'))
    (project / "fixed").touch()
    assert main(["resume", run_id]) == 2
    assert capsys.readouterr().err == (
        f"adws: error: step 'fetch' of run {run_id} changed since it finished; pass "
        "--keep-changed to keep the outputs it made (today's definition becomes the recorded "
        "one), or --rerun-changed (adws resume, adws batch --resume) to run again from the "
        f"first of them (see `adws resume {run_id} --plan`)\n"
    )
    assert main(["resume", run_id, "--plan"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"run {run_id} · pipeline · failed"
    assert lines[1].startswith("  1. fetch: changed (recorded ")
    assert lines[2:] == [
        "  2. build: to run",
        "  3. ship: to run",
        (
            "changed finished steps are refused; --rerun-changed runs again from the first, "
            "--keep-changed keeps their outputs"
        ),
        "kept 0 steps, $0.00 not spent again",
        "to finish: no estimate: no history",
        "options: none",
    ]
    code, kept = run_json(["resume", run_id, "--keep-changed"], capsys)
    assert (code, kept["inputs"]["shipped"]) == (0, "s-fetched-built-shipped")  # type: ignore[index]
    (project / "fixed").unlink()
    _, second = run_json(["run", "pipeline", "-i", "seed=t"], capsys)
    module.write_text(module.read_text().replace('"-FETCHED"', '"-F2"'))
    (project / "fixed").touch()
    code, rerun = run_json(["resume", str(second["run_id"]), "--rerun-changed"], capsys)
    assert (code, rerun["inputs"]["shipped"]) == (0, "t-F2-built-shipped")  # type: ignore[index]
    steps = rerun["steps"]
    assert isinstance(steps, list)
    assert [step["status"] for step in steps] == ["succeeded"] * 3


def test_the_plan_of_a_run_that_needs_nothing(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "fixed").touch()
    _, done = run_json(["run", "pipeline", "-i", "seed=s"], capsys)
    assert main(["resume", str(done["run_id"]), "--plan"]) == 0
    assert capsys.readouterr().out.splitlines()[-3:] == [
        "every step is done; nothing to resume",
        "kept 3 steps, $0.00 not spent again",
        "options: none",
    ]
    _, stuck = run_json(["run", "blocker", "-i", "seed=s"], capsys)
    assert main(["resume", str(stuck["run_id"]), "--plan"]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == [
        "  1. fetch: kept",
        "  2. ask: to run",
        "a resume starts at ask",
        "kept 1 step, $0.00 not spent again",
        "to finish: no estimate: no history",
        "options: none",
    ]


def test_a_blocked_run_resumes_once_the_missing_input_is_given(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, first = run_json(["run", "blocker", "-i", "seed=s"], capsys)
    assert (code, first["status"]) == (3, "blocked")
    code, resumed = run_json(["resume", str(first["run_id"])[:6], "-i", "answer=42"], capsys)
    assert (code, resumed["inputs"]["asked"]) == (0, "42")  # type: ignore[index]
    assert calls(project) == ["fetch", "ask", "ask"]
    assert main(["status", str(first["run_id"])]) == 0
    text = capsys.readouterr().out
    assert f"run {first['run_id']} · blocker · succeeded" in text
    assert ", resumed 1x" in text
    assert "  2. ask: succeeded (2 attempts, " in text
    assert "       attempt 1: Blocked: need input 'answer'" in text


def test_a_run_the_journal_does_not_hold_is_named_and_its_cost_asked_of_no_workflow(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_json(["run", "pipeline", "-i", "seed=s"], capsys)
    assert main(["status", "nope"]) == 2
    assert capsys.readouterr().err.startswith("adws: error: no run 'nope' in ")
    assert main(["run", "nope", "--plan"]) == 2
    assert capsys.readouterr().err.startswith("adws: error: unknown workflow 'nope' in ")


def test_runs_lists_runs_and_status_shows_json(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, failed = run_json(["run", "pipeline", "-i", "seed=s"], capsys)
    (project / "fixed").touch()
    _, good = run_json(["run", "pipeline", "-i", "seed=t"], capsys)
    assert main(["runs"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == [
        "RUN",
        "WORKFLOW",
        "STATUS",
        "STARTED",
        "DURATION",
        "COST",
        "STOPPED",
        "AT",
    ]
    assert table[1].split()[:3] == [good["run_id"], "pipeline", "succeeded"]
    assert table[2].split()[:3] == [failed["run_id"], "pipeline", "failed"]
    assert table[2].split()[-1] == "build"
    assert main(["runs", "--json", "--status", "failed"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(r["run_id"], r["workflow"], r["status"]) for r in listed] == [
        (failed["run_id"], "pipeline", "failed")
    ]
    assert set(listed[0]) >= {"run_id", "workflow", "status", "started", "finished"}
    assert main(["status", str(failed["run_id"]), "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert [(a["step"], a["status"]) for a in status["attempts"]] == [
        ("fetch", "succeeded"),
        ("build", "failed"),
        ("ship", "skipped:halted"),
    ]
    assert status["error"]["message"] == "build is broken"
    assert main(["status", str(failed["run_id"])]) == 0
    assert "  3. ship: skipped (halted)" in capsys.readouterr().out


def test_runs_without_a_journal_or_with_none_recorded(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["runs"]) == 2
    assert (
        capsys.readouterr().err
        == "adws: error: no run journal at .adws/runs.db; `adws run` records runs there\n"
    )
    Journal(project / ".adws" / "runs.db").close()
    assert main(["runs"]) == 0
    assert capsys.readouterr().err == "no runs recorded in .adws/runs.db\n"


def test_no_journal_records_nothing(project: Path) -> None:
    assert main(["run", "pipeline", "-i", "seed=s", "-q", "--no-journal"]) == 1
    assert not (project / ".adws").exists()


def test_the_journal_path_comes_from_the_flag_or_the_environment(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "pipeline", "-i", "seed=s", "-q", "--journal", "flag.db"]) == 1
    monkeypatch.setenv("ADWS_JOURNAL", "env.db")
    assert main(["run", "pipeline", "-i", "seed=s", "-q"]) == 1
    assert (project / "flag.db").exists()
    assert (project / "env.db").exists()
    assert main(["runs", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 1


def test_a_corrupt_journal_is_named_not_a_traceback(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / ".adws").mkdir()
    (project / ".adws" / "runs.db").write_bytes(b"garbage" * 1000)
    assert main(["runs"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        "adws: error: cannot read the run journal .adws/runs.db: file is not a database;"
    )
    assert main(["run", "pipeline", "-i", "seed=s"]) == 2
    assert "--no-journal" in capsys.readouterr().err


def test_resume_edge_cases(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "fixed").touch()
    _, done = run_json(["run", "pipeline", "-i", "seed=s"], capsys)
    run_id = str(done["run_id"])
    assert main(["resume", run_id]) == 0
    assert capsys.readouterr().err == f"run {run_id} already succeeded; nothing to resume\n"
    journal = Journal(project / ".adws" / "runs.db")
    journal.mark(run_id, "failed")
    assert main(["resume", run_id]) == 0
    assert (
        capsys.readouterr().err
        == f"every step of run {run_id} already succeeded; nothing to resume\n"
    )
    (project / "fixed").unlink()
    _, failed = run_json(["run", "pipeline", "-i", "seed=s"], capsys)
    journal.write(
        "UPDATE runs SET status = 'running', pid = 1, holder_started = NULL WHERE run_id = ?",
        (failed["run_id"],),
    )
    assert main(["resume", str(failed["run_id"])]) == 2
    assert capsys.readouterr().err == (
        f"adws: error: run {failed['run_id']} is being run by process 1 on "
        f"{socket.gethostname()}; pass --force if it is not\n"
    )
    assert main(["resume", "nope"]) == 2
    assert capsys.readouterr().err == "adws: error: no run 'nope' in .adws/runs.db\n"


def test_a_resume_with_nothing_succeeded_starts_from_the_recorded_inputs(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "workflows" / "resumable.py").write_text(
        RESUMABLE.replace(
            'log("fetch")\n',
            'log("fetch")\n    if not Path("fixed").exists():\n        raise RuntimeError("no")\n',
        )
    )
    _, first = run_json(["run", "pipeline", "-i", "seed=s"], capsys)
    (project / "fixed").touch()
    code, resumed = run_json(["resume", str(first["run_id"])], capsys)
    assert (code, resumed["inputs"]["shipped"]) == (0, "s-fetched-built-shipped")  # type: ignore[index]
    assert resumed["warnings"] == []
    [run] = Journal(project / ".adws" / "runs.db").runs()
    assert (run.status, run.resumes) == ("succeeded", 1)


def started(step: str, *, always_run: bool = False) -> StepStarted:
    return StepStarted("r", step, 0, 2, 1, always_run)


def test_a_first_signal_during_a_step_stops_it_naming_the_signal() -> None:
    handler = Interrupts()
    handler.observe(started("build"))
    with pytest.raises(KeyboardInterrupt, match=r"^interrupted by SIGTERM$"):
        handler(signal.SIGTERM, None)
    assert handler.exit_code == 143


def test_a_first_signal_during_cleanup_is_held_until_a_step_that_is_not_cleanup() -> None:
    handler = Interrupts()
    handler.observe(started("cleanup", always_run=True))
    handler(signal.SIGHUP, None)
    handler.observe(StepSucceeded("r", "cleanup", 0, 3, 1, 0.0, WorkflowContext()))
    handler.observe(started("more_cleanup", always_run=True))
    with pytest.raises(KeyboardInterrupt, match=r"^interrupted by SIGHUP$"):
        handler.observe(started("ship"))
    handler.observe(started("final_cleanup", always_run=True))
    assert (handler.exit_code, handler.pending) == (129, False)


def test_a_signal_between_steps_is_held_for_the_next_step() -> None:
    handler = Interrupts()
    handler.observe(started("build"))
    handler.observe(
        AttemptFailed("r", "build", 0, 2, 1, 1, PipelineError("build", "X", "m"), False, 0.0, 0.0)
    )
    handler(signal.SIGINT, None)
    with pytest.raises(KeyboardInterrupt, match=r"^interrupted by Ctrl-C$"):
        handler.observe(started("ship"))


def test_a_second_signal_kills_every_child_marks_and_exits_with_the_first_signals_code() -> None:
    exits: list[int] = []
    marked: list[str] = []
    handler = Interrupts(lambda: marked.append("interrupted"), exit_now=exits.append)
    handler(signal.SIGTERM, None)
    handler(signal.SIGINT, None)
    assert (exits, marked) == ([143], ["interrupted"])


def test_a_journal_that_cannot_be_marked_does_not_stop_the_exit() -> None:
    def broken() -> None:
        raise RuntimeError

    exits: list[int] = []
    handler = Interrupts(broken, exit_now=exits.append)
    handler(signal.SIGINT, None)
    handler(signal.SIGINT, None)
    assert exits == [130]


def test_the_handlers_are_installed_for_the_run_only() -> None:
    handler = Interrupts()
    before = signal.getsignal(signal.SIGTERM)
    with handler.installed():
        assert [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)] == [
            handler,
            handler,
            handler,
        ]
    assert signal.getsignal(signal.SIGTERM) == before
