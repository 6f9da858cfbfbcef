"""The `adws` argument parser: every command, option and help text.

`adws.cli` builds it on every start, so it imports nothing but argparse and
math: `adws --help` stays fast. The numbers options take are parsed in
`_values`; the commands that continue a recorded run are in `_continuing`,
those that show one in `_seeing`.
"""

from __future__ import annotations

import argparse
from typing import Any

from adws.cli._continuing import add_approvals, add_going_on, add_resume
from adws.cli._seeing import add_report, add_seeing, add_status, add_transcripts
from adws.cli._team import add_team
from adws.cli._values import days, money, positive, seconds, tokens, whole

__all__ = ["build_parser"]


class _Version(argparse.Action):
    """Print the installed version; looked up only when asked, so start-up stays fast."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        _namespace: argparse.Namespace,
        _values: object,
        _option: str | None = None,
    ) -> None:
        from importlib.metadata import version  # noqa: PLC0415 - only `adws --version` pays for it

        from adws.cli._output import out  # noqa: PLC0415 - as above

        out(f"adws {version('adws')}")
        parser.exit()


def _add_agent_options(running: argparse.ArgumentParser) -> None:
    """Add what chooses a run's agent and caps its spend (`run`, `resume`, `batch`)."""
    running.add_argument(
        "--agent",
        metavar="AGENT",
        help="run every agent step with this agent: claude-sdk (the Claude Agent SDK), "
        "a preset (claude, codex), or any command that reads the prompt on stdin",
    )
    running.add_argument(
        "--model", help="the model for --agent claude-sdk or a preset, e.g. sonnet"
    )
    running.add_argument(
        "--max-agents",
        type=positive,
        metavar="N",
        help="at most N agent calls in flight across the run (parallel branches wait their turn)",
    )
    running.add_argument(
        "--agent-output",
        choices=["text", "claude-json", "codex-jsonl"],
        help="how a command given to --agent prints its answer: as text (the default), as "
        "claude -p --output-format json does, or as codex exec --json does (with its usage)",
    )
    running.add_argument(
        "--max-cost",
        type=money,
        metavar="USD",
        help="stop calling agents once the run has spent this much (the step fails "
        "BudgetExceeded; cleanup steps still run)",
    )
    running.add_argument(
        "--max-tokens",
        type=tokens,
        metavar="N",
        help="stop calling agents once the run has used this many tokens",
    )
    running.add_argument(
        "--on-budget",
        choices=["fail", "ask"],
        help="when the budget cannot pay for the next agent call: fail BudgetExceeded (the "
        "default), or ask: the run waits for adws approve RUN --max-cost USD (or "
        "--max-tokens N), which raises the budget and continues, or adws reject RUN",
    )
    running.add_argument(
        "--max-wait",
        type=seconds,
        metavar="SECONDS",
        help="wait in this process at most this long for an agent's usage limit to reset "
        "(default: $ADWS_MAX_WAIT, else 900); a later reset parks the run until then (exit 75; "
        "adws resume --due goes on once it has come)",
    )
    running.add_argument(
        "--notify",
        metavar="CMD",
        help="when the run starts waiting for approval, run CMD (split like --agent) with the "
        "run id and the message as two more arguments; a CMD that fails is only a warning",
    )


def _add_recording(running: argparse.ArgumentParser) -> None:
    recording = running.add_mutually_exclusive_group()
    recording.add_argument(
        "--record",
        metavar="DIR",
        help="keep every agent answer in DIR/WORKFLOW.json (keyed by step and prompt), "
        "for tests and --replay",
    )
    recording.add_argument(
        "--replay",
        metavar="DIR|RUN_ID",
        help="answer every agent step from DIR/WORKFLOW.json, or from what the agents of run "
        "RUN_ID answered (the journal keeps every exchange), instead of calling an agent; a "
        "prompt not recorded fails its step with a diff against the closest one",
    )


