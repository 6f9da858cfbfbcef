"""Fault injection: many runs through workers while the journal goes away and processes die.

What the load and fault-injection pass of issue 42 did, on both backends:
`RUNS` submitted runs drained by `WORKERS` `adws worker` processes, each run
three steps that each nap, then append a line to a shared file (the side
effect: last, so a step killed mid-way has not done it yet). Meanwhile, every `EVERY` seconds, one fault: the
journal goes away for `OUTAGE` seconds (the PostgreSQL server stopped and
started again; the SQLite journal's small tmpfs filled, then freed: root
only), a held run is killed (SIGKILL), or a worker is killed and another
started. Then workers drain what is left (`--once`, which takes orphans
back) and the side effects are counted: each (run, step) line should be
there exactly once; a process killed between a step's effect and its
record (a crash, not the journal) may still make one twice. Imported by `benchmarks/run.py`; runs alone too
(`python benchmarks/faults_bench.py`).
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import pwd
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Final

HERE: Final = Path(__file__).resolve().parent
REPO: Final = HERE.parent
sys.path.insert(0, str(REPO))

from adws.journal import Journal  # noqa: E402
from tests import postgres  # noqa: E402

RUNS: Final = 40
WORKERS: Final = 2
EVERY: Final = 2.0
OUTAGE: Final = 3.0
"""Seconds the journal is away: within the default `--journal-wait` (30 s)."""

FLOW = """
from adws import Workflow, shell_step

def effect(name):
    return shell_step(name, ["sh", "-c", "sleep 0.2; echo {n} %s >> side" % name])

effects = Workflow("effects", (effect("a"), effect("b"), effect("c")), inputs=("n",))
"""


def _env(journal: str) -> dict[str, str]:
    env = {**os.environ, "ADWS_JOURNAL": journal, "PYTHONPATH": str(REPO)}
    env.pop("ADWS_WORKFLOWS", None)
    return env


def _adws(project: Path, journal: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "adws", *argv],
        cwd=project,
        env=_env(journal),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def _worker(project: Path, journal: str, *argv: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "adws", "worker", "--poll", "0.3", *argv],
        cwd=project,
        env=_env(journal),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )


class _Server:
    """A private PostgreSQL server stopped and started again on the same port."""

    def __init__(self, server: postgres.Server) -> None:
        self.server = server
        self.process = server.process

    def down(self) -> None:
        self.process.send_signal(signal.SIGINT)
        self.process.wait(30)

    def up(self) -> None:
        import psycopg  # noqa: PLC0415 - only with psycopg installed

        user = pwd.getpwnam("postgres") if os.geteuid() == 0 else None
        folder = self.server.folder
        with (folder / "log").open("ab") as log:
            self.process = subprocess.Popen(
                [
                    *(postgres.BIN / "postgres", "-D", folder / "data"),
                    *("-p", str(self.server.port), "-k", folder / "sockets"),
                    *("-c", "fsync=off", "-c", "listen_addresses=127.0.0.1"),
                    *("-c", "max_connections=200"),
                ],
                preexec_fn=postgres._as(user),  # noqa: PLW1509, SLF001 - as the server was started
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        while True:
            try:
                psycopg.connect(self.server.url(), connect_timeout=5).close()
            except psycopg.OperationalError:
                time.sleep(0.05)
            else:
                return


class _Disk:
    """A small tmpfs holding the SQLite journal, filled and freed again."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.filler = folder / "filler"

    def down(self) -> None:
        with contextlib.suppress(OSError), self.filler.open("wb", buffering=0) as out:
            while True:
                out.write(b"\0" * 65536)

    def up(self) -> None:
        self.filler.unlink(missing_ok=True)


def _held_pids(journal: str) -> list[int]:
    with contextlib.suppress(Exception):
        rows = Journal(journal).query("SELECT pid FROM runs WHERE status = 'running'")
        return [int(pid) for (pid,) in rows if pid]
    return []


def _inject(  # noqa: PLR0913, PLR0917 - the fault, and what it strikes
    kind: str,
    chance: random.Random,
    project: Path,
    journal: str,
    outage: Any,  # noqa: ANN401 - a server or a disk
    workers: list[subprocess.Popen[str]],
) -> bool:
    """Inject one fault; False when there was nothing to strike."""
    if kind == "journal":
        outage.down()
        time.sleep(OUTAGE)
        outage.up()
    elif kind == "held run":
        pids = [pid for pid in _held_pids(journal) if pid not in {w.pid for w in workers}]
        if not pids:
            return False
        with contextlib.suppress(ProcessLookupError):
            os.kill(chance.choice(pids), signal.SIGKILL)
    else:
        victim = workers.pop(chance.randrange(len(workers)))
        victim.kill()
        victim.wait()
        workers.append(_worker(project, journal))
    return True


