"""`adws eval`: every task N times per variant, as one batch; pass rates and a test between them.

A variant is `NAME:OPTIONS`: run options and `-i KEY=VALUE` overrides,
split like a shell command line. Runs are numbered variant by variant,
task by task (`line` = 1 + (variant * tasks + task) * N + repeat), each run
keeps its variant's options in the journal, and the batch's source names
the evaluation (`eval {...}`: the tasks file, N, the variants and the
metric), so `adws runs --batch B` lists its runs in that order.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import attrs

from adws import io_ops
from adws.agents.offline import OFFLINE
from adws.batch import run_batch
from adws.batch.evaluation import EvalRun, compare, metric_value, score
from adws.batch.tasks import Batch
from adws.cli import EXIT_CODES
from adws.cli._args import UsageError
from adws.cli._options import (
    add_agent_options,
    add_journal,
    add_workflows,
    add_worktrees,
    given_options,
    opened,
    runs_of,
)
from adws.cli._output import err, out, out_json
from adws.cli._values import positive
from adws.cli.batch import (
    DEFAULT_CONCURRENCY,
    _checked_lines,
    _Connection,
    _dask_ready,
    _slots,
    agent_checked,
)
from adws.cli.workflows import load_workflow
from adws.discovery import workflows_dir
from adws.engine.context import WorkflowContext
from adws.engine.executor import new_run_id
from adws.journal.identity.fingerprint import fingerprint
from adws.journal.records.codec import decode_outputs, encode_context
from adws.journal.store.batches import batch_lines, batch_source, find_batch, queue_batch
from adws.runs.batches import BatchRun, new_batch_id
from adws.runs.interrupts import EXIT_BY_SIGNAL
from adws.runs.worktrees import GOES_ON, repositories_of
from adws.workspaces.branches import delete_branches_of

if TYPE_CHECKING:
    from collections.abc import Iterator

    from adws.batch.evaluation import Comparison, EvalScore
    from adws.journal import Journal
    from adws.journal.records.options import RunOptions

__all__ = ["Variant", "add_eval", "cmd_eval", "evaluation_of", "parse_variant"]

_OPTIONS: Final = (
    "agent",
    "model",
    "agent_output",
    "max_cost",
    "max_tokens",
    "max_agents",
    "on_budget",
    "max_wait",
    "notify",
)
"""Every option a variant takes, each applied to its runs (none parsed and dropped)."""


@attrs.frozen
class Variant:
    """One variant of an evaluation: its name, run options and input overrides."""

    name: str
    options: dict[str, Any]
    inputs: dict[str, str]
    text: str = ""


def add_eval(parser: argparse.ArgumentParser) -> None:
    """Declare `adws eval WORKFLOW TASKS.jsonl [-n N] [--variant NAME:OPTIONS ...]`."""
    parser.description = (
        "Run WORKFLOW on every task of TASKS.jsonl (a JSON object of inputs per "
        "line) N times under every variant, as one batch, and print per variant the pass rate "
        "with its 95% Wilson interval, the mean cost and time; two variants are compared with "
        "Fisher's exact test. A variant is NAME:OPTIONS, the options split like a shell command "
        "line (-i KEY=VALUE, --agent, --model, --agent-output, --max-cost, --max-tokens, "
        "--max-agents, --on-budget, --max-wait, --notify). Exit codes: 0 the evaluation ran "
        "(whatever its runs did), 2 usage, 130 interrupted."
    )
    add_workflows(parser)
    add_journal(parser)
    add_worktrees(parser)
    parser.add_argument(
        "--keep-branches",
        action="store_true",
        help="keep the runs' adws/RUN/... branches (by default they go when the evaluation ends)",
    )
    parser.set_defaults(record=None, replay=None, no_transcripts=False)
    parser.add_argument("workflow", help="workflow name")
    parser.add_argument("tasks_file", metavar="TASKS.jsonl", help="one JSON object per line")
    parser.add_argument(
        "-n", type=positive, default=3, metavar="N", help="runs of each task per variant (3)"
    )
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME:OPTIONS",
        help="a variant: its name, a colon, its run options and -i overrides (repeat it)",
    )
    parser.add_argument(
        "--metric", metavar="KEY", help="score each run by its numeric output KEY, not success"
    )
    parser.add_argument(
        "--concurrency", type=positive, metavar="N", help="runs at a time (default: 8)"
    )
    add_agent_options(parser)
    parser.add_argument(
        "--dask",
        metavar="ADDRESS",
        help="run on a Dask cluster, as adws batch --dask does (local:N or a tls:// address)",
    )
    parser.add_argument("--json", action="store_true", help="print the evaluation as JSON")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress line on stderr")


class _Refused(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override] # raises, never returns
        raise UsageError(message)


def _variant_parser() -> argparse.ArgumentParser:
    parser = _Refused(prog="--variant", add_help=False)
    add_agent_options(parser)
    parser.add_argument("-i", "--input", action="append", default=[], metavar="KEY=VALUE")
    return parser


def parse_variant(text: str) -> Variant:
    """Read `NAME:OPTIONS`; a bad one is a `UsageError` naming it."""
    name, colon, rest = text.partition(":")
    if not colon or not name.strip():
        msg = (
            f"--variant {text!r}: write NAME:OPTIONS, e.g. a:--model=opus or b:-i prompt_file=p2.md"
        )
        raise UsageError(msg)
    try:
        parsed = _variant_parser().parse_args(shlex.split(rest))
    except (UsageError, ValueError) as exc:
        msg = f"--variant {name}: {exc}"
        raise UsageError(msg) from exc
    inputs: dict[str, str] = {}
    for given in parsed.input:
        key, equals, value = given.partition("=")
        if not equals or not key:
            msg = f"--variant {name}: -i {given!r} is not KEY=VALUE"
            raise UsageError(msg)
        inputs[key] = value
    options = {key: getattr(parsed, key) for key in _OPTIONS if getattr(parsed, key) is not None}
    return Variant(name.strip(), options, inputs, rest)


def _metric_of(journal: Journal, run_id: str, metric: str) -> float | None:
    """Read a run's numeric output `metric` from its succeeded steps in the journal."""
    outputs: dict[str, object] = {}
    for attempt in journal.attempts(run_id):
        if attempt.status == "succeeded" and attempt.outputs_json:
            outputs.update(decode_outputs(attempt.outputs_json))
    return metric_value(outputs, metric)


