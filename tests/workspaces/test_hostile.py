"""adws's own git runs no one's code: no hook, no file-system monitor, no repointed `.git`."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from returns.io import IOFailure, IOResult, IOSuccess

from adws import PipelineError, Step, Workflow, WorkflowContext, best_of, run_workflow, worktree
from tests.conftest import shared_worktree, start_adws
from tests.workspaces.conftest import git, make_repo, writes

HOOKS = (
    "applypatch-msg",
    "pre-applypatch",
    "post-applypatch",
    "pre-commit",
    "pre-merge-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
    "pre-rebase",
    "post-checkout",
    "post-merge",
    "pre-push",
    "pre-receive",
    "update",
    "proc-receive",
    "post-receive",
    "post-update",
    "reference-transaction",
    "push-to-checkout",
    "pre-auto-gc",
    "post-rewrite",
    "sendemail-validate",
    "fsmonitor-watchman",
    "p4-changelist",
    "p4-prepare-changelist",
    "p4-post-changelist",
    "p4-pre-submit",
    "post-index-change",
)
"""Every hook git knows (githooks(5)): each one, run, leaves a marker."""


def marking(script: Path, marker: Path) -> Path:
    """Write an executable script that leaves `marker` (a file named after it) when run."""
    script.write_text(f'#!/bin/sh\ntouch "{marker}"\n')
    script.chmod(0o755)
    return script


@pytest.fixture
def markers(tmp_path: Path) -> Path:
    """The folder where any hook or monitor adws's git ran leaves its marker (empty: none ran)."""
    folder = tmp_path / "markers"
    folder.mkdir()
    return folder


@pytest.fixture
def hooked(tmp_path: Path, markers: Path) -> Path:
    """A repository with every hook installed, and a file-system monitor configured, all marking."""
    repo = make_repo(tmp_path / "hooked")
    for hook in HOOKS:
        marking(repo / ".git" / "hooks" / hook, markers / hook)
    monitor = marking(tmp_path / "monitor", markers / "core.fsmonitor")
    git(repo, "config", "core.fsmonitor", str(monitor))
    return repo


def hostile_git_dir(tmp_path: Path, markers: Path) -> Path:
    """Make a git directory whose `core.fsmonitor` leaves a marker: a step repoints `.git` here."""
    folder = tmp_path / "hostile.git"
    subprocess.run(["git", "init", "-q", "--bare", str(folder)], check=True)
    monitor = marking(tmp_path / "hostile-monitor", markers / "hostile-fsmonitor")
    git(folder, "config", "core.fsmonitor", str(monitor))
    git(folder, "config", "core.bare", "false")
    return folder


