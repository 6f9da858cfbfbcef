"""Measure adws against plain Python and its peers; print a Markdown table.

Every figure is the median of at least five repetitions after a warm-up,
next to a baseline measured in the same process run, so ratios hold on a
noisy machine. Results also go to benchmarks/results.json. Run: `make bench`.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
from returns.io import IOResult, IOSuccess
from returns.result import Success

from adws import PipelineError, Step, Workflow, WorkflowContext, run_workflow
from adws.contract.validator import OutputContract, validate_agent_output
from adws.journal import Journal, JournalObserver

sys.path.insert(0, str(Path(__file__).resolve().parent))
import batch_bench
import budget_bench
import caps_bench
import faults_bench
import journal_bench
import kit_bench
import mcp_bench
import parallel_bench
import serve_bench
import sessions_bench
import team_bench
import tickets_bench
import timing
import transcript_bench
import verify_bench
import workspaces_bench
import workspaces_scale_bench

if TYPE_CHECKING:
    from collections.abc import Callable

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
REPEATS = 7
SIZES = (10, 100, 1_000, 10_000)


def median_seconds(action: Callable[[], object], repeats: int = REPEATS) -> float:
    """Run `action` once to warm up, then `repeats` times; return the median wall time."""
    return timing.median_seconds(action, repeats)


# -- the pipeline: step i reads what step i-1 wrote and writes one new key ------


def adws_step(i: int) -> Step:
    """Build step i of the adws pipeline."""
    previous, key = f"k{i - 1}", f"k{i}"

    def run(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        return IOSuccess(ctx.merge_outputs({key: ctx.inputs[previous] + 1}))

    return Step(f"s{i}", run)


def plain_step(i: int) -> Callable[[dict[str, int]], dict[str, int]]:
    """Build step i of the plain-Python pipeline: a function of a dict."""
    previous, key = f"k{i - 1}", f"k{i}"

    def run(data: dict[str, int]) -> dict[str, int]:
        data[key] = data[previous] + 1
        return data

    return run


def bind_step(i: int) -> Callable[[dict[str, int]], IOResult[dict[str, int], str]]:
    """Build step i of the `returns` pipeline: a function for `.bind`."""
    previous, key = f"k{i - 1}", f"k{i}"

    def run(data: dict[str, int]) -> IOResult[dict[str, int], str]:
        data[key] = data[previous] + 1
        return IOSuccess(data)

    return run


def pipeline(n: int) -> dict[str, float]:
    """Time one n-step run of adws, the step functions alone, plain Python and `.bind`."""
    workflow = Workflow("bench", tuple(adws_step(i) for i in range(1, n + 1)))
    plain = [plain_step(i) for i in range(1, n + 1)]
    binds = [bind_step(i) for i in range(1, n + 1)]
    start = WorkflowContext(inputs={"k0": 0})

    def run_adws() -> None:
        run_workflow(workflow, start)

    full = WorkflowContext(inputs={f"k{i}": i for i in range(n + 1)})

    def run_functions() -> None:
        # What the step functions cost on their own, called without the executor.
        for step in workflow.steps:
            step.run(full)

    def run_plain() -> None:
        data = {"k0": 0}
        for function in plain:
            data = function(data)

    def run_bind() -> None:
        result: IOResult[dict[str, int], str] = IOSuccess({"k0": 0})
        for function in binds:
            result = result.bind(function)

    micro = 1e6 / n
    return {
        "adws_us": median_seconds(run_adws) * micro,
        "plain_us": median_seconds(run_plain) * micro,
        "bind_us": median_seconds(run_bind) * micro,
        "steps_only_us": median_seconds(run_functions) * micro,
    }


def journal_overhead(n: int) -> dict[str, float]:
    """Time the same pipeline with and without the SQLite journal."""
    workflow = Workflow("bench", tuple(adws_step(i) for i in range(1, n + 1)))
    start = WorkflowContext(inputs={"k0": 0})
    with tempfile.TemporaryDirectory() as folder:
        journal = Journal(Path(folder) / "runs.db")
        observer = JournalObserver(journal, "bench")
        with_journal = median_seconds(
            lambda: run_workflow(workflow, start, observers=[observer]), repeats=5
        )
        journal.close()
    without = median_seconds(lambda: run_workflow(workflow, start))
    return {"journal_us": with_journal * 1e6 / n, "no_journal_us": without * 1e6 / n}


# -- the validator --------------------------------------------------------------


@attrs.frozen
class Claim:
    """One claim with its source."""

    text: str
    source: str


@attrs.frozen
class Packet:
    """A verifier's packet."""

    verdict: str
    claims: tuple[Claim, ...]


