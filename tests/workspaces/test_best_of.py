"""best_of: n worktrees side by side, a winner chosen, the losers removed, every spend counted."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest
from returns.io import IOFailure, IOResult, IOSuccess

from adws import (
    OutputContract,
    PipelineError,
    Step,
    Workflow,
    WorkflowContext,
    agent_step,
    best_of,
    run_workflow,
)
from adws.agents import AgentRequest, AgentResponse, ScriptedAgent
from adws.agents.swap import use_agent
from adws.engine.errors import json_safe
from adws.engine.events import RunFinished, WorktreeRecorded
from adws.engine.parking import park
from adws.engine.usage import Usage
from adws.render import format_event, show_text
from adws.workspaces import BestOfSpec
from tests.conftest import Events, failure, success
from tests.workspaces.conftest import git

RUN = "r1"


def run(
    step: Step, repo: Path, tmp_path: Path, events: Events | None = None
) -> IOResult[WorkflowContext, PipelineError]:
    return run_workflow(
        Workflow("w", (step,)),
        WorkflowContext(inputs={"target_dir": str(repo)}),
        run_id=RUN,
        worktrees=str(tmp_path / "wt"),
        observers=[] if events is None else [events],
    )


def attempt(passing: set[int], lines: Mapping[int, int] | None = None) -> Step:
    """Branch i writes `lines[i]` lines (i+1 by default) and passes when i is in `passing`."""

    def run_one(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        index = int(str(ctx.inputs["best_index"]))
        count = (lines or {}).get(index, index + 1)
        (Path(str(ctx.inputs["worktree"])) / "out.txt").write_text("x\n" * count)
        if index not in passing:
            return IOFailure(PipelineError("", "ShellFailed", f"attempt {index} failed"))
        return IOSuccess(ctx.merge_outputs({"summary": f"attempt {index}"}))

    return Step("impl", run_one)


def branches(repo: Path) -> list[str]:
    return git(repo, "branch", "--list", "adws/*", "--format=%(refname:short)").splitlines()


def test_the_first_passing_branch_wins_and_the_others_are_removed(
    repo: Path, tmp_path: Path, events: Events
) -> None:
    final = success(run(best_of("best", attempt({1, 2}), n=3), repo, tmp_path, events))
    assert final.inputs["best_winner"] == 1
    assert final.inputs["best_branch"] == "adws/r1/best-1"
    assert final.inputs["best_commit"] == git(repo, "rev-parse", "adws/r1/best-1")
    assert final.inputs["summary"] == "attempt 1"
    assert final.inputs["best_diffstat"]["text"] == "1 file changed, 2 insertions(+)"
    assert branches(repo) == ["adws/r1/best-1"]
    assert list((tmp_path / "wt").iterdir()) == [tmp_path / "wt" / ".gitignore"]
    outcomes = final.inputs["best_outcomes"]
    assert [(o["index"], o["status"], o["branch"]) for o in outcomes] == [
        (0, "failed", None),
        (1, "succeeded", "adws/r1/best-1"),
        (2, "succeeded", "adws/r1/best-2"),
    ]
    assert outcomes[0]["error"]["message"] == "attempt 0 failed"
    discarded = [
        format_event(event)
        for event in events.events
        if isinstance(event, WorktreeRecorded) and event.state == "discarded"
    ]
    assert discarded == [
        "      best[0] … not chosen: worktree and branch adws/r1/best-0 removed",
        "      best[2] … not chosen: worktree and branch adws/r1/best-2 removed",
    ]


def test_each_branch_sees_its_index_and_its_own_worktree(repo: Path, tmp_path: Path) -> None:
    seen: list[tuple[object, object]] = []

    def note(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        seen.append((ctx.inputs["best_index"], Path(str(ctx.inputs["worktree"])).name))
        return IOSuccess(ctx)

    success(run(best_of("best", Step("impl", note), n=2), repo, tmp_path))
    assert sorted(seen) == [(0, "best-0"), (1, "best-1")]


def test_smallest_diff_picks_the_fewest_changed_lines_ties_to_the_lowest_index(
    repo: Path, tmp_path: Path
) -> None:
    step = best_of("best", attempt({0, 1, 2}, {0: 5, 1: 2, 2: 2}), n=3, select="smallest_diff")
    assert success(run(step, repo, tmp_path)).inputs["best_winner"] == 1


def test_a_select_function_sees_each_branchs_outputs(repo: Path, tmp_path: Path) -> None:
    seen: list[tuple[object, ...]] = []

    def last(results: tuple[Mapping[str, object] | None, ...]) -> int:
        seen.append(tuple(None if r is None else r["summary"] for r in results))
        return 2

    final = success(run(best_of("best", attempt({0, 2}), n=3, select=last), repo, tmp_path))
    assert (final.inputs["best_winner"], seen) == (2, [("attempt 0", None, "attempt 2")])


@pytest.mark.parametrize(
    ("returned", "message"),
    [
        (1, "returned 1; it must return the index of a branch that succeeded (0, 2)"),
        (True, "returned True; it must return"),
        ("0", "returned '0'; it must return"),
    ],
)
def test_a_select_function_must_name_a_branch_that_passed(
    repo: Path, tmp_path: Path, returned: object, message: str
) -> None:
    step = best_of("best", attempt({0, 2}), n=3, select=lambda _results: returned)  # type: ignore[arg-type, return-value] # wrong on purpose
    error = failure(run(step, repo, tmp_path))
    assert (error.step_name, error.error_type) == ("best", "StepException")
    assert message in error.message
    assert len(error.context["outcomes"]) == 3


def test_a_select_function_that_raises_fails_the_step(repo: Path, tmp_path: Path) -> None:
    def broken(_results: object) -> int:
        msg = "cannot choose"
        raise ValueError(msg)

    error = failure(run(best_of("best", attempt({0}), n=2, select=broken), repo, tmp_path))
    assert error.message.endswith("raised ValueError: cannot choose")


def test_no_branch_passing_fails_with_the_first_branchs_error_and_keeps_the_worktrees(
    repo: Path, tmp_path: Path
) -> None:
    error = failure(run(best_of("best", attempt(set()), n=2), repo, tmp_path))
    assert (error.step_name, error.message) == ("best[0]", "attempt 0 failed")
    assert [o["status"] for o in error.context["outcomes"]] == ["failed", "failed"]
    assert sorted(p.name for p in (tmp_path / "wt" / RUN).iterdir()) == ["best-0", "best-1"]
    assert branches(repo) == ["adws/r1/best-0", "adws/r1/best-1"]


def test_every_branchs_spend_is_reported_and_counted(
    repo: Path, tmp_path: Path, events: Events
) -> None:
    def answer(request: AgentRequest) -> AgentResponse:
        text = (
            "STATUS: blocked\nREASON: no"
            if "attempt 1" in request.prompt
            else "STATUS: done\nSUMMARY: ok"
        )
        return AgentResponse(text, usage=Usage(cost_usd=0.5, input_tokens=10))

    ask = agent_step(
        "impl",
        prompt="attempt {best_index}",
        agent=ScriptedAgent([answer, answer]),
        contract=OutputContract(("SUMMARY",)),
    )
    final = success(run(best_of("best", ask, n=2), repo, tmp_path, events))
    outcomes = final.inputs["best_outcomes"]
    spent = {
        "cost_usd": 0.5,
        "input_tokens": 10,
        "output_tokens": None,
        "turns": None,
        "model": None,
    }
    assert [(o["status"], json_safe(o["usage"])) for o in outcomes] == [
        ("succeeded", spent),
        ("failed", spent),
    ]
    finished = events.events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.usage == Usage(cost_usd=1.0, input_tokens=20)


def test_an_index_input_already_there_is_a_collision(repo: Path, tmp_path: Path) -> None:
    error = failure(
        run_workflow(
            Workflow("w", (best_of("best", attempt({0}), n=1),)),
            WorkflowContext(inputs={"target_dir": str(repo), "best_index": 7}),
            worktrees=str(tmp_path / "wt"),
        )
    )
    assert (error.error_type, error.message) == (
        "ContextCollision",
        "best_of 'best': input 'best_index' exists already; rename the step",
    )


def test_a_missing_repo_input_fails_before_any_branch(tmp_path: Path) -> None:
    error = failure(
        run_workflow(Workflow("w", (best_of("best", attempt({0}), n=2),)), WorkflowContext())
    )
    assert (error.error_type, error.context["missing"]) == ("MissingInput", ("target_dir",))


def test_a_loser_git_will_not_delete_fails_the_step(
    repo: Path, tmp_path: Path, fake_git: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAIL_ON", "-D")
    error = failure(run(best_of("best", attempt({0, 1}), n=2), repo, tmp_path))
    assert error.error_type == "WorkspaceFailed"
    assert error.message.startswith("could not remove a losing branch: `git -C")
    assert len(error.context["outcomes"]) == 2


def test_show_describes_best_of() -> None:
    step = best_of("best", attempt(set()), n=3, max_concurrency=2, select=lambda _r: 0)
    assert show_text(Workflow("w", (step,))).splitlines()[2] == (
        "  1. best: best_of · 1 attempt · runs impl 3 times side by side, each in a worktree of"
        " {target_dir}, at most 2 at a time; keeps the one select picks"
    )


def test_use_agent_swaps_the_agent_inside_and_keeps_the_rest(repo: Path, tmp_path: Path) -> None:
    pick = lambda _results: 1  # noqa: E731 - a select function, as a user writes one
    inner = agent_step("impl", prompt="go", agent=ScriptedAgent([]), contract=OutputContract(()))
    workflow = Workflow("w", (best_of("best", inner, n=2, select=pick, max_concurrency=1),))
    swapped = use_agent(workflow, ScriptedAgent(["STATUS: done", "STATUS: done"]))
    spec = swapped.steps[0].spec
    assert isinstance(spec, BestOfSpec)
    assert (spec.n, spec.select, spec.max_concurrency, spec.repo) == (2, pick, 1, "{target_dir}")
    final = success(
        run_workflow(
            swapped,
            WorkflowContext(inputs={"target_dir": str(repo)}),
            run_id=RUN,
            worktrees=str(tmp_path / "wt"),
        )
    )
    assert final.inputs["best_winner"] == 1


@pytest.mark.parametrize(
    ("arguments", "kind", "message"),
    [
        ({"n": 0}, ValueError, "best_of 'best': n must be an int >= 1, got 0"),
        (
            {"n": 2, "select": "best"},
            ValueError,
            "best_of 'best': select must be 'first_passing', 'smallest_diff', 'fewest_failures', judge(step) or a function, got 'best'",
        ),
        (
            {"n": 2, "max_concurrency": 0},
            ValueError,
            "best_of 'best': max_concurrency must be an int >= 1, got 0",
        ),
        ({"n": 2, "repo": "{x.}"}, ValueError, "best_of 'best': the repo has {x.}"),
    ],
)
def test_impossible_arguments_are_refused_at_definition(
    arguments: dict[str, object], kind: type[Exception], message: str
) -> None:
    with pytest.raises(kind) as raised:
        best_of("best", attempt(set()), **arguments)  # type: ignore[arg-type] # wrong on purpose
    assert str(raised.value).startswith(message)


def test_a_parked_branch_parks_the_step_once_the_others_ended_and_keeps_its_worktree(
    repo: Path, tmp_path: Path
) -> None:
    def limited(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        index = int(str(ctx.inputs["best_index"]))
        (Path(str(ctx.inputs["worktree"])) / "out.txt").write_text(f"{index}\n")
        if index == 1:
            error = PipelineError("", "AgentUnavailable", "API error 429 (usage limit)")
            return IOFailure(park(error, 5000.0, "claude usage limit"))
        return IOSuccess(ctx.merge_outputs({"summary": f"attempt {index}"}))

    error = failure(run(best_of("best", Step("impl", limited), n=3), repo, tmp_path))
    assert (error.error_type, error.step_name) == ("Parked", "best")
    assert error.message == "claude usage limit (1 of 3 branches parked: best[1])"
    assert error.context["wake_at"] == 5000.0
    statuses = {path: branch["status"] for path, branch in error.context["branches"].items()}
    assert statuses == {"best[0]": "succeeded", "best[1]": "failed", "best[2]": "succeeded"}
    assert [o["status"] for o in error.context["outcomes"]] == ["succeeded", "failed", "succeeded"]
    # The parked branch's worktree stays for the resume; the others committed on their branches.
    assert sorted(path.name for path in (tmp_path / "wt" / "r1").iterdir()) == ["best-1"]
    assert branches(repo) == ["adws/r1/best-0", "adws/r1/best-1", "adws/r1/best-2"]
