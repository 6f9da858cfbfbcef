"""One resume path: what a resume keeps, runs again and refuses (`adws.runs.resume`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from returns.io import IOFailure, IOSuccess

from adws import (
    ErrorType,
    PipelineError,
    Step,
    Workflow,
    WorkflowContext,
    fan_out,
    parallel,
)
from adws.cli import main
from adws.journal import Journal
from adws.runs.resume import prepare_resume, resume_plan
from adws.testing import resume, run

if TYPE_CHECKING:
    from returns.io import IOResult


class Log:
    """Steps that record each call; `broken` names the steps that fail."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.broken: set[str] = set()

    def step(self, name: str, *, rerun_on_resume: bool = False, always_run: bool = False) -> Step:
        def run_step(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
            self.calls.append(name)
            if name in self.broken:
                return IOFailure(PipelineError(name, ErrorType.STEP_EXCEPTION, f"{name} broke"))
            return IOSuccess(ctx.merge_outputs({name: f"{name} done"}))

        return Step(
            name,
            run_step,
            reads=(),
            writes=(name,),
            rerun_on_resume=rerun_on_resume,
            always_run=always_run,
        )


@pytest.fixture
def log() -> Log:
    return Log()


def pipeline(log: Log) -> Workflow:
    return Workflow(
        "pipeline",
        (
            log.step("setup", rerun_on_resume=True),
            log.step("fetch"),
            parallel("checks", [log.step("lint"), log.step("types")]),
            log.step("build"),
            log.step("teardown", always_run=True),
        ),
    )


def failed_run(log: Log, journal: str, broken: str = "build") -> str:
    log.broken = {broken}
    report = run(pipeline(log), journal=journal)
    assert report.status == "failed"
    log.broken, log.calls = set(), []
    return report.run_id


def test_a_rerun_step_runs_again_before_the_first_unfinished_step(
    log: Log, journal_at: str
) -> None:
    run_id = failed_run(log, journal_at)
    report = resume(pipeline(log), run_id, journal=journal_at)
    assert (report.status, log.calls) == ("succeeded", ["setup", "build", "teardown"])
    assert report["setup"].status == "succeeded"
    assert report["fetch"].status == "carried_over"


def test_from_a_finished_step_runs_it_and_everything_after_it_again(
    log: Log, journal_at: str
) -> None:
    run_id = failed_run(log, journal_at)
    report = resume(pipeline(log), run_id, journal=journal_at, from_step="checks")
    calls = log.calls
    # lint and types are branches of one parallel step: either may start first.
    assert (report.status, calls[0], sorted(calls[1:3]), calls[3:]) == (
        "succeeded",
        "setup",
        ["lint", "types"],
        ["build", "teardown"],
    )


def test_a_failed_parallel_step_reruns_only_its_failed_branches(log: Log, journal_at: str) -> None:
    run_id = failed_run(log, journal_at, broken="types")
    report = resume(pipeline(log), run_id, journal=journal_at)
    assert (report.status, log.calls) == ("succeeded", ["setup", "types", "build", "teardown"])


def test_a_branch_that_runs_again_runs_the_branches_nested_in_it_again(journal_at: str) -> None:
    """Only a failed fan_out's own branches are reused; the one that failed starts afresh."""
    calls: list[str] = []
    broken = {"b y"}

    def check(tag: str) -> Step:
        def run_step(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
            call = f"{tag} {ctx.inputs['item']}"
            calls.append(call)
            if call in broken:
                return IOFailure(PipelineError(tag, ErrorType.STEP_EXCEPTION, f"{call} broke"))
            return IOSuccess(ctx.merge_outputs({tag: call}))

        return Step(tag, run_step)

    inner = parallel("inner", [check("a"), check("b")])
    workflow = Workflow("nest", (fan_out("outer", inner, over="items", item="item"),))
    journal = journal_at
    first = run(workflow, {"items": ["x", "y"]}, journal=journal)
    nested = sorted(row.step for row in Journal(journal).attempts(first.run_id) if "/" in row.step)
    assert nested == [
        "outer[0]/inner[a]",
        "outer[0]/inner[b]",
        "outer[1]/inner[a]",
        "outer[1]/inner[b]",
    ]
    broken.clear()
    calls.clear()
    report = resume(workflow, first.run_id, journal=journal)
    assert (report.status, sorted(calls)) == ("succeeded", ["a y", "b y"])
    assert [{"a": branch["a"], "b": branch["b"]} for branch in report.inputs["outer"]] == [
        {"a": "a x", "b": "b x"},
        {"a": "a y", "b": "b y"},
    ]


def plan_of(log: Log, journal: str, run_id: str, **how: object) -> object:
    store = Journal(journal)
    return resume_plan(pipeline(log), store.attempts(run_id), **how)  # type: ignore[arg-type] # flags


def test_from_a_step_the_run_never_reached_or_does_not_have_is_refused(
    log: Log, journal_at: str
) -> None:
    run_id = failed_run(log, journal_at, broken="fetch")
    assert plan_of(log, journal_at, run_id, from_step="build") == (
        "--from build: the run has not finished 'fetch', which comes before it; "
        "a resume starts at 'fetch' without --from"
    )
    assert plan_of(log, journal_at, run_id, from_step="nope") == (
        "--from nope: workflow 'pipeline' has no such step (setup, fetch, checks, build, teardown)"
    )
    with pytest.raises(ValueError, match="has no such step"):
        resume(pipeline(log), run_id, journal=journal_at, from_step="nope")


def test_an_input_a_step_about_to_run_writes_is_refused(log: Log, journal_at: str) -> None:
    run_id = failed_run(log, journal_at)
    store = Journal(journal_at)
    record = store.find(run_id)
    assert not isinstance(record, str)
    refused = prepare_resume(
        pipeline(log), record, store.attempts(run_id), extra={"build": "forged"}
    )
    assert (
        refused == "input 'build' is written by step 'build', which this resume runs; leave it out"
    )
    started = prepare_resume(pipeline(log), record, store.attempts(run_id), extra={"note": "n"})
    assert not isinstance(started, str)
    assert (started.resume_from, started.context.inputs["note"]) == ("build", "n")


def test_a_changed_finished_step_is_refused_unless_rerun_or_forced(
    log: Log, journal_at: str
) -> None:
    run_id = failed_run(log, journal_at)
    edited = Workflow(
        "pipeline",
        tuple(
            Step("fetch", IOSuccess, reads=(), writes=("fetch",)) if step.name == "fetch" else step
            for step in pipeline(log).steps
        ),
    )
    store = Journal(journal_at)
    record = store.find(run_id)
    assert not isinstance(record, str)
    attempts = store.attempts(run_id)
    refused = prepare_resume(edited, record, attempts)
    assert isinstance(refused, str)
    assert refused.startswith("step 'fetch' of run ")
    rerun = prepare_resume(edited, record, attempts, rerun_changed=True)
    forced = prepare_resume(edited, record, attempts, keep_changed=True)
    assert not isinstance(rerun, str)
    assert not isinstance(forced, str)
    assert (rerun.resume_from, rerun.rerun, forced.resume_from) == ("fetch", ("setup",), "build")


def test_nothing_to_resume_runs_nothing_again(log: Log, journal_at: str) -> None:
    report = run(pipeline(log), journal=journal_at)
    store = Journal(journal_at)
    record = store.find(report.run_id)
    assert not isinstance(record, str)
    started = prepare_resume(pipeline(log), record, store.attempts(report.run_id))
    assert not isinstance(started, str)
    assert (started.resume_from, started.rerun) == (None, ())


RERUN = """
from returns.io import IOFailure, IOSuccess
from pathlib import Path
from adws import ErrorType, PipelineError, Step, Workflow


def first(ctx):
    return IOSuccess(ctx.merge_outputs({"first": 1}))


def second(ctx):
    if not Path("fixed").exists():
        return IOFailure(PipelineError("second", ErrorType.STEP_EXCEPTION, "broken"))
    return IOSuccess(ctx.merge_outputs({"second": 2}))


workflow = Workflow(
    "two",
    (Step("first", first, reads=(), writes=("first",)), Step("second", second, reads=(), writes=("second",))),
)
"""


def test_the_cli_refuses_a_bad_from_and_plans_a_good_one(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (in_tmp / "workflows").mkdir()
    (in_tmp / "workflows" / "two.py").write_text(RERUN, encoding="utf-8")
    assert main(["run", "two", "-q"]) == 1
    run_id = Journal(in_tmp / ".adws" / "runs.db").runs()[0].run_id
    capsys.readouterr()
    assert main(["resume", run_id, "--plan", "--from", "third"]) == 2
    assert capsys.readouterr().err == (
        "adws: error: --from third: workflow 'two' has no such step (first, second)\n"
    )
    assert main(["resume", run_id, "--plan", "--from", "first"]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == [
        "  1. first: to run",
        "  2. second: to run",
        "a resume starts at first",
        "kept 0 steps, $0.00 not spent again",
        "to finish: about $0.00, up to $0.00 (from 1 run; no history for second)",
        "options: none",
    ]
    (in_tmp / "fixed").touch()
    assert main(["resume", run_id, "--from", "first", "-i", "second=forged", "-q"]) == 2
    assert capsys.readouterr().err == (
        "adws: error: input 'second' is written by step 'second', which this resume runs; "
        "leave it out\n"
    )
    assert main(["resume", run_id, "--from", "first", "--max-agents", "2"]) == 0
    assert capsys.readouterr().err.splitlines()[0] == (
        f"resuming run {run_id} with max_agents: 2 (recorded: none)"
    )
