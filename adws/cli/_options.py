"""The flags several commands share, and what they become: typed values for `adws.runs`.

`add_workflows`, `add_journal` and `add_running` declare them (a command
module calls those it takes, beside its own flags); `inputs`, `options`
and `runs_of` read them back as a mapping of inputs, `RunOptions` and a
`Runs`, so nothing below the command line sees an `argparse.Namespace`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Final

from adws._checks import is_input_name
from adws.cli._args import UsageError
from adws.cli._output import err
from adws.cli._values import money, positive, seconds, share, tokens
from adws.discovery import workflows_dir
from adws.journal.records.options import RunOptions
from adws.runs import Refused, Runs
from adws.runs._settings import MAX_WAIT_VAR, MOST_WAIT, seconds_in

if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence

    from adws.journal import Journal

__all__ = [
    "MAX_INPUTS_BYTES",
    "add_going_on",
    "add_journal",
    "add_journal_wait",
    "add_running",
    "add_transcripts",
    "add_workflows",
    "add_worktrees",
    "given_options",
    "inputs_of",
    "journal_of",
    "opened",
    "refused",
    "runs_of",
]

_INPUT: Final = re.compile(r"([a-z][a-z0-9_]*)=(.*)", re.DOTALL)
MAX_INPUTS_BYTES: Final = 64 << 20
"""The largest `--inputs` file read: inputs are values for prompts and commands, not data sets."""


# -- the flags -------------------------------------------------------------------


def add_workflows(parser: argparse.ArgumentParser) -> None:
    """Add `--workflows DIR`."""
    parser.add_argument(
        "--workflows",
        metavar="DIR",
        help="folder of workflow modules (default: $ADWS_WORKFLOWS or ./workflows)",
    )


def add_journal(parser: argparse.ArgumentParser) -> None:
    """Add `--journal PATH`."""
    parser.add_argument(
        "--journal",
        metavar="PATH",
        help="the run journal (default: $ADWS_JOURNAL or .adws/runs.db)",
    )


def add_journal_wait(parser: argparse.ArgumentParser) -> None:
    """Add `--journal-wait SECONDS` (the commands that run a run, and `adws worker`)."""
    parser.add_argument(
        "--journal-wait",
        type=seconds,
        metavar="SECONDS",
        help="when a journal write fails (a server restarting, a full disk), try it again on a "
        "new connection for this long (default: $ADWS_JOURNAL_WAIT, else 30); then the run stops "
        "before its next step, interrupted (its cleanup steps run), and adws resume continues it",
    )


def add_worktrees(parser: argparse.ArgumentParser) -> None:
    """Add `--worktrees DIR` (the commands that run a run, and `adws worker`)."""
    parser.add_argument(
        "--worktrees",
        metavar="DIR",
        help="make the runs' worktrees in DIR/RUN/NAME (default: $ADWS_WORKTREES, else "
        "$XDG_CACHE_HOME/adws/worktrees, in a folder per repository); refused inside a checkout",
    )


def add_agent_options(parser: argparse.ArgumentParser) -> None:
    """Add what chooses a run's agent and caps its spend (`run`, `resume`, `batch`, `eval`)."""
    parser.add_argument(
        "--agent",
        metavar="AGENT",
        help="run every agent step with this agent: claude-sdk (the Claude Agent SDK), "
        "a preset (claude, codex), or any command that reads the prompt on stdin",
    )
    parser.add_argument("--model", help="the model for --agent claude-sdk or a preset, e.g. sonnet")
    parser.add_argument(
        "--max-agents",
        type=positive,
        metavar="N",
        help="at most N agent calls in flight across the run (parallel branches wait their turn)",
    )
    parser.add_argument(
        "--agent-output",
        choices=["text", "claude-json", "codex-jsonl"],
        help="how a command given to --agent prints its answer: as text (the default), as "
        "claude -p --output-format json does, or as codex exec --json does (with its usage)",
    )
    parser.add_argument(
        "--max-cost",
        type=money,
        metavar="USD",
        help="stop calling agents once the run has spent this much (the step fails "
        "BudgetExceeded; cleanup steps still run)",
    )
    parser.add_argument(
        "--max-tokens",
        type=tokens,
        metavar="N",
        help="stop calling agents once the run has used this many tokens",
    )
    parser.add_argument(
        "--on-budget",
        choices=["fail", "ask"],
        help="when the budget cannot pay for the next agent call: fail BudgetExceeded (the "
        "default), or ask: the run waits for adws approve RUN --max-cost USD (or "
        "--max-tokens N), which raises the budget and continues, or adws reject RUN",
    )
    parser.add_argument(
        "--max-wait",
        type=seconds,
        metavar="SECONDS",
        help="wait in this process at most this long for an agent's usage limit to reset "
        "(default: $ADWS_MAX_WAIT, else 900); a later reset parks the run until then (exit 75; "
        "adws resume --due goes on once it has come)",
    )
    parser.add_argument(
        "--park-at",
        type=share,
        metavar="SHARE",
        help="once an agent's CLI says its account has used this share of a quota window "
        "(default 0.95: 95%%; claude's rate_limit_event, codex's rate_limits, a usage-limit "
        "reply), new agent calls on that account park the run until the window resets (exit "
        "75) instead of failing one by one; adws caps lists the accounts' windows",
    )
    parser.add_argument(
        "--notify",
        metavar="CMD",
        help="when the run starts waiting for approval, run CMD (split like --agent) with the "
        "run id and the message as two more arguments; a CMD that fails is only a warning",
    )


