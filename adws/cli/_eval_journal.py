"""Read an evaluation back from the journal: its batch, description, and each run as it ended.

`adws eval` prints from here once its batch ended, and `adws report
--eval` draws from here, so both count the same way. A run the
evaluation cancelled because it was still waiting for approval when the
evaluation ended (`ENDED_WAITING`) counts as `waiting`, as it did then.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final, final

import attrs

from adws.batch.evaluation import EvalRun, compare, metric_value, score
from adws.cli._args import UsageError
from adws.journal.records.codec import decode_outputs
from adws.journal.store.batches import batch_lines, batch_source, find_batch

if TYPE_CHECKING:
    from adws.batch.evaluation import Comparison, EvalScore
    from adws.journal import Journal
    from adws.journal.records.runs import RunRecord

__all__ = ["ENDED_WAITING", "Evaluation", "evaluation_of", "evaluation_runs"]

ENDED_WAITING: Final = "adws eval ended while the run waited for approval"
"""The reason an evaluation gives when it cancels its runs left waiting (they count `waiting`)."""


@final
@attrs.frozen
class Evaluation:
    """An evaluation as the journal holds it: its batch, workflow, description and runs."""

    batch_id: str
    workflow: str
    described: dict[str, Any]
    names: list[str]
    runs: list[EvalRun]

    @property
    def metric(self) -> str | None:
        """Name the numeric output the runs are scored by (None: by success)."""
        metric = self.described["metric"]
        return None if metric is None else str(metric)


def _status(record: RunRecord) -> str:
    """Say how a run counts: one the evaluation cancelled while it waited is `waiting`."""
    if record.cancel is not None and record.cancel.reason == ENDED_WAITING:
        return "waiting"
    return record.status


def _metric_of(journal: Journal, run_id: str, metric: str) -> float | None:
    """Read a run's numeric output `metric` from its succeeded steps in the journal."""
    outputs: dict[str, object] = {}
    for attempt in journal.attempts(run_id):
        if attempt.status == "succeeded" and attempt.outputs_json:
            outputs.update(decode_outputs(attempt.outputs_json))
    return metric_value(outputs, metric)


def evaluation_runs(journal: Journal, batch: str) -> Evaluation:
    """Read an evaluation's runs from the journal alone.

    A batch that is no evaluation, or whose description was tampered with,
    is a `UsageError` naming it.
    """
    found = find_batch(journal, batch)
    if isinstance(found, str):
        raise UsageError(found)
    batch_id, workflow, _, _ = found
    source = batch_source(journal, batch_id)
    refused = (
        f"batch {batch_id} is no evaluation adws eval recorded ({{}}); make one with"
        " adws eval WORKFLOW TASKS.jsonl"
    )
    if not source.startswith("eval "):
        raise UsageError(refused.format("it was started by adws batch"))
    try:
        described: dict[str, Any] = json.loads(source.removeprefix("eval "))
        names = [str(variant["name"]) for variant in described["variants"]]
        each, repeats = int(described["per_variant"]), int(described["n"])
        metric = described["metric"]
    except (ValueError, TypeError, KeyError) as exc:
        raise UsageError(refused.format(f"its description: {type(exc).__name__}: {exc}")) from exc
    if min(each, repeats, len(names)) < 1:
        raise UsageError(refused.format("its description counts no runs"))
    lines = batch_lines(journal, batch_id)
    results = []
    for record in journal.runs(batch=batch_id):
        line = int(lines[record.run_id] or 0)
        results.append(
            EvalRun(
                names[min(max(0, line - 1) // each, len(names) - 1)],
                max(0, line - 1) % each // repeats,
                _status(record),
                None if record.usage is None else record.usage.cost_usd,
                record.seconds,
                None if metric is None else _metric_of(journal, record.run_id, str(metric)),
                record.run_id,
                None if record.error is None else str(record.error.error_type),
                record.failed_step,
            )
        )
    return Evaluation(batch_id, workflow, described, names, results)


def evaluation_of(
    journal: Journal, batch: str
) -> tuple[str, str, dict[str, Any], list[EvalScore], Comparison | None]:
    """Score an evaluation from the journal alone: its batch, workflow, description, figures."""
    found = evaluation_runs(journal, batch)
    scores = score(found.names, found.runs, metric=found.metric is not None)
    return found.batch_id, found.workflow, found.described, scores, compare(scores)
