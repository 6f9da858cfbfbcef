"""What keeping every agent exchange costs: the journal's size and the time per agent step.

Imported by `benchmarks/run.py`. A run of 1,000 agent steps, each asking a
distinct 4 KB prompt and getting a short answer in-process (no agent
process starts, so the time is adws's own), is journaled three ways: with
transcripts, with `--no-transcripts` (hashes only), and without a journal.
Two kinds of prompt: templated text with one item's data in it (what a
workflow's prompts look like), and random text (nothing to compress).
"""

from __future__ import annotations

import functools
import random
import string
import tempfile
from pathlib import Path
from typing import Any

from returns.io import IOSuccess
from timing import median_seconds

from adws import OutputContract, Workflow, WorkflowContext, agent_step, run_workflow
from adws.engine.events import AgentExchanged
from adws.journal import Journal, JournalObserver
from adws.journal.store.exchanges import exchange_statements
from adws.journal.store.prune import prune
from adws.testing import FunctionAgent

EXCHANGES = 1_000
PROMPT_BYTES = 4_096
REPEATS = 5
ANSWER = "I checked the claim against its source; it holds.\n\nSTATUS: done\nNOTE_{0}: holds\n"
_TEMPLATE = (
    "You are reviewing one claim of a research packet. Read the claim, open its source, "
    "and say whether the source supports it. Quote the sentence that does, or say what is "
    "missing. Be brief and exact; do not speculate beyond the source.\n"
)


def _prompt(i: int, *, random_text: bool) -> str:
    if random_text:
        chooser = random.Random(i)  # noqa: S311 - test data, not secrets
        alphabet = string.ascii_letters + string.digits + " "
        return "".join(chooser.choice(alphabet) for _ in range(PROMPT_BYTES))
    item = f"Claim {i}: the service at https://x.test/{i} answers in under {i % 97} ms.\n"
    text = item
    while len(text) < PROMPT_BYTES:
        text += _TEMPLATE
    return text[:PROMPT_BYTES]


def _workflow(*, random_text: bool) -> Workflow:
    agent = FunctionAgent(lambda request: ANSWER.format(request.step_name[1:]))
    steps = tuple(
        agent_step(
            f"s{i}",
            prompt=_prompt(i, random_text=random_text),
            agent=agent,
            contract=OutputContract((f"NOTE_{i}",)),
        )
        for i in range(EXCHANGES)
    )
    return Workflow("transcripts", steps)


def _journal_bytes(workflow: Workflow, *, transcripts: bool) -> tuple[int, float]:
    """Journal one run; return the file's size and the run's time per step."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "runs.db"
        journal = Journal(path)
        observer = JournalObserver(journal, "bench", transcripts=transcripts)
        count = iter(range(1_000_000))

        def once() -> None:
            run_workflow(
                workflow, WorkflowContext(), observers=[observer], run_id=f"r{next(count)}"
            )

        seconds = median_seconds(once, REPEATS)
        prune(journal, keep=1)  # one run's rows, then VACUUM: the size of one run
        journal.close()
        size = path.stat().st_size
    return size, seconds / EXCHANGES * 1e6


def _statements_us(*, transcripts: bool) -> float:
    """Time building one exchange's journal statements (hashing, and compressing when kept)."""
    prompt = _prompt(7, random_text=False)
    event = AgentExchanged(
        "r", "s7", 1, "s7", prompt, ANSWER.format(7), 0, "", None, 0.1, None, None, 1 << 20
    )
    calls = 200

    def build() -> None:
        for _ in range(calls):
            exchange_statements(event, transcripts=transcripts)

    return median_seconds(build, REPEATS) / calls * 1e6


def measure() -> dict[str, Any]:
    """Measure the journal's size per 1,000 exchanges and the per-step cost of keeping them."""
    results: dict[str, Any] = {
        "statements": {
            "kept_us": _statements_us(transcripts=True),
            "hashes_us": _statements_us(transcripts=False),
        }
    }
    for kind, random_text in (("templated", False), ("random", True)):
        workflow = _workflow(random_text=random_text)
        kept, kept_us = _journal_bytes(workflow, transcripts=True)
        hashes, hashes_us = _journal_bytes(workflow, transcripts=False)
        if not isinstance(run_workflow(workflow, WorkflowContext()), IOSuccess):
            message = "the transcripts benchmark's run failed"
            raise SystemExit(message)
        bare = median_seconds(functools.partial(run_workflow, workflow), REPEATS)
        results[kind] = {
            "kept_mb": kept / 1e6,
            "hashes_mb": hashes / 1e6,
            "raw_mb": EXCHANGES * (PROMPT_BYTES + len(ANSWER)) / 1e6,
            "kept_us": kept_us,
            "hashes_us": hashes_us,
            "no_journal_us": bare / EXCHANGES * 1e6,
        }
    return results


def render(results: dict[str, Any]) -> list[str]:
    """Format the rows of the transcripts table."""
    built = results["statements"]
    lines = [
        (
            f"| one exchange's statements, 4 KB prompt: hashed and compressed | {built['kept_us']:.0f}"
            f" µs (hashes only: {built['hashes_us']:.0f}) | ≤ 100 µs |"
        )
    ]
    for kind in ("templated", "random"):
        row = results[kind]
        lines += [
            (
                f"| journal per 1,000 exchanges, 4 KB {kind} prompts | {row['kept_mb']:.2f} MB "
                f"(hashes only: {row['hashes_mb']:.2f}; the texts raw: {row['raw_mb']:.1f}) | "
                f"{'≤ 2 MB' if kind == 'templated' else '(nothing to compress)'} |"
            ),
            (
                f"| agent step with transcripts, {kind} | {row['kept_us']:.0f} µs/step (hashes "
                f"only: {row['hashes_us']:.0f}; no journal: {row['no_journal_us']:.0f}) | "
                "≤ 1000 µs/step |"
            ),
        ]
    return lines