def add_transcripts(parser: argparse.ArgumentParser) -> None:
    """Add `--no-transcripts` (`run`, `resume`, `batch`)."""
    parser.add_argument(
        "--no-transcripts",
        action="store_true",
        help="keep only hashes and sizes of what agents were asked and answered and of what "
        "agents and commands said in errors, not the texts (as ADWS_TRANSCRIPTS=0 does); "
        "a run started so keeps none in its resumes either",
    )


def add_running(parser: argparse.ArgumentParser) -> None:
    """Add what a command that runs a run takes: inputs, output, agent, recording, seeing."""
    parser.add_argument(
        "-i", "--input", action="append", default=[], metavar="KEY=VALUE", help="an input"
    )
    parser.add_argument("--inputs", metavar="FILE.json", help="inputs from a JSON object")
    parser.add_argument("--json", action="store_true", help="print a JSON summary on stdout")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    parser.add_argument(
        "--no-journal", action="store_true", help="do not record the run in the journal"
    )
    add_agent_options(parser)
    recording = parser.add_mutually_exclusive_group()
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
    add_transcripts(parser)
    parser.add_argument(
        "--otel",
        action="store_true",
        help="export the run as OpenTelemetry spans over OTLP (as setting "
        "OTEL_EXPORTER_OTLP_ENDPOINT does; needs pip install 'adws[otel]')",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="print the traceback of a step that raised, under its error",
    )


def add_going_on(parser: argparse.ArgumentParser, *, batch: bool = False) -> None:
    """Add --force, --keep-changed and --accept-drift: three ways past three refusals."""
    runs = "each run" if batch else "the run"
    parser.add_argument(
        "--force",
        action="store_true",
        help=f"take {runs} although another process seems to hold it, and stop a child process "
        "group a crashed run left running",
    )
    parser.add_argument(
        "--keep-changed",
        action="store_true",
        help="keep the outputs of finished steps whose definition changed, and make today's "
        "definition the recorded one (a later approve, reject or resume is not refused again)",
    )
    parser.add_argument(
        "--accept-drift",
        action="store_true",
        help="go on with a kept worktree that changed since the run left it (a missing one "
        "starts again from its base)",
    )


# -- what they become -------------------------------------------------------------


def _read_small(path: Path) -> bytes:
    """Read a regular file of at most `MAX_INPUTS_BYTES`, or raise `UsageError` saying why not.

    `/dev/zero` or a FIFO would never end; a huge file would fill memory.
    """
    if path.exists() and not path.is_file():
        msg = f"inputs file {path} is not a regular file"
        raise UsageError(msg)
    with path.open("rb") as handle:
        data = handle.read(MAX_INPUTS_BYTES + 1)
    if len(data) > MAX_INPUTS_BYTES:
        msg = f"inputs file {path} is larger than {MAX_INPUTS_BYTES >> 20} MiB"
        raise UsageError(msg)
    return data


