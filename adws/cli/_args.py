"""Turn command-line arguments into values: the parser, inputs, the agent, the journal.

Nothing here prints or exits; `adws.cli` does. Building the parser imports
only argparse, so `adws --help` stays fast; the rest imports what it needs
when called.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Final

from adws._exceptions import AdwsError, MalformedError

if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence

    from adws.engine.step import Workflow
    from adws.journal import Journal
    from adws.journal.dialect import JournalUrl
    from adws.journal.options import RunOptions
    from adws.testing.recording import Cassette

__all__ = [
    "BUSY_VAR",
    "MAX_WAIT_VAR",
    "UnreadableRowsError",
    "UsageError",
    "apply_options",
    "given_options",
    "journal_home",
    "journal_path",
    "max_wait",
    "open_journal",
    "parse_inputs",
    "read_answer",
    "recorded",
    "replays_run",
    "require_journal",
    "select_agent",
]

_INPUT: Final = re.compile(r"([a-z][a-z0-9_]*)=(.*)", re.DOTALL)


class UsageError(AdwsError, ValueError):
    """A mistake on the command line; reported on stderr with exit code 2."""


class UnreadableRowsError(MalformedError):
    """Rows of the journal at `path` a command needs but cannot read; named, exit code 1."""

    def __init__(self, path: str, problems: Sequence[str]) -> None:
        """Keep where the journal is and what of it could not be read."""
        super().__init__(f"the journal {path} holds rows it cannot read")
        self.path = path
        self.problems = tuple(problems)


def journal_path(args: argparse.Namespace) -> Path | JournalUrl:
    """Read `--journal` (or `ADWS_JOURNAL`): a file's path, or a server's URL."""
    from adws import journal as journal_module  # noqa: PLC0415 - see the note on imports
    from adws.journal.dialect import where  # noqa: PLC0415 - as above

    chosen = args.journal or os.environ.get(journal_module.ENV_VAR)
    return where(chosen) if chosen else journal_module.DEFAULT_PATH


def journal_home(args: argparse.Namespace) -> Path:
    """Name the folder of this host's own run state: the journal file's, else `.adws`."""
    from adws import journal as journal_module  # noqa: PLC0415 - see the note on imports

    path = journal_path(args)
    return (path if isinstance(path, Path) else journal_module.DEFAULT_PATH).resolve().parent


BUSY_VAR: Final = "ADWS_JOURNAL_BUSY_TIMEOUT"
"""Seconds a journal write waits for another process's transaction (default 30)."""


def _busy_timeout() -> float:
    from adws.journal.store import BUSY_TIMEOUT_SECONDS  # noqa: PLC0415 - see the note on imports

    text = os.environ.get(BUSY_VAR)
    if text is None:
        return BUSY_TIMEOUT_SECONDS
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds < float("inf"):
        msg = f"{BUSY_VAR}={text!r}: expected a number of seconds of at least 0"
        raise UsageError(msg)
    return seconds


def _journal_at(path: Path | JournalUrl, *, readonly: bool = False) -> Journal:
    from adws.journal import Journal, JournalError  # noqa: PLC0415 - see the note on imports

    try:
        return Journal(path, readonly=readonly, busy_timeout=_busy_timeout())
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
    if isinstance(path, Path) and not path.exists() and not create:
        msg = f"no run journal at {path}; `adws run` records runs there"
        raise UsageError(msg)
    return _journal_at(path, readonly=readonly)


MAX_INPUTS_BYTES: Final = 64 << 20
"""The largest `--inputs` file read: inputs are values for prompts and commands, not data sets."""


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


def parse_inputs(pairs: Sequence[str], inputs_file: str | None) -> dict[str, object]:
    """Merge `--inputs FILE.json` with `-i key=value` pairs (the pairs win)."""
    inputs: dict[str, object] = {}
    if inputs_file is not None:
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


MAX_WAIT_VAR: Final = "ADWS_MAX_WAIT"
"""Seconds a run waits in its process for an agent's limit to reset (default 900)."""


def max_wait(args: argparse.Namespace) -> float | None:
    """Return `--max-wait`, else `$ADWS_MAX_WAIT`, else None; a bad value is exit 2."""
    given: float | None = getattr(args, "max_wait", None)
    if given is not None:
        return given
    text = os.environ.get(MAX_WAIT_VAR)
    if text is None:
        return None
    from argparse import ArgumentTypeError  # noqa: PLC0415 - see the note on imports

    from adws.cli._values import seconds  # noqa: PLC0415 - as above

    try:
        return seconds(text)
    except ArgumentTypeError as exc:
        msg = f"{MAX_WAIT_VAR}={text!r}: {exc}"
        raise UsageError(msg) from exc


def _absolute(path: str | None) -> str | None:
    return None if path is None else str(Path(path).resolve())