def report_of_size(size: int) -> str:
    """Build a valid report whose VERIFIED_PACKET_JSON holds about `size` bytes."""
    claim = {
        "text": "Errors travel as values in railway-oriented code.",
        "source": "https://x.test/a",
    }
    per_claim = len(json.dumps(claim)) + 2
    claims = [claim] * max(1, (size - 200) // per_claim)
    packet = json.dumps({"verdict": "pass", "claims": claims})
    return f"Checked every claim.\nSTATUS: done\nVERIFIED_PACKET_JSON: {packet}\n"


def validator(size: int) -> dict[str, float]:
    """Measure validate_agent_output's throughput, and json.loads on the same bytes."""
    text = report_of_size(size)
    contract = OutputContract(schemas={"VERIFIED_PACKET_JSON": Packet}, max_output_bytes=4 << 20)
    result = validate_agent_output(text, contract, step_name="verify")
    if not isinstance(result, Success):
        message = f"benchmark report did not validate: {result}"
        raise SystemExit(message)
    seconds = median_seconds(lambda: validate_agent_output(text, contract, step_name="verify"))
    payload = text.split("VERIFIED_PACKET_JSON: ", 1)[1]
    parse = median_seconds(lambda: json.loads(payload))
    megabytes = len(text.encode()) / 1e6
    return {
        "bytes": len(text.encode()),
        "mb_per_s": megabytes / seconds,
        "json_mb_per_s": megabytes / parse,
    }


# -- start-up and memory ----------------------------------------------------------


def wall(argv: list[str]) -> float:
    """Median wall time of a fresh process."""

    def once() -> None:
        subprocess.run(argv, cwd=ROOT, check=True, capture_output=True)

    return median_seconds(once)


def startup() -> dict[str, float]:
    """Time `adws --help`, `adws list` and `python -c pass` in fresh processes."""
    adws = [sys.executable, "-m", "adws"]
    return {
        "python_ms": wall([sys.executable, "-c", "pass"]) * 1e3,
        "help_ms": wall([*adws, "--help"]) * 1e3,
        "list_ms": wall([*adws, "list"]) * 1e3,
        "import_adws_ms": wall([sys.executable, "-c", "import adws"]) * 1e3,
    }


MEMORY_SCRIPT = """
from pathlib import Path
from returns.io import IOSuccess
from adws import Step, Workflow, WorkflowContext, run_workflow

def step(i):
    previous, key = f"k{{i - 1}}", f"k{{i}}"
    def run(ctx):
        return IOSuccess(ctx.merge_outputs({{key: ctx.inputs[previous] + 1}}))
    return Step(f"s{{i}}", run)

workflow = Workflow("bench", tuple(step(i) for i in range(1, {n} + 1)))
def peak_kib():
    # VmHWM belongs to this address space; ru_maxrss would carry the parent's over exec.
    status = Path("/proc/self/status").read_text()
    return next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:"))

before = peak_kib()
run_workflow(workflow, WorkflowContext(inputs={{"k0": 0}}))
print(before, peak_kib())
"""


def memory(n: int = 10_000) -> dict[str, float]:
    """Peak RSS of a fresh process that runs the n-step pipeline (and before it ran)."""
    script = MEMORY_SCRIPT.format(n=n)
    out = subprocess.run(
        [sys.executable, "-c", script], check=True, capture_output=True, text=True, cwd=ROOT
    ).stdout
    before, peak = (int(value) for value in out.split())
    return {"peak_mb": peak / 1024, "before_run_mb": before / 1024}


# -- peers ------------------------------------------------------------------------


def langgraph_pipeline(n: int) -> float | None:
    """Per-step time of an n-node LangGraph StateGraph in a line, or None if not installed."""
    graph = journal_bench.langgraph_line(n)
    if graph is None:
        return None
    app = graph.compile()
    config = {"recursion_limit": n + 10}
    return median_seconds(lambda: app.invoke({"value": 0}, config=config), repeats=5) * 1e6 / n


# -- the report --------------------------------------------------------------------


def main() -> None:
    """Measure everything, print the table, write results.json."""
    results: dict[str, Any] = {
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
        },
        "pipeline": {str(n): pipeline(n) for n in SIZES},
        "journal": {str(n): journal_overhead(n) for n in (100, 1_000)},
        "validator": {
            label: validator(size)
            for label, size in (("1KiB", 1 << 10), ("64KiB", 64 << 10), ("1MiB", 1 << 20))
        },
        "startup": startup(),
        "memory": memory(),
        "langgraph": {str(n): langgraph_pipeline(n) for n in (100, 1_000)},
        "journal_v2": journal_bench.measure(),
        "parallel": parallel_bench.measure(),
        "batch": batch_bench.measure(),
        "kit": kit_bench.measure(),
        "transcripts": transcript_bench.measure(),
        "workspaces": workspaces_bench.measure(),
        "workspaces_scale": workspaces_scale_bench.measure(),
        "budget": budget_bench.measure(),
        "caps": caps_bench.measure(),
        "sessions": sessions_bench.measure(),
        "team": team_bench.measure(),
        "verify": verify_bench.measure(),
        "faults": faults_bench.measure(),
        "tickets": tickets_bench.measure(),
        "mcp": mcp_bench.measure(),
        "serve": serve_bench.measure(),
    }
    p = results["pipeline"]
    results["scaling_ratio"] = p["10000"]["adws_us"] / p["100"]["adws_us"]
    (HERE / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    print(render(results))


def render(results: dict[str, Any]) -> str:
    """Format the results as Markdown tables with the targets next to them."""
    p, j, v, s, m, lg = (
        results[k] for k in ("pipeline", "journal", "validator", "startup", "memory", "langgraph")
    )
    machine = results["machine"]
    lines = [
        (
            f"Machine: {machine['platform']}, Python {machine['python']}, "
            f"{machine['cpus']} CPUs. Medians of {REPEATS} runs after a warm-up."
        ),
        "",
        "| pipeline of N steps | adws µs/step | step functions alone | plain loop | returns .bind | adws / .bind |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for n, row in p.items():
        alone = (
            "-" if row["steps_only_us"] != row["steps_only_us"] else f"{row['steps_only_us']:.2f}"
        )
        lines.append(
            f"| {int(n):,} | {row['adws_us']:.2f} | {alone} | {row['plain_us']:.2f} | "
            f"{row['bind_us']:.2f} | {row['adws_us'] / row['bind_us']:.1f}x |"
        )
    lines += [
        "",
        "| figure | measured | target |",
        "| --- | --- | --- |",
        f"| scaling: µs/step at N=10,000 / N=100 | {results['scaling_ratio']:.2f} | ≤ 1.5 |",
        f"| per-step at N=1,000 vs returns .bind | {p['1000']['adws_us'] / p['1000']['bind_us']:.1f}x | ≤ 3x |",
    ]
    for n, row in j.items():
        lines.append(
            f"| journal on, N={int(n):,} | {row['journal_us']:.0f} µs/step (off: {row['no_journal_us']:.1f}) | ≤ 1000 µs/step |"
        )
    for label, row in v.items():
        target = "≥ 30 MB/s" if label == "1MiB" else ""
        lines.append(
            f"| validator, {label} report | {row['mb_per_s']:.1f} MB/s (json.loads alone: {row['json_mb_per_s']:.0f}) | {target} |"
        )
    lines += [
        f"| `adws --help` wall | {s['help_ms']:.0f} ms (python -c pass: {s['python_ms']:.0f} ms) | ≤ 100 ms |",
        f"| `adws list` wall (shipped workflows) | {s['list_ms']:.0f} ms | |",
        f"| `python -c 'import adws'` wall | {s['import_adws_ms']:.0f} ms | |",
        f"| peak RSS, N=10,000 run | {m['peak_mb']:.1f} MB (workflow built, before the run: {m['before_run_mb']:.1f}) | ≤ 40 MB |",
    ]
    for n, value in lg.items():
        if value is None:
            lines.append(
                f"| LangGraph, N={int(n):,} | not installed (`pip install '.[bench]'`) | |"
            )
        else:
            ratio = value / p[n]["adws_us"]
            lines.append(
                f"| LangGraph, N={int(n):,} | {value:.0f} µs/step ({ratio:.0f}x adws) | adws ≥ 50x faster |"
            )
    lines += ["", "| journal v2 | measured | target |", "| --- | --- | --- |"]
    lines += journal_bench.render(results["journal_v2"])
    lines += ["", "| parallel | measured | target |", "| --- | --- | --- |"]
    lines += parallel_bench.render(results["parallel"])
    lines += ["", "| batch | measured | target |", "| --- | --- | --- |"]
    lines += batch_bench.render(results["batch"])
    lines += ["", "| cost and author's kit | measured | target |", "| --- | --- | --- |"]
    lines += kit_bench.render(results["kit"])
    lines += ["", "| seeing a run | measured | target |", "| --- | --- | --- |"]
    lines += transcript_bench.render(results["transcripts"])
    lines += ["", "| workspaces | measured | target |", "| --- | --- | --- |"]
    lines += workspaces_bench.render(results["workspaces"])
    lines += ["", "| workspaces at scale | measured | target |", "| --- | --- | --- |"]
    lines += workspaces_scale_bench.render(results["workspaces_scale"])
    lines += ["", "| budgets | measured | target |", "| --- | --- | --- |"]
    lines += budget_bench.render(results["budget"])
    lines += ["", "| caps across runs | measured | target |", "| --- | --- | --- |"]
    lines += caps_bench.render(results["caps"])
    lines += ["", "| agent sessions | measured | target |", "| --- | --- | --- |"]
    lines += sessions_bench.render(results["sessions"])
    lines += ["", "| a team's journal | measured | target |", "| --- | --- | --- |"]
    lines += team_bench.render(results["team"])
    lines += ["", "| verified outcomes | measured | target |", "| --- | --- | --- |"]
    lines += verify_bench.render(results["verify"])
    lines += ["", "| faults injected | measured | target |", "| --- | --- | --- |"]
    lines += faults_bench.render(results["faults"])
    lines += ["", "| adws serve | measured | target |", "| --- | --- | --- |"]
    lines += serve_bench.render(results["serve"])
    lines += ["", "| tickets | measured | target |", "| --- | --- | --- |"]
    lines += tickets_bench.render(results["tickets"])
    lines += ["", "| adws mcp | measured | target |", "| --- | --- | --- |"]
    lines += mcp_bench.render(results["mcp"])
    return "\n".join(lines)


if __name__ == "__main__":
    main()
