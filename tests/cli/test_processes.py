"""Real `adws` processes: SIGKILL then resume, Ctrl-C, and concurrent journal writers."""

from __future__ import annotations

import json
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from tests.cli.test_cli_runs import RESUMABLE
from tests.conftest import start_adws, wait_for

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


LOOP = """
from pathlib import Path
from returns.io import IOFailure, IOSuccess
from adws import ErrorType, PipelineError, Step, Workflow


def fetch(ctx):
    with open("calls.log", "a") as handle:
        handle.write("fetch\\n")
    return IOSuccess(ctx.merge_outputs({"data": "fetched-v1"}))


def build(ctx):
    with open("calls.log", "a") as handle:
        handle.write("build\\n")
    return IOFailure(PipelineError("", ErrorType.SHELL_FAILED, "build is broken"))


loop = Workflow("loop", (Step("fetch", fetch), Step("build", build)))
"""


def test_fix_the_failing_step_resume_then_a_changed_finished_step_is_refused_planned_and_rerun(
    tmp_path: Path,
) -> None:
    (tmp_path / "workflows").mkdir()
    module = tmp_path / "workflows" / "loop.py"
    module.write_text(LOOP, encoding="utf-8")
    first = start_adws(tmp_path, "run", "loop", "--json", "-q")
    out, _ = first.communicate(timeout=60)
    assert first.returncode == 1
    run_id = json.loads(out)["run_id"]

    fixed = LOOP.replace(
        'return IOFailure(PipelineError("", ErrorType.SHELL_FAILED, "build is broken"))',
        'return IOSuccess(ctx.merge_outputs({"built": ctx.inputs["data"] + "-built"}))',
    )
    module.write_text(fixed.replace('"fetched-v1"', '"fetched-v2"'), encoding="utf-8")
    refused = start_adws(tmp_path, "resume", run_id)
    _, err = refused.communicate(timeout=60)
    assert refused.returncode == 2
    assert f"step 'fetch' of run {run_id} changed since it finished" in err

    plan = start_adws(tmp_path, "resume", run_id, "--plan")
    out, _ = plan.communicate(timeout=60)
    assert plan.returncode == 0
    assert out.splitlines()[1].startswith("  1. fetch: changed (recorded ")
    assert out.splitlines()[2] == "  2. build: to run"

    rerun = start_adws(tmp_path, "resume", run_id, "--rerun-changed", "--json", "-q")
    out, err = rerun.communicate(timeout=60)
    assert rerun.returncode == 0, err
    assert json.loads(out)["inputs"]["built"] == "fetched-v2-built"
    assert (tmp_path / "calls.log").read_text().split() == ["fetch", "build", "fetch", "build"]


def test_fixing_only_the_failing_step_resumes_without_rerunning_the_finished_one(
    tmp_path: Path,
) -> None:
    (tmp_path / "workflows").mkdir()
    module = tmp_path / "workflows" / "loop.py"
    module.write_text(LOOP, encoding="utf-8")
    first = start_adws(tmp_path, "run", "loop", "--json", "-q")
    run_id = json.loads(first.communicate(timeout=60)[0])["run_id"]
    module.write_text(
        LOOP.replace(
            'return IOFailure(PipelineError("", ErrorType.SHELL_FAILED, "build is broken"))',
            'return IOSuccess(ctx.merge_outputs({"built": ctx.inputs["data"] + "-built"}))',
        ),
        encoding="utf-8",
    )
    resumed = start_adws(tmp_path, "resume", run_id, "--json", "-q")
    out, err = resumed.communicate(timeout=60)
    assert resumed.returncode == 0, err
    assert json.loads(out)["inputs"]["built"] == "fetched-v1-built"
    assert (tmp_path / "calls.log").read_text().split() == ["fetch", "build", "build"]


OPAQUE = """
from returns.io import IOSuccess
from adws import Step, Workflow

def greet(ctx):
    return IOSuccess(ctx.merge_outputs({"greeting": f"hi {ctx.inputs['topic']}"}))

opaque = Workflow("opaque", (Step("greet", greet),), inputs=("topic",), optional_inputs=("tone",))
"""


def test_an_unknown_input_to_a_workflow_whose_steps_declare_no_reads_is_a_warning(
    tmp_path: Path,
) -> None:
    """A step without reads= might read any key, so a typo runs, but is named on stderr."""
    (tmp_path / "workflows").mkdir()
    (tmp_path / "workflows" / "opaque.py").write_text(OPAQUE, encoding="utf-8")
    process = adws(tmp_path, "run", "opaque", "-i", "topic=t", "-i", "tpoic=x", "-q", "--json")
    stdout, stderr = process.communicate(timeout=60)
    assert (process.returncode, stderr, json.loads(stdout)["inputs"]["greeting"]) == (
        0,
        (
            "adws: warning: workflow 'opaque' declares no input 'tpoic'; the inputs it declares:"
            " tone, topic (a step without reads= may still read it)\n"
        ),
        "hi t",
    )
    declared = adws(tmp_path, "run", "opaque", "-i", "topic=t", "-i", "tone=dry", "-q")
    assert (declared.communicate(timeout=60)[1], declared.returncode) == ("", 0)
