"""`adws watch github|command`: tickets become runs, one per ticket and round, unattended.

`adws watch github` polls a repository's labelled issues over the REST
API (`ADWS_GITHUB_API_URL`, a token from `GITHUB_TOKEN`, `GH_TOKEN` or
`gh auth token`); `adws watch command -- CMD ARGS` reads tickets as JSON
from any command. Both queue runs through `adws.runs.Runs` (see
`adws.tickets`); `adws worker` runs them, or the watcher's own with `--work N`.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Final

from adws import io_ops
from adws.cli._options import add_journal, add_workflows, inputs_of, opened, refused, runs_of
from adws.cli._output import err
from adws.cli._values import positive, seconds
from adws.journal.records.tickets import TicketLimits
from adws.journal.store.backend import JournalUrl
from adws.runs import Refused
from adws.tickets.gate import Gate
from adws.tickets.github import GitHub, GitHubAuthError, GitHubError, GitHubForbiddenError
from adws.tickets.intake import Intake
from adws.tickets.loop import Loop
from adws.tickets.values import TicketError, check_repo, command_ticket
from adws.tickets.watcher import GitHubWatcher

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable

    from adws.runs import Runs
    from adws.tickets.intake import Taken

__all__ = [
    "add_inputs",
    "add_limits",
    "add_watch",
    "cmd_watch",
    "github_watcher",
    "limits_of",
    "worker_of",
]

EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
MAX_OUTPUT: Final = 16 << 20


def add_limits(parser: argparse.ArgumentParser) -> None:
    """Add who may start work and how often (`--allow`, `--max-*`)."""
    parser.add_argument(
        "--allow",
        action="append",
        default=[],
        metavar="USER",
        help="let USER start work whatever their permission (repeatable; never a bot)",
    )
    parser.add_argument(
        "--max-rounds-per-ticket",
        type=positive,
        default=3,
        metavar="N",
        help="rounds a day per ticket (default 3)",
    )
    parser.add_argument(
        "--max-runs-per-hour",
        type=positive,
        default=20,
        metavar="N",
        help="runs an hour from this source, on every host (default 20)",
    )


def limits_of(args: argparse.Namespace) -> TicketLimits:
    """Return the limits the flags set."""
    return TicketLimits(args.max_rounds_per_ticket, args.max_runs_per_hour)


def add_inputs(parser: argparse.ArgumentParser) -> None:
    """Add `-i KEY=VALUE`: inputs every run gets besides the ticket's (`target_dir`, say)."""
    parser.add_argument(
        "-i",
        "--input",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an input every run gets besides the ticket's (the ticket's own win)",
    )


def _add_common(parser: argparse.ArgumentParser) -> None:
    add_workflows(parser)
    add_journal(parser)
    add_inputs(parser)
    parser.add_argument("--workflow", required=True, metavar="W", help="the workflow a ticket runs")
    parser.add_argument(
        "--poll", type=seconds, default=60.0, metavar="S", help="poll every S seconds (default 60)"
    )
    parser.add_argument("--once", action="store_true", help="poll once, then exit")
    parser.add_argument(
        "--work",
        type=positive,
        metavar="N",
        help="run up to N of the queued runs here, with an adws worker of the watcher's own",
    )


def add_watch(parser: argparse.ArgumentParser) -> None:
    """Declare `adws watch github ...` and `adws watch command ... -- CMD ARGS`."""
    parser.description = (
        "Turn tickets into runs, one per ticket and round, unique in the journal: a second "
        "poll, a restarted watcher or a second watcher on another host starts nothing. The "
        "ticket's words are the run's inputs ticket, ticket_title, ticket_body, ticket_url and "
        "ticket_author (data, never a shell word, path or flag). Runs are queued for adws worker "
        "(or --work N runs them here). Exit codes: 0 stopped (--once: polled), 1 GitHub refused "
        "the token, 2 asked wrongly (a workflow that cannot take the ticket inputs), 130/143 "
        "stopped by Ctrl-C or SIGTERM."
    )
    sources = parser.add_subparsers(dest="source", metavar="SOURCE", required=True)
    github = sources.add_parser(
        "github",
        help="labelled issues of a GitHub repository",
        description=(
            "Poll the open issues of --repo labelled --label over GitHub's REST API "
            "($ADWS_GITHUB_API_URL, default https://api.github.com; the token from "
            "GITHUB_TOKEN, GH_TOKEN or `gh auth token`). An issue's author starts work when "
            "their permission is write, maintain or admin, or with --allow; never the token's "
            "own login or a [bot]. Each run gets one status comment, edited as it goes on, and "
            "a label (adws-running, adws-failed, adws-done). A comment starting /adws on a pull "
            "request adws opened, by a permitted author, starts the next round of its ticket "
            "(--review-workflow) with review_body, review_path, review_line and review_branch, "
            "and is answered. A 403/429 rate limit is waited out until x-ratelimit-reset."
        ),
    )
    _add_common(github)
    github.add_argument("--repo", required=True, metavar="OWNER/NAME", help="the repository")
    github.add_argument("--label", default="adws", metavar="L", help="the label (default adws)")
    github.add_argument(
        "--review-workflow", metavar="W2", help="the workflow of review rounds (default --workflow)"
    )
    add_limits(github)
    command = sources.add_parser(
        "command",
        help="tickets as JSON from any command (glab, a Jira or Linear CLI)",
        description=(
            "Run CMD ARGS (after --) every poll, without a shell; its stdout is a JSON list of "
            "tickets (or one JSON object a line), each with key, title, body, url and author. "
            "No comments or pull requests there: only runs, one per key. A ticket that is not "
            "that shape is skipped with its field named."
        ),
    )
    _add_common(command)
    command.add_argument(
        "--source", metavar="NAME", help="name the source (default: the command's name)"
    )
    add_limits(command)
    command.add_argument("argv", nargs="+", metavar="-- CMD ARGS", help="the command")


