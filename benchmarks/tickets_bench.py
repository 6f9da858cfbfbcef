"""Ticket figures: from a labelled issue to its run's first step under `adws watch github --poll 5`.

Imported by `benchmarks/run.py`. The real `adws watch github --work 1` runs in
a process of its own against the fake GitHub (`adws.testing.github_api`), a
SQLite journal, and a workflow whose first step notes when it started; the
requests each phase makes are counted from the fake.
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

from adws.testing.github_api import FakeGitHub

FLOW: Final = """
import time

from returns.io import IOSuccess

from adws import Step, Workflow

TICKET = ("ticket", "ticket_title", "ticket_body", "ticket_url", "ticket_author")


def stamp(ctx):
    with open("started.log", "a") as log:
        log.write(f"{ctx.inputs['ticket']} {time.time()}\\n")
    return IOSuccess(ctx)


ticketed = Workflow("ticketed", (Step("stamp", stamp, reads=TICKET, writes=()),), inputs=TICKET)
"""
POLL: Final = 5.0
ISSUES: Final = 3


def latency(poll: float = POLL, count: int = ISSUES) -> dict[str, Any]:
    """Median seconds from an issue labelled to its run's first step; requests per idle poll."""
    with tempfile.TemporaryDirectory() as folder, FakeGitHub() as github:
        project = Path(folder)
        (project / "workflows").mkdir()
        (project / "workflows" / "flow.py").write_text(FLOW)
        github.add_repo("octo/app", permissions={"ana": "write"})
        env = {
            **os.environ,
            "ADWS_JOURNAL": str(project / "runs.db"),
            "ADWS_GITHUB_API_URL": github.url,
            "GITHUB_TOKEN": github.token,
        }
        argv = ["watch", "github", "--repo", "octo/app", "--workflow", "ticketed"]
        watcher = subprocess.Popen(
            [sys.executable, "-m", "adws", *argv, "--poll", str(poll), "--work", "1"],
            cwd=project,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        delays = []
        log = project / "started.log"
        try:
            time.sleep(poll * 1.5)
            before = len(github.requests)
            time.sleep(poll * 2)
            idle = (len(github.requests) - before) / 2
            for n in range(count):
                time.sleep(poll * 0.37)  # somewhere in the watcher's interval
                labelled = time.time()
                github.add_issue("octo/app", f"issue {n}", "b", author="ana", labels=("adws",))
                while len(log.read_text().splitlines() if log.exists() else []) <= n:
                    time.sleep(0.01)
                delays.append(float(log.read_text().splitlines()[n].split()[1]) - labelled)
        finally:
            watcher.terminate()
            watcher.wait(timeout=60)
    return {"poll": poll, "median_s": statistics.median(delays), "idle_requests": idle}


def measure() -> dict[str, Any]:
    """Measure the latency under `--poll 5` (the worker beside it polls every 5 s too)."""
    return latency()


def render(results: dict[str, Any]) -> list[str]:
    """The ticket rows of the benchmark table."""
    return [
        (
            f"| labelled issue to its run's first step, adws watch github --poll"
            f" {results['poll']:g} --work 1 (median of {ISSUES}) | {results['median_s']:.1f} s"
            " | ≤ 2 polls |"
        ),
        f"| requests of an idle poll (no new issue or comment) | {results['idle_requests']:.0f} | |",
    ]


if __name__ == "__main__":
    found = measure()
    print("\n".join(render(found)))
