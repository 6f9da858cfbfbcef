"""Verified outcomes: best_of(3) with and without early stop; `adws eval` over a plain batch.

Imported by `benchmarks/run.py` (run alone: `python benchmarks/verify_bench.py`).
best_of: three attempts in worktrees of a throwaway repository, each an
implement ↔ checks loop through a command agent that bills $0.01 a call
(as `claude -p --output-format json` reports it). Attempt 0 passes on its
first call (0.2 s); attempts 1 and 2 need three rounds of 1 s calls. Early
stop cancels them once attempt 0 passed: their processes are stopped and
they bill nothing more. eval: the same 40 runs of `hello` through `adws
batch` and through `adws eval` (two variants), each in a fresh process;
and 40 runs of deep_research with the demo agent (which bills as claude
would) recorded by `adws eval`, then `adws eval --replay-from` that batch:
every agent call answered from the journal, $0.

Done means fixed: what the extra runs of the checks cost. A seeded bug in a
throwaway repository (20 test modules, one failing because of the bug),
real pytest (`-rA`), and an agent that is a Python step writing the right
fix at once, so the time is the checks, git and adws: a worktree with one
round and no baseline (the old way: it proves nothing), then with a
baseline, `must_pass` and `protect` (one more run of the checks, and a
verify tree for each), then with a reproducer first (`reproduce`: a
baseline and a run of its own, then the fix's round, whose baseline is the
reproducer's last run).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from returns.io import IOResult, IOSuccess

from adws import (
    OutputContract,
    PipelineError,
    RetryPolicy,
    Step,
    Workflow,
    WorkflowContext,
    agent_step,
    best_of,
    reproduce,
    run_workflow,
    sequence,
    shell_step,
    with_verification,
    worktree,
)
from adws.agents import CommandAgent
from adws.agents.parsers import claude_json

ROOT = Path(__file__).resolve().parent.parent

AGENT = r"""
import json, re, sys, time
prompt = sys.stdin.read()
index = int(re.search(r"Attempt (\d)", prompt).group(1))
rounds = prompt.count("verification round")
time.sleep(0.2 if index == 0 else 1.0)
open("NOTES", "w").write(f"round {rounds}\n")  # some work each round: changing nothing is NoChange
if index == 0 or rounds >= 2:
    open("DONE", "w").write("ok\n")
print(json.dumps({"type": "result", "subtype": "success", "is_error": False,
    "result": "STATUS: done\nSUMMARY: did it", "num_turns": 1, "total_cost_usd": 0.01,
    "usage": {"input_tokens": 100, "output_tokens": 10}, "session_id": "bench"}))