def _add_eval(commands: Any, parents: list[argparse.ArgumentParser]) -> None:  # noqa: ANN401 - argparse's private subparsers type
    evaluate = commands.add_parser(
        "eval",
        parents=parents,
        help="run every task N times per variant on the batch pool; pass rates compared",
        description="Run WORKFLOW on every task of TASKS.jsonl (a JSON object of inputs per "
        "line) N times under every variant, as one batch, and print per variant the pass rate "
        "with its 95%% Wilson interval, the mean cost and time; two variants are compared with "
        "Fisher's exact test. A variant is NAME:OPTIONS, the options split like a shell command "
        "line (-i KEY=VALUE, --agent, --model, --agent-output, --max-cost, --max-tokens, "
        "--max-agents). Exit codes: 0 the evaluation ran (whatever its runs did), 2 usage, "
        "130 interrupted.",
    )
    evaluate.set_defaults(record=None, replay=None, no_transcripts=False)
    evaluate.add_argument("workflow", help="workflow name")
    evaluate.add_argument("tasks_file", metavar="TASKS.jsonl", help="one JSON object per line")
    evaluate.add_argument(
        "-n", type=positive, default=3, metavar="N", help="runs of each task per variant (3)"
    )
    evaluate.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME:OPTIONS",
        help="a variant: its name, a colon, its run options and -i overrides (repeat it)",
    )
    evaluate.add_argument(
        "--metric", metavar="KEY", help="score each run by its numeric output KEY, not success"
    )
    evaluate.add_argument(
        "--concurrency", type=positive, metavar="N", help="runs at a time (default: 8)"
    )
    _add_agent_options(evaluate)
    evaluate.add_argument(
        "--dask",
        metavar="ADDRESS",
        help="run on a Dask cluster, as adws batch --dask does (local:N or a tls:// address)",
    )
    evaluate.add_argument("--json", action="store_true", help="print the evaluation as JSON")
    evaluate.add_argument("-q", "--quiet", action="store_true", help="no progress line on stderr")


def _add_batch(commands: Any, parents: list[argparse.ArgumentParser]) -> None:  # noqa: ANN401 - argparse's private subparsers type
    batch = commands.add_parser(
        "batch",
        parents=parents,
        help="start one run per line of a JSONL file of inputs, on a pool of workers",
        description="Start one run of WORKFLOW per line of INPUTS.jsonl (a JSON object of "
        "inputs per line), N at a time; every event goes to one journal. The agent and budget "
        "options apply to each run and are recorded with it (`adws resume RUN` and `batch "
        "--resume` use them again). Exit codes: 0 all succeeded, 1 any failed (or not "
        "started, or not recorded), 2 usage (or the batch or a run is held by another "
        "process), 3 any blocked (or waiting for approval) and none failed, 75 any parked on an "
        "agent's limit and none failed or blocked, 130 interrupted.",
    )
    batch.set_defaults(record=None, replay=None)
    batch.add_argument("workflow", nargs="?", help="workflow name")
    batch.add_argument(
        "inputs_file", nargs="?", metavar="INPUTS.jsonl", help="one JSON object per line"
    )
    batch.add_argument(
        "--concurrency",
        type=positive,
        metavar="N",
        help="runs at a time (default: 8, whatever the CPU count: runs mostly wait on agents)",
    )
    _add_agent_options(batch)
    batch.add_argument(
        "--batch-max-cost",
        type=money,
        metavar="USD",
        help="cap the whole batch's spend: past it no new run starts and runs in flight fail "
        "BudgetExceeded at their next agent call (recorded; --resume keeps it unless given)",
    )
    batch.add_argument(
        "--resume",
        metavar="BATCH",
        help="resume every run of this batch that did not succeed; start those never started",
    )
    batch.add_argument(
        "--rerun-changed",
        action="store_true",
        help="with --resume: run each run again from its first finished step that changed "
        "(--force, --keep-changed and --accept-drift go with --resume too)",
    )
    add_going_on(batch, batch=True)
    batch.add_argument(
        "--dask",
        metavar="ADDRESS",
        help="run on a Dask cluster: a scheduler address (tls://, with credentials in Dask's "
        "configuration), or local:N for a local cluster of N worker processes that only this "
        "batch can use (TLS with credentials made for it, no dashboard; needs the extra: "
        "pip install 'adws[dask]')",
    )
    add_transcripts(batch)
    batch.add_argument("--json", action="store_true", help="print the batch as JSON on stdout")
    batch.add_argument("-q", "--quiet", action="store_true", help="no progress line on stderr")


def _add_cost(commands: Any, parents: list[argparse.ArgumentParser]) -> None:  # noqa: ANN401 - argparse's private subparsers type
    cost = commands.add_parser(
        "cost",
        parents=parents,
        help="sum what agent calls cost, from the journal",
        description="Sum the usage the journal recorded for every attempt (failed ones "
        "included), by step, workflow or day, with a total.",
    )
    cost.add_argument("--workflow", help="only runs of this workflow")
    cost.add_argument(
        "--since", metavar="DATE", help="only attempts recorded on or after DATE (2026-11-01)"
    )
    cost.add_argument(
        "--by", choices=["step", "workflow", "day"], default="step", help="group by (default: step)"
    )
    cost.add_argument("--json", action="store_true", help="print a JSON list")


def _add_check(commands: Any, parents: list[argparse.ArgumentParser]) -> None:  # noqa: ANN401 - argparse's private subparsers type
    check = commands.add_parser(
        "check",
        parents=parents,
        help="check workflows' dataflow before any run (exit 1 on an error)",
        description="Check that every step reads only what an earlier step writes or the "
        "workflow's inputs declare, that no key is written twice, and list outputs nobody "
        "reads. Exit codes: 0 no errors, 1 an error (or a module that did not load).",
    )
    check.add_argument(
        "workflows_to_check", nargs="*", metavar="WORKFLOW", help="workflow names (default: all)"
    )
    check.add_argument("--json", action="store_true", help="print the problems as JSON")


