"""Journal v2 figures: per-step cost, file size, resume and fingerprint time, beside LangGraph.

Imported by `benchmarks/run.py`; every figure is measured in the same run as
the peer it is compared with.
"""

from __future__ import annotations

import functools
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from returns.io import IOResult, IOSuccess
from timing import median_seconds

from adws import PipelineError, Step, Workflow, WorkflowContext, run_workflow
from adws.journal import Journal, JournalObserver, plan_resume, resume_point
from adws.journal.identity.fingerprint import step_fingerprints
from adws.journal.store.snapshots import resume_rows

ROOT = Path(__file__).resolve().parent.parent


def _step(i: int, payload: object = None) -> Step:
    def run(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        return IOSuccess(ctx.merge_outputs({f"k{i}": i if payload is None else payload}))

    return Step(f"s{i}", run)


def _workflow(n: int) -> Workflow:
    return Workflow("bench", tuple(_step(i) for i in range(1, n + 1)))


def journal_per_step(n: int, runs: int) -> float:
    """µs per step of `runs` n-step runs recorded back to back into one journal.

    The journal is warmed first with a 2,000-step run, so every size is timed
    in the steady state, its share of WAL checkpoints included: a short run
    on a fresh file never reaches one, which would flatter small N.
    """
    workflow = _workflow(n)
    steps = step_fingerprints(workflow)
    start = WorkflowContext(inputs={"k0": 0})
    with tempfile.TemporaryDirectory() as folder:
        journal = Journal(Path(folder) / "runs.db")
        run_workflow(_workflow(2_000), start, observers=[JournalObserver(journal, "warm")])
        started = time.perf_counter()
        for _ in range(runs):
            run_workflow(workflow, start, observers=[JournalObserver(journal, "bench", steps)])
        seconds = time.perf_counter() - started
        journal.close()
    return seconds * 1e6 / (n * runs)


def journal_size(n: int, payload_bytes: int = 0) -> float:
    """Size in MB of the journal of one n-step run (each step one key, or a big input)."""
    big = "x" * payload_bytes
    inputs = {"big": big} if payload_bytes else {"k0": 0}
    workflow = _workflow(n)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "runs.db"
        journal = Journal(path)
        run_workflow(
            workflow, WorkflowContext(inputs=inputs), observers=[JournalObserver(journal, "b")]
        )
        journal.close()
        total = sum(file.stat().st_size for file in Path(folder).iterdir())
    return total / 1e6


def library_resume(n: int) -> dict[str, float]:
    """Time the library resume of an n-step run that failed at its last step.

    A failed run keeps no snapshot of its own: the resume reads the periodic
    one (every `SNAPSHOT_EVERY` steps) and the rows after it, the most a
    resume reads (an interrupted, parked or waiting run: one row after it).
    """
    steps = tuple(_step(i) for i in range(1, n))

    def broken(_ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        from returns.io import IOFailure  # noqa: PLC0415 - the one failing step

        return IOFailure(PipelineError("", "Broken", "at the last step"))

    workflow = Workflow("bench", (*steps, Step("last", broken)))
    names = [step.name for step in workflow.steps]
    with tempfile.TemporaryDirectory() as folder:
        journal = Journal(Path(folder) / "runs.db")
        current = step_fingerprints(workflow)
        run_workflow(
            workflow,
            WorkflowContext(inputs={"k0": 0}),
            observers=[JournalObserver(journal, "b", current)],
            run_id="r",
        )

        def resume() -> object:
            record = journal.find("r")
            assert not isinstance(record, str)  # noqa: S101 - the run was just recorded
            rows = resume_rows(journal, record, names, current)  # its snapshot, the rows after
            plan_resume(names, rows.attempts, current, snapshot=rows.snapshot)
            return resume_point(names, rows.attempts, record.inputs(), snapshot=rows.snapshot)

        seconds = median_seconds(resume, 5)
        journal.close()
    fingerprint_ms = median_seconds(lambda: step_fingerprints(workflow), 5) * 1e3
    return {"resume_ms": seconds * 1e3, "fingerprint_ms": fingerprint_ms}


def langgraph_line(n: int) -> Any | None:  # noqa: ANN401 - LangGraph's own builder type
    """Build an n-node LangGraph StateGraph in a line, or None if LangGraph is not installed."""
    try:
        from langgraph.graph import END, START, StateGraph  # noqa: PLC0415 - optional peer
    except ImportError:
        return None
    from typing import TypedDict  # noqa: PLC0415 - only the peer needs it

    class State(TypedDict):
        value: int

    def node(state: State) -> State:
        return {"value": state["value"] + 1}

    graph: Any = StateGraph(State)
    for i in range(n):
        graph.add_node(f"s{i}", node)
        graph.add_edge(START if i == 0 else f"s{i - 1}", f"s{i}")
    graph.add_edge(f"s{n - 1}", END)
    return graph


def langgraph_sqlite(n: int) -> dict[str, float] | None:
    """LangGraph with its SQLite checkpointer: µs/step of an n-node run, and its resume (get_state)."""
    graph = langgraph_line(n)
    try:
        from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: PLC0415 - optional peer
    except ImportError:
        return None
    if graph is None:
        return None
    import sqlite3  # noqa: PLC0415 - only the peer needs it here

    times, resumes = [], []
    for attempt in range(3):
        with tempfile.TemporaryDirectory() as folder:
            connection = sqlite3.connect(Path(folder) / "lg.db", check_same_thread=False)
            app = graph.compile(checkpointer=SqliteSaver(connection))
            config = {"recursion_limit": n + 10, "configurable": {"thread_id": f"t{attempt}"}}
            started = time.perf_counter()
            app.invoke({"value": 0}, config=config)
            times.append(time.perf_counter() - started)
            resumes.append(median_seconds(functools.partial(app.get_state, config), 5))
            connection.close()
    return {
        "per_step_us": statistics.median(times) * 1e6 / n,
        "resume_ms": statistics.median(resumes) * 1e3,
    }


RESUMABLE = """
from returns.io import IOFailure, IOSuccess
from adws import PipelineError, Step, Workflow

def make(i):
    def run(ctx):
        return IOSuccess(ctx.merge_outputs({f"k{i}": i}))
    return run

def last(ctx):
    import os
    if os.path.exists("fixed"):
        return IOSuccess(ctx)
    return IOFailure(PipelineError("", "Broken", "at the last step"))

big = Workflow("big", (*(Step(f"s{i}", make(i)) for i in range(999)), Step("last", last)))
one = Workflow("one", (Step("only", make(0)),))
"""


def cli_resume(n: int = 1_000) -> dict[str, float]:
    """Wall time of `adws resume` of an n-step run failed at its last step, beside `adws run` of one step."""
    with tempfile.TemporaryDirectory() as folder:
        project = Path(folder)
        (project / "workflows").mkdir()
        (project / "workflows" / "big.py").write_text(RESUMABLE.replace("999", str(n - 1)))
        env = {**os.environ, "ADWS_JOURNAL": str(project / "runs.db")}
        adws = [sys.executable, "-m", "adws"]

        def call(*argv: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [*adws, *argv, "-q"],
                cwd=project,
                env=env,
                capture_output=True,
                text=True,
                check=False,
            )

        call("run", "big")
        listing = subprocess.run(
            [*adws, "runs", "--json"],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        run_id = __import__("json").loads(listing.stdout)[0]["run_id"]
        resume_times = []
        for _ in range(5):
            started = time.perf_counter()
            call("resume", run_id)  # fails again at the last step: the run stays resumable
            resume_times.append(time.perf_counter() - started)
        bare = median_seconds(lambda: call("run", "one"), 5)
    return {"resume_ms": statistics.median(resume_times) * 1e3, "run_one_ms": bare * 1e3}


def measure() -> dict[str, Any]:
    """Measure every journal v2 figure."""
    small, large = journal_per_step(100, 50), journal_per_step(10_000, 1)
    return {
        "per_step_us": {"100": small, "10000": large, "ratio": large / small},
        "per_step_1000_us": journal_per_step(1_000, 3),
        "size_mb": {
            "20MB_x_20": journal_size(20, 20_000_000),
            "5000_steps": journal_size(5_000),
        },
        "library": library_resume(1_000),
        "cli": cli_resume(1_000),
        "langgraph": langgraph_sqlite(1_000),
    }


def render(j: dict[str, Any]) -> list[str]:
    """Table rows, each figure beside its target."""
    lg = j["langgraph"]
    rows = [
        f"| journal on, µs/step N=10,000 ÷ N=100 | {j['per_step_us']['ratio']:.2f} ({j['per_step_us']['100']:.0f} → {j['per_step_us']['10000']:.0f} µs) | ≤ 1.3 |",
        f"| journal size, 20 MB input x 20 steps | {j['size_mb']['20MB_x_20']:.1f} MB | ≤ 25 MB |",
        f"| journal size, 5,000 one-key steps | {j['size_mb']['5000_steps']:.2f} MB | ≤ 2 MB |",
        f"| fingerprint of a 1,000-step workflow | {j['library']['fingerprint_ms']:.1f} ms | ≤ 20 ms |",
        f"| `adws resume` of a 1,000-step run vs `adws run` of one step | {j['cli']['resume_ms']:.0f} ms vs {j['cli']['run_one_ms']:.0f} ms ({j['cli']['resume_ms'] / j['cli']['run_one_ms']:.2f}x) | ≤ 1.2x |",
    ]
    if lg is None:
        rows.append("| LangGraph + SqliteSaver | not installed (`pip install '.[bench]'`) | |")
        return rows
    speed = lg["per_step_us"] / j["per_step_1000_us"]
    resume = j["library"]["resume_ms"] / lg["resume_ms"]
    rows += [
        f"| journal on vs LangGraph + SqliteSaver, N=1,000 | {j['per_step_1000_us']:.0f} vs {lg['per_step_us']:.0f} µs/step ({speed:.1f}x faster) | ≥ 25x |",
        f"| library resume at step 1,000 vs LangGraph get_state | {j['library']['resume_ms']:.1f} vs {lg['resume_ms']:.1f} ms ({resume:.2f}x) | ≤ 0.5x |",
    ]
    return rows