"""


def _best_of(early_stop: bool) -> dict[str, float]:  # noqa: FBT001 - the one thing measured
    with tempfile.TemporaryDirectory() as folder:
        repo = Path(folder) / "repo"
        repo.mkdir()
        for argv in (
            ["git", "init", "-q", "-b", "main"],
            [
                "git",
                "-c",
                "user.name=b",
                "-c",
                "user.email=b@b",
                "commit",
                "-q",
                "--allow-empty",
                "-m",
                "i",
            ],
        ):
            subprocess.run(argv, cwd=repo, check=True)
        implement = agent_step(
            "implement",
            prompt="Attempt {best_index}: make DONE",
            agent=CommandAgent([sys.executable, "-c", AGENT], parse=claude_json),
            contract=OutputContract(("SUMMARY",)),
            retry=RetryPolicy(),
            edits=True,
        )
        checks = shell_step("checks", "test -f DONE")
        step = best_of("best", with_verification(implement, checks), n=3, early_stop=early_stop)
        started = time.monotonic()
        result = run_workflow(
            Workflow("bench", (step,)),
            WorkflowContext(inputs={"target_dir": str(repo)}),
            worktrees=str(Path(folder) / "wt"),
        )
        seconds = time.monotonic() - started
        final = result._inner_value.unwrap()  # noqa: SLF001 - a benchmark reads its own result
        outcomes = final.inputs["best_outcomes"]
        spent = sum((o["usage"] or {}).get("cost_usd") or 0.0 for o in outcomes)
        return {"seconds": seconds, "cost_usd": spent}


TASKS = "".join(json.dumps({"name": f"n{i}"}) + "\n" for i in range(2))


def _wall(argv: list[str], cwd: Path) -> float:
    started = time.monotonic()
    subprocess.run(argv, cwd=cwd, check=True, capture_output=True)
    return time.monotonic() - started


def _eval_overhead() -> dict[str, float]:
    """The same 40 runs of `hello`: `adws batch` on 40 lines vs `adws eval` (2 x 2 x 10)."""
    with tempfile.TemporaryDirectory() as folder:
        here = Path(folder)
        (here / "tasks.jsonl").write_text(TASKS)
        (here / "lines.jsonl").write_text(TASKS * 20)
        common = ["--workflows", str(ROOT / "workflows"), "-q", "--concurrency", "2"]
        adws = [sys.executable, "-m", "adws"]
        batch = _wall([*adws, "batch", "hello", "lines.jsonl", *common], here)
        evaluated = _wall(
            [*adws, "eval", "hello", "tasks.jsonl", "-n", "10", *common, "--variant", "a:",
             "--variant", "b:-i name=z"],
            here,
        )  # fmt: skip
        return {"batch_seconds": batch, "eval_seconds": evaluated}


def _eval_replayed() -> dict[str, float]:
    """40 runs of deep_research (the demo agent) recorded by `adws eval`, then 40 replayed."""
    with tempfile.TemporaryDirectory() as folder:
        here = Path(folder)
        topics = (ROOT / "demo" / "eval_tasks.jsonl").read_text().splitlines()[:2]
        (here / "tasks.jsonl").write_text("\n".join(topics) + "\n")
        common = ["--workflows", str(ROOT / "workflows"), "-q", "--concurrency", "2", "--json"]
        adws = [sys.executable, "-m", "adws", "eval", "deep_research", "tasks.jsonl", "-n", "20"]

        def timed(argv: list[str]) -> tuple[float, dict[str, Any]]:
            started = time.monotonic()
            done = subprocess.run(argv, cwd=here, check=True, capture_output=True, text=True)
            return time.monotonic() - started, json.loads(done.stdout)

        def spent(report: dict[str, Any]) -> float:
            return float(sum((s["mean_cost_usd"] or 0.0) * s["runs"] for s in report["scores"]))

        recorded_seconds, recorded = timed([*adws, *common])
        replayed_seconds, replayed = timed([*adws, *common, "--replay-from", recorded["batch_id"]])
        return {
            "recorded_seconds": recorded_seconds,
            "recorded_cost_usd": spent(recorded),
            "replayed_seconds": replayed_seconds,
            "replayed_cost_usd": spent(replayed),
            "replayed_passed": sum(s["passed"] for s in replayed["scores"]),
        }


MODULES = 20
BUGGY = "def words(text):\n    return len(text.split(' '))\n"
RIGHT = "def words(text):\n    return len(text.split())\n"
DOUBLE = "from words import words\n\n\ndef test_double_spaces():\n    assert words('a  b') == 2\n"
TARGET = "tests/test_double.py::test_double_spaces"


def _seeded(repo: Path, *, double: bool) -> None:
    """The seeded bug, with MODULES passing test modules beside it (and its test, if `double`)."""
    (repo / "tests").mkdir(parents=True)
    (repo / "words.py").write_text(BUGGY)
    for i in range(MODULES):
        (repo / "tests" / f"test_m{i}.py").write_text(
            f"from words import words\n\n\ndef test_{i}():\n    assert words('a b') == 2\n"
        )
    if double:
        (repo / "tests" / "test_double.py").write_text(DOUBLE)
    for argv in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-q", "-m", "bug"]):
        subprocess.run(
            ["git", "-c", "user.name=b", "-c", "user.email=b@b", *argv], cwd=repo, check=True
        )


def _writes(name: str, path: str, text: str, key: str) -> Step:
    def run(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        (Path(str(ctx.inputs["worktree"])) / path).write_text(text)
        return IOSuccess(ctx.merge_outputs({key: "done"}))

    return Step(name, run, reads=("worktree",), writes=(key,))


def _fix_seconds(how: str) -> float:
    """Time one run of the fix, `plain`, `targets` or `reproduced`, on a fresh seeded repository."""
    checks = shell_step(
        "checks",
        [sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", "tests"],
        failures="pytest",
    )
    fix = _writes("fix", "words.py", RIGHT, "summary")
    protect = ("tests/**", "**/conftest.py")
    stages = {
        "plain": with_verification(fix, checks),
        "targets": with_verification(fix, checks, must_pass=[TARGET], protect=protect),
        "reproduced": sequence(
            "work",
            [
                reproduce(_writes("test", "tests/test_double.py", DOUBLE, "test"), checks),
                with_verification(fix, checks, must_pass="reproduced", protect=protect),  # noqa: S106 - a word
            ],
        ),
    }
    with tempfile.TemporaryDirectory() as folder:
        repo = Path(folder) / "repo"
        _seeded(repo, double=how != "reproduced")
        started = time.perf_counter()
        result = run_workflow(
            Workflow("bench", (worktree(stages[how], name="w"),)),
            WorkflowContext(inputs={"target_dir": str(repo)}),
            worktrees=str(Path(folder) / "wt"),
        )
        seconds = time.perf_counter() - started
        assert isinstance(result, IOSuccess), result  # noqa: S101 - a benchmark of a success
        return seconds


def _fixes() -> dict[str, float]:
    """The median of three runs of each way of fixing the seeded bug."""
    return {
        how: statistics.median(_fix_seconds(how) for _ in range(3))
        for how in ("plain", "targets", "reproduced")
    }


def measure() -> dict[str, Any]:
    """Measure best_of with and without early stop, eval's overhead, and what proving a fix costs."""
    return {
        "best_of": {"all": _best_of(False), "early_stop": _best_of(True)},
        "eval": _eval_overhead(),
        "eval_replayed": _eval_replayed(),
        "fixes": _fixes(),
    }


