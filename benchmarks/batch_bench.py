"""Batch figures: 400 runs x 3 steps x a 50 ms agent, locally and on Dask; coordinator memory.

Imported by `benchmarks/run.py`. Each figure runs the real `adws batch` command in
a fresh process, as a user would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Final

FLOW = """
from adws import CommandAgent, RetryPolicy, Workflow, agent_step

AGENT = CommandAgent(["sh", "-c", "cat >/dev/null; sleep 0.05; echo STATUS: done"])
three = Workflow(
    "three",
    tuple(agent_step(f"s{i}", prompt="{n}", agent=AGENT, retry=RetryPolicy()) for i in range(3)),
    inputs=("n",),
)
"""

TRIVIAL = """
from returns.io import IOSuccess
from adws import Step, Workflow

trivial = Workflow("trivial", (Step("s", lambda ctx: IOSuccess(ctx)),), inputs=("n",))
"""

PEAK = (
    "import runpy, sys\n"
    "sys.argv = ['adws'] + sys.argv[1:]\n"
    "try:\n"
    "    runpy.run_module('adws', run_name='__main__')\n"
    "finally:\n"
    "    peak = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0]\n"
    "    print(int(peak.split()[1]), file=sys.stderr)\n"
)


def _batch(runs: int, workflow: str, source: str, *argv: str) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as folder:
        project = Path(folder)
        (project / "workflows").mkdir()
        (project / "workflows" / "flow.py").write_text(source)
        (project / "in.jsonl").write_text(
            "".join(json.dumps({"n": str(i)}) + "\n" for i in range(runs))
        )
        env = {**os.environ, "ADWS_JOURNAL": str(project / "runs.db")}
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", PEAK, "batch", workflow, "in.jsonl", "-q", "--json", *argv],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        seconds = time.perf_counter() - started
        report = json.loads(done.stdout)
        peak_kib = int(done.stderr.strip().splitlines()[-1])
    events = runs * (2 + 3 * 1)  # a run's start and end, and each step's success
    return {
        "seconds": seconds,
        "runs_per_s": runs / seconds,
        "events_per_s": events / seconds,
        "peak_mb": peak_kib / 1024,
        "succeeded": report["counts"].get("succeeded", 0),
    }


IDEAL: Final = 400 * 3 * 0.05 / 8
"""400 runs of 3 steps of 50 ms, 8 at a time, with no overhead at all: 7.5 s."""

AGENT_SCRIPT: Final = "cat >/dev/null; sleep 0.05; echo STATUS: done"


def _floor() -> float:
    """The same 1,200 agent commands, 8 at a time, through `xargs -P 8`: the machine's floor.

    Each call starts the same `sh` with a prompt on its stdin, as the agent
    step does; what adws adds on top is journaling, validation and the
    workers' bookkeeping.
    """
    started = time.perf_counter()
    subprocess.run(
        ["xargs", "-P", "8", "-n", "1", "sh", "-c", f'echo "$1" | sh -c "{AGENT_SCRIPT}"', "sh"],
        input="".join(f"{i}\n" for i in range(400 * 3)),
        capture_output=True,
        text=True,
        check=True,
    )
    return time.perf_counter() - started


def measure() -> dict[str, Any]:
    """Measure the batch figures, with each one's ratio to the ideal."""
    figures = {
        "local": _batch(400, "three", FLOW, "--concurrency", "8"),
        "dask": _batch(400, "three", FLOW, "--dask", "local:2", "--concurrency", "8"),
        "memory": _batch(5_000, "trivial", TRIVIAL, "--concurrency", "2"),
        "floor": {"seconds": _floor()},
    }
    for name in ("local", "dask"):
        figures[name]["ratio"] = figures[name]["seconds"] / IDEAL
        figures[name]["over_floor"] = figures[name]["seconds"] / figures["floor"]["seconds"]
    return figures


def render(b: dict[str, Any]) -> list[str]:
    """Table rows, each figure beside its target."""
    local, dask, memory = b["local"], b["dask"], b["memory"]
    floor = b.get("floor", {}).get("seconds", float("nan"))  # results from before the floor
    return [
        f"| 400 runs x 3 steps x 50 ms agent, --concurrency 8 | {local['seconds']:.1f} s: **{local['ratio']:.2f}x** ideal {IDEAL:.1f} s, {local['seconds'] / floor:.2f}x the floor ({local['runs_per_s']:.0f} runs/s, {local['events_per_s']:.0f} journal events/s) | ≤ 1.25x |",
        f"| the same on --dask local:2, 8 at a time | {dask['seconds']:.1f} s: **{dask['ratio']:.2f}x** ideal, {dask['seconds'] / floor:.2f}x the floor ({dask['runs_per_s']:.0f} runs/s) | ≤ 1.5x |",
        f"| the floor: the same 1,200 agent commands through `xargs -P 8` | {floor:.1f} s ({floor / IDEAL:.2f}x ideal) | (peer) |",
        f"| coordinator peak RSS, 5,000 trivial runs | {memory['peak_mb']:.0f} MB ({memory['runs_per_s']:.0f} runs/s) | ≤ 150 MB |",
    ]
