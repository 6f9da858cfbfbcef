"""What a correction costs, continued vs fresh: the real claude CLI against the fake model API.

Imported by `benchmarks/run.py`. One agent step through the `claude` preset:
its first attempt explores (reads three files with tool calls) and answers
without the field the contract asks for; the retry corrects it. With
`sessions="continue"` the retry continues the session and the model is
sent only the feedback; with `sessions="fresh"` the retry is a new session
with the whole prompt, and an agent that starts over explores again (the
fake model is scripted to, as a real one would have to). Counted per
correction: the model requests the retry made and their input, in tokens
estimated as request bytes / 4 (the fake API reports fixed usage), and
the wall time of the retry.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from adws import OutputContract, RetryPolicy, Workflow, agent_step, run_workflow
from adws.agents.presets import PRESETS
from adws.engine.events import AgentExchanged, RunEvent
from adws.testing import FakeModelAPI, Reply

BIN = Path(__file__).resolve().parent.parent / ".cache" / "agent-clis" / "node_modules" / ".bin"
FILES = ("notes.md", "plan.md", "todo.md")
DONE = "STATUS: done\nSUMMARY: three files, all read"


def _explore(work: Path) -> list[Reply]:
    return [Reply.tool("Read", {"file_path": str(work / name)}) for name in FILES]


def _correction(mode: str) -> dict[str, float]:
    """Run one step whose first answer is rejected; measure what its retry cost."""
    with tempfile.TemporaryDirectory() as folder, FakeModelAPI() as api:
        work = Path(folder) / "work"
        work.mkdir()
        subprocess.run(["git", "init", "-q", str(work)], check=True)
        for name in FILES:
            (work / name).write_text(f"# {name}\n" + "A line of notes to read.\n" * 40)
        first = [*_explore(work), Reply.text("STATUS: done")]
        again = [Reply.text(DONE)] if mode == "continue" else [*_explore(work), Reply.text(DONE)]
        api.script(*first, *again)
        agent = PRESETS["claude"].agent(env=api.claude_env(Path(folder) / "home"), timeout=120)
        step = agent_step(
            "summarise",
            prompt=f"Read {', '.join(FILES)} in {work} and sum them up.",
            agent=agent,
            contract=OutputContract(("SUMMARY",)),
            retry=RetryPolicy(max_attempts=2),
            cwd=str(work),
            sessions=mode,  # type: ignore[arg-type] # one of the two modes
        )
        calls: list[tuple[float, int]] = []

        def seen(event: RunEvent) -> None:
            if isinstance(event, AgentExchanged):
                calls.append((time.monotonic(), len(api.requests)))

        run_workflow(Workflow("bench", (step,)), observers=[seen])
        if len(calls) != 2 or api.unanswered or api.unused():
            msg = f"the sessions benchmark ({mode}) did not run as scripted: {calls}"
            raise SystemExit(msg)
        retried = api.requests[calls[0][1] :]
        sent = sum(len(json.dumps(request["body"])) for request in retried)
        return {"requests": len(retried), "input_tokens": sent / 4}


def _timed(mode: str) -> dict[str, float]:
    started = time.monotonic()
    found = _correction(mode)
    return {**found, "seconds": time.monotonic() - started}


def measure() -> dict[str, Any]:
    """Measure a correction continued and fresh (skipped when the claude CLI is absent)."""
    if not (BIN / "claude").exists() and shutil.which("claude") is None:
        return {"skipped": "the claude CLI is not installed: make clis"}
    path = os.environ.get("PATH", "")
    os.environ["PATH"] = f"{BIN}{os.pathsep}{path}"
    try:
        return {mode: _timed(mode) for mode in ("continue", "fresh")}
    finally:
        os.environ["PATH"] = path


def render(results: dict[str, Any]) -> list[str]:
    """Format the rows of the sessions table."""
    if "skipped" in results:
        return [f"| a correction, continued vs fresh | skipped: {results['skipped']} | |"]
    kept, fresh = results["continue"], results["fresh"]
    return [
        (
            f"| a correction in the same session (claude CLI): model requests |"
            f" {kept['requests']} | 1 |"
        ),
        (
            f"| … its input, ≈ tokens (request bytes / 4) | {kept['input_tokens']:,.0f} |"
            f" less than fresh |"
        ),
        (
            f"| a correction in a fresh session (explores again): model requests |"
            f" {fresh['requests']} | (the old way) |"
        ),
        f"| … its input, ≈ tokens (request bytes / 4) | {fresh['input_tokens']:,.0f} | |",
        (
            f"| wall time of the step, continued / fresh | {kept['seconds']:.1f} s /"
            f" {fresh['seconds']:.1f} s | |"
        ),
    ]
