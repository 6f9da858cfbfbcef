"""worktree(step): a fresh git worktree per run, its commit, its outputs, and `keep`."""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

import pytest
from returns.io import IOFailure, IOResult, IOSuccess

from adws import (
    OutputContract,
    PipelineError,
    ScriptedAgent,
    Step,
    Workflow,
    WorkflowContext,
    agent_step,
    fan_out,
    parallel,
    run_workflow,
    shell_step,
    worktree,
)
from adws.engine.errors import json_safe
from adws.engine.events import WorktreeRecorded
from adws.render import error_lines, format_event, show_text
from tests.conftest import Events, failure, shared_worktree, success
from tests.workspaces.conftest import git, make_repo, writes

RUN = "r1"


def run(
    step: Step, repo: Path, tmp_path: Path, events: Events | None = None, **inputs: object
) -> IOResult[WorkflowContext, PipelineError]:
    """Run one step as a workflow of its own, worktrees under tmp_path/wt, run id r1."""
    return run_workflow(
        Workflow("w", (step,)),
        WorkflowContext(inputs={"target_dir": str(repo), **inputs}),
        run_id=RUN,
        worktrees=str(tmp_path / "wt"),
        observers=[] if events is None else [events],
    )


def recorded(events: Events) -> list[tuple[str, str, str]]:
    return [
        (event.label, event.state, event.tree[:4])
        for event in events.events
        if isinstance(event, WorktreeRecorded)
    ]


def test_a_commit_lands_on_the_runs_branch_and_the_checkout_is_untouched(
    repo: Path, tmp_path: Path
) -> None:
    step = worktree(writes("impl", {"src/app.py": "print(1)\n"}, summary="add the app"))
    final = success(run(step, repo, tmp_path))
    base = git(repo, "rev-parse", "main")
    commit = git(repo, "rev-parse", "adws/r1/impl")
    assert final.inputs["impl_branch"] == "adws/r1/impl"
    assert final.inputs["impl_commit"] == commit
    assert git(repo, "rev-parse", f"{commit}^") == base
    assert git(repo, "log", "-1", "--format=%s", commit) == "add the app"
    assert json_safe(final.inputs["impl_diffstat"]) == {
        "files": [{"path": "src/app.py", "added": 1, "deleted": 0}],
        "added": 1,
        "deleted": 0,
        "text": "1 file changed, 1 insertion(+)",
    }
    assert final.inputs["summary"] == "add the app"
    assert "worktree" not in final.inputs
    assert not (repo / "src").exists()
    assert not (tmp_path / "wt" / RUN).exists()  # removed after a success (keep="on_failure")
    assert (tmp_path / "wt" / ".gitignore").read_text() == "*\n"


def test_agent_and_shell_steps_without_a_cwd_run_in_the_worktree(
    repo: Path, tmp_path: Path
) -> None:
    agent = ScriptedAgent(["STATUS: done\nSUMMARY: looked"])
    ask = agent_step(
        "ask", prompt="work in {worktree}", agent=agent, contract=OutputContract(("SUMMARY",))
    )
    where = shell_step("where", "pwd")
    final = success(run(worktree(parallel("both", [ask, where]), name="job"), repo, tmp_path))
    folder = str((tmp_path / "wt" / RUN / "job").resolve())
    assert agent.requests[0].cwd == folder
    assert agent.prompts[0].startswith(f"work in {folder}")
    assert final.inputs["where_stdout"] == folder + "\n"
    assert final.inputs["job_commit"] == git(repo, "rev-parse", "main")  # nothing changed


def test_nothing_changed_means_no_commit_and_the_base_as_the_commit(
    repo: Path, tmp_path: Path
) -> None:
    final = success(run(worktree(writes("noop", {})), repo, tmp_path))
    assert final.inputs["noop_commit"] == git(repo, "rev-parse", "main")
    assert json_safe(final.inputs["noop_diffstat"]) == {
        "files": [],
        "added": 0,
        "deleted": 0,
        "text": "no changes",
    }
    assert git(repo, "branch", "--list", "adws/r1/noop") == ""  # it held nothing: gone with it


def test_without_a_summary_the_commit_message_names_the_run_and_the_step(
    repo: Path, tmp_path: Path
) -> None:
    success(run(worktree(writes("impl", {"a.txt": "a\n"}), name="change"), repo, tmp_path))
    message = git(repo, "log", "-1", "--format=%s", "adws/r1/change")
    assert message == "adws: run r1, step change"


