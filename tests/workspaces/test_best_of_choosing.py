"""best_of that stops early, ranks by failures, asks a judge, and protects paths."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from returns.io import IOFailure, IOResult, IOSuccess

from adws import (
    OutputContract,
    PipelineError,
    RetryPolicy,
    Step,
    Workflow,
    WorkflowContext,
    agent_step,
    best_of,
    run_workflow,
    shell_step,
    with_verification,
    worktree,
)
from adws.agents import AgentRequest, AgentResponse, ScriptedAgent
from adws.agents.swap import use_agent
from adws.engine.combinators import VerificationSpec
from adws.workspaces.candidates import BestOfSpec, failure_count
from adws.workspaces.judging import JUDGE_CONTRACT, Judge, judge
from adws.workspaces.seeds import SeedSpec
from adws.workspaces.worktrees import WorktreeSpec
from tests.conftest import failure, success, wait_for
from tests.workspaces.conftest import git

RUN = "r1"


def run(step: Step, repo: Path, tmp_path: Path) -> IOResult[WorkflowContext, PipelineError]:
    return run_workflow(
        Workflow("w", (step,)),
        WorkflowContext(inputs={"target_dir": str(repo)}),
        run_id=RUN,
        worktrees=str(tmp_path / "wt"),
    )


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"


def test_early_stop_kills_the_slow_branches_processes_once_the_first_passes(
    repo: Path, tmp_path: Path
) -> None:
    pids = tmp_path / "pids"
    pids.mkdir()
    slow = shell_step("slow", "echo $$ > {pid_file}; exec sleep 60")

    def attempt(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        index = int(str(ctx.inputs["best_index"]))
        if index == 0:
            wait_for(lambda: len(list(pids.iterdir())) == 2)  # the others are running
            (Path(str(ctx.inputs["worktree"])) / "done.txt").write_text("ok\n")
            return IOSuccess(ctx.merge_outputs({"summary": "fast"}))
        return slow.run(WorkflowContext(inputs={**ctx.inputs, "pid_file": str(pids / str(index))}))

    started = time.monotonic()
    step = best_of("best", Step("impl", attempt), n=3, early_stop=True)
    final = success(run(step, repo, tmp_path))
    assert time.monotonic() - started < 30
    outcomes = final.inputs["best_outcomes"]
    assert [o["status"] for o in outcomes] == [
        "succeeded",
        "cancelled (early stop)",
        "cancelled (early stop)",
    ]
    killed = [int((pids / name).read_text()) for name in ("1", "2")]
    wait_for(lambda: all(gone(pid) for pid in killed), seconds=10)
    assert final.inputs["best_winner"] == 0
    assert git(repo, "branch", "--list", "adws/*", "--format=%(refname:short)") == "adws/r1/best-0"


def failing(counts: dict[int, int], name: str = "best") -> Step:
    """Branch i passes with `counts[i]` verify failures left (as `impl_failures` ids)."""

    def run_one(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        index = int(str(ctx.inputs[f"{name}_index"]))
        (Path(str(ctx.inputs["worktree"])) / "out.txt").write_text(f"{index}\n")
        if index not in counts:
            return IOFailure(PipelineError("", "ShellFailed", f"attempt {index} failed"))
        ids = [f"t::{n}" for n in range(counts[index])]
        return IOSuccess(ctx.merge_outputs({"impl_failures": ids, "summary": f"attempt {index}"}))

    return Step("impl", run_one)


def test_fewest_failures_keeps_the_branch_that_left_fewest_ties_to_the_lowest(
    repo: Path, tmp_path: Path
) -> None:
    step = best_of("best", failing({0: 2, 2: 1, 3: 1}), n=4, select="fewest_failures")
    assert success(run(step, repo, tmp_path)).inputs["best_winner"] == 2


def test_early_stop_with_fewest_failures_stops_at_a_branch_with_none(
    repo: Path, tmp_path: Path
) -> None:
    step = best_of(
        "best",
        failing({0: 1, 1: 0, 2: 0}),
        n=3,
        select="fewest_failures",
        early_stop=True,
        max_concurrency=1,
    )
    final = success(run(step, repo, tmp_path))
    assert final.inputs["best_winner"] == 1
    assert [o["status"] for o in final.inputs["best_outcomes"]] == [
        "succeeded",
        "succeeded",
        "cancelled (early stop)",
    ]


def test_early_stop_waits_for_a_lower_branch_still_running_and_never_for_other_selects(
    repo: Path, tmp_path: Path
) -> None:
    step = best_of("best", failing({1: 0}), n=3, early_stop=True, max_concurrency=1)
    final = success(run(step, repo, tmp_path))
    assert [o["status"] for o in final.inputs["best_outcomes"]] == [
        "failed",
        "succeeded",
        "cancelled (early stop)",
    ]
    smallest = best_of(
        "b2", failing({0: 0, 1: 0}, "b2"), n=2, select="smallest_diff", early_stop=True
    )
    final = success(run(smallest, repo, tmp_path))
    assert [o["status"] for o in final.inputs["b2_outcomes"]] == ["succeeded", "succeeded"]


def test_no_branch_passing_with_early_stop_fails_as_before(repo: Path, tmp_path: Path) -> None:
    step = best_of("best", failing({}), n=2, early_stop=True, select="fewest_failures")
    error = failure(run(step, repo, tmp_path))
    assert [o["status"] for o in error.context["outcomes"]] == ["failed", "failed"]


def test_a_judge_chooses_among_the_passing_diffs_and_its_choice_is_journaled(
    repo: Path, tmp_path: Path
) -> None:
    asked: list[str] = []

    def answer(request: AgentRequest) -> AgentResponse:
        asked.append(request.prompt)
        return AgentResponse(
            'STATUS: done\nCHOICE_JSON: {"index": 2, "reason": "smallest and clear"}'
        )

    chooser = agent_step(
        "choose",
        prompt="Pick one of {best_candidates}",
        agent=ScriptedAgent([answer]),
        contract=JUDGE_CONTRACT,
    )
    step = best_of("best", failing({0: 0, 2: 0}), n=3, select=judge(chooser))
    final = success(run(step, repo, tmp_path))
    assert final.inputs["best_winner"] == 2
    assert final.inputs["best_judgement"] == {"index": 2, "reason": "smallest and clear"}
    assert ('"summary": "attempt 0"' in asked[0], '"summary": "attempt 2"' in asked[0]) == (
        True,
        True,
    )
    assert "attempt 1" not in asked[0]
    assert "+2" in asked[0]
    assert isinstance(step.spec, BestOfSpec)
    assert step.spec.describe().endswith("keeps the one choose chooses")


def test_a_judge_whose_prompt_never_names_the_candidates_is_given_them(
    repo: Path, tmp_path: Path
) -> None:
    asked: list[str] = []

    def answer(request: AgentRequest) -> AgentResponse:
        asked.append(request.prompt)
        return AgentResponse('STATUS: done\nCHOICE_JSON: {"index": 0, "reason": "it is right"}')

    chooser = agent_step(
        "choose",
        prompt="Pick the attempt that fixes the bug.",
        agent=ScriptedAgent([answer]),
        contract=JUDGE_CONTRACT,
        retry=RetryPolicy(max_attempts=1),
    )
    step = best_of("best", failing({0: 0, 2: 0}), n=3, select=judge(chooser))
    assert success(run(step, repo, tmp_path)).inputs["best_winner"] == 0
    assert asked[0].startswith(
        "Pick the attempt that fixes the bug.\n\nThe candidates, one per attempt that passed"
        ' (its index, summary, diffstat and diff):\n[\n  {\n    "index": 0,\n    "summary":'
        ' "attempt 0",'
    )
    assert ('"summary": "attempt 2"' in asked[0], "+2" in asked[0]) == (True, True)
    assert isinstance(step.spec, BestOfSpec)
    assert isinstance(step.spec.select, Judge)
    judged = step.spec.select.step
    assert judged.retry == RetryPolicy(max_attempts=1)  # the judge step is otherwise as it was
    swapped = use_agent(Workflow("w", (step,)), ScriptedAgent([])).steps[0].spec
    assert isinstance(swapped, BestOfSpec)
    assert isinstance(swapped.select, Judge)
    assert swapped.select.step.spec == judged.spec  # appended once, however often it is built


def test_a_judge_that_names_its_candidates_or_builds_no_prompt_is_kept_as_it_is() -> None:
    named = agent_step(
        "choose",
        prompt="Compare {best_candidates[0].diff} with the rest.",
        agent=ScriptedAgent([]),
        contract=JUDGE_CONTRACT,
    )
    python = Step("choose", IOSuccess)
    for chooser in (named, python):
        step = best_of("best", failing({0: 0}), n=2, select=judge(chooser))
        assert isinstance(step.spec, BestOfSpec)
        assert isinstance(step.spec.select, Judge)
        assert step.spec.select.step is chooser


def orphans(which: set[int]) -> Step:
    """Branch i commits on an orphan branch of its worktree when i is in `which`."""

    def run_one(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        index = int(str(ctx.inputs["best_index"]))
        tree = Path(str(ctx.inputs["worktree"]))
        if index in which:  # history of its own: no merge base with the project's
            git(tree, "checkout", "-q", "--orphan", f"elsewhere-{index}")
        (tree / "out.txt").write_text(f"{index}\n")
        return IOSuccess(ctx.merge_outputs({"summary": f"attempt {index}"}))

    return Step("impl", run_one)


def test_a_branch_whose_diff_git_cannot_take_is_a_failed_branch_not_a_failed_step(
    repo: Path, tmp_path: Path
) -> None:
    shown: list[list[int]] = []

    def choose(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        shown.append([int(str(c["index"])) for c in ctx.inputs["best_candidates"]])
        return IOSuccess(ctx.merge_outputs({"choice_json": {"index": 0, "reason": "sound"}}))

    step = best_of("best", orphans({1}), n=3, select=judge(Step("choose", choose)))
    final = success(run(step, repo, tmp_path))
    assert (final.inputs["best_winner"], shown) == (0, [[0, 2]])
    outcomes = final.inputs["best_outcomes"]
    assert [o["status"] for o in outcomes] == ["succeeded", "failed", "succeeded"]
    error = outcomes[1]["error"]
    assert (error["step_name"], error["error_type"]) == ("best[1]", "WorkspaceFailed")
    assert error["message"].startswith(
        "best_of 'best': git cannot show branch 1's change against the base, so no judge can"
        " read it: `git -C "
    )
    assert error["message"].endswith("no merge base")
    assert git(repo, "branch", "--list", "adws/r1/best-1") == ""  # a loser: removed


def test_no_branch_the_judge_can_be_shown_fails_the_step_with_the_first(
    repo: Path, tmp_path: Path
) -> None:
    def choose(_ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        raise AssertionError  # never asked: there is nothing to choose from

    step = best_of("best", orphans({0, 1}), n=2, select=judge(Step("choose", choose)))
    error = failure(run(step, repo, tmp_path))
    assert (error.step_name, error.error_type) == ("best[0]", "WorkspaceFailed")
    assert [o["status"] for o in error.context["outcomes"]] == ["failed", "failed"]


def test_a_judge_choosing_a_failed_branch_fails_the_step_naming_the_choices(
    repo: Path, tmp_path: Path
) -> None:
    def choose(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        return IOSuccess(ctx.merge_outputs({"choice_json": {"index": 1, "reason": "?"}}))

    step = best_of("best", failing({0: 0}), n=2, select=judge(Step("choose", choose)))
    error = failure(run(step, repo, tmp_path))
    assert (error.error_type, error.message) == (
        "ContractViolation",
        (
            "the judge 'choose' of best_of 'best' chose 1; it must answer CHOICE_JSON with the index"
            " of an attempt that passed (0)"
        ),
    )


def test_a_judge_that_fails_fails_the_step(repo: Path, tmp_path: Path) -> None:
    def choose(_ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        return IOFailure(PipelineError("", "Blocked", "cannot tell"))

    step = best_of("best", failing({0: 0}), n=1, select=judge(Step("choose", choose)))
    error = failure(run(step, repo, tmp_path))
    assert (error.step_name, error.error_type) == ("choose", "Blocked")
    assert [o["status"] for o in error.context["outcomes"]] == ["succeeded"]


def test_a_judge_must_be_a_step() -> None:
    with pytest.raises(TypeError, match=r"judge: step must be a Step"):
        judge("choose")  # type: ignore[arg-type] # wrong on purpose


def test_a_branch_that_edits_a_protected_path_fails_tampered(repo: Path, tmp_path: Path) -> None:
    def edits(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        index = int(str(ctx.inputs["best_index"]))
        name = "README" if index == 0 else "code.py"
        (Path(str(ctx.inputs["worktree"])) / name).write_text("changed\n")
        return IOSuccess(ctx)

    step = best_of("best", Step("impl", edits), n=2, protect=("README",))
    final = success(run(step, repo, tmp_path))
    first = final.inputs["best_outcomes"][0]
    assert (first["status"], first["error"]["error_type"], first["error"]["context"]["files"]) == (
        "failed",
        "Tampered",
        ("README",),
    )
    assert final.inputs["best_winner"] == 1


def test_a_worktree_attempt_that_tampers_is_retried_with_the_files_named(
    repo: Path, tmp_path: Path
) -> None:
    seen: list[tuple[str, ...]] = []

    def edits(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        seen.append(ctx.feedback)
        folder = Path(str(ctx.inputs["worktree"]))
        (folder / "README").write_text("weakened\n" if len(seen) == 1 else "hello\n")
        (folder / "code.py").write_text("x = 1\n")
        return IOSuccess(ctx)

    step = worktree(
        Step("impl", edits, retry=RetryPolicy(max_attempts=2)), protect=("README", "tests/**")
    )
    final = success(run(step, repo, tmp_path))
    assert seen[1] == (
        (
            "attempt 1/2 failed: Tampered: changed protected files README: restore README; do not"
            " change README or tests/** (they are how the work is checked)"
        ),
    )
    assert final.inputs["impl_diffstat"]["files"] == (
        {"path": "code.py", "added": 1, "deleted": 0},
    )


def test_failure_count_counts_every_failures_list() -> None:
    assert failure_count({"a_failures": ["x"], "b_failures": ("y", "z"), "c_failures": "no"}) == 3


def test_use_agent_keeps_early_stop_protect_baseline_and_recheck() -> None:
    ask = agent_step("impl", prompt="p", agent=ScriptedAgent([]), contract=OutputContract())
    verified = with_verification(
        ask, Step("v", IOSuccess), baseline=True, recheck=2, protect=("t/**",)
    )
    steps = (
        best_of(
            "best", verified, n=2, early_stop=True, protect=("a/**",), select="fewest_failures"
        ),
        worktree(ask, name="w", protect=("b/**",)),
    )
    swapped = use_agent(Workflow("w", steps), ScriptedAgent([]))
    best, work = swapped.steps
    assert isinstance(best.spec, BestOfSpec)
    assert (best.spec.early_stop, best.spec.protect, best.spec.select) == (
        True,
        ("a/**",),
        "fewest_failures",
    )
    inner = best.spec.step.spec
    assert isinstance(inner, VerificationSpec)
    assert (inner.baseline, inner.recheck, inner.protect) == (True, 2, ("t/**",))
    assert isinstance(work.spec, WorktreeSpec)
    assert work.spec.protect == ("b/**",)


def test_use_agent_keeps_the_seeds_of_worktree_and_best_of() -> None:
    ask = agent_step("impl", prompt="p", agent=ScriptedAgent([]), contract=OutputContract())
    key, share = ("package-lock.json",), ("node_modules",)
    steps = (
        best_of("best", ask, n=2, setup="npm ci", setup_key=key, share=share, share_mode="copy"),
        worktree(ask, name="w", setup="npm ci", setup_key=key, share=share, share_mode="symlink"),
    )
    best, work = use_agent(Workflow("w", steps), ScriptedAgent([])).steps
    assert isinstance(best.spec, BestOfSpec)
    assert isinstance(work.spec, WorktreeSpec)
    assert (best.spec.seed, work.spec.seed) == (
        SeedSpec("npm ci", ("package-lock.json",), ("node_modules",), "copy"),
        SeedSpec("npm ci", ("package-lock.json",), ("node_modules",), "symlink"),
    )