def evaluation_of(
    journal: Journal, batch: str
) -> tuple[str, str, dict[str, Any], list[EvalScore], Comparison | None]:
    """Score an evaluation from the journal alone: its batch, workflow, description, figures.

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
                record.status,
                None if record.usage is None else record.usage.cost_usd,
                record.seconds,
                None if metric is None else _metric_of(journal, record.run_id, str(metric)),
            )
        )
    scores = score(names, results, metric=metric is not None)
    return batch_id, workflow, described, scores, compare(scores)


def _figure(value: float | None, form: str) -> str:
    return "-" if value is None else form.format(value)


def _table(scores: list[EvalScore], comparison: Comparison | None, metric: str | None) -> str:
    what = f"mean {metric}" if metric else "pass rate"
    head = f"{'variant':<12} {'runs':>5} {'passed':>6} {what:>10}  {'95% interval':<16}"
    lines = [f"{head} {'mean cost':>10} {'mean time':>9}"]
    lines.extend(
        f"{s.variant:<12} {s.runs:>5} {s.passed:>6} {s.rate:>10.3f}  "
        f"{f'[{s.low:.3f}, {s.high:.3f}]':<16} {_figure(s.mean_cost_usd, '${:.4f}'):>10} "
        f"{_figure(s.mean_seconds, '{:.2f}s'):>9}"
        for s in scores
    )
    if comparison is not None:
        lines.append(
            f"{comparison.first} - {comparison.second}: {comparison.difference:+.3f};"
            f" Fisher's exact test: {comparison.verdict}"
        )
    return "\n".join(lines)


def _planned(
    args: argparse.Namespace,
) -> tuple[Any, list[Variant], list[RunOptions], list[tuple[int, dict[str, object]]]]:
    """Check everything before anything is recorded: variants, options, agents, tasks."""
    variants = [parse_variant(text) for text in args.variant] or [Variant("default", {}, {})]
    names = [variant.name for variant in variants]
    if len(set(names)) != len(names):
        msg = f"--variant names must be distinct, got {names}"
        raise UsageError(msg)
    _slots(args.dask)
    _dask_ready(args.dask)
    workflow = load_workflow(args.workflow, args.workflows)
    base = given_options(args)
    chosen: list[RunOptions] = []
    for variant in variants:
        options = attrs.evolve(base, **variant.options)
        agent_checked(workflow, options)
        chosen.append(options)
    tasks = list(_checked_lines(Path(args.tasks_file), workflow))
    return workflow, variants, chosen, tasks


def cmd_eval(args: argparse.Namespace) -> int:
    """Run the evaluation as one batch and print each variant's figures."""
    workflow, variants, chosen, tasks = _planned(args)
    base = given_options(args)
    repeats: int = args.n
    each = len(tasks) * repeats

    def variant_of(line: int) -> int:
        return (line - 1) // each

    def queued() -> Iterator[tuple[int, str, str]]:
        line = 0
        for variant in variants:
            for _number, inputs in tasks:
                for _ in range(repeats):
                    line += 1
                    context = WorkflowContext(inputs={**inputs, **variant.inputs})
                    yield line, new_run_id(), encode_context(context)

    io_ops.become_subreaper()
    concurrency = args.concurrency or DEFAULT_CONCURRENCY
    connection = _Connection(args.dask, concurrency)
    batch_id = new_batch_id()
    try:
        connection(batch_id)
        journal = opened(runs_of(args))
    except BaseException:
        connection.close()
        raise
    described = {
        "tasks": str(args.tasks_file),
        "n": repeats,
        "per_variant": each,
        "variants": [{"name": v.name, "options": v.text} for v in variants],
        "metric": args.metric,
    }
    encoded = [options.to_json() for options in chosen]
    written = queue_batch(
        journal,
        batch_id,
        workflow.name,
        "eval " + json.dumps(described, sort_keys=True),
        runs=queued(),
        steps=[step.name for step in workflow.steps],
        fingerprint=fingerprint(workflow),
        options=base.to_json(),
        options_for=lambda line: encoded[variant_of(line)],
    )
    runs = [BatchRun(line, run_id, None, chosen[variant_of(line)]) for line, run_id in written]
    batch = Batch(
        batch_id,
        workflow.name,
        str(workflows_dir(args.workflows).resolve()),
        (os.getpid(), socket.gethostname()),
        offline=OFFLINE.enabled,
        worktrees=args.worktrees or "",
    )
    try:
        report, signum = run_batch(
            journal,
            workflow,
            batch,
            runs,
            concurrency=concurrency,
            on_progress=lambda state: None if args.quiet else err(state.line(batch_id)),
            pool=connection.pool,
        )
    finally:
        io_ops.kill_adopted(frozenset(io_ops.GROUPS.current()))
    if not args.keep_branches:
        ended = [r.run_id for r in journal.runs(batch=batch_id) if r.status not in GOES_ON]
        delete_branches_of(repositories_of(journal, ended))
    _, _, _, scores, comparison = evaluation_of(journal, batch_id)
    if args.json:
        out_json(
            {
                "batch_id": batch_id,
                "workflow": workflow.name,
                **described,
                "scores": [s.to_dict() for s in scores],
                "comparison": None if comparison is None else comparison.to_dict(),
            }
        )
    else:
        out(f"eval {batch_id} · {workflow.name} · {len(tasks)} tasks x {args.n} runs per variant")
        out(_table(scores, comparison, args.metric))
    interrupted = EXIT_BY_SIGNAL.get(signum, EXIT_CODES["interrupted"])
    return interrupted if report.interrupted else 0
