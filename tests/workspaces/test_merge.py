"""fast_forward: a checkout's branch moved to a worktree's commit, never over uncommitted work."""

from __future__ import annotations

from pathlib import Path

import pytest
from returns.io import IOResult

from adws import PipelineError, Workflow, WorkflowContext, fast_forward, run_workflow
from adws.render import show_text
from tests.conftest import failure, success
from tests.workspaces.conftest import git


def commit_on_branch(repo: Path, name: str, text: str) -> str:
    """Commit `text` in a file on a new branch, leaving `main` checked out."""
    git(repo, "checkout", "-q", "-b", name)
    (repo / f"{name}.txt").write_text(text)
    git(repo, "add", f"{name}.txt")
    git(repo, "commit", "-q", "-m", name)
    commit = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "main")
    return commit


def merge(repo: Path, commit: str) -> IOResult[WorkflowContext, PipelineError]:
    return run_workflow(
        Workflow("w", (fast_forward("merge", commit="{winner}"),)),
        WorkflowContext(inputs={"target_dir": str(repo), "winner": commit}),
    )


def test_the_checkouts_branch_moves_to_the_commit(repo: Path) -> None:
    before = git(repo, "rev-parse", "main")
    commit = commit_on_branch(repo, "feature", "new\n")
    final = success(merge(repo, commit))
    assert dict(final.inputs) == {
        "target_dir": str(repo),
        "winner": commit,
        "merge_branch": "main",
        "merge_from": before,
        "merge_to": commit,
    }
    assert (repo / "feature.txt").read_text() == "new\n"


def test_uncommitted_changes_refuse_the_merge_naming_the_files(repo: Path) -> None:
    commit = commit_on_branch(repo, "feature", "new\n")
    (repo / "README").write_text("edited\n")
    (repo / "scratch.txt").write_text("untracked files do not count\n")
    error = failure(merge(repo, commit))
    assert (error.error_type, error.message) == (
        "WorkspaceFailed",
        (
            f"the checkout {repo} has uncommitted changes to README: commit or stash them, then"
            " resume the run"
        ),
    )
    assert list(error.context["files"]) == ["README"]
    assert git(repo, "rev-parse", "HEAD") != commit


def test_a_branch_that_moved_on_cannot_be_fast_forwarded(repo: Path) -> None:
    commit = commit_on_branch(repo, "feature", "new\n")
    (repo / "other.txt").write_text("other\n")
    git(repo, "add", "other.txt")
    git(repo, "commit", "-q", "-m", "main moved")
    error = failure(merge(repo, commit))
    assert error.error_type == "WorkspaceFailed"
    assert "Not possible to fast-forward" in error.message


def test_missing_inputs_are_named() -> None:
    step = fast_forward("merge", commit="{winner}", repo="{repo}")
    error = failure(run_workflow(Workflow("w", (step,)), WorkflowContext(inputs={"winner": "x"})))
    assert error.context["missing"] == ("repo",)
    error = failure(run_workflow(Workflow("w", (step,)), WorkflowContext(inputs={"repo": "."})))
    assert error.context["missing"] == ("winner",)


def test_show_describes_the_merge() -> None:
    shown = show_text(Workflow("w", (fast_forward("merge", commit="{best_commit}"),)))
    assert shown.splitlines()[2] == (
        "  1. merge: fast_forward · 1 attempt · fast-forwards the branch checked out in"
        " {target_dir} to {best_commit}"
    )


def test_impossible_arguments_are_refused_at_definition() -> None:
    with pytest.raises(TypeError, match="fast_forward 'merge': commit must be"):
        fast_forward("merge", commit=3)  # type: ignore[arg-type] # wrong on purpose
    with pytest.raises(ValueError, match=r"fast_forward 'merge': the commit has \{Best\}"):
        fast_forward("merge", commit="{Best}")