def _inputs_file(inputs_file: str) -> dict[str, object]:
    path = Path(inputs_file)
    try:
        data = _read_small(path)
    except OSError as exc:
        msg = f"cannot read inputs file {path}: {exc.strerror}"
        raise UsageError(msg) from exc
    try:
        loaded = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        msg = f"inputs file {path} is not valid JSON: {exc}"
        raise UsageError(msg) from exc
    if not isinstance(loaded, dict):
        msg = f"inputs file {path} must hold a JSON object, not {type(loaded).__name__}"
        raise UsageError(msg)
    for key in loaded:
        if not is_input_name(key):
            msg = (
                f"inputs file {path}: key {key!r} is not an input name; use "
                "lower_snake_case, as with -i"
            )
            raise UsageError(msg)
    return loaded


def inputs_of(pairs: Sequence[str], inputs_file: str | None) -> dict[str, object]:
    """Merge `--inputs FILE.json` with `-i key=value` pairs (the pairs win)."""
    inputs = {} if inputs_file is None else _inputs_file(inputs_file)
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


def given_options(args: argparse.Namespace, *, resume: bool = False) -> RunOptions:
    """Collect a run's options from the command line (`adws.runs` records its paths absolute).

    A run records the workflows folder it was found in (`--workflows`,
    `$ADWS_WORKFLOWS` or `./workflows`), so a resume from another folder or
    shell finds it; a resume takes one only from `--workflows`. The same
    goes for `--max-wait` and `$ADWS_MAX_WAIT`.
    """
    folder = args.workflows if resume else str(workflows_dir(args.workflows))
    waits = args.max_wait
    if waits is None and not resume:
        waits = seconds_in(MAX_WAIT_VAR, MOST_WAIT)
    return RunOptions(
        agent=args.agent,
        model=args.model,
        agent_output=args.agent_output,
        max_cost=args.max_cost,
        max_tokens=args.max_tokens,
        max_agents=args.max_agents,
        workflows=folder,
        record=args.record,
        replay=args.replay,
        no_transcripts=True if args.no_transcripts else None,
        notify=args.notify,
        on_budget=args.on_budget,
        max_wait=waits,
        park_at=args.park_at,
    )


def runs_of(
    args: argparse.Namespace,
    *,
    readonly: bool = False,
    create: bool = True,
    whole_process: bool = True,
) -> Runs:
    """Name the journal `--journal` (or `$ADWS_JOURNAL`) gives: runs say what they did on stderr."""
    return Runs.open(
        args.journal,
        record=not getattr(args, "no_journal", False),
        readonly=readonly,
        create=create,
        whole_process=whole_process,
        say=err,
        journal_wait=getattr(args, "journal_wait", None),
        worktrees=getattr(args, "worktrees", None),
    )


def opened(runs: Runs) -> Journal:
    """Open the journal of `runs`; one that cannot be opened is a usage error (exit 2)."""
    journal = runs.journal()
    if isinstance(journal, Refused):
        raise UsageError(journal.reason)
    return journal


def journal_of(
    args: argparse.Namespace, *, readonly: bool = False, create: bool = False
) -> Journal:
    """Open the journal an inspecting command reads (`runs`, `status`, ...): a refusal is exit 2."""
    return opened(runs_of(args, readonly=readonly, create=create))


def refused(found: Refused) -> int:
    """Say why `adws.runs` did not do what was asked, as a command says it; return the exit code.

    Rows the journal cannot read are named first; a run that need not go
    on (code 0) is said plainly, a parked one (75) without `error:`.
    """
    from adws.cli._output import err_unreadable  # noqa: PLC0415 - only when rows are named

    if found.problems:
        err_unreadable(found.journal or "", found.problems)
        if found.code == 1:
            return found.code
    prefix = {0: "", 75: "adws: "}.get(found.code, "adws: error: ")
    err(f"{prefix}{found}")
    return found.code
