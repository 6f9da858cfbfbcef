"""Real git repositories in temporary folders, and a fake `git` for the failures git rarely has."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from returns.io import IOResult, IOSuccess

from adws import PipelineError, Step, WorkflowContext


def git(repo: Path, *args: str) -> str:
    """Run a real git command in `repo` and return its stdout, stripped."""
    done = subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    )
    return done.stdout.strip()


def make_repo(path: Path) -> Path:
    """Make a repository with a user of its own and one commit (README) on `main`."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.name", "Test User")
    git(path, "config", "user.email", "test@example.com")
    (path / "README").write_text("hello\n")
    git(path, "add", "README")
    git(path, "commit", "-q", "-m", "initial commit")
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with one commit, in a temporary folder."""
    return make_repo(tmp_path / "repo")


@pytest.fixture
def fake_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Put a `git` first on PATH that fails (exit 3) when its arguments contain $FAIL_ON.

    Every other call goes to the real git. The I/O boundary is the git
    program: this fakes only the failures a real repository will not show.
    """
    real = shutil.which("git")
    folder = tmp_path / "fake-bin"
    folder.mkdir()
    script = folder / "git"
    script.write_text(
        "#!/bin/sh\n"
        'case " $* " in *" $FAIL_ON "*) echo "fake git: refused $*" >&2; exit 3;; esac\n'
        f'exec {real} "$@"\n'
    )
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    return script


def writes(name: str, files: dict[str, str], **outputs: object) -> Step:
    """A step that writes `files` into its worktree and outputs `outputs`."""

    def run(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        folder = Path(str(ctx.inputs["worktree"]))
        for relative, text in files.items():
            (folder / relative).parent.mkdir(parents=True, exist_ok=True)
            (folder / relative).write_text(text)
        return IOSuccess(ctx.merge_outputs(outputs))

    return Step(name, run, reads=("worktree",), writes=tuple(outputs))