def worker_of(args: argparse.Namespace, runs: Runs) -> tuple[list[str] | None, dict[str, str]]:
    """Return the command of the watcher's own `adws worker` (None: no `--work`), and its env."""
    where = runs.where
    env = {**os.environ, "ADWS_JOURNAL": where.url if isinstance(where, JournalUrl) else str(where)}
    if args.work is None:
        return None, env
    command = [sys.executable, "-m", "adws", "worker", "--concurrency", str(args.work)]
    if args.workflows is not None:
        command += ["--workflows", str(Path(args.workflows).resolve())]
    return command, env


def _said(taken: list[Taken]) -> str:
    started = sum(1 for t in taken if t.state == "started")
    refused = sum(1 for t in taken if t.state == "refused")
    return f"{len(taken)} tickets: {started} started, {refused} refused"


def github_watcher(args: argparse.Namespace, runs: Runs, repo: str) -> GitHubWatcher:
    """Build the watcher of `repo` the flags describe (its token's login asked of GitHub)."""
    api = GitHub.from_env(said=err)
    gate = Gate(api.login(), frozenset(args.allow))
    intake = Intake(
        runs,
        f"github:{repo}",
        args.workflow,
        gate,
        limits_of(args),
        args.workflows,
        inputs=inputs_of(args.input, None),
        review_workflow=getattr(args, "review_workflow", None),
    )
    return GitHubWatcher(intake, api, repo, args.label, say=err)


def _github_poll(args: argparse.Namespace, runs: Runs) -> Callable[[], int | None]:
    repo = check_repo(args.repo)
    watcher = github_watcher(args, runs, repo)
    gate = watcher.intake.gate
    assert gate is not None  # noqa: S101 - a GitHub watcher's intake has one
    err(f"adws watch: {repo} issues labelled {args.label!r}, as {gate.own}, into {runs.where}")

    def poll() -> int | None:
        try:
            taken = watcher.poll()
        except (GitHubAuthError, GitHubForbiddenError) as exc:
            err(f"adws: error: {exc}")
            return EXIT_FAILED
        except (GitHubError, TicketError) as exc:
            err(f"adws watch: {exc}; trying again at the next poll")
            return None
        if isinstance(taken, Refused):
            return refused(taken)
        err(f"adws watch: {_said(taken)}")
        return None

    return poll


def _tickets(text: str) -> list[object]:
    """Read a command's tickets: a JSON list, or one JSON object a line."""
    try:
        found = json.loads(text)
    except ValueError:
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    return found if isinstance(found, list) else [found]


def _command_poll(args: argparse.Namespace, runs: Runs) -> Callable[[], int | None]:
    argv = [word for word in args.argv if word != "--"] or args.argv
    name = args.source or f"command:{Path(argv[0]).name}"
    given = inputs_of(args.input, None)
    intake = Intake(runs, name, args.workflow, None, limits_of(args), args.workflows, inputs=given)
    err(f"adws watch: tickets from {argv[0]}, into {runs.where}")

    def poll() -> int | None:
        done = io_ops.run_process(argv, timeout=max(args.poll, 60.0), max_output_bytes=MAX_OUTPUT)
        if done.returncode != 0:
            err(f"adws watch: {argv[0]} exited {done.returncode}; trying again at the next poll")
            return None
        try:
            items = _tickets(done.stdout)
        except ValueError as exc:
            err(f"adws watch: {argv[0]} printed no JSON ({exc}); trying again at the next poll")
            return None
        taken = []
        for index, item in enumerate(items):
            try:
                ticket = command_ticket(item, index)
            except TicketError as exc:
                err(f"skipped: {exc}")
                continue
            got = intake.take(ticket)
            if isinstance(got, Refused):
                return refused(got)
            if got.new:
                err(f"{ticket.key}: {got.state} {got.run_id or got.reason}")
            taken.append(got)
        err(f"adws watch: {_said(taken)}")
        return None

    return poll


def cmd_watch(args: argparse.Namespace) -> int:
    """Poll the source until stopped; return the exit code (see `add_watch`)."""
    runs = runs_of(args, create=True)
    opened(runs)
    try:
        poll = _github_poll(args, runs) if args.source == "github" else _command_poll(args, runs)
    except (GitHubError, TicketError) as exc:
        err(f"adws: error: {exc}")
        return EXIT_FAILED
    worker, env = worker_of(args, runs)
    return Loop(poll, args.poll, args.once, worker, env, say=err).run()
