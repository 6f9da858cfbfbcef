"""Workspaces at scale: a worktree ready to run tests with a seed, and gc over 200 worktrees.

Imported by `benchmarks/run.py` (or run alone: `python benchmarks/workspaces_scale_bench.py`).
(`workspaces_bench.py` prices one worktree's life; this file prices what a
team's scale adds, so each stays one idea.)

A repository of 2,000 files whose setup makes a 100 MB dependency folder
(`deps`: 5,000 files of 20 KB in 100 folders, copied from a package store
outside the repository, as `npm ci` does from its cache). "Ready" is the
time from `run_workflow` to the first line of the step inside the
worktree: made, checked out, given its dependencies, hashed. Cold: a
fresh worktrees folder each time, so the setup runs (in the seed) every
time. Seeded: the seed exists, so the worktree gets `deps` as hard links.
The peer is `git worktree add` of the same repository alone (no
dependencies at all). Then gc: 200 ended runs, each with a kept worktree
whose branch is merged, listed (`adws worktrees`) and collected in one
pass (`adws worktrees gc`: each removed, its branch deleted, then `git
worktree prune`).
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from returns.io import IOSuccess
from timing import median_seconds
from workspaces_bench import git, repository

from adws import Step, Workflow, WorkflowContext, run_workflow, worktree
from adws.journal import Journal
from adws.runs import RunRequest, Runs
from adws.runs.worktrees import collect, inventory

if TYPE_CHECKING:
    from returns.io import IOResult

    from adws import PipelineError

REPEATS = 3
SOURCE_FILES = 2_000
DEP_FILES = 5_000
DEP_BYTES = 20 * 1024
GC_WORKTREES = 200
LOCKED = {"lock.txt": "deps 1\n", ".gitignore": "deps\n"}
"""The files the setup's key and ignore rules name, beside the sources."""


def _store(folder: Path) -> Path:
    """Make the package store the setup copies from: 100 MB in 5,000 files."""
    store = folder / "store"
    chunk = bytes(range(256)) * (DEP_BYTES // 256)
    for i in range(DEP_FILES):
        path = store / f"pkg{i % 100}" / f"m{i}.js"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(chunk)
    return store


def _ready(repo: Path, store: Path, folder: Path, *, fresh: bool) -> float:
    """Time a seeded worktree until its step starts, in ms (`fresh`: a new seeds folder each)."""
    runs = itertools.count()
    started: list[float] = []

    def step(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        started.append(time.perf_counter())
        return IOSuccess(ctx)

    seeded = worktree(
        Step("impl", step),
        setup=f"cp -r {store} deps",
        setup_key=("lock.txt",),
        share=("deps",),
        keep="never",
    )
    timings: list[float] = []

    def once() -> None:
        n = next(runs)
        where = folder / (f"cold{n}" if fresh else "warm")
        began = time.perf_counter()
        done = run_workflow(
            Workflow("bench", (seeded,)),
            WorkflowContext(inputs={"target_dir": str(repo)}),
            run_id=f"r{n}",
            worktrees=str(where),
        )
        if not isinstance(done, IOSuccess):
            message = f"the workspaces scale benchmark's run failed: {done}"
            raise SystemExit(message)
        timings.append(started[-1] - began)
        if fresh:
            shutil.rmtree(where)
            git(repo, "worktree", "prune")

    median_seconds(once, REPEATS)
    return sorted(timings[1:])[len(timings[1:]) // 2] * 1e3


def _git_add(repo: Path, folder: Path) -> float:
    """Time `git worktree add` of the repository alone, in ms (removed untimed)."""
    timings: list[float] = []
    for n in range(REPEATS + 1):
        path = folder / "plain" / str(n)
        began = time.perf_counter()
        git(repo, "worktree", "add", "-q", "-b", f"plain/{n}", str(path), "HEAD")
        timings.append(time.perf_counter() - began)
        git(repo, "worktree", "remove", "--force", str(path))
    return sorted(timings[1:])[len(timings[1:]) // 2] * 1e3


def _gc(folder: Path) -> dict[str, float]:
    """Make 200 ended runs with a kept, merged worktree each; time listing and one gc pass."""
    (folder / "small").mkdir()
    repo = repository(folder / "small", 1, LOCKED)
    journal = Journal(folder / "runs.db")
    runs = Runs(journal, whole_process=False, worktrees=str(folder / "trees"))
    workflow = Workflow(
        "w", (worktree(Step("impl", IOSuccess), keep="always"),), inputs=("target_dir",)
    )
    for _ in range(GC_WORKTREES):
        runs.run(RunRequest(workflow, {"target_dir": str(repo)}))
    listing = median_seconds(lambda: inventory(journal), REPEATS)
    began = time.perf_counter()
    done = collect(journal, older_than=0)
    seconds = time.perf_counter() - began
    if len(done.removed) != GC_WORKTREES:
        message = f"gc removed {len(done.removed)} worktrees of {GC_WORKTREES}"
        raise SystemExit(message)
    return {"list_s": listing, "gc_s": seconds}


def measure() -> dict[str, Any]:
    """Measure cold and seeded worktrees beside git alone, and gc over 200 worktrees."""
    with tempfile.TemporaryDirectory(prefix="adws-bench-") as name:
        folder = Path(name)
        repo = repository(folder, SOURCE_FILES, LOCKED)
        store = _store(folder)
        results: dict[str, Any] = {
            "git_ms": _git_add(repo, folder),
            "cold_ms": _ready(repo, store, folder, fresh=True),
            "seeded_ms": _ready(repo, store, folder, fresh=False),
        }
    with tempfile.TemporaryDirectory(prefix="adws-bench-") as name:
        results.update(_gc(Path(name)))
    return results


def render(results: dict[str, Any]) -> list[str]:
    """Format the rows of the workspaces-at-scale table."""
    seeded, git = results["seeded_ms"], results["git_ms"]
    return [
        (
            "| a worktree ready to run tests, 2,000 files and a 100 MB dependency folder"
            f" (5,000 files): seeded, hard links | {seeded:.0f} ms ({seeded / git:.1f}x"
            f" `git worktree add` alone: {git:.0f} ms) | within 2x git |"
        ),
        (
            "| the same, cold: the setup (a 100 MB copy) run each time |"
            f" {results['cold_ms']:.0f} ms ({results['cold_ms'] / seeded:.1f}x seeded) | |"
        ),
        (
            f"| `adws worktrees` over {GC_WORKTREES} worktrees of ended runs |"
            f" {results['list_s']:.2f} s | |"
        ),
        (
            f"| `adws worktrees gc` removing {GC_WORKTREES} merged worktrees and their"
            f" branches | {results['gc_s']:.2f} s"
            f" ({results['gc_s'] / GC_WORKTREES * 1e3:.0f} ms each) | |"
        ),
    ]


if __name__ == "__main__":
    print("\n".join(render(measure())))