def test_a_summary_input_is_the_message_when_the_step_outputs_none(
    repo: Path, tmp_path: Path
) -> None:
    success(run(worktree(writes("impl", {"a.txt": "a\n"})), repo, tmp_path, summary="from input"))
    assert git(repo, "log", "-1", "--format=%s", "adws/r1/impl") == "from input"


def test_a_deleted_file_and_a_binary_file_are_counted(repo: Path, tmp_path: Path) -> None:
    def change(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        folder = Path(str(ctx.inputs["worktree"]))
        (folder / "README").unlink()
        (folder / "logo.bin").write_bytes(b"\x00\x01\x02")
        return IOSuccess(ctx)

    final = success(run(worktree(Step("impl", change)), repo, tmp_path))
    assert json_safe(final.inputs["impl_diffstat"]) == {
        "files": [
            {"path": "README", "added": 0, "deleted": 1},
            {"path": "logo.bin", "added": 0, "deleted": 0},
        ],
        "added": 0,
        "deleted": 1,
        "text": "2 files changed, 1 deletion(-)",
    }


def test_a_failed_step_keeps_its_worktree_and_says_where(
    repo: Path, tmp_path: Path, events: Events
) -> None:
    def half_done(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        (Path(str(ctx.inputs["worktree"])) / "half.txt").write_text("half\n")
        return IOFailure(PipelineError("", "ShellFailed", "checks failed"))

    error = failure(run(worktree(Step("impl", half_done)), repo, tmp_path, events))
    folder = tmp_path / "wt" / RUN / "impl"
    assert (error.step_name, error.message) == ("impl", "checks failed")
    assert error.context["worktree"] == str(folder.resolve())
    assert error.context["branch"] == "adws/r1/impl"
    assert error_lines(error) == [
        f"the worktree is kept for inspection: {folder.resolve()} (branch adws/r1/impl)"
    ]
    assert (folder / "half.txt").read_text() == "half\n"
    assert git(repo, "rev-parse", "adws/r1/impl") == git(repo, "rev-parse", "main")  # no commit
    states = recorded(events)
    assert [(label, state) for label, state, _ in states] == [
        ("impl", "created"),
        ("impl", "present"),
    ]
    assert states[0][2] != states[1][2]  # the hash after the attempt saw half.txt


def test_keep_never_removes_the_worktree_of_a_failed_step(
    repo: Path, tmp_path: Path, events: Events
) -> None:
    step = worktree(
        Step("impl", lambda _ctx: IOFailure(PipelineError("", "X", "no"))), keep="never"
    )
    error = failure(run(step, repo, tmp_path, events))
    assert "worktree" not in error.context
    assert error_lines(error) == []
    assert error.context["branch"] == "adws/r1/impl"
    assert not (tmp_path / "wt" / RUN).exists()
    assert git(repo, "branch", "--list", "adws/r1/impl") == "adws/r1/impl"  # the branch stays
    assert recorded(events)[-1][:2] == ("impl", "removed")


def test_keep_always_keeps_the_worktree_of_a_success(repo: Path, tmp_path: Path) -> None:
    step = worktree(writes("impl", {"a.txt": "a\n"}), keep="always")
    success(run(step, repo, tmp_path))
    folder = tmp_path / "wt" / RUN / "impl"
    assert (folder / "a.txt").read_text() == "a\n"
    assert git(folder, "status", "--porcelain") == ""  # everything committed


def test_each_attempt_of_the_inner_step_is_hashed(
    repo: Path, tmp_path: Path, events: Events
) -> None:
    from adws import RetryPolicy  # noqa: PLC0415 - only this test retries

    calls: list[int] = []

    def flaky(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        calls.append(1)
        (Path(str(ctx.inputs["worktree"])) / f"try{len(calls)}.txt").write_text("x\n")
        if len(calls) == 1:
            return IOFailure(PipelineError("", "Timeout", "slow"))
        return IOSuccess(ctx)

    step = worktree(Step("impl", flaky, retry=RetryPolicy(max_attempts=2)))
    success(run(step, repo, tmp_path, events))
    assert [state for _, state, _ in recorded(events)] == [
        "created",
        "present",
        "present",
        "removed",
    ]
    lines = [format_event(event) for event in events.events if isinstance(event, WorktreeRecorded)]
    folder = (tmp_path / "wt" / RUN / "impl").resolve()
    assert lines == [
        f"      impl … worktree {folder} on branch adws/r1/impl",
        "",
        "",
        "      impl … worktree removed; branch adws/r1/impl stays",
    ]


def test_a_step_that_raises_is_hashed_too_and_fails_as_step_exception(
    repo: Path, tmp_path: Path, events: Events
) -> None:
    def boom(_ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        msg = "exploded"
        raise RuntimeError(msg)

    error = failure(run(worktree(Step("impl", boom)), repo, tmp_path, events))
    assert (error.error_type, error.message) == (
        "StepException",
        "step 'impl' raised RuntimeError: exploded",
    )
    assert [state for _, state, _ in recorded(events)] == ["created", "present"]


def test_a_worktree_whose_git_file_the_step_removed_is_still_hashed_through_its_git_directory(
    repo: Path, tmp_path: Path, events: Events
) -> None:
    def unlink_git(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        (Path(str(ctx.inputs["worktree"])) / ".git").unlink()
        return IOFailure(PipelineError("", "ShellFailed", "gave up"))

    failure(run(worktree(Step("impl", unlink_git)), repo, tmp_path, events))
    assert [state for _, state, _ in recorded(events)] == ["created", "present"]


def test_a_step_that_removed_its_own_worktree_fails_on_commit_and_is_cleaned_up(
    repo: Path, tmp_path: Path, events: Events
) -> None:
    def remove(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        import shutil  # noqa: PLC0415 - only this test

        shutil.rmtree(str(ctx.inputs["worktree"]))
        return IOSuccess(ctx)

    error = failure(run(worktree(Step("impl", remove), keep="never"), repo, tmp_path, events))
    assert error.error_type == "WorkspaceFailed"
    assert "cannot change to" in error.message
    assert "worktree" not in error.context
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1  # pruned


def test_each_branch_of_a_fan_out_gets_a_worktree_of_its_own(repo: Path, tmp_path: Path) -> None:
    def write_item(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        item = ctx.inputs["item"]
        (Path(str(ctx.inputs["worktree"])) / f"{item}.txt").write_text(f"{item}\n")
        return IOSuccess(ctx.merge_outputs({"wrote": item}))

    step = fan_out("items", worktree(Step("impl", write_item)), over="names")
    final = success(run(step, repo, tmp_path, names=["a", "b"]))
    branches = [outputs["impl_branch"] for outputs in final.inputs["items"]]
    assert branches == ["adws/r1/impl-items-0", "adws/r1/impl-items-1"]
    assert git(repo, "show", "--name-only", "--format=", "adws/r1/impl-items-1") == "b.txt"


def test_branches_of_nested_fan_outs_named_alike_get_worktrees_of_their_own(
    repo: Path, tmp_path: Path
) -> None:
    def mine(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        (Path(str(ctx.inputs["worktree"])) / "mine.txt").write_text(f"{ctx.inputs['name']}\n")
        return IOSuccess(ctx)

    inner = fan_out("inner", worktree(Step("impl", mine)), over="names", item="name")
    outer = fan_out("outer", inner, over="groups", item="names")
    success(
        run_workflow(
            Workflow("w", (outer,)),
            WorkflowContext(inputs={"target_dir": str(repo), "groups": [["a"], ["b"]]}),
            run_id=RUN,
            worktrees=str(tmp_path / "wt"),
        )
    )
    shown = {
        group: git(repo, "show", f"adws/r1/impl-outer-{group}-inner-0:mine.txt") for group in (0, 1)
    }
    assert shown == {0: "a", 1: "b"}


def test_a_worktree_another_session_of_the_run_holds_is_refused(repo: Path, tmp_path: Path) -> None:
    """The same run started twice at once in one process never shares a worktree."""
    refused = threading.Event()

    def hold(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        refused.wait(30)
        return IOSuccess(ctx)

    first: list[IOResult[WorkflowContext, PipelineError]] = []
    holder = threading.Thread(
        target=lambda: first.append(run(worktree(Step("impl", hold)), repo, tmp_path))
    )
    holder.start()
    folder = tmp_path / "wt" / RUN / "impl"
    deadline = time.monotonic() + 30
    while not (folder / "README").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    error = failure(run(worktree(Step("impl", hold)), repo, tmp_path))
    refused.set()
    holder.join(30)
    success(first[0])
    assert (error.error_type, error.message) == (
        "WorkspaceFailed",
        (
            f"worktree {folder.resolve()} is in use by another step of run r1 in this process (the"
            " same run started twice at once?): run it once, or name the worktree steps apart"
        ),
    )


def test_a_cancelled_branch_removes_its_worktree(repo: Path, tmp_path: Path) -> None:
    slow = worktree(shell_step("slow", "touch started; sleep 20"), name="slow_tree")
    wait = (
        "i=0; while [ ! -e {slow_dir}/started ] && [ $i -lt 400 ]; do i=$((i+1)); sleep 0.05; done"
    )
    fail = shell_step("fail", f"{wait}; exit 1")
    folder = tmp_path / "wt" / RUN / "both-slow_tree"
    error = failure(run(parallel("both", [slow, fail]), repo, tmp_path, slow_dir=str(folder)))
    assert error.step_name == "both[fail]"
    assert not folder.exists()


def test_ctrl_c_removes_the_worktree_unless_kept_always(repo: Path, tmp_path: Path) -> None:
    def interrupt(_ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        raise KeyboardInterrupt

    error = failure(run(worktree(Step("impl", interrupt)), repo, tmp_path))
    assert error.error_type == "Interrupted"
    assert not (tmp_path / "wt" / RUN / "impl").exists()
    kept = worktree(Step("kept", interrupt), keep="always")
    failure(run(kept, repo, tmp_path))
    assert (tmp_path / "wt" / RUN / "kept").is_dir()


def test_a_second_session_of_the_run_goes_on_in_the_kept_worktree(
    repo: Path, tmp_path: Path
) -> None:
    def once(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        folder = Path(str(ctx.inputs["worktree"]))
        if not (folder / "first.txt").exists():
            (folder / "first.txt").write_text("1\n")
            return IOFailure(PipelineError("", "ShellFailed", "not yet"))
        (folder / "second.txt").write_text("2\n")
        return IOSuccess(ctx)

    step = worktree(Step("impl", once))
    failure(run(step, repo, tmp_path))
    final = success(run(step, repo, tmp_path))
    files = git(repo, "show", "--name-only", "--format=", final.inputs["impl_commit"])
    assert files.splitlines() == ["first.txt", "second.txt"]


def test_not_a_repository_is_a_workspace_failure(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    error = failure(run(worktree(writes("impl", {})), plain, tmp_path))
    assert (error.step_name, error.error_type) == ("impl", "WorkspaceFailed")
    assert "not a git repository" in error.message
    assert "worktree" not in error.context


def test_a_repository_whose_folder_name_holds_a_line_break(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "my\nrepo")
    step = worktree(writes("impl", {"a.txt": "a\n"}))
    final = success(run(step, repo, tmp_path))
    assert git(repo, "show", "--name-only", "--format=", final.inputs["impl_commit"]) == "a.txt"


def test_an_unknown_base_is_a_workspace_failure(repo: Path, tmp_path: Path) -> None:
    error = failure(run(worktree(writes("impl", {}), base="{base}"), repo, tmp_path, base="nope"))
    assert error.message == f"base 'nope' is not a commit of the repository {repo}"


def test_a_base_other_than_head(repo: Path, tmp_path: Path) -> None:
    first = git(repo, "rev-parse", "main")
    (repo / "later.txt").write_text("later\n")
    git(repo, "add", "later.txt")
    git(repo, "commit", "-q", "-m", "later")
    final = success(run(worktree(writes("impl", {}), base=first), repo, tmp_path))
    assert final.inputs["impl_commit"] == first


def test_missing_inputs_fail_before_git_runs(repo: Path, tmp_path: Path) -> None:
    error = failure(
        run_workflow(
            Workflow("w", (worktree(writes("impl", {})),)),
            WorkflowContext(),
            worktrees=str(tmp_path / "wt"),
        )
    )
    assert (error.error_type, error.context["missing"]) == ("MissingInput", ("target_dir",))
    error = failure(run(worktree(writes("impl", {}), base="{base}"), repo, tmp_path))
    assert error.context["missing"] == ("base",)


def test_a_commit_git_refuses_keeps_the_worktree(
    repo: Path, tmp_path: Path, fake_git: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAIL_ON", "commit")
    error = failure(run(worktree(writes("impl", {"a.txt": "a\n"})), repo, tmp_path))
    assert error.error_type == "WorkspaceFailed"
    assert "fake git: refused" in error.message
    assert error.context["worktree"] == str((tmp_path / "wt" / RUN / "impl").resolve())


def test_a_checkout_that_fails_leaves_no_half_filled_worktree(repo: Path, tmp_path: Path) -> None:
    """The checkout runs outside the repository's lock; when it fails the worktree goes."""
    (repo / ".gitattributes").write_text("*.txt filter=boom\n")
    (repo / "a.txt").write_text("a\n")
    git(repo, "add", ".gitattributes", "a.txt")
    git(repo, "commit", "-q", "-m", "a file a filter must check out")
    git(repo, "config", "filter.boom.smudge", "false")
    git(repo, "config", "filter.boom.required", "true")
    error = failure(run(worktree(writes("impl", {"b.txt": "b\n"})), repo, tmp_path))
    assert (error.step_name, error.error_type) == ("impl", "WorkspaceFailed")
    assert "boom" in error.message
    assert not (tmp_path / "wt" / RUN / "impl").exists()
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1


def test_removal_git_refuses_leaves_the_worktree_recorded(
    repo: Path, tmp_path: Path, events: Events, fake_git: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAIL_ON", "remove")
    success(run(worktree(writes("impl", {"a.txt": "a\n"})), repo, tmp_path, events))
    assert (tmp_path / "wt" / RUN / "impl").is_dir()
    assert [state for _, state, _ in recorded(events)] == ["created", "present"]


def test_the_worktrees_folder_is_the_shared_one_by_default(repo: Path, in_tmp: Path) -> None:
    step = worktree(writes("impl", {}), keep="always")
    success(
        run_workflow(
            Workflow("w", (step,)), WorkflowContext(inputs={"target_dir": str(repo)}), run_id="r9"
        )
    )
    assert shared_worktree(repo, "r9", "impl").is_dir()
    assert not (in_tmp / ".adws").exists()


def test_show_describes_the_worktree() -> None:
    step = worktree(writes("impl", {}), keep="always", base="main")
    assert show_text(Workflow("w", (step,))).splitlines()[2:] == [
        (
            "  1. impl: worktree · 1 attempt · runs impl in a fresh worktree of {target_dir} from main,"
            " then commits (keep: always)"
        ),
        "     1. impl: python · 1 attempt",
    ]


@pytest.mark.parametrize(
    ("arguments", "kind", "message"),
    [
        (
            {"keep": "sometimes"},
            ValueError,
            "worktree 'impl': keep must be one of 'on_failure', 'always', 'never', got 'sometimes'",
        ),
        (
            {"repo": 3},
            TypeError,
            "worktree 'impl': repo must be a path or a placeholder such as '{target_dir}', got 3",
        ),
        (
            {"base": None},
            TypeError,
            "worktree 'impl': base must be a revision such as 'HEAD' or 'main', got None",
        ),
        ({"repo": "{Bad}"}, ValueError, "worktree 'impl': the repo has {Bad}"),
    ],
)
def test_impossible_arguments_are_refused_at_definition(
    arguments: dict[str, object], kind: type[Exception], message: str
) -> None:
    with pytest.raises(kind) as raised:
        worktree(writes("impl", {}), **arguments)  # type: ignore[arg-type] # wrong on purpose
    assert str(raised.value).startswith(message)


def test_a_worktree_of_something_not_a_step_is_refused() -> None:
    with pytest.raises(TypeError, match="worktree: step must be a Step, got 'impl'"):
        worktree("impl")  # type: ignore[arg-type] # wrong on purpose


def test_a_worktree_git_keeps_no_record_of_is_a_failure_naming_it(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The git directory is read from git's own record, never from the worktree's `.git`."""
    real = shutil.which("git")
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "git").write_text(
        f'#!/bin/sh\ncase " $* " in *" worktree add "*) exit 0;; esac\nexec {real} "$@"\n'
    )
    (fake / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    error = failure(run(worktree(writes("impl", {"a.txt": "a\n"})), repo, tmp_path))
    folder = (tmp_path / "wt" / RUN / "impl").resolve()
    assert (error.error_type, error.message) == (
        "WorkspaceFailed",
        f"git made the worktree {folder} but keeps no record of it in {repo / '.git'}",
    )
