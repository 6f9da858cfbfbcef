"""A team's journal: per-step cost on PostgreSQL, worker throughput, queue latency.

Journal-on cost per step on PostgreSQL beside SQLite (and LangGraph's Postgres
checkpointer), `adws worker` throughput with 1, 2 and 4 workers, queue latency.
Imported by `benchmarks/run.py`; runs alone too (`python benchmarks/team_bench.py`).
The PostgreSQL server is started as the tests start it (`tests/postgres.py`): in a
temporary folder, on 127.0.0.1, `fsync=off`, stopped at the end.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Final

from returns.io import IOResult, IOSuccess
from returns.pipeline import is_successful

HERE: Final = Path(__file__).resolve().parent
REPO: Final = HERE.parent
sys.path.insert(0, str(REPO))

from adws import PipelineError, Step, Workflow, WorkflowContext, run_workflow  # noqa: E402
from adws.engine.executor import new_run_id  # noqa: E402
from adws.journal import Journal, JournalObserver  # noqa: E402
from adws.journal.records.codec import encode_context  # noqa: E402
from adws.journal.store.queue import queued  # noqa: E402
from tests import postgres  # noqa: E402

STEPS: Final = 100
RUNS: Final = 48
"""Trivial runs each worker count drains (each a process forked from the worker's forkserver)."""
WORKERS_GOAL: Final = 30.0
"""Runs/s four workers should drain on two cores (issue 48)."""

TRIVIAL = """
import time
from returns.io import IOResult, IOSuccess
from returns.pipeline import is_successful
from adws import Step, Workflow


def stamp(ctx):
    with open("started.log", "a") as log:
        log.write(f"{ctx.inputs['n']} {time.time()}\\n")
    return IOSuccess(ctx)


trivial = Workflow("trivial", (Step("s", stamp, reads=("n",), writes=()),), inputs=("n",))
"""


def _step(i: int) -> Step:
    """Step i of `benchmarks/run.py`'s journal_overhead pipeline."""
    previous, key = f"k{i - 1}", f"k{i}"

    def run(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        return IOSuccess(ctx.merge_outputs({key: ctx.inputs[previous] + 1}))

    return Step(f"s{i}", run)


def journal_per_step(where: str | Path, n: int = STEPS) -> float:
    """µs/step of the journal_overhead pipeline with the journal at `where` (median of 5)."""
    workflow = Workflow("bench", tuple(_step(i) for i in range(1, n + 1)))
    start = WorkflowContext(inputs={"k0": 0})
    journal = Journal(where)
    observer = JournalObserver(journal, "bench")
    times = []
    for _ in range(5):
        began = time.perf_counter()
        result = run_workflow(workflow, start, observers=[observer])
        times.append(time.perf_counter() - began)
        if not is_successful(result):
            msg = f"the bench pipeline did not succeed: {result}"
            raise RuntimeError(msg)
    journal.close()
    return statistics.median(times) * 1e6 / n


def langgraph_postgres(url: str, n: int = STEPS) -> float | None:
    """µs/step of an n-node LangGraph line with its Postgres checkpointer, or None."""
    try:
        from langgraph.checkpoint.postgres import PostgresSaver  # noqa: PLC0415 - optional peer
    except ImportError:
        return None
    import journal_bench  # noqa: PLC0415 - beside this module

    graph = journal_bench.langgraph_line(n)
    if graph is None:
        return None
    times = []
    with PostgresSaver.from_conn_string(url) as saver:
        saver.setup()
        app = graph.compile(checkpointer=saver)
        for attempt in range(5):
            config = {"recursion_limit": n + 10, "configurable": {"thread_id": f"t{attempt}"}}
            began = time.perf_counter()
            app.invoke({"value": 0}, config=config)
            times.append(time.perf_counter() - began)
    return statistics.median(times) * 1e6 / n


def _project(folder: Path) -> None:
    (folder / "workflows").mkdir()
    (folder / "workflows" / "flow.py").write_text(TRIVIAL)


def _queue(journal: Journal, count: int) -> None:
    """Queue `count` trivial runs (as `adws submit` does, without its process)."""
    for n in range(count):
        _queue_one(journal, n)


def _env(url: str) -> dict[str, str]:
    env = {**os.environ, "ADWS_JOURNAL": url, "PYTHONPATH": str(REPO)}
    env.pop("ADWS_WORKFLOWS", None)
    return env


def throughput(databases: postgres.Databases, workers: int) -> float:
    """Runs/s of `workers` `adws worker --once` processes draining `RUNS` trivial runs."""
    url = databases.fresh()
    try:
        with tempfile.TemporaryDirectory() as folder:
            project = Path(folder)
            _project(project)
            _queue(Journal(url), RUNS)
            began = time.perf_counter()
            started = [
                subprocess.Popen(
                    [sys.executable, "-m", "adws", "worker", "--once", "--poll", "0.2"],
                    cwd=project,
                    env=_env(url),
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                for _ in range(workers)
            ]
            for process in started:
                process.wait(timeout=600)
            seconds = time.perf_counter() - began
            ran = (project / "started.log").read_text().splitlines()
            if len(ran) != RUNS:
                msg = f"{len(ran)} of {RUNS} runs ran"
                raise RuntimeError(msg)
    finally:
        databases.drop(url)
    return RUNS / seconds


def batch_peer(databases: postgres.Databases, concurrency: int = 4) -> float:
    """Runs/s of `adws batch` running the same `RUNS` trivial runs, `concurrency` at a time.

    The peer of the worker rows: its workers are forked from a preloaded
    forkserver too, and take their runs over pipes, not from the queue.
    """
    url = databases.fresh()
    try:
        with tempfile.TemporaryDirectory() as folder:
            project = Path(folder)
            _project(project)
            inputs = "".join(f'{{"n": "{n}"}}\n' for n in range(RUNS))
            (project / "in.jsonl").write_text(inputs)
            argv = ["batch", "trivial", "in.jsonl", "-q", "--concurrency", str(concurrency)]
            began = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "adws", *argv],
                cwd=project,
                env=_env(url),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=600,
                check=True,
            )
            seconds = time.perf_counter() - began
            ran = (project / "started.log").read_text().splitlines()
            if len(ran) != RUNS:
                msg = f"{len(ran)} of {RUNS} runs ran in the batch"
                raise RuntimeError(msg)
    finally:
        databases.drop(url)
    return RUNS / seconds


def latency(databases: postgres.Databases, count: int = 5, poll: float = 0.5) -> float:
    """Median seconds from a submit to its run's first step, one idle worker polling every `poll`."""
    url = databases.fresh()
    try:
        with tempfile.TemporaryDirectory() as folder:
            project = Path(folder)
            _project(project)
            worker = subprocess.Popen(
                [sys.executable, "-m", "adws", "worker", "--poll", str(poll)],
                cwd=project,
                env=_env(url),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            journal = Journal(url)
            delays = []
            try:
                for n in range(count):
                    time.sleep(poll * 1.3)  # the worker is idle, somewhere in its interval
                    submitted = time.time()
                    _queue_one(journal, n)
                    log = project / "started.log"
                    while len(log.read_text().splitlines() if log.exists() else []) <= n:
                        time.sleep(0.01)
                    delays.append(float(log.read_text().splitlines()[n].split()[1]) - submitted)
            finally:
                worker.terminate()
                worker.wait(timeout=60)
    finally:
        databases.drop(url)
    return statistics.median(delays)


def _queue_one(journal: Journal, n: int) -> None:
    inputs = encode_context(WorkflowContext(inputs={"n": str(n)}))
    journal.apply(
        queued(
            new_run_id(), "trivial", fingerprint="bench", steps=["s"], inputs=inputs, options=None
        )
    )


def measure() -> dict[str, Any]:
    """Every figure; PostgreSQL's are None where no server can start here (and say why)."""
    with tempfile.TemporaryDirectory() as folder:
        sqlite = journal_per_step(Path(folder) / "runs.db")
    missing = postgres.missing()
    if missing is not None:
        return {"sqlite_us": sqlite, "missing": missing}
    with postgres.running_server() as server:
        databases = postgres.Databases(server)
        url = databases.fresh()
        try:
            on_server = journal_per_step(url)
            langgraph = langgraph_postgres(url)
        finally:
            databases.drop(url)
        rates = {str(count): throughput(databases, count) for count in (1, 2, 4)}
        peer = batch_peer(databases)
        delay = latency(databases)
    return {
        "sqlite_us": sqlite,
        "postgres_us": on_server,
        "langgraph_postgres_us": langgraph,
        "runs_per_s": rates,
        "batch_runs_per_s": peer,
        "latency_s": delay,
        "latency_poll_s": 0.5,
    }


def render(results: dict[str, Any]) -> list[str]:
    """The team rows of the benchmark table."""
    rows = [f"| journal on, SQLite, N={STEPS} | {results['sqlite_us']:.0f} µs/step | |"]
    if "missing" in results:
        return [*rows, f"| journal on, PostgreSQL | not measured: {results['missing']} | |"]
    lg = results["langgraph_postgres_us"]
    rows += [
        f"| journal on, PostgreSQL (127.0.0.1), N={STEPS} | {results['postgres_us']:.0f} µs/step | ≤ 3000 µs/step |",
        "| LangGraph + PostgresSaver, N=100 | "
        + (
            "not installed (`pip install langgraph-checkpoint-postgres`)"
            if lg is None
            else f"{lg:.0f} µs/step ({lg / results['postgres_us']:.1f}x adws on PostgreSQL)"
        )
        + " | |",
    ]
    peer = results.get("batch_runs_per_s")
    beside = "" if peer is None else f"; adws batch --concurrency 4, same runs: {peer:.1f} runs/s"
    rows += [
        f"| adws worker --once x{count}, {RUNS} trivial runs | {rate:.1f} runs/s | "
        + (f"≥ {WORKERS_GOAL:.0f} runs/s{beside}" if count == "4" else "")
        + " |"
        for count, rate in results["runs_per_s"].items()
    ]
    rows.append(
        f"| queue latency, submit to first step (idle worker, --poll {results['latency_poll_s']}) "
        f"| {results['latency_s'] * 1e3:.0f} ms | ≤ poll + 1 s |"
    )
    return rows


if __name__ == "__main__":
    measured = measure()
    print("\n".join(["| team | measured | target |", "| --- | --- | --- |", *render(measured)]))
