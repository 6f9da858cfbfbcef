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
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import attrs

from adws import io_ops
from adws.agents.offline import OFFLINE
from adws.batch import run_batch
from adws.batch.baseline import Baseline, BaselineError, gate, tasks_hash
from adws.batch.evaluation import by_task, compare, score
from adws.batch.inputs import BatchInputError, iter_lines
from adws.batch.tasks import Batch
from adws.cli import EXIT_CODES
from adws.cli._args import UsageError
from adws.cli._eval_changed import changed_steps
from adws.cli._eval_journal import ENDED_WAITING, evaluation_of, evaluation_runs
from adws.cli._eval_output import ProgressLines, failures_of, markdown, task_table, text_table
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
    _Connection,
    _dask_ready,
    _slots,
    agent_checked,
)
from adws.cli.workflows import load_workflow
from adws.discovery import workflows_dir
from adws.engine.context import WorkflowContext
from adws.engine.executor import new_run_id
from adws.engine.step import Workflow  # attrs resolves the annotations at run time
from adws.journal.identity.fingerprint import fingerprint
from adws.journal.records.codec import decode_context, encode_context
from adws.journal.records.options import RunOptions  # as above
from adws.journal.store.batches import find_batch, queue_batch
from adws.journal.store.cassette import JournalCassette
from adws.runs._values import Refused
from adws.runs.batches import BatchRun, new_batch_id
from adws.runs.interrupts import EXIT_BY_SIGNAL
from adws.runs.worktrees import GOES_ON, repositories_of
from adws.workspaces.branches import delete_branches_of

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

    from adws.batch.evaluation import Comparison, EvalScore
    from adws.batch.report import Progress
    from adws.cli._eval_journal import Evaluation
    from adws.journal import Journal
    from adws.runs import Runs

__all__ = ["Variant", "add_eval", "adws_version", "cmd_eval", "evaluation_of", "parse_variant"]

