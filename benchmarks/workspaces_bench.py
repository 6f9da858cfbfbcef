"""What a worktree costs a run: making, hashing, committing and removing it, beside git's own time.

Imported by `benchmarks/run.py` (or run alone: `python benchmarks/workspaces_bench.py`).
Each figure is one run of a one-step workflow on a real repository in a
temporary folder: a step that changes nothing, the same step in a
`worktree` (made, hashed after the attempt, nothing to commit, removed),
one that writes a file (so a commit too), and `best_of(3)` over it (three
worktrees side by side, two losers discarded). The peer is git alone:
`git worktree add` then `git worktree remove`, as a script would do it.
Two repositories: one file, and 2,000 files in 40 folders (hashing reads
every file's stat; a checkout writes every file). Two more rows per
repository price what replay costs a run: the patch an agent call in a
worktree journals (a snapshot of the worktree before the call and after
it, then the diff between them), and a replay putting that patch back
(`git apply`, then the change taken again and every file it touches
checked against the patch), each beside the snapshot alone.
"""

from __future__ import annotations

import itertools
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from returns.io import IOSuccess
from timing import median_seconds

from adws import Step, Workflow, WorkflowContext, best_of, run_workflow, worktree
from adws.engine.scope import in_worktree
from adws.workspaces.patches import CallEdits, apply_patch, patch_between, snapshot

if TYPE_CHECKING:
    from returns.io import IOResult

    from adws import PipelineError

REPEATS = 5
SIZES = {"1 file": 1, "2,000 files": 2_000}


def git(repo: Path, *args: str) -> None:
    """Run git in `repo`, raising when it fails (the benches' own git calls)."""
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def repository(folder: Path, files: int, extra: dict[str, str] | None = None) -> Path:
    """Make a repository of `files` small files (and `extra`: name to text), all committed."""
    repo = folder / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.name", "bench")
    git(repo, "config", "user.email", "bench@example.com")
    for i in range(files):
        path = repo / f"d{i % 40}" / f"f{i}.txt"
        path.parent.mkdir(exist_ok=True)
        path.write_text(f"line {i}\n")
    for name, text in (extra or {}).items():
        (repo / name).write_text(text)
    git(repo, "add", "--all")
    git(repo, "commit", "-q", "-m", "start")
    return repo


def _nothing(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
    return IOSuccess(ctx)


def _writes(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
    (Path(str(ctx.inputs["worktree"])) / "new.txt").write_text("new\n")
    return IOSuccess(ctx.merge_outputs({"summary": "add new.txt"}))


def _timed(step: Step, repo: Path, folder: Path) -> float:
    """Time one run of `step` alone (each under a fresh run id), in milliseconds."""
    runs = itertools.count()
    workflow = Workflow("bench", (step,))
    ctx = WorkflowContext(inputs={"target_dir": str(repo)})

    def once() -> None:
        done = run_workflow(
            workflow, ctx, run_id=f"r{next(runs)}", worktrees=str(folder / "worktrees")
        )
        if not isinstance(done, IOSuccess):
            message = f"the workspaces benchmark's run failed: {done}"
            raise SystemExit(message)

    return median_seconds(once, REPEATS) * 1e3


def _git_alone(repo: Path, folder: Path) -> float:
    """Time `git worktree add` and `git worktree remove` of one worktree, in milliseconds."""
    runs = itertools.count()

    def once() -> None:
        n = next(runs)
        path = folder / "plain" / str(n)
        git(repo, "worktree", "add", "-q", "-b", f"plain/{n}", str(path), "HEAD")
        git(repo, "worktree", "remove", "--force", str(path))

    return median_seconds(once, REPEATS) * 1e3


def _patches(repo: Path, folder: Path) -> dict[str, float]:
    """Time a call's patch (snapshot, call, snapshot, diff) and putting it back, in ms."""
    place = folder / "patched"
    git(repo, "worktree", "add", "-q", "--detach", str(place), "HEAD")
    written = place / "new.txt"

    def call() -> None:
        with in_worktree(str(place)):
            edits = CallEdits()
        written.write_text("new\n")
        edits.patch()
        written.unlink()

    before = snapshot(place)
    written.write_text("new\n")
    patch = patch_between(place, before, snapshot(place))
    written.unlink()

    def replay() -> None:
        apply_patch(place, patch)
        written.unlink()

    return {
        "snapshot_ms": median_seconds(lambda: snapshot(place), REPEATS) * 1e3,
        "patch_ms": median_seconds(call, REPEATS) * 1e3,
        "apply_ms": median_seconds(replay, REPEATS) * 1e3,
    }


def measure() -> dict[str, Any]:
    """Measure each repository: the bare step, in a worktree, with a commit, best_of(3), git."""
    results: dict[str, Any] = {}
    for label, files in SIZES.items():
        with tempfile.TemporaryDirectory(prefix="adws-bench-") as name:
            folder = Path(name)
            repo = repository(folder, files)
            results[label] = {
                "bare_ms": _timed(Step("impl", _nothing), repo, folder),
                "worktree_ms": _timed(worktree(Step("impl", _nothing)), repo, folder),
                "commit_ms": _timed(worktree(Step("impl", _writes)), repo, folder),
                "best_of_3_ms": _timed(best_of("best", Step("impl", _writes), n=3), repo, folder),
                "git_ms": _git_alone(repo, folder),
                **_patches(repo, folder),
            }
    return results


def render(results: dict[str, Any]) -> list[str]:
    """Format the rows of the workspaces table."""
    lines = []
    for label, row in results.items():
        lines += [
            (
                f"| a step in a worktree, {label}: made, hashed, removed | "
                f"{row['worktree_ms']:.0f} ms (git worktree add + remove alone: "
                f"{row['git_ms']:.0f}; the step alone: {row['bare_ms']:.1f}) | "
                "(no target: git's own time is the floor) |"
            ),
            (f"| the same, writing a file: committed too, {label} | {row['commit_ms']:.0f} ms | |"),
            (
                f"| best_of(3) of that step, {label}: 3 worktrees, 2 discarded | "
                f"{row['best_of_3_ms']:.0f} ms ({row['best_of_3_ms'] / row['commit_ms']:.1f}x one) "
                "| |"
            ),
            (
                f"| an agent call's patch in a worktree, {label}: snapshot before and after, "
                f"diff | {row['patch_ms']:.0f} ms (one snapshot: {row['snapshot_ms']:.0f}) | |"
            ),
            (
                f"| a replay putting that patch back, {label}: git apply, then every file it"
                f" changes checked | "
                f"{row['apply_ms']:.0f} ms | |"
            ),
        ]
    return lines


if __name__ == "__main__":
    print("\n".join(render(measure())))
