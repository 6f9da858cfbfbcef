"""A team's journal: per-step cost on PostgreSQL, worker throughput, queue latency.

Journal-on cost per step on PostgreSQL beside SQLite (and LangGraph's Postgres
checkpointer), `adws worker` throughput with 1, 2 and 4 workers, queue latency (a worker listening
on PostgreSQL beside one polling SQLite, and how fast a bare NOTIFY is heard).
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
POLL: Final = 0.5
"""The polling worker's interval (SQLite: no notices)."""
LISTENING_POLL: Final = 60.0
"""The listening worker's interval: long, so only a notice starts its runs within the bench."""
GOAL_US: Final = 250
GOAL_TIMES: Final = 5
"""Issue 48's goal for the journal on PostgreSQL: one round trip per write, two per step."""
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


def latency(where: str, poll: float, count: int = 5) -> tuple[float, float]:
    """Median seconds from a submit to its run's claim, and to its first step (one idle worker).

    `where`: a server's URL (the worker listens for notices) or a SQLite file's path (it polls
    every `poll`). The claim is seen by reading the run's status every millisecond; the first
    step adds the held run's own process start.
    """
    with tempfile.TemporaryDirectory() as folder:
        project = Path(folder)
        _project(project)
        worker = subprocess.Popen(
            [sys.executable, "-m", "adws", "worker", "--poll", str(poll)],
            cwd=project,
            env=_env(where),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        journal = Journal(where)
        claims, delays = [], []
        try:
            for n in range(count):
                time.sleep(min(poll * 1.3, 1.0))  # the worker is idle, somewhere in its interval
                submitted = time.time()
                run_id = _queue_one(journal, n)
                while journal.query("SELECT status FROM runs WHERE run_id = ?", (run_id,)) == [
                    ("queued",)
                ]:
                    time.sleep(0.001)
                claims.append(time.time() - submitted)
                log = project / "started.log"
                while len(log.read_text().splitlines() if log.exists() else []) <= n:
                    time.sleep(0.002)
                delays.append(float(log.read_text().splitlines()[n].split()[1]) - submitted)
        finally:
            worker.terminate()
            worker.wait(timeout=60)
    return statistics.median(claims), statistics.median(delays)


def notice_floor(url: str, count: int = 20) -> float:
    """Median seconds from a committed `NOTIFY` to a listener hearing it (what a worker waits on)."""
    import psycopg  # noqa: PLC0415 - only with a server

    times = []
    with (
        psycopg.connect(url, autocommit=True) as heard,
        psycopg.connect(url, autocommit=True) as db,
    ):
        heard.execute("LISTEN adws_due")
        for n in range(count):
            began = time.perf_counter()
            db.execute("SELECT pg_notify('adws_due', %s)", (str(n),))
            next(heard.notifies(timeout=5, stop_after=1))
            times.append(time.perf_counter() - began)
    return statistics.median(times)


def _queue_one(journal: Journal, n: int) -> str:
    inputs = encode_context(WorkflowContext(inputs={"n": str(n)}))
    run_id = new_run_id()
    journal.apply(
        queued(run_id, "trivial", fingerprint="bench", steps=["s"], inputs=inputs, options=None)
    )
    return run_id


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
        url = databases.fresh()
        try:
            claim, delay = latency(url, LISTENING_POLL)
            floor = notice_floor(url)
        finally:
            databases.drop(url)
    with tempfile.TemporaryDirectory() as folder:
        polled_claim, polled = latency(str(Path(folder) / "runs.db"), POLL)
    return {
        "sqlite_us": sqlite,
        "postgres_us": on_server,
        "langgraph_postgres_us": langgraph,
        "runs_per_s": rates,
        "batch_runs_per_s": peer,
        "latency_s": delay,
        "claim_s": claim,
        "latency_polled_s": polled,
        "claim_polled_s": polled_claim,
        "notice_floor_s": floor,
    }


def render(results: dict[str, Any]) -> list[str]:
    """The team rows of the benchmark table."""
    rows = [f"| journal on, SQLite, N={STEPS} | {results['sqlite_us']:.0f} µs/step | |"]
    if "missing" in results:
        return [*rows, f"| journal on, PostgreSQL | not measured: {results['missing']} | |"]
    lg = results["langgraph_postgres_us"]
    on_server = results["postgres_us"]
    peer = "" if lg is None else f" (PostgresSaver: {lg:.0f}, {lg / on_server:.1f}x)"
    rows += [
        (
            f"| journal on, PostgreSQL (127.0.0.1), N={STEPS} | {on_server:.0f} µs/step"
            f" | ≤ {GOAL_US} µs/step, ≥ {GOAL_TIMES}x faster than PostgresSaver{peer} |"
        ),
        "| LangGraph + PostgresSaver, N=100 | "
        + (
            "not installed (`pip install langgraph-checkpoint-postgres`)"
            if lg is None
            else f"{lg:.0f} µs/step ({lg / results['postgres_us']:.1f}x adws on PostgreSQL)"
        )
        + " | |",
    ]
    batch = results.get("batch_runs_per_s")
    beside = "" if batch is None else f"; adws batch --concurrency 4, same runs: {batch:.1f} runs/s"
    rows += [
        f"| adws worker --once x{count}, {RUNS} trivial runs | {rate:.1f} runs/s | "
        + (f"≥ {WORKERS_GOAL:.0f} runs/s{beside}" if count == "4" else "")
        + " |"
        for count, rate in results["runs_per_s"].items()
    ]
    listening = f"PostgreSQL (idle worker listening, --poll {LISTENING_POLL:g})"
    timed = ("latency_s", "claim_s", "latency_polled_s", "claim_polled_s", "notice_floor_s")
    ms = {key: results[key] * 1e3 for key in timed}
    heard = f"{ms['latency_s']:.0f} ms (claimed in {ms['claim_s']:.0f} ms)"
    polled = f"{ms['latency_polled_s']:.0f} ms (claimed in {ms['claim_polled_s']:.0f} ms)"
    rows += [
        f"| queue latency, submit to first step, {listening} | {heard} | ≤ 50 ms |",
        f"| … the polling peer: SQLite (idle worker, --poll {POLL:g}) | {polled} | |",
        f"| … the floor: a NOTIFY heard by a listener (PostgreSQL) | {ms['notice_floor_s']:.1f} ms | |",
    ]
    return rows


if __name__ == "__main__":
    measured = measure()
    print("\n".join(["| team | measured | target |", "| --- | --- | --- |", *render(measured)]))
