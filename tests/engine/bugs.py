"""A seeded bug in a real git repository, and agents (files they leave) that fix it or not.

`words(text)` should count the words of `text`; the seeded bug counts the
empty string between two spaces as one. `test_one` passes before and
after; `test_double_spaces` is the bug's own test: it fails until the
right fix.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from returns.io import IOResult, IOSuccess

from adws import PipelineError, Step, Workflow, WorkflowContext, run_workflow, shell_step, worktree

BUGGY = "def words(text):\n    return len(text.split(' '))\n"
RIGHT = "def words(text):\n    return len(text.split())\n"
WRONG = "def words(text):\n    return len(text.strip().split(' '))\n"
"""The issue's wrong fix: right for leading and trailing spaces, wrong for double ones."""
ONE = "from words import words\n\n\ndef test_one():\n    assert words('a b') == 2\n"
DOUBLE = "from words import words\n\n\ndef test_double_spaces():\n    assert words('a  b') == 2\n"
TARGET = "tests/test_double.py::test_double_spaces"
KEPT = "tests/test_one.py::test_one"


def git(repo: Path, *args: str) -> str:
    """Run a real git command in `repo`; return its stdout, stripped."""
    done = subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    )
    return done.stdout.strip()


def seeded(path: Path, *, double: bool = True, extra: dict[str, str] | None = None) -> Path:
    """Make the repository: `words.py` with the bug, `tests/test_one.py`, and the bug's test."""
    (path / "tests").mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.name", "Test User")
    git(path, "config", "user.email", "test@example.com")
    (path / "words.py").write_text(BUGGY)
    (path / "tests" / "test_one.py").write_text(ONE)
    if double:
        (path / "tests" / "test_double.py").write_text(DOUBLE)
    for name, text in (extra or {}).items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "words, with a bug")
    return path


def pytest_checks(*, lists_passes: bool = True, name: str = "checks") -> Step:
    """Real pytest on `tests`, its failures (and, with `-rA`, its passes) named by node id."""
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]
    return shell_step(name, [*argv, "-rA"] if lists_passes else argv, failures="pytest")


def leaves(
    rounds: list[dict[str, str | None]],
    seen: list[tuple[str, ...]],
    *,
    name: str = "fix",
    key: str = "summary",
) -> Step:
    """An agent as the files it leaves: round i writes `rounds[i]` (None deletes the file)."""

    def run(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        seen.append(ctx.feedback)
        folder = Path(str(ctx.inputs.get("worktree", ".")))
        for path, text in rounds[min(len(seen), len(rounds)) - 1].items():
            where = folder / path
            if text is None:
                where.unlink()
            else:
                where.parent.mkdir(parents=True, exist_ok=True)
                where.write_text(text)
        return IOSuccess(ctx.merge_outputs({key: f"round {len(seen)}"}))

    return Step(name, run, reads=("worktree",), writes=(key,))


def run_in_worktree(
    step: Step, repo: Path, tmp_path: Path, **inputs: object
) -> IOResult[WorkflowContext, PipelineError]:
    """Run `step` in a worktree `work` of `repo` (run `r1`, worktrees under tmp_path/wt)."""
    return run_workflow(
        Workflow("w", (worktree(step, name="work"),)),
        WorkflowContext(inputs={"target_dir": str(repo), **inputs}),
        run_id="r1",
        worktrees=str(tmp_path / "wt"),
    )