def _drain(
    project: Path,
    journal: str,
    outage: Any,  # noqa: ANN401 - a server or a disk
    seed: int,
    kinds: tuple[str, ...],
) -> dict[str, Any]:
    chance = random.Random(seed)  # noqa: S311 - which fault comes next, not a secret
    for n in range(RUNS):
        done = _adws(project, journal, "submit", "effects", "-i", f"n={n}")
        if done.returncode != 0:
            raise RuntimeError(done.stderr)
    workers = [_worker(project, journal) for _ in range(WORKERS)]
    faults: collections.Counter[str] = collections.Counter()
    started = time.monotonic()
    try:
        while _remaining(journal) != 0 and time.monotonic() - started < 600:
            time.sleep(EVERY)
            kind = chance.choice(kinds)
            if _inject(kind, chance, project, journal, outage, workers):
                faults[kind] += 1
    finally:
        for worker in workers:
            worker.send_signal(signal.SIGTERM)
        for worker in workers:
            worker.wait(120)
    # What is left (interrupted by the stops, held by the dead): workers take it back.
    for _ in range(3):
        _adws(project, journal, "worker", "--once", "--poll", "0.3")
    return {"faults": dict(faults), "seconds": round(time.monotonic() - started, 1)}


def _remaining(journal: str) -> int | None:
    try:
        rows = Journal(journal).query(
            "SELECT COUNT(*) FROM runs WHERE status NOT IN ('succeeded', 'failed')"
        )
    except Exception:  # noqa: BLE001 - the journal is away: not counted now
        return None
    return int(rows[0][0])


def _counted(project: Path, journal: str) -> dict[str, Any]:
    lines = (project / "side").read_text().split("\n") if (project / "side").exists() else []
    seen = collections.Counter(line for line in lines if line)
    expected = {f"{n} {step}" for n in range(RUNS) for step in "abc"}
    statuses = collections.Counter(
        status for (status,) in Journal(journal).query("SELECT status FROM runs")
    )
    return {
        "runs": RUNS,
        "statuses": dict(statuses),
        "side_effects": sum(seen.values()),
        "twice": sorted(line for line, count in seen.items() if count > 1),
        "missing": len(expected - set(seen)),
    }


def postgres_figures(kinds: tuple[str, ...], seed: int) -> dict[str, Any]:
    """Drain through workers with the server stopped and started again, or processes killed."""
    reason = postgres.missing()
    if reason is not None:
        return {"skipped": reason}
    with postgres.running_server() as server, tempfile.TemporaryDirectory() as folder:
        project = Path(folder)
        (project / "workflows").mkdir()
        (project / "workflows" / "flow.py").write_text(FLOW)
        url = postgres.Databases(server).fresh()
        outage = _Server(server)
        try:
            figures = _drain(project, url, outage, seed, kinds)
            return {**figures, **_counted(project, url)}
        finally:
            if outage.process is not server.process:  # stop the server this bench restarted
                outage.down()


def sqlite_figures(kinds: tuple[str, ...], seed: int) -> dict[str, Any]:
    """Drain through workers with the journal's disk filled and freed, or processes killed."""
    if os.geteuid() != 0:
        return {"skipped": "only root mounts the small tmpfs a full disk needs"}
    with tempfile.TemporaryDirectory() as folder:
        project = Path(folder)
        (project / "workflows").mkdir()
        (project / "workflows" / "flow.py").write_text(FLOW)
        disk = project / "disk"
        disk.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", disk], check=True)
        try:
            journal = str(disk / "runs.db")
            figures = _drain(project, journal, _Disk(disk), seed, kinds)
            return {**figures, **_counted(project, journal)}
        finally:
            subprocess.run(["umount", "-l", disk], check=True)


JOURNAL: Final = ("journal",)
KILLS: Final = ("held run", "worker")


def measure() -> dict[str, Any]:
    """Run both backends' drains, the journal's faults apart from the kills; return the counts.

    Only the journal's faults are the journal's to survive: a step whose
    process is killed after its effect and before its record runs again (as
    after any crash), and a held run's step may finish after its runner died.
    """
    return {
        "postgres, server stopped": postgres_figures(JOURNAL, 1),
        "postgres, processes killed": postgres_figures(KILLS, 2),
        "sqlite, disk full": sqlite_figures(JOURNAL, 3),
        "sqlite, processes killed": sqlite_figures(KILLS, 4),
    }


def render(results: dict[str, Any]) -> list[str]:
    """The fault-injection rows of the benchmark table."""
    rows = []
    for backend, found in results.items():
        if "skipped" in found:
            rows.append(f"| {backend}: faults injected | not measured: {found['skipped']} | |")
            continue
        faults = ", ".join(f"{count} {kind}" for kind, count in sorted(found["faults"].items()))
        statuses = ", ".join(f"{count} {name}" for name, count in sorted(found["statuses"].items()))
        rows += [
            (
                f"| {backend}: {found['runs']} runs x 3 side effects, {WORKERS} workers, "
                f"faults every {EVERY:g}s | {faults or 'none'} in {found['seconds']}s; "
                f"{statuses} | |"
            ),
            (
                f"| {backend}: side effects counted | {found['side_effects']} "
                f"({len(found['twice'])} twice, {found['missing']} missing) "
                f"| {found['runs'] * 3}, each once |"
            ),
        ]
    return rows


if __name__ == "__main__":
    measured = measure()
    print(json.dumps(measured, indent=2))
    print("\n".join(["| faults | measured | target |", "| --- | --- | --- |", *render(measured)]))