def _add_new(commands: Any, parents: list[argparse.ArgumentParser]) -> None:  # noqa: ANN401 - argparse's private subparsers type
    new = commands.add_parser(
        "new",
        parents=parents,
        help="write a new workflow module and its test (never overwrites)",
        description="Write WORKFLOWS/NAME.py and tests/test_workflow_NAME.py: a workflow and "
        "its offline test that pass ruff (every rule), mypy --strict and 100% branch "
        "coverage as generated.",
    )
    new.add_argument("name", help="the workflow's name (lower_snake_case)")
    new.add_argument(
        "--agent", action="store_true", help="start from an agent step and its checked answer"
    )


def _top_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="adws",
        description="Run AI-developer workflows as pipelines that fail closed.",
        epilog="Exit codes: 0 succeeded, 1 failed, 2 usage or invalid workflow, "
        "3 blocked or waiting for approval, 75 parked on an agent's usage limit (adws resume "
        "--due goes on once it resets), 130 interrupted.",
    )
    parser.add_argument("--version", action=_Version, nargs=0, help="print adws's version and exit")
    return parser


def build_parser() -> argparse.ArgumentParser:
    """Describe every command and option; `adws.cli` dispatches on `command`."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--workflows",
        metavar="DIR",
        help="folder of workflow modules (default: $ADWS_WORKFLOWS or ./workflows)",
    )
    journaled = argparse.ArgumentParser(add_help=False)
    journaled.add_argument(
        "--journal",
        metavar="PATH",
        help="the run journal (default: $ADWS_JOURNAL or .adws/runs.db)",
    )
    running = argparse.ArgumentParser(add_help=False)
    running.add_argument(
        "-i", "--input", action="append", default=[], metavar="KEY=VALUE", help="an input"
    )
    running.add_argument("--inputs", metavar="FILE.json", help="inputs from a JSON object")
    running.add_argument("--json", action="store_true", help="print a JSON summary on stdout")
    running.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    running.add_argument(
        "--no-journal", action="store_true", help="do not record the run in the journal"
    )
    _add_agent_options(running)
    _add_recording(running)
    add_seeing(running)
    parser = _top_parser()
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    commands.add_parser("list", parents=[common], help="list the workflows")

    _add_check(commands, [common])
    _add_new(commands, [common])

    show = commands.add_parser("show", parents=[common], help="describe a workflow's steps")
    show.add_argument("workflow", help="workflow name")
    show.add_argument("--mermaid", action="store_true", help="print a Mermaid flowchart")

    run = commands.add_parser("run", parents=[common, journaled, running], help="run a workflow")
    run.add_argument("workflow", help="workflow name")
    run.add_argument(
        "--plan",
        action="store_true",
        help="print what the run should cost by the journal's history of the workflow (about: "
        "the sum of each step's median cost, up to: of its 90th percentile); run nothing",
    )

    runs = commands.add_parser("runs", parents=[journaled], help="list recorded runs, newest first")
    runs.add_argument("--workflow", help="only runs of this workflow")
    runs.add_argument(
        "--status",
        choices=[
            "queued",
            "running",
            "succeeded",
            "failed",
            "blocked",
            "interrupted",
            "waiting",
            "parked",
        ],
        help="only runs with this status",
    )
    runs.add_argument("--limit", type=whole, metavar="N", help="at most N runs")
    runs.add_argument("--batch", metavar="BATCH", help="only the runs of this batch, in line order")
    runs.add_argument("--json", action="store_true", help="print a JSON list")
    runs.add_argument(
        "--prune",
        action="store_true",
        help="delete finished runs (with --older-than or --keep) and reclaim the space",
    )
    runs.add_argument(
        "--older-than", type=days, metavar="DAYS", help="with --prune: runs started before"
    )
    runs.add_argument("--keep", type=whole, metavar="N", help="with --prune: keep the newest N")

    add_status(commands, [journaled], positive)
    add_report(commands, [journaled])

    add_resume(commands, [common, journaled, running])
    add_approvals(commands, [common, journaled, running])
    _add_batch(commands, [common, journaled])
    _add_eval(commands, [common, journaled])
    _add_cost(commands, [journaled])
    add_team(commands, [common, journaled, running])

    validate = commands.add_parser(
        "validate", parents=[common], help="check an agent answer against a step's contract"
    )
    validate.add_argument("--workflow", required=True, help="workflow name")
    validate.add_argument("--step", required=True, help="agent step name")
    validate.add_argument("file", help="file holding the answer, or - for stdin")
    return parser