def given_options(args: argparse.Namespace, *, resume: bool = False) -> RunOptions:
    """Collect a run's options from the command line, for the journal; paths made absolute.

    A run records the workflows folder it was found in (`--workflows`,
    `$ADWS_WORKFLOWS` or `./workflows`), so a resume from another folder or
    shell finds it; a resume takes one only from `--workflows`. The same
    goes for `--max-wait` and `$ADWS_MAX_WAIT`.
    """
    from adws.discovery import workflows_dir  # noqa: PLC0415 - see the note on imports
    from adws.journal.options import RunOptions  # noqa: PLC0415 - see the note on imports

    folder = args.workflows if resume else workflows_dir(args.workflows)
    replay = args.replay if replays_run(args.replay) else _absolute(args.replay)
    return RunOptions(
        agent=args.agent,
        model=args.model,
        agent_output=args.agent_output,
        max_cost=args.max_cost,
        max_tokens=args.max_tokens,
        max_agents=args.max_agents,
        workflows=_absolute(None if folder is None else str(folder)),
        record=_absolute(args.record),
        replay=replay,
        no_transcripts=True if args.no_transcripts else None,
        notify=getattr(args, "notify", None),
        on_budget=getattr(args, "on_budget", None),
        max_wait=getattr(args, "max_wait", None) if resume else max_wait(args),
    )


def replays_run(replay: str | None) -> bool:
    """Tell whether `--replay` names a run (not a folder of recordings).

    A value with a path separator, or naming something that exists, is a folder.
    """
    return replay is not None and os.sep not in replay and not Path(replay).exists()


def apply_options(args: argparse.Namespace, options: RunOptions) -> None:
    """Set `args` to run with `options` (a resume's, recorded and given)."""
    import attrs  # noqa: PLC0415 - see the note on imports

    for name, value in attrs.asdict(options).items():
        setattr(args, name, value)


# -- commands ------------------------------------------------------------------


def select_agent(
    workflow: Workflow, agent: str | None, model: str | None, output: str | None = None
) -> Workflow:
    """Swap every agent step's backend for the one `--agent` names (see `adws.agents.swap`).

    A choice that makes no agent is a usage error (exit 2).
    """
    if agent is None and model is None and output is None:
        return workflow  # nothing to swap: `adws run` imports no agent backend for it
    from adws.agents.swap import AgentChoiceError  # noqa: PLC0415 - see the note on imports
    from adws.agents.swap import select_agent as select  # noqa: PLC0415 - as above

    try:
        return select(workflow, agent, model, output)
    except AgentChoiceError as exc:
        raise UsageError(str(exc)) from exc


def _run_cassette(args: argparse.Namespace) -> Cassette:
    """Open the run `--replay RUN_ID` names; set `args.replay` to its whole id."""
    from adws.journal.cassette import JournalCassette  # noqa: PLC0415 - see the note on imports
    from adws.journal.records import UnreadableError  # noqa: PLC0415 - as above

    path = journal_path(args)
    if isinstance(path, Path) and not path.exists():
        msg = f"--replay {args.replay}: no such folder, and no run journal at {path} to look in"
        raise UsageError(msg)
    journal = _journal_at(path, readonly=True)
    found = journal.find(args.replay)
    if isinstance(found, str):
        msg = f"--replay {args.replay}: no such folder of recordings, and {found}"
        raise UsageError(msg)
    args.replay = found.run_id
    try:
        return JournalCassette(journal, found.run_id)
    except UnreadableError as exc:
        raise UnreadableRowsError(str(journal.path), exc.problems) from exc
    except ValueError as exc:
        raise UsageError(str(exc)) from exc


def recorded(workflow: Workflow, args: argparse.Namespace) -> Workflow:
    """Wrap every agent step's backend for `--record DIR`, `--replay DIR` or `--replay RUN_ID`.

    A folder's answers live in DIR/WORKFLOW.json; a run's are the exchanges
    the journal kept (see `adws.journal.cassette`). See
    `adws.testing.RecordingAgent`.
    """
    folder = args.record or args.replay
    if folder is None:
        return workflow
    from adws.agents.swap import map_agents  # noqa: PLC0415 - see the note on imports
    from adws.testing.recording import (  # noqa: PLC0415 - see the note on imports
        Mode,
        Recording,
        RecordingAgent,
    )

    recording: Cassette
    if args.record is None and replays_run(args.replay):
        recording = _run_cassette(args)
    else:
        try:
            recording = Recording(Path(folder) / f"{workflow.name}.json")
        except ValueError as exc:
            raise UsageError(str(exc)) from exc
    mode: Mode = "record" if args.record else "replay"
    return map_agents(workflow, lambda agent: RecordingAgent(agent, recording, mode))


def read_answer(source: str) -> str:
    if source == "-":
        return sys.stdin.read()
    try:
        return Path(source).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        msg = f"cannot read {source}: {exc.strerror}"
        raise UsageError(msg) from exc
