"""`adws trigger --event FILE`: one webhook payload into a run, by the rules a watcher keeps.

In GitHub Actions the payload is `$GITHUB_EVENT_PATH` and its name
`$GITHUB_EVENT_NAME`: an issue labelled `--label` queues one run of
`--workflow` (unique per ticket and round in the journal, so a
redelivered event starts nothing), the sender checked as a watcher checks
an author, answered once with a status comment or a refusal.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Final

from adws.cli._options import add_journal, add_workflows, opened, refused, runs_of
from adws.cli._output import err, out
from adws.cli._values import positive
from adws.cli.watch import add_inputs, add_limits, github_watcher, worker_of
from adws.runs import Refused
from adws.tickets.events import MAX_PAYLOAD, Asked, Commented, read_event
from adws.tickets.github import GitHubError
from adws.tickets.loop import Loop
from adws.tickets.values import TicketError

if TYPE_CHECKING:
    import argparse

    from adws.tickets.intake import Taken
    from adws.tickets.watcher import GitHubWatcher

__all__ = ["add_trigger", "cmd_trigger"]

EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
EXIT_USAGE: Final = 2


def add_trigger(parser: argparse.ArgumentParser) -> None:
    """Declare `adws trigger --event FILE [--event-name NAME] --workflow W ...`."""
    parser.description = (
        'Read one webhook payload (in GitHub Actions: --event "$GITHUB_EVENT_PATH"; the '
        "event's name from --event-name, else $GITHUB_EVENT_NAME) and do what adws watch "
        "github would do with it: an issue labelled --label queues one run of --workflow, "
        "once per ticket and round however often the event is delivered; the sender (who "
        "labelled it) needs write, maintain or admin permission, or --allow. Exit codes: 0 "
        "queued, already queued, refused or nothing asked; 1 GitHub failed; 2 a payload that is "
        "not GitHub's (the field named) or a workflow that cannot take the ticket."
    )
    add_workflows(parser)
    add_journal(parser)
    add_inputs(parser)
    parser.add_argument("--event", required=True, metavar="FILE", help="the payload (JSON)")
    parser.add_argument("--event-name", metavar="NAME", help="default: $GITHUB_EVENT_NAME")
    parser.add_argument("--workflow", required=True, metavar="W", help="the workflow a ticket runs")
    parser.add_argument("--label", default="adws", metavar="L", help="the label (default adws)")
    parser.add_argument(
        "--work", type=positive, metavar="N", help="run the queued run here (adws worker --once)"
    )
    add_limits(parser)


def _payload(path: str) -> object:
    """Read the payload file, at most GitHub's 25 MB, as JSON (else `TicketError`)."""
    file = Path(path)
    try:
        with file.open("rb") as handle:
            raw = handle.read(MAX_PAYLOAD + 1)
    except OSError as exc:
        msg = f"cannot read the event {path}: {exc.strerror}"
        raise TicketError(msg) from None
    if len(raw) > MAX_PAYLOAD:
        msg = f"the event {path} is over {MAX_PAYLOAD} bytes: not a GitHub payload"
        raise TicketError(msg)
    try:
        return json.loads(raw)
    except ValueError as exc:
        msg = f"the event {path} is not JSON: {exc}"
        raise TicketError(msg) from None


def _taken(asked: Asked | Commented, watcher: GitHubWatcher) -> Taken | Refused | None:
    """Take what the payload asks: an issue's first round, or a `/adws` comment's round."""
    api, repo = watcher.api, asked.repo
    if isinstance(asked, Commented):
        pulls: dict[object, object] = (
            {asked.number: asked.pull}
            if asked.pull is not None
            else {p.get("number"): p for p in api.pulls(repo) if isinstance(p, dict)}
        )
        return watcher.review_round(asked.comment, pulls, review=asked.review)
    taken = watcher.intake.take(
        asked.ticket, author=asked.sender, permission=lambda user: api.permission(repo, user)
    )
    if not isinstance(taken, Refused):
        watcher.answer(taken)
    return taken


def cmd_trigger(args: argparse.Namespace) -> int:  # noqa: PLR0911 - one exit per outcome
    """Queue the run one payload asks for; say what became of it."""
    name = args.event_name or os.environ.get("GITHUB_EVENT_NAME") or ""
    try:
        asked = read_event(_payload(args.event), name, args.label)
    except TicketError as exc:
        err(f"adws: error: {exc}")
        return EXIT_USAGE
    if isinstance(asked, str):
        out(f"adws trigger: nothing to do: {asked}")
        return EXIT_OK
    runs = runs_of(args, create=True)
    opened(runs)
    try:
        watcher = github_watcher(args, runs, asked.repo)
        taken = _taken(asked, watcher)
        if isinstance(taken, Refused):
            return refused(taken)
        if taken is None:
            out(
                "adws trigger: nothing to do: not a pull request adws opened, or adws's own comment"
            )
            return EXIT_OK
    except (GitHubError, TicketError) as exc:
        err(f"adws: error: {exc}")
        return EXIT_FAILED
    out(f"{taken.ticket}: {taken.state} {taken.run_id or taken.reason or ''}".rstrip())
    if args.work is None:
        return EXIT_OK
    worker, env = worker_of(args, runs)

    def sync() -> None:
        watcher.sync()

    return Loop(sync, 0.0, once=True, worker=worker, env=env, say=err).run()
