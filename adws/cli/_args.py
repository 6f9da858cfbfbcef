"""Turn command-line arguments into values: the parser, inputs, the agent, the journal.

Nothing here prints or exits; `adws.cli` does. Building the parser imports
only argparse, so `adws --help` stays fast; the rest imports what it needs
when called.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from collections.abc import Sequence

    from adws.agents.base import AgentBackend
    from adws.journal import Journal
    from adws.step import Workflow

__all__ = [
    "UsageError",
    "build_parser",
    "journal_path",
    "open_journal",
    "parse_inputs",
    "read_answer",
    "require_journal",
    "select_agent",
]

_INPUT: Final = re.compile(r"([a-z][a-z0-9_]*)=(.*)", re.DOTALL)


class UsageError(Exception):
    """A mistake on the command line; reported on stderr with exit code 2."""


def journal_path(args: argparse.Namespace) -> Path:
    from adws import journal as journal_module  # noqa: PLC0415 - see the note on imports

    chosen = args.journal or os.environ.get(journal_module.ENV_VAR)
    return Path(chosen) if chosen else journal_module.DEFAULT_PATH


def _journal_at(path: Path, *, readonly: bool = False) -> Journal:
    from adws.journal import Journal, JournalError  # noqa: PLC0415 - see the note on imports

    try:
        return Journal(path, readonly=readonly)
    except JournalError as exc:
        raise UsageError(str(exc)) from exc


def open_journal(args: argparse.Namespace) -> Journal | None:
    """Open the journal a run records into, unless `--no-journal`."""
    if getattr(args, "no_journal", False):
        return None
    return _journal_at(journal_path(args))


def require_journal(
    args: argparse.Namespace, *, readonly: bool = False, create: bool = False
) -> Journal:
    """Open an existing journal for `runs`, `status` and `resume` (read-only: no writes at all).

    `create` makes a journal where there is none (a batch always records).
    """
    path = journal_path(args)
    if not path.exists() and not create:
        msg = f"no run journal at {path}; `adws run` records runs there"
        raise UsageError(msg)
    return _journal_at(path, readonly=readonly)


def parse_inputs(pairs: Sequence[str], inputs_file: str | None) -> dict[str, object]:
    """Merge `--inputs FILE.json` with `-i key=value` pairs (the pairs win)."""
    inputs: dict[str, object] = {}
    if inputs_file is not None:
        path = Path(inputs_file)
        try:
            loaded = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            msg = f"cannot read inputs file {path}: {exc.strerror}"
            raise UsageError(msg) from exc
        except (ValueError, RecursionError) as exc:
            msg = f"inputs file {path} is not valid JSON: {exc}"
            raise UsageError(msg) from exc
        if not isinstance(loaded, dict):
            msg = f"inputs file {path} must hold a JSON object, not {type(loaded).__name__}"
            raise UsageError(msg)
        from adws._checks import is_input_name  # noqa: PLC0415 - see the note on imports

        for key in loaded:
            if not is_input_name(key):
                msg = (
                    f"inputs file {path}: key {key!r} is not an input name; use "
                    "lower_snake_case, as with -i"
                )
                raise UsageError(msg)
        inputs.update(loaded)
    for pair in pairs:
        match = _INPUT.fullmatch(pair)
        if match is None:
            msg = (
                f"bad input {pair!r}: expected KEY=VALUE with KEY in lower_snake_case, "
                "for example -i topic=rust"
            )
            raise UsageError(msg)
        inputs[match.group(1)] = match.group(2)
    return inputs


# -- commands ------------------------------------------------------------------


def select_agent(
    workflow: Workflow, agent: str | None, model: str | None, output: str | None = None
) -> Workflow:
    """Swap every agent step's backend for the one `--agent` names.

    `claude-sdk` is `ClaudeAgent`; a preset name (`claude`, `codex`) is that
    CLI's documented command line; anything else is a command to run, whose
    stdout `--agent-output` (`output`) names the format of.
    """
    if agent is None:
        if model is not None or output is not None:
            flag = "--model" if model is not None else "--agent-output"
            msg = f"{flag} needs --agent (claude-sdk, a preset such as claude, or a command)"
            raise UsageError(msg)
        return workflow
    from adws.agent_steps import use_agent  # noqa: PLC0415 - see the note on imports
    from adws.agents.claude import ClaudeAgent  # noqa: PLC0415 - see the note on imports
    from adws.agents.command import CommandAgent  # noqa: PLC0415 - see the note on imports
    from adws.agents.parsers import PARSERS  # noqa: PLC0415 - see the note on imports
    from adws.agents.presets import CLAUDE_SDK, PRESETS  # noqa: PLC0415 - see the note on imports

    backend: AgentBackend
    if output is not None and (agent == CLAUDE_SDK or agent in PRESETS):
        msg = f"--agent-output is for a command of your own; --agent {agent} reads its own format"
        raise UsageError(msg)
    if agent == CLAUDE_SDK:
        backend = ClaudeAgent(model=model)
    elif agent in PRESETS:
        preset = PRESETS[agent]
        backend = CommandAgent(preset.argv_for(model), parse=preset.parse)
    elif model is not None:
        msg = f"--model works with --agent {CLAUDE_SDK} or a preset ({', '.join(PRESETS)})"
        raise UsageError(msg)
    else:
        try:
            backend = CommandAgent(agent, parse=PARSERS[output or "text"])
        except ValueError as exc:
            msg = f"--agent: {exc}"
            raise UsageError(msg) from exc
    return use_agent(workflow, backend)


def read_answer(source: str) -> str:
    if source == "-":
        return sys.stdin.read()
    try:
        return Path(source).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        msg = f"cannot read {source}: {exc.strerror}"
        raise UsageError(msg) from exc


def _positive(text: str) -> int:
    """Parse a whole number of at least 1, for argparse."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        msg = f"expected a whole number of at least 1, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


