"""The attempt in flight when a run stopped: its worktree is reset on resume, never called drift."""

from __future__ import annotations

import signal
import sqlite3
import sys
from pathlib import Path

import attrs
import pytest
from returns.io import IOFailure, IOResult, IOSuccess

from adws import PipelineError, Step, Workflow, WorkflowContext, run_workflow, worktree
from adws.journal import Journal, JournalObserver
from adws.journal.records.runs import AttemptRecord
from adws.journal.store.workspaces import worktrees_of
from adws.runs.resume import prepare_resume
from adws.workspaces.drift import reset_in_flight
from tests.conftest import start_adws
from tests.workspaces.conftest import git, make_repo, writes

FLOWS = """
from adws import RetryPolicy, Workflow, shell_step, worktree

# Attempt 1 leaves one.txt and fails; attempt 2 edits, adds, deletes and writes an ignored
# file, then kills adws (a crash mid-attempt); once ../../../go exists, an attempt succeeds.
STEP = (
    "n=$(cat ../../../count 2>/dev/null || echo 0); n=$((n+1)); echo $n > ../../../count;"
    " if [ -f ../../../go ]; then echo done > result.txt; exit 0; fi;"
    " if [ $n -eq 1 ]; then echo one > one.txt; exit 1; fi;"
    " echo changed > README; mkdir -p new/deep; echo x > new/deep/x.txt; rm keep.txt;"
    " echo log > build.log; touch ../../../killing; kill -9 $PPID; exit 1"
)

work = Workflow(
    "work",
    (worktree(shell_step("work", STEP, retry=RetryPolicy(max_attempts=3)), keep="always"),),
    inputs=("target_dir",),
)
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "workflows").mkdir()
    (tmp_path / "workflows" / "flows.py").write_text(FLOWS)
    repo = make_repo(tmp_path / "repo")
    (repo / "keep.txt").write_text("keep\n")
    (repo / ".gitignore").write_text("*.log\n")
    git(repo, "add", "keep.txt", ".gitignore")
    git(repo, "commit", "-q", "-m", "a file to delete, and ignored logs")
    return tmp_path


def only_run(project: Path) -> str:
    db = sqlite3.connect(project / "runs.db")
    try:
        ((run_id,),) = db.execute("SELECT run_id FROM runs").fetchall()
    finally:
        db.close()
    return str(run_id)


@pytest.mark.slow
def test_a_run_killed_mid_attempt_resumes_in_another_process_with_the_worktree_reset(
    project: Path,
) -> None:
    argv = ("--workflows", "workflows", "--worktrees", "worktrees")  # ../../../ is the project
    first = start_adws(
        project, "run", "work", *argv, "-i", "target_dir=repo", env={"PYTHONHASHSEED": "1"}
    )
    _, err = first.communicate(timeout=120)
    assert first.returncode == -signal.SIGKILL, err
    assert (project / "killing").exists()
    run_id = only_run(project)
    folder = project / "worktrees" / run_id / "work"
    assert (folder / "README").read_text() == "changed\n"
    (project / "go").touch()
    resumed = start_adws(project, "resume", run_id, *argv, env={"PYTHONHASHSEED": "2"})
    _, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err
    assert (
        f"run {run_id}: reset 3 files in worktree work ({folder}) to what the run last"
        " recorded: the attempt in flight when it stopped runs again"
    ) in err.splitlines()
    branch = f"adws/{run_id}/work"
    assert git(project / "repo", "ls-tree", "-r", "--name-only", branch).splitlines() == [
        ".gitignore",
        "README",
        "keep.txt",
        "one.txt",
        "result.txt",
    ]
    assert git(project / "repo", "show", f"{branch}:README") == "hello"
    assert (folder / "build.log").read_text() == "log\n"  # ignored: left alone
    assert not (folder / "new").exists()


def half_done(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
    folder = Path(str(ctx.inputs["worktree"]))
    (folder / "half.txt").write_text("half\n")
    if (folder.parent.parent / "interrupt").exists():
        (folder / "README").write_text("in flight\n")
        (folder / "sub").mkdir()
        (folder / "sub" / "kept.log").write_text("ignored\n")
        (folder / "sub" / "added.txt").write_text("added\n")
        (folder / "deep" / "er").mkdir(parents=True)
        (folder / "deep" / "er" / "x.txt").write_text("x\n")
        raise KeyboardInterrupt
    return IOFailure(PipelineError("", "ShellFailed", "checks failed"))


def later(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
    if Path(str(ctx.inputs["target_dir"])).joinpath("stop").exists():
        raise KeyboardInterrupt
    return IOSuccess(ctx)


def journaled(repo: Path, tmp_path: Path, journal: Journal, *steps: Step) -> None:
    """Run the steps in run r1, journaled; a Ctrl-C a step raises ends it interrupted.

    The journal is marked as `adws run` marks it on Ctrl-C (see `adws.runs.interrupts`).
    """
    try:
        run_workflow(
            Workflow("w", steps),
            WorkflowContext(inputs={"target_dir": str(repo)}),
            run_id="r1",
            worktrees=str(tmp_path / "wt"),
            observers=[JournalObserver(journal, "f")],
        )
    except KeyboardInterrupt:
        journal.mark("r1", "interrupted")


def resume(journal: Journal, *steps: Step, accept_drift: bool = False) -> object:
    """Prepare a resume of r1, then reset what it hands back, as `adws resume` does once claimed."""
    record = journal.find("r1")
    assert not isinstance(record, str)
    start = prepare_resume(
        Workflow("w", steps),
        record,
        journal.attempts("r1"),
        accept_drift=accept_drift,
        worktrees=worktrees_of(journal, "r1"),
    )
    if not isinstance(start, str):
        for line in reset_in_flight(start.resets, journal.attempts("r1"), "r1"):
            print(line, file=sys.stderr)  # noqa: T201 - as the CLI says it
    return start


@pytest.fixture
def ignoring(repo: Path) -> Path:
    (repo / ".gitignore").write_text("*.log\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-q", "-m", "ignore logs")
    return repo


def test_an_interrupted_attempts_worktree_is_reset_to_what_the_run_last_recorded(
    ignoring: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    journal = Journal(tmp_path / "runs.db")
    steps = (worktree(STOPPED, keep="always"),)
    (tmp_path / "wt").mkdir()
    (tmp_path / "wt" / "interrupt").touch()
    journaled(ignoring, tmp_path, journal, *steps)
    impl = (tmp_path / "wt" / "r1" / "impl").resolve()
    assert (impl / "README").read_text() == "in flight\n"
    capsys.readouterr()
    assert not isinstance(resume(journal, *steps), str)
    assert capsys.readouterr().err == (
        f"run r1: reset 4 files in worktree impl ({impl}) to what the run last recorded: the"
        " attempt in flight when it stopped runs again\n"
    )
    assert (impl / "README").read_text() == "hello\n"
    assert sorted(path.name for path in impl.iterdir()) == [".git", ".gitignore", "README", "sub"]
    assert [path.name for path in (impl / "sub").iterdir()] == ["kept.log"]  # ignored: left


def test_a_worktree_whose_step_ended_is_never_reset_only_refused_as_drift(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    journal = Journal(tmp_path / "runs.db")
    steps = (
        worktree(writes("impl", {"half.txt": "half\n"}), keep="always"),
        Step("later", later, reads=("target_dir",)),
    )
    (repo / "stop").touch()
    journaled(repo, tmp_path, journal, *steps)  # impl succeeded; interrupted in later
    impl = (tmp_path / "wt" / "r1" / "impl").resolve()
    (impl / "half.txt").write_text("edited after\n")
    capsys.readouterr()
    refused = resume(journal, *steps)
    assert refused == (
        f"run r1 cannot be resumed as it was left: worktree impl ({impl}) changed since run r1"
        " last recorded it: half.txt; pass --accept-drift to go on with the worktree as it is"
        " (a missing one starts again from its base)"
    )
    assert capsys.readouterr().err == ""
    assert (impl / "half.txt").read_text() == "edited after\n"


INTERRUPTED = PipelineError("impl", "Interrupted", "interrupted by Ctrl-C")
STOPPED = Step("impl", half_done, reads=("worktree",))


def test_only_a_present_hashed_worktree_recorded_with_its_attempt_count_can_be_in_flight(
    repo: Path, tmp_path: Path
) -> None:
    journal = Journal(tmp_path / "runs.db")
    (tmp_path / "wt").mkdir()
    (tmp_path / "wt" / "interrupt").touch()
    journaled(repo, tmp_path, journal, worktree(STOPPED, keep="always"))
    (record,) = worktrees_of(journal, "r1")
    assert record.attempts == 0
    folder = Path(record.path)
    (folder / "README").write_text("in flight\n")
    for other in (
        attrs.evolve(record, attempts=None),
        attrs.evolve(record, tree=""),
        attrs.evolve(record, state="removed"),
        attrs.evolve(record, label="elsewhere"),
    ):
        assert reset_in_flight([other], [], "r1") == []
    ended = AttemptRecord("impl", 0, 1, "failed", "", 0.0, None, None)
    assert reset_in_flight([record], [ended], "r1") == []
    assert (folder / "README").read_text() == "in flight\n"
    stopped = AttemptRecord("impl", 0, 1, "failed", "", 0.0, INTERRUPTED, None)
    assert len(reset_in_flight([record], [stopped], "r1")) == 1
    assert (folder / "README").read_text() == "hello\n"
    assert reset_in_flight([record], [], "r1") == []  # nothing left to reset
    (folder / "new.txt").write_text("added only\n")
    (line,) = reset_in_flight([record], [], "r1")
    assert line.startswith("run r1: reset 1 file in worktree impl")
    assert not (folder / "new.txt").exists()


def test_a_worktree_that_cannot_be_reset_is_left_for_drift_to_name(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_git: Path
) -> None:
    journal = Journal(tmp_path / "runs.db")
    (tmp_path / "wt").mkdir()
    (tmp_path / "wt" / "interrupt").touch()
    journaled(repo, tmp_path, journal, worktree(STOPPED, keep="always"))
    (record,) = worktrees_of(journal, "r1")
    folder = Path(record.path)
    (folder / "README").write_text("in flight\n")
    for failing in ("read-tree", "checkout-index"):  # its hash unreadable; its reset refused
        monkeypatch.setenv("FAIL_ON", failing)
        assert reset_in_flight([record], [], "r1") == []
    assert (folder / "README").read_text() == "in flight\n"
