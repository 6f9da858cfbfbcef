"""Caps that hold across runs: overshoot of processes spending together, and the check's cost.

Imported by `benchmarks/run.py` (or run alone: `python benchmarks/caps_bench.py`).
Overshoot: 4 `adws run` processes start at once against one journal, each
a workflow of 40 agent calls at exactly $0.01 (a `ScriptedAgent` that
takes 5 ms), under one cap of $1.00 per day (100 calls' worth); after a
run's first call its estimate is exact (the largest call so far). Figure:
dollars the journal recorded beyond the cap (target $0), and how many
calls ran. Cost: one agent call's check-and-reserve plus its settle
(`adws.journal.store.cap_holds.gate`), in one process, against a journal
with one cap and 1,000 recorded attempts, on SQLite and on a PostgreSQL
server started here (skipped, saying why, where none can start).
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Final

REPO: Final = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from adws.engine.usage import Usage  # noqa: E402
from adws.journal import Journal  # noqa: E402
from adws.journal.records.caps import Cap  # noqa: E402
from adws.journal.store import cap_holds  # noqa: E402
from adws.journal.store.caps import set_cap  # noqa: E402
from tests import postgres  # noqa: E402

PROCESSES: Final = 4
CALLS: Final = 40
COST: Final = 0.01
CAP: Final = 1.0
CHECKS: Final = 200
FLOWS: Final = f"""
import time
from adws import Workflow
from adws.agents.step import agent_step
from adws.agents import AgentResponse, ScriptedAgent
from adws.contract.validator import OutputContract
from adws.engine.usage import Usage


def answer(request):
    time.sleep(0.005)
    return AgentResponse("STATUS: done\\n", {{}}, Usage({COST}, 100, 10, 1, "m"))


def ask(name):
    return agent_step(name, prompt=name, agent=ScriptedAgent([answer]), contract=OutputContract())


spend = Workflow("spend", tuple(ask(f"s{{n}}") for n in range({CALLS})))
"""


def _adws(folder: Path, journal: str, *argv: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "ADWS_JOURNAL": journal, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-m", "adws", *argv],
        cwd=folder,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _overshoot() -> dict[str, float]:
    """Run the 4 processes against one cap; return the spend beyond it and the calls made."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "workflows").mkdir()
        (folder / "workflows" / "flows.py").write_text(FLOWS)
        journal = str(folder / "runs.db")
        _adws(folder, journal, "caps", "set", "shared", "--usd", str(CAP), "--per", "day").wait()
        started = time.perf_counter()
        runs = [_adws(folder, journal, "run", "spend", "-q") for _ in range(PROCESSES)]
        for run in runs:
            run.wait(timeout=600)
        seconds = time.perf_counter() - started
        rows = Journal(journal).query(
            "SELECT SUM(CASE WHEN cost_usd > 0 THEN 1 ELSE 0 END), SUM(cost_usd) FROM attempts"
            " WHERE step NOT LIKE '%[%'"
        )
    calls, spent = rows[0]
    return {
        "calls": float(calls),
        "beyond_cap": max(round(float(spent) - CAP, 9), 0.0),
        "seconds": seconds,
    }


def _check_cost(where: str) -> float:
    """Return the median seconds of one call's check-and-reserve plus its settle."""
    journal = Journal(where)
    now = dt.datetime.now(tz=dt.UTC)
    set_cap(journal, Cap.checked(name="big", currency="usd", amount=1e9, per="day"), now)
    stamp = now.isoformat(timespec="seconds")
    with journal.transaction() as db:
        db.execute(
            "INSERT INTO runs (run_id, workflow, fingerprint, status, steps, inputs, started)"
            " VALUES ('r', 'w', 'f', 'running', '[]', '', ?)",
            (stamp,),
        )
        for n in range(1000):
            db.execute(
                "INSERT INTO attempts (run_id, step, step_index, attempt, status, recorded,"
                " seconds, cost_usd) VALUES ('r', ?, ?, 1, 'succeeded', ?, 0.01, 0.01)",
                (f"s{n}", n, stamp),
            )
    check = cap_holds.gate(journal, "r", "w", None, patience=0.0)
    times = []
    for _ in range(CHECKS):
        began = time.perf_counter()
        settle = check("s", Usage(COST))
        assert callable(settle)  # noqa: S101 - a benchmark's own sanity check
        settle(Usage(COST))
        times.append(time.perf_counter() - began)
    journal.close()
    return sorted(times)[len(times) // 2]


def measure() -> dict[str, Any]:
    """Measure the overshoot and the check's cost on both backends."""
    results: dict[str, Any] = {"overshoot": _overshoot()}
    with tempfile.TemporaryDirectory() as tmp:
        results["sqlite_us"] = _check_cost(str(Path(tmp) / "runs.db")) * 1e6
    reason = postgres.missing()
    if reason is None:
        with postgres.running_server() as server:
            databases = postgres.Databases(server)
            results["postgres_us"] = _check_cost(databases.fresh()) * 1e6
    else:
        results["postgres_skipped"] = reason
    return results


def render(b: dict[str, Any]) -> list[str]:
    """Table rows, each figure beside its target."""
    shot = b["overshoot"]
    rows = [
        (
            f"| {PROCESSES} processes x {CALLS} calls at ${COST:.2f}, one cap ${CAP:.2f}/day |"
            f" {shot['calls']:.0f} calls, ${shot['beyond_cap']:.2f} beyond the cap,"
            f" {shot['seconds']:.1f} s | $0 beyond the cap with exact estimates |"
        ),
        (
            f"| cap check + reserve + settle per agent call, SQLite | {b['sqlite_us']:.0f} µs |"
            " small beside an agent call (seconds) |"
        ),
    ]
    if "postgres_us" in b:
        rows.append(
            f"| cap check + reserve + settle per agent call, PostgreSQL |"
            f" {b['postgres_us']:.0f} µs | small beside an agent call (seconds) |"
        )
    else:
        rows.append(
            f"| cap check per agent call, PostgreSQL | skipped: {b['postgres_skipped']} | |"
        )
    return rows


if __name__ == "__main__":
    print("\n".join(render(measure())))