def repointing(name: str, target: Path) -> Step:
    """A step that writes a file, then points its worktree's `.git` at `target`."""

    def run(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        folder = Path(str(ctx.inputs["worktree"]))
        (folder / "work.txt").write_text("work\n")
        (folder / ".git").write_text(f"gitdir: {target}\n")
        return IOSuccess(ctx)

    return Step(name, run, reads=("worktree",))


def run(step: Step, repo: Path, tmp_path: Path) -> IOResult[WorkflowContext, PipelineError]:
    return run_workflow(
        Workflow("w", (step,)),
        WorkflowContext(inputs={"target_dir": str(repo)}),
        run_id="r1",
        worktrees=str(tmp_path / "wt"),
    )


def test_git_runs_every_hook_and_the_monitor_of_this_repository_when_asked(
    hooked: Path, markers: Path
) -> None:
    """The fixture is hostile: git run plainly in it runs its hooks and its monitor."""
    (hooked / "new.txt").write_text("new\n")
    git(hooked, "add", "new.txt")
    git(hooked, "commit", "-q", "--no-verify", "-m", "plain git")
    assert {"post-commit", "prepare-commit-msg", "reference-transaction", "core.fsmonitor"} <= {
        marker.name for marker in markers.iterdir()
    }


def test_a_worktree_step_commits_without_running_a_hook_or_the_monitor(
    hooked: Path, tmp_path: Path, markers: Path
) -> None:
    result = run(worktree(writes("impl", {"a.txt": "a\n"}), keep="never"), hooked, tmp_path)
    assert isinstance(result, IOSuccess), result
    assert git(hooked, "show", "adws/r1/impl:a.txt") == "a"
    assert list(markers.iterdir()) == []


def test_best_of_runs_no_hook_nor_the_monitor(hooked: Path, tmp_path: Path, markers: Path) -> None:
    result = run(best_of("best", writes("impl", {"a.txt": "a\n"}), n=2), hooked, tmp_path)
    assert isinstance(result, IOSuccess), result
    assert (
        git(hooked, "branch", "--list", "adws/*", "--format=%(refname:short)") == "adws/r1/best-0"
    )
    assert list(markers.iterdir()) == []


def test_a_git_file_a_step_repointed_never_makes_adws_run_that_folders_monitor(
    repo: Path, tmp_path: Path, markers: Path
) -> None:
    hostile = hostile_git_dir(tmp_path, markers)
    result = run(worktree(repointing("impl", hostile), keep="always"), repo, tmp_path)
    assert isinstance(result, IOSuccess), result
    assert git(repo, "show", "adws/r1/impl:work.txt") == "work"  # committed where git made it
    assert git(hostile, "rev-list", "--all") == ""
    assert list(markers.iterdir()) == []


FLOWS = """
from pathlib import Path

from returns.io import IOFailure, IOSuccess

from adws import PipelineError, Step, Workflow, worktree


def repoint(ctx):
    folder = Path(ctx.inputs["worktree"])
    (folder / "work.txt").write_text("work\\n")
    (folder / ".git").write_text("gitdir: " + ctx.inputs["hostile"] + "\\n")
    if not Path("gate").exists():
        return IOFailure(PipelineError("", "ShellFailed", "the gate is closed"))
    return IOSuccess(ctx)


hostile = Workflow(
    "hostile",
    (worktree(Step("impl", repoint, reads=("worktree", "hostile"))),),
    inputs=("target_dir", "hostile"),
)
"""


def test_a_resume_refuses_a_repointed_git_file_and_going_on_runs_none_of_its_code(
    hooked: Path, tmp_path: Path, markers: Path
) -> None:
    (tmp_path / "workflows").mkdir()
    (tmp_path / "workflows" / "flows.py").write_text(FLOWS)
    hostile = hostile_git_dir(tmp_path, markers)
    given = ("--workflows", "workflows", "-i", f"target_dir={hooked}", "-i", f"hostile={hostile}")
    first = start_adws(tmp_path, "run", "hostile", *given)
    _, err = first.communicate(timeout=120)
    assert first.returncode == 1, err
    run_id = sqlite_run_id(tmp_path)
    folder = shared_worktree(hooked, run_id, "impl")
    gitdir = hooked / ".git" / "worktrees" / "impl"
    (tmp_path / "gate").touch()
    refused = start_adws(tmp_path, "resume", run_id, "--workflows", "workflows")
    _, err = refused.communicate(timeout=120)
    assert (refused.returncode, err) == (
        2,
        (
            f"adws: error: run {run_id} cannot be resumed as it was left: worktree impl ({folder}):"
            f" its .git points at {hostile}, not at {gitdir}, where git made it; pass --accept-drift"
            " to go on with the worktree as it is (a missing one starts again from its base)\n"
        ),
    )
    going_on = start_adws(tmp_path, "resume", run_id, "--workflows", "workflows", "--accept-drift")
    _, err = going_on.communicate(timeout=120)
    assert going_on.returncode == 0, err
    assert git(hooked, "show", f"adws/{run_id}/impl:work.txt") == "work"
    assert list(markers.iterdir()) == []


def sqlite_run_id(project: Path) -> str:
    import sqlite3  # noqa: PLC0415 - only this helper

    db = sqlite3.connect(project / "runs.db")
    try:
        ((run_id,),) = db.execute("SELECT run_id FROM runs").fetchall()
    finally:
        db.close()
    return str(run_id)


def test_a_step_that_fails_after_repointing_keeps_its_work_hashed_where_git_made_it(
    repo: Path, tmp_path: Path, markers: Path
) -> None:
    hostile = hostile_git_dir(tmp_path, markers)

    def fail(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        repointing("impl", hostile).run(ctx)
        return IOFailure(PipelineError("", "ShellFailed", "gave up"))

    result = run(worktree(Step("impl", fail, reads=("worktree",))), repo, tmp_path)
    assert isinstance(result, IOFailure)
    assert list(markers.iterdir()) == []
