"""Worktrees and approvals as users run them: real `adws` processes, signals, a shared repository."""

from __future__ import annotations

import signal
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import shared_worktree, start_adws, wait_for
from tests.workspaces.conftest import git, make_repo

pytestmark = pytest.mark.slow

FLOWS = """
from returns.io import IOSuccess

from adws import Step, Workflow, best_of, shell_step, worktree

# Every worktree of both runs waits here until six have started: creating them overlapped.
BARRIER = (
    "touch ../../../started-$$; i=0; while [ $(ls ../../../started-* | wc -l) -lt 6 ]; do"
    " i=$((i+1)); [ $i -gt 600 ] && exit 1; sleep 0.05; done; echo $$ > change-$$.txt"
)

crowd = Workflow("crowd", (best_of("many", shell_step("work", BARRIER), n=3),), inputs=("target_dir",))

slow = Workflow(
    "slow",
    (worktree(shell_step("work", "echo half > half.txt; touch ../../../started; sleep 30")),),
    inputs=("target_dir",),
)


def gate(ctx):
    from pathlib import Path

    from returns.io import IOFailure

    from adws import PipelineError

    folder = Path(ctx.inputs["worktree"])
    (folder / "half.txt").write_text("half\\n")
    if not Path("gate").exists():
        return IOFailure(PipelineError("", "ShellFailed", "the gate is closed"))
    return IOSuccess(ctx.merge_outputs({"summary": "done"}))


def cleanup(ctx):
    with open("cleanup.log", "a") as log:
        log.write(("ok" if ctx.failure is None else ctx.failure.error_type) + "\\n")
    return IOSuccess(ctx)


from adws import approval_step  # noqa: E402


def gated_steps(timeout):
    return (
        worktree(Step("impl", gate, reads=("worktree",), writes=("summary",))),
        approval_step("approve", message="merge {impl_branch}?", timeout=timeout),
        Step("cleanup", cleanup, always_run=True, reads=(), writes=()),
    )


gated = Workflow("gated", gated_steps(None), inputs=("target_dir",))
hurried = Workflow("hurried", gated_steps(0.001), inputs=("target_dir",))
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "workflows").mkdir()
    (tmp_path / "workflows" / "flows.py").write_text(FLOWS)
    make_repo(tmp_path / "repo")
    return tmp_path


def adws(project: Path, *argv: str, seed: int = 0) -> tuple[int, str, str]:
    process = start_adws(
        project, *argv, "--workflows", "workflows", env={"PYTHONHASHSEED": str(seed)}
    )
    out, err = process.communicate(timeout=120)
    return process.returncode, out, err


def run_ids(project: Path) -> list[str]:
    db = sqlite3.connect(project / "runs.db")
    try:
        return [row[0] for row in db.execute("SELECT run_id FROM runs ORDER BY rowid")]
    finally:
        db.close()


def test_two_runs_on_one_repository_at_once_both_succeed(project: Path) -> None:
    argv = ("run", "crowd", "--workflows", "workflows", "-i", "target_dir=repo", "-q")
    processes = [start_adws(project, *argv) for _ in range(2)]
    results = [process.communicate(timeout=120) for process in processes]
    assert [process.returncode for process in processes] == [0, 0], results
    repo = project / "repo"
    winners = git(repo, "branch", "--list", "adws/*", "--format=%(refname:short)").splitlines()
    assert sorted(winners) == sorted(f"adws/{run}/many-0" for run in run_ids(project))
    for branch in winners:
        assert git(repo, "show", "--name-only", "--format=", branch).startswith("change-")
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_removes_the_worktree_and_keeps_the_branch(
    project: Path, signum: int, code: int
) -> None:
    process = start_adws(
        project,
        "run",
        "slow",
        "--workflows",
        "workflows",
        "-i",
        "target_dir=repo",
        "--worktrees",
        "worktrees",  # the shell step finds ../../../started there
    )
    try:
        wait_for((project / "started").exists)
        process.send_signal(signum)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == code, err
    (run_id,) = run_ids(project)
    assert not (project / "worktrees" / run_id).exists()
    assert git(project / "repo", "branch", "--list", f"adws/{run_id}/work") == f"adws/{run_id}/work"
    db = sqlite3.connect(project / "runs.db")
    assert db.execute("SELECT state FROM worktrees").fetchall() == [("removed",)]
    db.close()


def test_approve_in_another_process_continues_the_run(project: Path) -> None:
    (project / "gate").touch()
    code, _, err = adws(project, "run", "gated", "-i", "target_dir=repo", seed=1)
    assert code == 3, err
    (run_id,) = run_ids(project)
    code, _, err = adws(project, "approve", run_id, "--by", "ann", "--note", "ok", seed=2)
    assert code == 0, err
    code, out, _ = adws(project, "status", run_id, seed=3)
    assert (code, out.splitlines()[0]) == (0, f"run {run_id} · gated · succeeded")
    assert "· approved by ann at " in out


def test_an_edited_worktree_refuses_a_resume_in_another_process_and_force_goes_on(
    project: Path,
) -> None:
    code, _, _ = adws(project, "run", "gated", "-i", "target_dir=repo", seed=1)
    assert code == 1
    (run_id,) = run_ids(project)
    (shared_worktree(project / "repo", run_id, "impl") / "half.txt").write_text("edited\n")
    (project / "gate").touch()
    code, _, err = adws(project, "resume", run_id, seed=2)
    assert code == 2
    assert f"changed since run {run_id} last recorded it: half.txt; pass --accept-drift" in err
    code, _, err = adws(project, "resume", run_id, "--accept-drift", seed=3)
    assert code == 3, err


def test_reject_in_another_process_runs_the_cleanup_and_the_notifier_was_called_once(
    project: Path,
) -> None:
    (project / "gate").touch()
    notifier = project / "notify.sh"
    notifier.write_text('#!/bin/sh\nprintf "%s|%s\\n" "$1" "$2" >> notified.log\n')
    notifier.chmod(0o755)
    code, _, err = adws(
        project, "run", "gated", "-i", "target_dir=repo", "--notify", str(notifier), seed=1
    )
    assert code == 3, err
    (run_id,) = run_ids(project)
    code, _, err = adws(project, "reject", run_id, "--by", "bob", "--reason", "too risky", seed=2)
    assert code == 1, err
    assert (project / "cleanup.log").read_text() == "Rejected\n"
    assert (project / "notified.log").read_text() == f"{run_id}|merge adws/{run_id}/impl?\n"
    code, out, _ = adws(project, "status", run_id, seed=3)
    assert out.splitlines()[0] == f"run {run_id} · gated · failed"
    assert "· rejected by bob at " in out
    assert ": too risky" in out
    code, _, err = adws(project, "resume", run_id, seed=4)
    assert code == 2
    assert f"run {run_id} was rejected at 'approve': rejected by bob: too risky" in err


def test_a_wait_past_its_timeout_is_rejected_by_the_next_adws_approvals(project: Path) -> None:
    (project / "gate").touch()
    code, _, err = adws(project, "run", "hurried", "-i", "target_dir=repo", seed=1)
    assert code == 3, err
    (run_id,) = run_ids(project)
    code, out, err = adws(project, "approvals", seed=2)
    assert (code, out) == (0, "")
    assert f"adws: run {run_id} ended (exit code 1)" in err
    assert (project / "cleanup.log").read_text() == "Rejected\n"
