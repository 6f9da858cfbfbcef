"""MCP figures: a workflow called as a tool of `adws mcp` against `adws run` of the same workflow.

Imported by `benchmarks/run.py`. Both run a one-step workflow (a Python
step) to its end, journaled in SQLite: `adws run` as a fresh process each
time; through MCP, a server already started and a client session open
(the MCP SDK's own, over stdio), from the tool call to `await_run`
answering `succeeded` (the run itself in an `adws held-run` child).
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

import anyio

FLOW: Final = """
from returns.io import IOSuccess

from adws import Step, Workflow


def note(ctx):
    return IOSuccess(ctx.merge_outputs({"noted": ctx.inputs["topic"]}))


noted = Workflow("noted", (Step("note", note, reads=("topic",), writes=("noted",)),), inputs=("topic",))
"""
REPEATS: Final = 7


def _project(folder: str) -> tuple[Path, dict[str, str]]:
    project = Path(folder)
    (project / "workflows").mkdir()
    (project / "workflows" / "flow.py").write_text(FLOW)
    env = {key: value for key, value in os.environ.items() if not key.startswith("ADWS_")}
    return project, env


def run_seconds(repeats: int = REPEATS) -> list[float]:
    """Time `adws run noted -i topic=x` start to end, a fresh process each time."""
    with tempfile.TemporaryDirectory() as folder:
        project, env = _project(folder)
        argv = [sys.executable, "-m", "adws", "run", "noted", "-i", "topic=x", "-q"]
        argv += ["--journal", "runs.db"]
        times = []
        for _ in range(repeats + 1):
            start = time.perf_counter()
            subprocess.run(argv, cwd=project, env=env, check=True, capture_output=True)
            times.append(time.perf_counter() - start)
        return times[1:]


def mcp_seconds(repeats: int = REPEATS) -> list[float]:
    """Time a tool call of `noted` to `await_run` answering `succeeded`, the server running."""
    from mcp.client import ClientSession  # noqa: PLC0415 - the optional SDK
    from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: PLC0415

    times: list[float] = []
    with tempfile.TemporaryDirectory() as folder:
        project, env = _project(folder)
        server = StdioServerParameters(
            command=sys.executable,
            args=["-m", "adws", "mcp", "--journal", "runs.db"],
            env=env,
            cwd=str(project),
        )

        async def calls() -> None:
            async with (
                stdio_client(server) as (reading, writing),
                ClientSession(reading, writing) as session,
            ):
                await session.initialize()
                for _ in range(repeats + 1):
                    start = time.perf_counter()
                    started = await session.call_tool("noted", {"topic": "x"})
                    run_id = started.structured_content["run_id"]
                    ended = await session.call_tool("await_run", {"run_id": run_id})
                    assert ended.structured_content["status"] == "succeeded"  # noqa: S101
                    times.append(time.perf_counter() - start)

        anyio.run(calls)
    return times[1:]


def measure() -> dict[str, Any]:
    """Median seconds of each, and the MCP call's overhead over `adws run`."""
    run = statistics.median(run_seconds())
    mcp = statistics.median(mcp_seconds())
    return {"run_s": run, "mcp_s": mcp, "overhead_s": mcp - run}


def render(results: dict[str, Any]) -> list[str]:
    """The MCP rows of the benchmark table."""
    return [
        f"| adws run of a one-step workflow, a fresh process (median of {REPEATS}) | {results['run_s']:.2f} s | |",
        f"| the same as an MCP tool call to await_run succeeded, server running | {results['mcp_s']:.2f} s | |",
        f"| an MCP tool call's overhead over adws run | {results['overhead_s']:+.2f} s | ≤ 0.5 s |",
    ]


if __name__ == "__main__":
    print("\n".join(render(measure())))