_OPTIONS: Final = (
    "agent",
    "model",
    "agent_output",
    "max_cost",
    "max_tokens",
    "max_agents",
    "on_budget",
    "max_wait",
    "park_at",
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
        "Run WORKFLOW on every task of TASKS.jsonl (a JSON object of inputs per line) N times "
        "under every variant, as one batch, and print per variant the pass rate with its 95% "
        "Wilson interval, the mean cost and time; two variants are compared with Fisher's exact "
        "test. A variant is NAME:OPTIONS, the options split like a shell command line (-i "
        "KEY=VALUE, --agent, --model, --agent-output, --max-cost, --max-tokens, --max-agents, "
        "--on-budget, --max-wait, --park-at, --notify); an input every variant gives with -i may "
        "be left out of the task lines. A run that stops for approval counts as waiting (not a "
        "failure) and is cancelled when the evaluation ends, unless --keep-waiting. As a gate in "
        "CI: --save-baseline FILE records the pass rates, --baseline FILE and --fail-under RATE "
        "fail a variant whose 95% Wilson lower bound is under RATE or whose pass rate is "
        "significantly below the baseline's; --replay-from BATCH answers every agent call from a "
        "recorded batch ($0, offline), --changed-since REF runs nothing unless the workflow "
        "changed since a git ref, --markdown prints the table for a pull request. Exit codes: 0 "
        "the evaluation ran (whatever its runs did) and passed its gate, or nothing changed, 1 a "
        "variant failed the gate, 2 usage (a baseline adws did not write, or of another "
        "workflow, a batch of another workflow, too), 130 interrupted."
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
    parser.add_argument(
        "--replay-from",
        metavar="BATCH",
        help="answer every agent call from a recorded batch of this workflow ($0, offline)",
    )
    parser.add_argument(
        "--changed-since",
        metavar="REF",
        help="run nothing unless the workflow's steps (or files its inputs name) changed since"
        " the git REF",
    )
    parser.add_argument(
        "--by-task", action="store_true", help="then a table of each task's passes per variant"
    )
    parser.add_argument(
        "--keep-waiting",
        action="store_true",
        help="leave runs that stopped for approval waiting (default: cancel them at the end)",
    )
    parser.add_argument(
        "--save-baseline",
        metavar="FILE",
        help="write the pass rates measured to FILE (JSON), for a later --baseline",
    )
    parser.add_argument(
        "--baseline",
        metavar="FILE",
        help="exit 1 when a variant's pass rate is significantly below FILE's (Fisher, p < 0.05)",
    )
    parser.add_argument(
        "--fail-under",
        type=_rate,
        metavar="RATE",
        help="exit 1 when a variant's 95%% Wilson lower bound is under RATE (0 to 1)",
    )
    shown = parser.add_mutually_exclusive_group()
    shown.add_argument("--json", action="store_true", help="print the evaluation as JSON")
    shown.add_argument(
        "--markdown", action="store_true", help="print the table as Markdown, for a pull request"
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress line on stderr")


def _rate(text: str) -> float:
    """Parse a pass rate from 0 to 1, for argparse."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 1:
        msg = f"expected a rate from 0 to 1, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


def adws_version() -> str:
    """Return the installed adws's version, as a baseline records it."""
    from importlib.metadata import version  # noqa: PLC0415 - only a saved baseline pays for it

    return version("adws")


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


@attrs.frozen
class _Plan:
    """Everything checked before anything is recorded."""

    workflow: Workflow
    variants: list[Variant]
    options: list[RunOptions]
    tasks: list[tuple[int, dict[str, object]]]
    tasks_hash: str
    baseline: Baseline | None
    changed: list[str] | None = None
    """What changed since `--changed-since` (None: not asked; empty: nothing)."""


def _tasks(
    path: Path, workflow: Workflow, variants: list[Variant]
) -> list[tuple[int, dict[str, object]]]:
    """Read the tasks; a line may leave out an input that every variant gives with `-i`."""
    tasks = []
    try:
        for number, inputs in iter_lines(path):
            for variant in variants:
                missing = workflow.missing_inputs({**inputs, **variant.inputs})
                if missing:
                    msg = (
                        f"{path}, line {number}: workflow {workflow.name!r} needs input"
                        f" {', '.join(missing)} under variant {variant.name} (give it on the"
                        " line, or to every variant with -i KEY=VALUE)"
                    )
                    raise UsageError(msg)
            tasks.append((number, inputs))
    except BatchInputError as exc:
        raise UsageError(str(exc)) from exc
    if not tasks:
        msg = f"{path} holds no runs: write one JSON object of inputs per line"
        raise UsageError(msg)
    return tasks


def _baseline(path: str | None, workflow: str) -> Baseline | None:
    """Read `--baseline FILE`; one adws did not write, or of another workflow, is refused."""
    if path is None:
        return None
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        msg = f"--baseline {path}: cannot read it ({exc})"
        raise UsageError(msg) from exc
    try:
        return Baseline.parse(text, workflow)
    except BaselineError as exc:
        msg = f"--baseline {path}: refused: {exc}"
        raise UsageError(msg) from exc


def _planned(args: argparse.Namespace) -> _Plan:
    """Check everything before anything is recorded: variants, options, agents, tasks, baseline."""
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
    path = Path(args.tasks_file)
    tasks = _tasks(path, workflow, variants)
    baseline = _baseline(args.baseline, workflow.name)
    if args.save_baseline is not None and not Path(args.save_baseline).parent.is_dir():
        msg = f"--save-baseline {args.save_baseline}: no such folder to write it in"
        raise UsageError(msg)
    changed = None
    if args.changed_since is not None:
        named = [value for _, task in tasks for value in task.values()]
        named += [value for variant in variants for value in variant.inputs.values()]
        changed = changed_steps(workflows_dir(args.workflows), args.changed_since, workflow, named)
    digest = tasks_hash(path.read_bytes())
    return _Plan(workflow, variants, chosen, tasks, digest, baseline, changed)


def _cancel_waiting(runs: Runs, evaluation: Evaluation) -> None:
    """Cancel the runs still waiting for approval, so none stays in the approvals queue."""
    for run in evaluation.runs:
        if run.status != "waiting":
            continue
        outcome = runs.cancel(run.run_id, ENDED_WAITING, by="adws eval")
        if isinstance(outcome, Refused):
            err(f"adws: warning: run {run.run_id} was left waiting: {outcome.reason}")


def _by_task_json(plan: _Plan, evaluation: Evaluation) -> list[dict[str, object]]:
    return [
        {"line": plan.tasks[task][0], "passes": dict(zip(evaluation.names, cells, strict=True))}
        for task, cells in by_task(evaluation.names, evaluation.runs)
    ]


def _said(  # noqa: PLR0913 - the evaluation, and every way it is shown
    args: argparse.Namespace,
    plan: _Plan,
    evaluation: Evaluation,
    *,
    comparison: Comparison | None,
    scores: list[EvalScore],
    verdicts: tuple[list[str], list[str]],
) -> None:
    """Print the evaluation as asked (table, Markdown or JSON), and the gate's verdicts."""
    failures = failures_of(evaluation.names, evaluation.runs)
    failed, notes = verdicts
    title = (
        f"eval {evaluation.batch_id} · {evaluation.workflow} · {len(plan.tasks)} tasks"
        f" x {args.n} runs per variant"
    )
    if args.json:
        out_json(
            {
                "batch_id": evaluation.batch_id,
                "workflow": evaluation.workflow,
                **evaluation.described,
                "scores": [s.to_dict() for s in scores],
                "comparison": None if comparison is None else comparison.to_dict(),
                "failures": [f.to_dict() for f in failures],
                "by_task": _by_task_json(plan, evaluation),
                "gate": {"failed": failed, "notes": notes},
            }
        )
        return
    if args.markdown:
        verdicts_said = [f"FAILED: {line}" for line in failed] + notes
        out(
            markdown(
                title, scores, comparison, args.metric, failures=failures, verdicts=verdicts_said
            )
        )
    else:
        out(title)
        out(text_table(scores, comparison, args.metric, failures))
    if args.by_task:
        out("")
        out(task_table(evaluation.names, evaluation.runs, [number for number, _ in plan.tasks]))
    for note in notes:
        err(f"adws: {note}")
    for line in failed:
        err(f"adws: eval failed: {line}")


def _recorded(journal: Journal, batch: str, workflow: str) -> tuple[str, dict[str, list[str]]]:
    """Read a recorded batch's runs by their inputs, in line order; refuse another workflow's."""
    found = find_batch(journal, batch)
    if isinstance(found, str):
        msg = f"--replay-from {batch}: {found}"
        raise UsageError(msg)
    batch_id, recorded_workflow, _, _ = found
    if recorded_workflow != workflow:
        msg = (
            f"--replay-from {batch_id}: it is a batch of workflow {recorded_workflow!r},"
            f" not {workflow!r}; its answers were given to other prompts"
        )
        raise UsageError(msg)
    by_inputs: dict[str, list[str]] = {}
    for record in journal.runs(batch=batch_id):
        inputs = journal.run_inputs(record.run_id)
        key = _inputs_key(dict(decode_context(inputs).inputs))
        by_inputs.setdefault(key, []).append(record.run_id)
    return batch_id, by_inputs


def _inputs_key(inputs: Mapping[str, object]) -> str:
    return json.dumps(inputs, sort_keys=True, default=str)


def _replays(args: argparse.Namespace, plan: _Plan, journal: Journal) -> list[str | None]:
    """Name, per line, the recorded run whose answers it replays (None: no `--replay-from`).

    A run replays a recorded run of the same inputs (the task's with its
    variant's `-i`): its Nth repeat the Nth such run, round again when
    there are fewer. Inputs no recorded run had are refused, naming them.
    """
    repeats: int = args.n
    if args.replay_from is None:
        return [None] * (len(plan.variants) * len(plan.tasks) * repeats)
    batch_id, by_inputs = _recorded(journal, args.replay_from, plan.workflow.name)
    chosen: list[str | None] = []
    for variant in plan.variants:
        for number, inputs in plan.tasks:
            candidates = by_inputs.get(_inputs_key({**inputs, **variant.inputs}), [])
            if not candidates:
                msg = (
                    f"--replay-from {batch_id}: no run of it had the inputs of"
                    f" {args.tasks_file}, line {number} under variant {variant.name}"
                )
                raise UsageError(msg)
            chosen.extend(candidates[repeat % len(candidates)] for repeat in range(repeats))
    for run_id in dict.fromkeys(chosen):
        try:
            JournalCassette(journal, str(run_id))
        except ValueError as exc:
            msg = f"--replay-from {batch_id}: {exc}"
            raise UsageError(msg) from exc
    return chosen


def _queued(
    args: argparse.Namespace,
    plan: _Plan,
    journal: Journal,
    batch_id: str,
    replays: list[str | None],
) -> list[BatchRun]:
    """Record the evaluation's batch and its runs, variant by variant, task by task."""
    repeats: int = args.n
    each = len(plan.tasks) * repeats

    def queued() -> Iterator[tuple[int, str, str]]:
        line = 0
        for variant in plan.variants:
            for _number, inputs in plan.tasks:
                for _ in range(repeats):
                    line += 1
                    context = WorkflowContext(inputs={**inputs, **variant.inputs})
                    yield line, new_run_id(), encode_context(context)

    described = {
        "tasks": str(args.tasks_file),
        "n": repeats,
        "per_variant": each,
        "variants": [{"name": v.name, "options": v.text} for v in plan.variants],
        "metric": args.metric,
    }
    # Line L (from 1) is of variant (L - 1) // each; it replays replays[L - 1], if any.
    chosen = [
        attrs.evolve(plan.options[index // each], replay=replay)
        for index, replay in enumerate(replays)
    ]
    encoded = [options.to_json() for options in chosen]
    written = queue_batch(
        journal,
        batch_id,
        plan.workflow.name,
        "eval " + json.dumps(described, sort_keys=True),
        runs=queued(),
        steps=[step.name for step in plan.workflow.steps],
        fingerprint=fingerprint(plan.workflow),
        options=given_options(args).to_json(),
        options_for=lambda line: encoded[line - 1],
    )
    return [BatchRun(line, run_id, None, chosen[line - 1]) for line, run_id in written]


def _unchanged(args: argparse.Namespace, plan: _Plan) -> bool:
    """Say what `--changed-since` found; True when nothing changed (nothing is run)."""
    if plan.changed is None:
        return False
    said = ", ".join(plan.changed) or "nothing"
    line = f"workflow {plan.workflow.name!r} changed since {args.changed_since}: {said}"
    if plan.changed:
        err(f"adws: {line}")
        return False
    if args.json:
        name, ref = plan.workflow.name, args.changed_since
        out_json({"workflow": name, "changed_since": ref, "changed": []})
    else:
        out(f"{line}; no run to evaluate")
    return True


def cmd_eval(args: argparse.Namespace) -> int:
    """Run the evaluation as one batch, print each variant's figures, and gate on a baseline."""
    plan = _planned(args)
    if _unchanged(args, plan):
        return 0
    io_ops.become_subreaper()
    concurrency = args.concurrency or DEFAULT_CONCURRENCY
    connection = _Connection(args.dask, concurrency)
    batch_id = new_batch_id()
    service = runs_of(args)
    try:
        connection(batch_id)
        journal = opened(service)
        replays = _replays(args, plan, journal)
    except BaseException:
        connection.close()
        raise
    runs = _queued(args, plan, journal, batch_id, replays)
    batch = Batch(
        batch_id,
        plan.workflow.name,
        str(workflows_dir(args.workflows).resolve()),
        (os.getpid(), socket.gethostname()),
        offline=OFFLINE.enabled,
        worktrees=args.worktrees or "",
        replay_journal=None if args.replay_from is None else journal.path,
    )
    progress = ProgressLines(batch_id, terminal=sys.stderr.isatty())

    def said(state: Progress) -> None:
        line = None if args.quiet else progress(state)
        if line is not None:
            err(line)

    try:
        report, signum = run_batch(
            journal,
            plan.workflow,
            batch,
            runs,
            concurrency=concurrency,
            on_progress=said,
            pool=connection.pool,
        )
    finally:
        io_ops.kill_adopted(frozenset(io_ops.GROUPS.current()))
    evaluation = evaluation_runs(journal, batch_id)
    if not args.keep_waiting:
        _cancel_waiting(service, evaluation)
    if not args.keep_branches:
        ended = [r.run_id for r in journal.runs(batch=batch_id) if r.status not in GOES_ON]
        delete_branches_of(repositories_of(journal, ended))
    scores = score(evaluation.names, evaluation.runs, metric=args.metric is not None)
    comparison = compare(scores)
    verdicts = gate(scores, plan.baseline, args.fail_under)
    if plan.baseline is not None and plan.baseline.tasks != plan.tasks_hash:
        verdicts[1].append(
            f"the baseline {args.baseline} was measured on other tasks than {args.tasks_file}"
            " (their hash differs): compare with care"
        )
    if args.save_baseline is not None:
        saved = Baseline.of(plan.workflow.name, scores, plan.tasks_hash, adws_version())
        Path(args.save_baseline).write_text(saved.to_json(), encoding="utf-8")
    _said(args, plan, evaluation, comparison=comparison, scores=scores, verdicts=verdicts)
    interrupted = EXIT_BY_SIGNAL.get(signum, EXIT_CODES["interrupted"])
    gated = EXIT_CODES["failed"] if verdicts[0] else 0
    return interrupted if report.interrupted else gated
