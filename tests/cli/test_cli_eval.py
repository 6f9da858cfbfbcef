"""`adws eval` as its users run it, each in its own process: its rough edges, and it as a gate."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from adws.batch.baseline import FORMAT, tasks_hash
from adws.batch.evaluation import fisher_exact, wilson
from adws.batch.report import Progress
from adws.cli._eval_output import ProgressLines
from adws.journal import Journal
from tests.conftest import start_adws

GRADED = """
from returns.io import IOFailure, IOSuccess
from adws import ErrorType, PipelineError, Step, Workflow


def judge(ctx):
    if ctx.inputs["mode"] != "good":
        return IOFailure(PipelineError("judge", ErrorType.STEP_EXCEPTION, "bad mode"))
    return IOSuccess(ctx.merge_outputs({"score": float(ctx.inputs["weight"])}))


workflow = Workflow("graded", (Step("judge", judge),), inputs=("mode", "weight"))
"""

GATED = """
from returns.io import IOSuccess
from adws import Step, Workflow, approval_step


def prep(ctx):
    return IOSuccess(ctx.merge_outputs({"ready": True}))


workflow = Workflow(
    "gated", (Step("prep", prep), approval_step("ok", message="merge?")), inputs=("mode",)
)
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "workflows").mkdir()
    (tmp_path / "workflows" / "graded.py").write_text(GRADED)
    (tmp_path / "workflows" / "gated.py").write_text(GATED)
    lines = [{"mode": "good", "weight": w} for w in ("1", "2", "3")]
    (tmp_path / "tasks.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return tmp_path


def adws(project: Path, *argv: str) -> tuple[int, str, str]:
    """Run `adws ARGV` in its own process; return its exit code, stdout and stderr."""
    process = start_adws(project, *argv)
    out, err = process.communicate(timeout=240)
    return process.returncode, out, err


def test_an_input_every_variant_gives_is_not_required_of_the_task_lines(project: Path) -> None:
    (project / "weights.jsonl").write_text('{"weight": "1"}\n\n{"weight": "2"}\n')
    variants = ["--variant", "good:-i mode=good", "--variant", "bad:-i mode=bad"]
    code, out, err = adws(
        project, "eval", "graded", "weights.jsonl", "-n", "1", "--json", *variants
    )
    assert code == 0, err
    assert [(s["variant"], s["passed"]) for s in json.loads(out)["scores"]] == [
        ("good", 2),
        ("bad", 0),
    ]
    one = ["--variant", "good:-i mode=good", "--variant", "plain:--max-cost 1"]
    (project / "runs.db").unlink()
    code, out, err = adws(project, "eval", "graded", "weights.jsonl", *one)
    assert (code, out) == (2, "")
    assert err == (
        "adws: error: weights.jsonl, line 1: workflow 'graded' needs input mode under variant"
        " plain (give it on the line, or to every variant with -i KEY=VALUE)\n"
    )
    assert not (project / "runs.db").exists()


def test_a_run_stopped_for_approval_is_waiting_and_cancelled_when_the_eval_ends(
    project: Path,
) -> None:
    code, out, err = adws(project, "eval", "gated", "tasks.jsonl", "-n", "1", "--json", "-q")
    assert code == 0, err
    report = json.loads(out)
    (default,) = report["scores"]
    assert (default["runs"], default["passed"], default["waiting"]) == (3, 0, 3)
    assert (default["low"], default["high"]) == (0.0, 1.0)
    assert report["failures"] == []
    assert report["by_task"] == [
        {"line": line, "passes": {"default": "0/0 +1 waiting"}} for line in (1, 2, 3)
    ]
    assert report["gate"] == {"failed": [], "notes": []}
    journal = Journal(project / "runs.db")
    runs = journal.runs(batch=report["batch_id"])
    assert [run.status for run in runs] == ["cancelled"] * 3
    assert {(run.cancel.by, run.cancel.reason) for run in runs if run.cancel} == {
        ("adws eval", "adws eval ended while the run waited for approval")
    }
    code, out, _ = adws(project, "approvals")
    assert (code, out) == (0, "")
    # Read back later, the runs the evaluation cancelled still count as waiting.
    code, page, _ = adws(project, "report", "--eval", report["batch_id"], "-o", "-")
    assert code == 0
    assert "<td>default</td><td>3</td><td>0</td>" in page
    code, out, err = adws(
        project, "eval", "gated", "tasks.jsonl", "-n", "1", "-q", "--keep-waiting"
    )
    assert code == 0, err
    assert out.splitlines()[2].startswith("default          3      0       3      0.000")
    code, out, _ = adws(project, "approvals", "--json")
    assert (code, len(json.loads(out))) == (0, 3)


def test_when_every_run_of_a_variant_failed_the_most_common_failure_follows(
    project: Path,
) -> None:
    variants = ["--variant", "good:-i mode=good", "--variant", "bad:-i mode=bad"]
    code, out, err = adws(project, "eval", "graded", "tasks.jsonl", "-n", "1", "-q", *variants)
    assert code == 0, err
    hint = out.splitlines()[-1]
    found = re.fullmatch(
        r"bad: all 3 ended runs failed; most common: StepException at step judge \(3 of 3\);"
        r" see one: adws status ([0-9a-f]{12})",
        hint,
    )
    assert found is not None, out
    code, shown, _ = adws(project, "status", found.group(1))
    assert code == 0
    assert "bad mode" in shown


def test_by_task_shows_each_tasks_passes_per_variant(project: Path) -> None:
    (project / "mixed.jsonl").write_text(
        '{"mode": "good", "weight": "1"}\n{"mode": "bad", "weight": "1"}\n'
    )
    variants = ["--variant", "plain:", "--variant", "fixed:-i mode=good"]
    argv = ["eval", "graded", "mixed.jsonl", "-n", "2", "-q", "--by-task", *variants]
    code, out, err = adws(project, *argv)
    assert code == 0, err
    assert out.splitlines()[-3:] == [
        "task line  plain  fixed",
        "1            2/2    2/2",
        "2            0/2    2/2",
    ]


def test_a_tiny_p_value_prints_as_a_bound_and_progress_off_a_terminal_is_throttled(
    project: Path,
) -> None:
    (project / "one.jsonl").write_text('{"weight": "1"}\n')
    variants = ["--variant", "good:-i mode=good", "--variant", "bad:-i mode=bad"]
    started = time.monotonic()
    code, out, err = adws(project, "eval", "graded", "one.jsonl", "-n", "20", *variants)
    took = time.monotonic() - started
    assert code == 0, err
    assert fisher_exact(20, 0, 0, 20) < 0.0001
    assert out.splitlines()[4] == (
        "good - bad: +1.000; Fisher's exact test: good is better (p < 0.0001)"
    )
    lines = err.splitlines()
    # 40 runs: the first that finished, then at most one line each 5 seconds, then the last.
    assert 1 <= len(lines) <= 2 + took / 5
    assert lines[-1].startswith(f"batch {out.split()[1]}: 20/40 done, 20 failed, 0 blocked")


def test_progress_lines_off_a_terminal_come_per_finished_run_at_most_every_5_seconds() -> None:
    now = [0.0]
    lines = ProgressLines("b", terminal=False, clock=lambda: now[0])
    said = []
    for finished, at in [(0, 0.0), (1, 0.1), (1, 0.2), (2, 1.0), (3, 5.2), (4, 6.0), (5, 6.1)]:
        now[0] = at
        said.append(lines(Progress(5, finished, 0, 0, 0, 5 - finished, at)))
    assert [line is not None for line in said] == [False, True, False, False, True, False, True]
    assert said[-1] == "batch b: 5/5 done, 0 failed, 0 blocked, 0 running · 49 runs/min · ETA 0m00s"
    on_terminal = ProgressLines("b", terminal=True)
    assert on_terminal(Progress(5, 0, 0, 0, 0, 5, 0.0)) == (
        "batch b: 0/5 done, 0 failed, 0 blocked, 5 running · 0 runs/min · ETA ?"
    )


def test_help_says_95_percent_wilson_without_doubled_signs(project: Path) -> None:
    code, out, _ = adws(project, "eval", "--help")
    said = " ".join(out.split())
    assert code == 0
    assert "with its 95% Wilson interval" in said
    assert "whose 95% Wilson lower bound is under RATE" in said
    assert "%%" not in said


def test_a_saved_baseline_gates_a_later_evaluation(project: Path) -> None:
    code, _out, err = adws(
        project, "eval", "graded", "tasks.jsonl", "-n", "2", "-q", "--save-baseline", "base.json"
    )
    assert code == 0, err
    saved = json.loads((project / "base.json").read_text())
    assert saved == {
        "format": FORMAT,
        "workflow": "graded",
        "variants": [{"name": "default", "passed": 6, "runs": 6}],
        "tasks": tasks_hash((project / "tasks.jsonl").read_bytes()),
        "adws_version": saved["adws_version"],
    }
    argv = ["eval", "graded", "tasks.jsonl", "-n", "2", "-q", "--baseline", "base.json"]
    code, _, err = adws(project, *argv)
    assert (code, err) == (0, "")
    code, _, err = adws(project, *argv, "--variant", "worse:-i mode=bad")
    assert code == 1
    assert err == (
        "adws: eval failed: variant worse: 0/6 passed, significantly below the baseline's"
        f" default 6/6 (Fisher's exact test, p = {2 / 924:.4f})\n"
    )
    code, _, err = adws(project, *argv, "--fail-under", "0.9")
    assert code == 1
    low = wilson(6, 6)[0]
    assert err == (
        f"adws: eval failed: variant default: its 95% Wilson lower bound {low:.3f} is under"
        " --fail-under 0.9 (6/6 passed)\n"
    )
    code, _, err = adws(project, *argv, "--variant", "other:", "--variant", "b:")
    assert code == 0
    assert err == ""


@pytest.mark.parametrize(
    ("written", "why"),
    [
        (
            (
                '{"format": "adws-eval-baseline/1", "workflow": "gated", "variants": [],'
                ' "tasks": "", "adws_version": "1"}'
            ),
            "it is a baseline of workflow 'gated', not 'graded'",
        ),
        ('{"passed": 3}', "it is no baseline adws eval --save-baseline wrote"),
        ("\xff", "cannot read it"),
    ],
)
def test_a_baseline_adws_did_not_write_is_refused_before_anything_runs(
    project: Path, written: str, why: str
) -> None:
    (project / "base.json").write_text(written, encoding="latin-1")
    code, out, err = adws(project, "eval", "graded", "tasks.jsonl", "--baseline", "base.json")
    assert (code, out) == (2, "")
    assert err.startswith(
        f"adws: error: --baseline base.json: {'refused: ' * (why[0] == 'i')}{why}"
    )
    assert not (project / "runs.db").exists()


def test_a_missing_baseline_file_or_a_bad_rate_is_a_usage_error(project: Path) -> None:
    code, _, err = adws(project, "eval", "graded", "tasks.jsonl", "--baseline", "nope.json")
    assert code == 2
    assert err.startswith("adws: error: --baseline nope.json: cannot read it ([Errno 2]")
    code, _, err = adws(project, "eval", "graded", "tasks.jsonl", "--fail-under", "1.5")
    assert code == 2
    assert "--fail-under: expected a rate from 0 to 1, got '1.5'" in err
    code, _, err = adws(project, "eval", "graded", "tasks.jsonl", "--fail-under", "x")
    assert "expected a rate from 0 to 1, got 'x'" in err
    code, _, err = adws(project, "eval", "graded", "tasks.jsonl", "--save-baseline", "no/b.json")
    assert (code, err) == (
        2,
        "adws: error: --save-baseline no/b.json: no such folder to write it in\n",
    )
    assert not (project / "runs.db").exists()


def test_markdown_prints_the_table_for_a_pull_request_comment(project: Path) -> None:
    (project / "base.json").write_text(
        json.dumps(
            {
                "format": FORMAT,
                "workflow": "graded",
                "variants": [
                    {"name": "good", "passed": 3, "runs": 3},
                    {"name": "other", "passed": 0, "runs": 3},
                ],
                "tasks": "sha256:0",
                "adws_version": "0",
            }
        )
    )
    variants = ["--variant", "good:-i mode=good", "--variant", "b|d:-i mode=bad"]
    argv = [
        "eval",
        "graded",
        "tasks.jsonl",
        "-n",
        "1",
        "-q",
        "--markdown",
        "--baseline",
        "base.json",
    ]
    code, out, err = adws(project, *argv, *variants)
    assert code == 0, err
    lines = out.splitlines()
    batch = lines[0].split()[2]
    run = lines[-3].rsplit(" ", 1)[1]
    assert lines == [
        f"### eval {batch} · graded · 3 tasks x 1 runs per variant",
        "",
        "| variant | runs | passed | waiting | pass rate | 95% interval | mean cost | mean time |",
        "|---|--:|--:|--:|--:|---|--:|--:|",
        *lines[4:6],
        "",
        (
            "- good - b\\|d: +1.000; Fisher's exact test: no detectable difference"
            " (p = 0.1000 &gt;= 0.05)"
        ),
        (
            "- b\\|d: all 3 ended runs failed; most common: StepException at step judge (3 of 3);"
            f" see one: adws status {run}"
        ),
        "- variant b\\|d: the baseline has no variant of that name (good, other)",
        (
            "- the baseline base.json was measured on other tasks than tasks.jsonl (their hash"
            " differs): compare with care"
        ),
    ]
    assert lines[4].startswith("| good | 3 | 3 | 0 | 1.000 | [0.439, 1.000] | - | ")
    assert lines[5].startswith("| b\\|d | 3 | 0 | 0 | 0.000 | [0.000, 0.561] | - | ")


ASKED = """
from pathlib import Path
from adws import OutputContract, Workflow, agent_step
from adws.testing import FunctionAgent


def answer(request):
    with Path("calls.log").open("a", encoding="utf-8") as calls:
        calls.write(request.prompt.splitlines()[0] + "\\n")
    return "STATUS: done\\nNOTE: ok\\n"


agent = FunctionAgent(answer)
asked = Workflow(
    "asked",
    (agent_step("ask", prompt="PROMPT {mode}.", agent=agent, contract=OutputContract(("NOTE",))),),
    inputs=("mode",),
)
"""


@pytest.fixture
def recorded(project: Path) -> tuple[Path, str]:
    (project / "workflows" / "asked.py").write_text(ASKED.replace("PROMPT", "Judge"))
    (project / "modes.jsonl").write_text('{"mode": "good"}\n{"mode": "bad"}\n')
    code, out, err = adws(project, "eval", "asked", "modes.jsonl", "-n", "2", "-q", "--json")
    assert code == 0, err
    calls = (project / "calls.log").read_text().splitlines()
    assert sorted(calls) == ["Judge bad."] * 2 + ["Judge good."] * 2  # in any order: concurrent
    (project / "calls.log").unlink()
    return project, json.loads(out)["batch_id"]


def test_replay_from_answers_every_agent_call_from_the_recorded_batch(
    recorded: tuple[Path, str],
) -> None:
    project, batch = recorded
    argv = ["eval", "asked", "modes.jsonl", "-n", "3", "-q", "--json", "--replay-from", batch[:6]]
    code, out, err = adws(project, *argv)
    assert code == 0, err
    report = json.loads(out)
    (default,) = report["scores"]
    assert (default["runs"], default["passed"], default["mean_cost_usd"]) == (6, 6, None)
    assert not (project / "calls.log").exists()
    journal = Journal(project / "runs.db")
    before = [run.run_id for run in journal.runs(batch=batch)]
    replayed = [run.options.replay for run in journal.runs(batch=report["batch_id"])]
    # Line by line: good's 3 repeats replay good's 2 recorded runs round again; then bad's.
    assert replayed == [before[0], before[1], before[0], before[2], before[3], before[2]]


def test_replay_from_a_changed_prompt_fails_its_runs_saying_so(
    recorded: tuple[Path, str],
) -> None:
    project, batch = recorded
    (project / "workflows" / "asked.py").write_text(ASKED.replace("PROMPT", "Grade"))
    argv = ["eval", "asked", "modes.jsonl", "-n", "1", "-q", "--replay-from", batch]
    code, out, err = adws(project, *argv)
    assert code == 0, err
    assert out.splitlines()[-1].startswith(
        "default: all 2 ended runs failed; most common: AgentFailed at step ask (2 of 2)"
    )
    assert not (project / "calls.log").exists()


def test_replay_from_is_refused_for_another_workflow_unknown_inputs_or_no_answers(
    recorded: tuple[Path, str],
) -> None:
    project, batch = recorded
    code, out, err = adws(project, "eval", "graded", "tasks.jsonl", "--replay-from", batch)
    assert (code, out) == (2, "")
    assert err == (
        f"adws: error: --replay-from {batch}: it is a batch of workflow 'asked', not 'graded';"
        " its answers were given to other prompts\n"
    )
    argv = ["eval", "asked", "modes.jsonl", "--replay-from", batch, "--variant", "x:-i mode=new"]
    code, _, err = adws(project, *argv)
    assert code == 2
    assert err == (
        f"adws: error: --replay-from {batch}: no run of it had the inputs of modes.jsonl,"
        " line 1 under variant x\n"
    )
    code, _, err = adws(project, "eval", "asked", "modes.jsonl", "--replay-from", "nope")
    assert code == 2
    assert err.startswith("adws: error: --replay-from nope: no batch 'nope' in ")
    # A recorded run whose answers the journal cannot read is refused, not half replayed.
    db = sqlite3.connect(project / "runs.db")
    with db:
        db.execute("UPDATE exchanges SET answer = NULL")
    db.close()
    code, _, err = adws(project, "eval", "asked", "modes.jsonl", "--replay-from", batch)
    assert code == 2
    assert err.startswith(f"adws: error: --replay-from {batch}: run ")
    assert err.endswith(" cannot be replayed from rows the journal cannot read\n")
    assert len(Journal(project / "runs.db").runs()) == 4  # the refusals recorded nothing


def _git(project: Path, *argv: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@t", "-c", "user.name=t", *argv],
        cwd=project,
        check=True,
        capture_output=True,
    )


@pytest.fixture
def committed(project: Path) -> Path:
    (project / "workflows" / "asked.py").write_text(ASKED.replace("PROMPT", "Judge"))
    (project / "modes.jsonl").write_text('{"mode": "good"}\n')
    (project / "prompt.md").write_text("Judge well.\n")
    _git(project, "init", "-q")
    _git(project, "add", "workflows", "prompt.md")
    _git(project, "commit", "-qm", "one")
    return project


def test_changed_since_runs_nothing_when_no_step_changed(committed: Path) -> None:
    argv = ["eval", "asked", "modes.jsonl", "-n", "1", "--changed-since", "HEAD"]
    code, out, err = adws(committed, *argv)
    assert (code, out, err) == (
        0,
        "workflow 'asked' changed since HEAD: nothing; no run to evaluate\n",
        "",
    )
    code, out, _ = adws(committed, *argv, "--json", "--variant", "a:-i note=prompt.md")
    assert (code, json.loads(out)) == (
        0,
        {"workflow": "asked", "changed_since": "HEAD", "changed": []},
    )
    assert not (committed / "runs.db").exists()
    assert not (committed / "calls.log").exists()


def test_changed_since_runs_the_tasks_of_a_workflow_whose_prompt_or_prompt_file_changed(
    committed: Path,
) -> None:
    (committed / "workflows" / "asked.py").write_text(ASKED.replace("PROMPT", "Grade"))
    argv = ["eval", "asked", "modes.jsonl", "-n", "1", "-q", "--changed-since", "HEAD"]
    code, out, err = adws(committed, *argv)
    assert code == 0, err
    assert err == "adws: workflow 'asked' changed since HEAD: ask\n"
    assert out.splitlines()[2].startswith("default          1      1       0      1.000")
    _git(committed, "commit", "-qam", "two")
    (committed / "prompt.md").write_text("Judge better.\n")
    code, _, err = adws(committed, *argv, "--variant", "a:-i note=prompt.md")
    assert (code, err) == (0, "adws: workflow 'asked' changed since HEAD: prompt.md\n")


def test_changed_since_a_ref_before_the_workflows_folder_counts_every_step(
    project: Path,
) -> None:
    (project / "workflows" / "asked.py").write_text(ASKED.replace("PROMPT", "Judge"))
    (project / "modes.jsonl").write_text('{"mode": "good"}\n')
    _git(project, "init", "-q")
    _git(project, "add", "modes.jsonl")
    _git(project, "commit", "-qm", "one")
    argv = ["eval", "asked", "modes.jsonl", "-n", "1", "-q", "--changed-since", "HEAD"]
    code, _, err = adws(project, *argv)
    assert (code, err) == (0, "adws: workflow 'asked' changed since HEAD: ask\n")


def test_changed_since_outside_git_an_unknown_ref_or_a_folder_that_dies_is_exit_2(
    committed: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    argv = ["eval", "asked", "modes.jsonl", "--changed-since"]
    code, _, err = adws(committed, *argv, "nope")
    assert code == 2
    assert err == (
        f"adws: error: --changed-since nope: git knows no commit 'nope' in"
        f" {committed / 'workflows'}\n"
    )
    (committed / "workflows" / "boom.py").write_text("import os\nos._exit(3)\n")
    _git(committed, "add", "workflows")
    _git(committed, "commit", "-qm", "boom")
    (committed / "workflows" / "boom.py").unlink()
    code, _, err = adws(committed, *argv, "HEAD")
    assert code == 2
    assert err == (
        "adws: error: --changed-since HEAD: the workflows folder at HEAD did not load"
        " (exit 3): no message\n"
    )
    elsewhere = tmp_path_factory.mktemp("plain")
    (elsewhere / "workflows").mkdir()
    (elsewhere / "workflows" / "asked.py").write_text(ASKED.replace("PROMPT", "Judge"))
    (elsewhere / "modes.jsonl").write_text('{"mode": "good"}\n')
    code, _, err = adws(elsewhere, *argv, "HEAD")
    assert code == 2
    assert err == (
        f"adws: error: --changed-since HEAD: {elsewhere / 'workflows'} is not in a git repository\n"
    )
    assert not (committed / "runs.db").exists()


FIX = """
from pathlib import Path
from returns.io import IOFailure, IOSuccess
from adws import ErrorType, OutputContract, PipelineError, Step, Workflow, agent_step
from adws.testing import FunctionAgent

LEAST = 1


def answer(request):
    with Path("calls.log").open("a", encoding="utf-8") as calls:
        calls.write(request.step_name + "\\n")
    return "STATUS: done\\nNOTE: ok\\n"


def check(ctx):
    if len(ctx.inputs["task"]) < LEAST:
        return IOFailure(PipelineError("check", ErrorType.STEP_EXCEPTION, "too short"))
    return IOSuccess(ctx)


fix = Workflow(
    "fix",
    (
        agent_step("ask", prompt="Fix {task}.", agent=FunctionAgent(answer),
                   contract=OutputContract(("NOTE",))),
        Step("check", check),
    ),
    inputs=("task",),
)
"""


def _recipe_command() -> str:
    """Read the recipe's `adws eval` step: its folded (`>-`) lines, joined as YAML joins them."""
    text = (Path(__file__).parents[2] / "docs" / "recipes.md").read_text()
    block = text.split("# .github/workflows/eval.yml\n", 1)[1].split("```", 1)[0]
    step = block.split("- name: adws eval, replayed ($0, offline)\n", 1)[1]
    assert step.startswith("        shell: bash\n        run: >-\n")
    folded = step.split("run: >-\n", 1)[1].splitlines()
    return " ".join(line.strip() for line in folded if line.startswith(" " * 10))


def test_the_ci_recipe_runs_once_replayed_at_no_cost(project: Path) -> None:
    (project / "workflows" / "fix.py").write_text(FIX)
    (project / "eval").mkdir()
    (project / "eval" / "tasks.jsonl").write_text('{"task": "a"}\n{"task": "bb"}\n')
    record = ["eval", "fix", "eval/tasks.jsonl", "-n", "3", "--journal", "eval/runs.db"]
    code, out, err = adws(project, *record, "--save-baseline", "eval/baseline.json", "--json")
    assert code == 0, err
    (project / "eval" / "recorded").write_text(json.loads(out)["batch_id"] + "\n")
    (project / "calls.log").unlink()
    _git(project, "init", "-q", "-b", "main")
    _git(project, "add", "workflows", "eval")
    _git(project, "commit", "-qm", "golden runs")
    _git(project, "update-ref", "refs/remotes/origin/main", "HEAD")
    # The pull request: a change to a Python step, not to a prompt.
    (project / "workflows" / "fix.py").write_text(FIX.replace("LEAST = 1", "LEAST = 2"))
    summary = project / "summary.md"
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(Path(__file__).parents[2]),
        "GITHUB_BASE_REF": "main",
        "GITHUB_STEP_SUMMARY": str(summary),
    }
    env.pop("ADWS_JOURNAL", None)
    done = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", _recipe_command()],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=240,
    )
    assert done.returncode == 1, done.stderr
    assert not (project / "calls.log").exists()  # no agent was asked: $0
    assert "adws: workflow 'fix' changed since origin/main: check\n" in done.stderr
    # Task "a" fails the stricter check now: 3 of 6 pass, against 6 of 6 recorded.
    failed = (
        "variant default: its 95% Wilson lower bound 0.188 is under --fail-under 0.6 (3/6 passed)"
    )
    assert done.stderr.endswith(f"adws: eval failed: {failed}\n")
    lines = summary.read_text().splitlines()
    assert lines[4].startswith("| default | 6 | 3 | 0 | 0.500 | [0.188, 0.812] | - | ")
    assert lines[-1] == f"- FAILED: {failed}"
    assert summary.read_text() == done.stdout