def render(results: dict[str, Any]) -> list[str]:
    """Format the rows of the verified-outcomes table."""
    every, early = results["best_of"]["all"], results["best_of"]["early_stop"]
    runs = results["eval"]
    replay = results["eval_replayed"]
    return [
        (
            f"| best_of(3), one attempt passes at once: every branch to its end |"
            f" {every['seconds']:.1f} s, ${every['cost_usd']:.2f} | (the old way) |"
        ),
        (
            f"| … with early_stop=True | {early['seconds']:.1f} s, ${early['cost_usd']:.2f} |"
            f" less time and spend |"
        ),
        (
            f"| 40 runs of hello: adws batch / adws eval (2 variants) |"
            f" {runs['batch_seconds']:.2f} s / {runs['eval_seconds']:.2f} s | eval ≈ batch |"
        ),
        (
            f"| 40 runs of deep_research: adws eval (demo agent) / --replay-from that batch |"
            f" {replay['recorded_seconds']:.2f} s, ${replay['recorded_cost_usd']:.2f} /"
            f" {replay['replayed_seconds']:.2f} s, ${replay['replayed_cost_usd']:.2f}"
            f" ({replay['replayed_passed']:.0f}/40 passed) | replayed: $0, offline |"
        ),
        *_fix_rows(results["fixes"]),
    ]


def _fix_rows(fixes: dict[str, float]) -> list[str]:
    plain = fixes["plain"]
    return [
        (
            f"| a seeded bug fixed in a worktree, 21 pytest modules: one round, no baseline |"
            f" {plain:.2f} s | (proves nothing) |"
        ),
        (
            f"| … with a baseline, must_pass and protect (a verify tree per run of the checks) |"
            f" {fixes['targets']:.2f} s (+{fixes['targets'] - plain:.2f} s) | one more run of the checks |"
        ),
        (
            f"| … with a reproducer first (reproduce, then must_pass='reproduced') |"
            f" {fixes['reproduced']:.2f} s (+{fixes['reproduced'] - plain:.2f} s) | two more runs |"
        ),
    ]


if __name__ == "__main__":
    print("\n".join(render(measure())))