def _money(text: str) -> float:
    """Parse a finite amount of US dollars of at least 0, for argparse."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not math.isfinite(value) or value < 0:
        msg = f"expected an amount in US dollars of at least 0, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


def _tokens(text: str) -> int:
    """Parse a whole number of at least 0, for argparse."""
    value = int(text) if text.isdigit() else -1
    if value < 0:
        msg = f"expected a whole number of tokens, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


def _add_budget(running: argparse.ArgumentParser) -> None:
    running.add_argument(
        "--agent-output",
        choices=["text", "claude-json", "codex-jsonl"],
        help="how a command given to --agent prints its answer: as text (the default), as "
        "claude -p --output-format json does, or as codex exec --json does (with its usage)",
    )
    running.add_argument(
        "--max-cost",
        type=_money,
        metavar="USD",
        help="stop calling agents once the run has spent this much (the step fails "
        "BudgetExceeded; cleanup steps still run)",
    )
    running.add_argument(
        "--max-tokens",
        type=_tokens,
        metavar="N",
        help="stop calling agents once the run has used this many tokens",
    )


def _add_batch(commands: Any, parents: list[argparse.ArgumentParser]) -> None:  # noqa: ANN401 - argparse's private subparsers type
    batch = commands.add_parser(
        "batch",
        parents=parents,
        help="start one run per line of a JSONL file of inputs, on a pool of workers",
        description="Start one run of WORKFLOW per line of INPUTS.jsonl (a JSON object of "
        "inputs per line), N at a time; every event goes to one journal. Exit codes: 0 all "
        "succeeded, 1 any failed, 3 any blocked and none failed, 130 interrupted.",
    )
    batch.add_argument("workflow", nargs="?", help="workflow name")
    batch.add_argument(
        "inputs_file", nargs="?", metavar="INPUTS.jsonl", help="one JSON object per line"
    )
    batch.add_argument(
        "--concurrency", type=_positive, metavar="N", help="worker processes (default: CPU count)"
    )
    batch.add_argument(
        "--resume",
        metavar="BATCH",
        help="resume every run of this batch that did not succeed; start those never started",
    )
    batch.add_argument(
        "--dask",
        metavar="ADDRESS",
        help="run on a Dask cluster: a scheduler address, or local:N for a local cluster of "
        "N worker processes (needs the extra: pip install 'adws[dask]')",
    )
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
        "--agent",
        metavar="AGENT",
        help="run every agent step with this agent: claude-sdk (the Claude Agent SDK), "
        "a preset (claude, codex), or any command that reads the prompt on stdin",
    )
    running.add_argument(
        "--model", help="the model for --agent claude-sdk or a preset, e.g. sonnet"
    )
    running.add_argument(
        "--no-journal", action="store_true", help="do not record the run in the journal"
    )
    running.add_argument(
        "--max-agents",
        type=_positive,
        metavar="N",
        help="at most N agent calls in flight across the run (parallel branches wait their turn)",
    )
    _add_budget(running)
    parser = argparse.ArgumentParser(
        prog="adws",
        description="Run AI-developer workflows as pipelines that fail closed.",
        epilog="Exit codes: 0 succeeded, 1 failed, 2 usage or invalid workflow, "
        "3 blocked, 130 interrupted.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    commands.add_parser("list", parents=[common], help="list the workflows")

    show = commands.add_parser("show", parents=[common], help="describe a workflow's steps")
    show.add_argument("workflow", help="workflow name")
    show.add_argument("--mermaid", action="store_true", help="print a Mermaid flowchart")

    run = commands.add_parser("run", parents=[common, journaled, running], help="run a workflow")
    run.add_argument("workflow", help="workflow name")

    runs = commands.add_parser("runs", parents=[journaled], help="list recorded runs, newest first")
    runs.add_argument("--workflow", help="only runs of this workflow")
    runs.add_argument(
        "--status",
        choices=["running", "succeeded", "failed", "blocked", "interrupted"],
        help="only runs with this status",
    )
    runs.add_argument("--limit", type=int, metavar="N", help="at most N runs")
    runs.add_argument("--batch", metavar="BATCH", help="only the runs of this batch, in line order")
    runs.add_argument("--json", action="store_true", help="print a JSON list")
    runs.add_argument(
        "--prune",
        action="store_true",
        help="delete finished runs (with --older-than or --keep) and reclaim the space",
    )
    runs.add_argument(
        "--older-than", type=float, metavar="DAYS", help="with --prune: runs started before"
    )
    runs.add_argument("--keep", type=int, metavar="N", help="with --prune: keep the newest N")

    status = commands.add_parser(
        "status", parents=[journaled], help="show one run's steps, attempts and errors"
    )
    status.add_argument("run", help="run id (or a unique prefix)")
    status.add_argument("--json", action="store_true", help="print JSON")
    status.add_argument(
        "--mermaid",
        action="store_true",
        help="print the workflow's flowchart coloured by what happened in this run",
    )
    status.add_argument(
        "--workflows",
        metavar="DIR",
        help="folder of workflow modules, for --mermaid (default: $ADWS_WORKFLOWS or ./workflows)",
    )

    resume = commands.add_parser(
        "resume",
        parents=[common, journaled, running],
        help="continue a run from its first step that did not succeed",
    )
    resume.add_argument("run", help="run id (or a unique prefix)")
    resume.add_argument(
        "--plan",
        action="store_true",
        help="print what a resume would do with each step (kept, changed, to run); run nothing",
    )
    resume.add_argument(
        "--rerun-changed",
        action="store_true",
        help="run again from the first finished step whose definition changed",
    )
    resume.add_argument(
        "--force",
        action="store_true",
        help="keep the outputs of changed finished steps; resume a run that looks alive; "
        "stop a child process group a crashed run left running",
    )

    _add_batch(commands, [common, journaled])
    _add_cost(commands, [journaled])

    validate = commands.add_parser(
        "validate", parents=[common], help="check an agent answer against a step's contract"
    )
    validate.add_argument("--workflow", required=True, help="workflow name")
    validate.add_argument("--step", required=True, help="agent step name")
    validate.add_argument("file", help="file holding the answer, or - for stdin")
    return parser
