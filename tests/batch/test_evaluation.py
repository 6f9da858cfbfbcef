"""adws eval: every task N times per variant as one batch; Wilson intervals and Fisher's test."""

from __future__ import annotations

import json
import math
import sqlite3
import subprocess
import sys
from pathlib import Path

import attrs
import pytest

from adws.batch.evaluation import (
    Comparison,
    EvalRun,
    Failure,
    by_task,
    common_failure,
    compare,
    fisher_exact,
    metric_value,
    p_said,
    score,
    wilson,
)
from adws.cli import main
from adws.cli._eval_journal import evaluation_runs
from adws.cli._eval_output import markdown
from adws.cli.eval import _cancel_waiting
from adws.journal import Journal
from adws.runs import Runs
from tests.browser import browser, chromium

FLOW = """
from returns.io import IOFailure, IOSuccess
from adws import ErrorType, PipelineError, Step, Workflow


def judge(ctx):
    if ctx.inputs["mode"] != "good":
        return IOFailure(PipelineError("judge", ErrorType.STEP_EXCEPTION, "bad mode"))
    return IOSuccess(ctx.merge_outputs({"score": float(ctx.inputs["weight"])}))


workflow = Workflow("graded", (Step("judge", judge),), inputs=("mode", "weight"))
"""


@pytest.fixture
def project(in_tmp: Path) -> Path:
    (in_tmp / "workflows").mkdir()
    (in_tmp / "workflows" / "graded.py").write_text(FLOW)
    lines = [{"mode": "good", "weight": w} for w in ("1", "2", "3")]
    (in_tmp / "tasks.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return in_tmp


def test_the_wilson_interval_equals_the_hand_computation() -> None:
    z = 1.959963984540054
    # 8 of 10: centre (0.8 + z²/20) / (1 + z²/10), half-width z √(0.016 + z²/400) / (1 + z²/10)
    centre = (0.8 + z * z / 20) / (1 + z * z / 10)
    half = z * math.sqrt(0.8 * 0.2 / 10 + z * z / 400) / (1 + z * z / 10)
    assert [round(bound, 12) for bound in wilson(8, 10)] == [
        round(centre - half, 12),
        round(centre + half, 12),
    ]
    assert (round(centre - half, 4), round(centre + half, 4)) == (0.4902, 0.9433)
    assert wilson(0, 0) == (0.0, 1.0)
    assert wilson(6, 6)[1] == 1.0
    assert wilson(0, 6)[0] == 0.0


def test_fishers_exact_test_equals_the_hand_computation() -> None:
    # [[8, 2], [1, 5]]: margins 10 and 6 rows, 9 passes of 16; P(x) = C(10,x) C(6,9-x) / C(16,9).
    # Weights for x = 3..9: 120, 1260, 3780, 4200, 1800, 270, 10; observed x = 8 (270);
    # as likely or less: x = 3, 8, 9 -> (120 + 270 + 10) / 11440.
    assert fisher_exact(8, 2, 1, 5) == 400 / 11440
    # [[6, 0], [0, 6]]: only the two extreme tables, each 1 / C(12, 6).
    assert fisher_exact(6, 0, 0, 6) == 2 / 924
    assert fisher_exact(3, 3, 3, 3) == 1.0


def test_scores_and_the_comparison_say_which_is_better() -> None:
    runs = [EvalRun("a", 0, "succeeded", 0.5, 2.0)] * 6 + [EvalRun("b", 0, "failed")] * 6
    a, b = score(["a", "b"], runs)
    assert (a.runs, a.passed, a.rate, a.mean_cost_usd, a.mean_seconds) == (6, 6, 1.0, 0.5, 2.0)
    assert (b.passed, b.rate, b.mean_cost_usd, b.mean_seconds) == (0, 0.0, None, None)
    comparison = compare([a, b])
    assert comparison == Comparison("a", "b", 1.0, 2 / 924)
    assert comparison.verdict == "a is better (p = 0.0022 < 0.05)"
    assert compare([b, a]) == Comparison("b", "a", -1.0, 2 / 924)
    assert Comparison("b", "a", -1.0, 2 / 924).verdict == "a is better (p = 0.0022 < 0.05)"
    assert compare([a]) is None
    assert score(["c"], runs)[0].rate == 0.0
    assert score(["c"], runs, metric=True)[0].rate == 0.0


def test_a_metric_is_a_finite_number_or_nothing() -> None:
    outputs = {"n": 3, "f": 0.5, "b": True, "s": "1", "inf": math.inf}
    found = [metric_value(outputs, key) for key in ("n", "f", "b", "s", "inf", "missing")]
    assert found == [3.0, 0.5, None, None, None, None]


def test_eval_runs_every_task_n_times_per_variant_as_one_batch(project: Path) -> None:
    argv = [
        sys.executable, "-m", "adws", "eval", "graded", "tasks.jsonl", "-n", "2", "--json", "-q",
        "--variant", "good:-i mode=good", "--variant", "bad:-i mode=bad", "--concurrency", "2",
    ]  # fmt: skip
    done = subprocess.run(argv, cwd=project, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    good, bad = report["scores"]
    low, high = wilson(6, 6)
    assert (good["variant"], good["runs"], good["passed"], good["rate"]) == ("good", 6, 6, 1.0)
    assert (good["low"], good["high"]) == (low, high)
    assert (bad["runs"], bad["passed"], bad["rate"], bad["low"]) == (6, 0, 0.0, 0.0)
    assert bad["high"] == wilson(0, 6)[1]
    assert report["comparison"] == {
        "first": "good",
        "second": "bad",
        "difference": 1.0,
        "p_value": 2 / 924,
        "verdict": "good is better (p = 0.0022 < 0.05)",
    }
    assert report["variants"] == [
        {"name": "good", "options": "-i mode=good"},
        {"name": "bad", "options": "-i mode=bad"},
    ]
    journal = Journal(project / ".adws" / "runs.db")
    runs = journal.runs(batch=report["batch_id"])
    assert [json.loads(journal.run_inputs(run.run_id))["inputs"]["mode"] for run in runs] == (
        ["good"] * 6 + ["bad"] * 6
    )


def test_a_metric_scores_by_a_numeric_output_and_prints_a_table(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["eval", "graded", "tasks.jsonl", "-n", "1", "--metric", "score", "--max-cost", "1"]
    variants = ["--variant", "good:-i mode=good --max-cost=2", "--variant", "bad:-i mode=bad"]
    assert main([*argv, *variants]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[1] == (
        "variant       runs passed waiting mean score  95% interval      mean cost mean time"
    )
    assert printed[2].startswith(
        "good             3      3       0      2.000  [0.439, 1.000]            -"
    )
    assert printed[3].startswith(
        "bad              3      0       0      0.000  [0.000, 0.561]            -"
    )
    assert printed[4] == (
        "good - bad: +2.000; Fisher's exact test: no detectable difference (p = 0.1000 >= 0.05)"
    )


def test_a_variant_applies_every_option_it_takes_to_its_runs(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    variant = "a:-i mode=good --on-budget ask --max-wait 7 --notify 'echo hi' --max-agents 2"
    variant += " --park-at 0.8"
    argv = ["eval", "graded", "tasks.jsonl", "-n", "1", "-q", "--json", "--variant", variant]
    assert main([*argv, "--variant", "b:-i mode=good"]) == 0
    journal = Journal(project / ".adws" / "runs.db")
    batch = json.loads(capsys.readouterr().out)["batch_id"]
    chosen = [
        (
            run.options.on_budget,
            run.options.max_wait,
            run.options.notify,
            run.options.max_agents,
            run.options.park_at,
        )
        for run in journal.runs(batch=batch)
    ]
    assert chosen == [("ask", 7.0, "echo hi", 2, 0.8)] * 3 + [(None, None, None, None, None)] * 3


def test_eval_help_says_95_percent_once(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "--help"]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "with its 95% Wilson interval" in said
    assert "%%" not in said


def test_one_default_variant_without_a_comparison(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["eval", "graded", "tasks.jsonl", "-n", "1", "-q"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[2].startswith("default          3      3       0      1.000  [0.439, 1.000]")
    assert len(printed) == 3


@pytest.mark.parametrize(
    ("variants", "message"),
    [
        (["nocolon"], "--variant 'nocolon': write NAME:OPTIONS, e.g. a:--model=opus"),
        ([":-i a=b"], "--variant ':-i a=b': write NAME:OPTIONS"),
        (["a:--nope"], "--variant a: unrecognized arguments: --nope"),
        (["a:-i novalue"], "--variant a: -i 'novalue' is not KEY=VALUE"),
        (["a:'unclosed"], "--variant a: No closing quotation"),
        (["a:", "a:"], "--variant names must be distinct, got ['a', 'a']"),
    ],
)
def test_a_bad_variant_is_exit_2_naming_it_before_anything_runs(
    project: Path, capsys: pytest.CaptureFixture[str], variants: list[str], message: str
) -> None:
    argv = ["eval", "graded", "tasks.jsonl"]
    for variant in variants:
        argv += ["--variant", variant]
    assert main(argv) == 2
    assert capsys.readouterr().err.startswith(f"adws: error: {message}")
    assert not (project / ".adws").exists()


def test_a_dask_scheduler_out_of_reach_records_nothing(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["eval", "graded", "tasks.jsonl", "--dask", "tls://127.0.0.1:9"]
    assert main(argv) == 2
    assert "cannot reach that scheduler" in capsys.readouterr().err
    assert not (project / ".adws").exists()


def test_report_eval_draws_a_bar_and_interval_per_variant_from_the_journal(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    variants = ["--variant", "good:-i mode=good", "--variant", "<b>bad</b>:-i mode=bad"]
    assert main(["eval", "graded", "tasks.jsonl", "-n", "1", "-q", "--json", *variants]) == 0
    batch_id = json.loads(capsys.readouterr().out)["batch_id"]
    assert main(["report", "--eval", batch_id[:6], "-o", "-"]) == 0
    page = capsys.readouterr().out
    assert page.startswith("<!DOCTYPE html>")
    assert f"<h1>eval {batch_id} · graded</h1>" in page
    assert page.count('fill="#4c8bf5"') == 2
    assert "<title>good: 1.000 [0.439, 1.000]</title>" in page
    assert "<title>&lt;b&gt;bad&lt;/b&gt;: 0.000 [0.000, 0.561]</title>" in page
    assert "<b>bad</b>" not in page
    assert (
        "<tr><td>good</td><td>3</td><td>3</td><td>1.000</td><td>[0.439, 1.000]</td><td>-</td><td>"
    ) in page
    assert "Fisher&#x27;s exact test" not in page
    assert "<p>Fisher's exact test: no detectable difference (p = 0.1000 &gt;= 0.05)</p>" in page


def test_report_eval_of_one_variant_has_no_verdict_and_costs_show(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["eval", "graded", "tasks.jsonl", "-n", "1", "-q", "--json"]) == 0
    batch_id = json.loads(capsys.readouterr().out)["batch_id"]
    db = sqlite3.connect(project / ".adws" / "runs.db")
    with db:
        db.execute(
            "UPDATE attempts SET cost_usd = 0.5 WHERE run_id IN"
            " (SELECT run_id FROM runs WHERE batch_id = ?)",
            (batch_id,),
        )
    db.close()
    assert main(["report", "--eval", batch_id, "-o", "-"]) == 0
    page = capsys.readouterr().out
    assert "<p>Fisher" not in page
    assert "<td>$0.5000</td>" in page


@pytest.mark.parametrize(
    ("source", "why"),
    [
        ("lines.jsonl", "(it was started by adws batch)"),
        ("eval {not json", "(its description: JSONDecodeError:"),
        ('eval {"variants": [{"name": "a"}], "per_variant": 0, "n": 1, "metric": null}',
         "(its description counts no runs)"),
    ],
)  # fmt: skip
def test_report_eval_refuses_a_batch_that_is_no_evaluation(
    project: Path, capsys: pytest.CaptureFixture[str], source: str, why: str
) -> None:
    assert main(["eval", "graded", "tasks.jsonl", "-n", "1", "-q", "--json"]) == 0
    batch_id = json.loads(capsys.readouterr().out)["batch_id"]
    db = sqlite3.connect(project / ".adws" / "runs.db")
    with db:
        db.execute("UPDATE batches SET source = ? WHERE batch_id = ?", (source, batch_id))
    db.close()
    assert main(["report", "--eval", batch_id, "-o", "-"]) == 2
    assert capsys.readouterr().err.startswith(
        f"adws: error: batch {batch_id} is no evaluation adws eval recorded {why}"
    )


def test_report_eval_of_an_unknown_batch_is_exit_2(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["eval", "graded", "tasks.jsonl", "-n", "1", "-q"]) == 0
    capsys.readouterr()
    assert main(["report", "--eval", "nope", "-o", "-"]) == 2
    assert "no batch 'nope' in" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.skipif(chromium() is None, reason="needs Debian's chromium (apt-get install chromium)")
def test_the_eval_page_in_a_real_browser(project: Path, tmp_path: Path) -> None:
    argv = [
        sys.executable, "-m", "adws", "eval", "graded", "tasks.jsonl", "-n", "1", "-q", "--json",
        "--variant", "good:-i mode=good", "--variant", "bad:-i mode=bad",
    ]  # fmt: skip
    done = subprocess.run(argv, cwd=project, capture_output=True, text=True, check=True)
    batch_id = json.loads(done.stdout)["batch_id"]
    report = [sys.executable, "-m", "adws", "report", "--eval", batch_id, "-o", "page.html"]
    subprocess.run(report, cwd=project, capture_output=True, check=True)
    with browser(tmp_path / "profile") as driver:
        driver.open((project / "page.html").as_uri())
        assert driver.evaluate("document.title") == f"eval {batch_id} · graded"
        widths = "[...document.querySelectorAll('svg rect')].map(r => r.getAttribute('width'))"
        assert driver.evaluate(widths) == ["500.0", "0.0"]
        assert driver.evaluate("document.querySelectorAll('svg line').length") == 6
        assert driver.console_errors() == []


def test_p_values_below_a_ten_thousandth_print_as_a_bound() -> None:
    tiny = fisher_exact(40, 0, 0, 40)
    assert tiny < 0.0001
    assert p_said(tiny) == "p < 0.0001"
    assert p_said(0.0001) == "p = 0.0001"
    assert Comparison("a", "b", 1.0, tiny).verdict == "a is better (p < 0.0001)"
    assert (
        Comparison("a", "b", 0.0, 0.05).verdict == "no detectable difference (p = 0.0500 >= 0.05)"
    )


def test_a_run_waiting_for_approval_is_its_own_column_not_a_failure() -> None:
    runs = [
        EvalRun("a", 0, "succeeded"),
        EvalRun("a", 0, "waiting"),
        EvalRun("a", 1, "waiting"),
        EvalRun("a", 1, "failed"),
    ]
    (a,) = score(["a"], runs)
    assert (a.runs, a.passed, a.waiting, a.rate) == (4, 1, 2, 0.5)
    assert (a.low, a.high) == wilson(1, 2)
    assert by_task(["a"], runs) == [(0, ["1/1 +1 waiting"]), (1, ["0/1 +1 waiting"])]
    assert common_failure("a", runs) is None
    assert common_failure("a", [EvalRun("a", 0, "waiting")]) is None


def test_the_most_common_failure_names_its_kind_step_count_and_a_run() -> None:
    runs = [
        EvalRun("a", 0, "failed", run_id="r1", error_type="Timeout", step="fix"),
        EvalRun("a", 1, "failed", run_id="r2", error_type="StepException", step="test"),
        EvalRun("a", 2, "failed", run_id="r3", error_type="StepException", step="test"),
        EvalRun("a", 2, "cancelled", run_id="r4"),
        EvalRun("b", 0, "succeeded"),
    ]
    assert common_failure("a", runs) == Failure("a", "StepException", "test", 2, 4, "r2")
    assert common_failure("a", runs[3:4]) == Failure("a", "unknown", "-", 1, 1, "r4")
    assert common_failure("b", runs) is None
    assert common_failure("c", runs) is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "tasks.jsonl holds no runs: write one JSON object of inputs per line"),
        ("[1]\n", "tasks.jsonl, line 1:"),
    ],
)
def test_a_tasks_file_with_no_task_or_a_bad_line_is_exit_2(
    project: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    (project / "tasks.jsonl").write_text(text)
    assert main(["eval", "graded", "tasks.jsonl"]) == 2
    assert capsys.readouterr().err.startswith(f"adws: error: {message}")
    assert not (project / ".adws").exists()


def test_a_run_approved_before_the_eval_cancels_it_is_left_and_said(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["eval", "graded", "tasks.jsonl", "-n", "1", "-q", "--json"]) == 0
    batch_id = json.loads(capsys.readouterr().out)["batch_id"]
    runs = Runs.open(None)
    found = evaluation_runs(Journal(project / ".adws" / "runs.db"), batch_id)
    # As if each run was approved, and finished, between the read and the cancel.
    seen = attrs.evolve(found, runs=[attrs.evolve(run, status="waiting") for run in found.runs])
    _cancel_waiting(runs, seen)
    said = capsys.readouterr().err.splitlines()
    assert said == [
        f"adws: warning: run {run.run_id} was left waiting: run {run.run_id} already succeeded;"
        " there is nothing to cancel"
        for run in found.runs
    ]


def test_markdown_of_one_variant_that_passed_says_nothing_under_the_table() -> None:
    (only,) = score(["a"], [EvalRun("a", 0, "succeeded")])
    assert markdown("t", [only], None, "score").splitlines() == [
        "### t",
        "",
        "| variant | runs | passed | waiting | mean score | 95% interval | mean cost | mean time |",
        "|---|--:|--:|--:|--:|---|--:|--:|",
        "| a | 1 | 1 | 0 | 1.000 | [0.207, 1.000] | - | - |",
    ]
