"""Watch a GitHub repository: labelled issues become runs; their status comments follow them.

One `poll` reads the open issues with the label (pull requests are
issues too, and are skipped), takes each through the `Intake` (one run
per ticket and round, the author checked), answers what is new (a status
comment and the `adws-running` label for a run queued, one comment for a
refusal), then edits the status comment of every round whose run moved
on (`sync`). A comment that starts with `/adws` on a pull request adws
opened (its branch `adws/<number>-<slug>`), by a permitted author, starts
the ticket's next round (`reviews`) on that branch, with the comment's
words, path and line as inputs, and is answered in reply; adws's own
comments start nothing. An issue or comment GitHub would not send is
skipped with the field named; nothing is started for it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, final

import attrs

from adws import io_ops
from adws.journal.store import tickets as journal_tickets
from adws.runs import Refused
from adws.tickets.github import GitHub
from adws.tickets.intake import Intake
from adws.tickets.status import label_for, status_line
from adws.tickets.values import (
    MAX_BODY,
    Ticket,
    TicketError,
    branch_name,
    field,
    issue_ticket,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    from adws.journal import Journal, RunRecord
    from adws.tickets.intake import Taken

__all__ = ["GitHubWatcher", "number_of"]

_NUMBER: Final = re.compile(r"#([1-9][0-9]{0,9})\Z")
_OURS: Final = re.compile(r"adws/([1-9][0-9]{0,9})-[a-z0-9]+(?:-[a-z0-9]+)*")
DAY: Final = 86_400.0


def _iso(seconds: float) -> str:
    """Write a time as GitHub's `since` takes it.

    >>> _iso(0.0)
    '1970-01-01T00:00:00Z'
    """
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def _asks(comment: object) -> bool:
    """Tell whether a comment asks adws for a round (its body starts with `/adws`).

    >>> _asks({"body": "  /adws use a guard"}), _asks({"body": "lgtm /adws"}), _asks([])
    (True, False, False)
    """
    body = comment.get("body") if isinstance(comment, dict) else None
    return isinstance(body, str) and body.lstrip().startswith("/adws")


def number_of(key: str) -> int:
    """Return the issue number a GitHub ticket's key ends with.

    >>> number_of("github:octo/app#7")
    7
    """
    found = _NUMBER.search(key)
    assert found is not None  # noqa: S101 - keys of GitHub tickets are made by `issue_ticket`
    return int(found.group(1))


@final
@attrs.define
class GitHubWatcher:
    """Turn `repo`'s issues labelled `label` into runs through `intake`, over `api`."""

    intake: Intake
    api: GitHub
    repo: str
    label: str
    say: Callable[[str], None] = lambda _line: None
    since: str = attrs.field(factory=lambda: _iso(io_ops.wall_clock() - DAY))
    """Comments older than this were read by an earlier poll (a restart reads a day back)."""

    def poll(self) -> list[Taken] | Refused:
        """Take every labelled issue once; answer what is new; edit moved-on status comments."""
        taken = self.issues()
        if isinstance(taken, Refused):
            return taken
        reviews = self.reviews()
        if isinstance(reviews, Refused):
            return reviews
        self.sync()
        return taken + reviews

    def issues(self) -> list[Taken] | Refused:
        """Take every open issue labelled `label` (its first round), answering what is new."""
        taken: list[Taken] = []
        for raw in self.api.labelled(self.repo, self.label):
            try:
                ticket = issue_ticket(self.repo, raw)
            except TicketError as exc:
                self.say(f"skipped: {exc}")
                continue
            if ticket.pull_request:
                continue
            got = self.intake.take(ticket, permission=self._permission)
            if isinstance(got, Refused):
                return got
            self.answer(got)
            taken.append(got)
        return taken

    def reviews(self) -> list[Taken] | Refused:
        """Start the next round of a ticket for each new `/adws` comment on its pull request."""
        found = [
            (comment, review)
            for review in (True, False)
            for comment in self.api.comments_since(self.repo, self.since, review=review)
        ]
        asked = [(c, r) for c, r in found if _asks(c)]
        for comment, _ in found:
            stamp = comment.get("updated_at") if isinstance(comment, dict) else None
            if isinstance(stamp, str) and stamp > self.since:
                self.since = stamp
        if not asked:
            return []
        pulls = {p.get("number"): p for p in self.api.pulls(self.repo) if isinstance(p, dict)}
        taken: list[Taken] = []
        for comment, review in asked:
            try:
                got = self.review_round(comment, pulls, review=review)
            except TicketError as exc:
                self.say(f"skipped: {exc}")
                continue
            if isinstance(got, Refused):
                return got
            if got is not None:
                taken.append(got)
        return taken

    def review_round(
        self, comment: Mapping[str, object], pulls: Mapping[object, Any], *, review: bool
    ) -> Taken | Refused | None:
        """Take one `/adws` comment: a round of the ticket whose pull request it is on.

        `pulls` are the open pull requests by number. None: the comment is
        not on a pull request adws opened, or is adws's own.
        """
        where = "review comment" if review else "comment"
        comment_id = field(where, comment, "id", int)
        body = str(field(where, comment, "body", str, MAX_BODY))
        user = field(where, comment, "user", dict)
        assert isinstance(user, dict)  # noqa: S101 - `field` checked it
        author = str(field(f"{where}: user", user, "login", str))
        url = str(field(where, comment, "pull_request_url" if review else "issue_url", str))
        number = int(url.rsplit("/", 1)[-1]) if url.rsplit("/", 1)[-1].isdigit() else 0
        pull = pulls.get(number)
        head = pull.get("head") if isinstance(pull, dict) else None
        ref = head.get("ref") if isinstance(head, dict) else None
        matched = _OURS.fullmatch(ref) if isinstance(ref, str) else None
        if matched is None or author.casefold() == self._own():
            return None  # not a pull request adws opened, or adws's own words
        key = f"github:{self.repo}#{matched.group(1)}"
        first = self._first(key)
        if first is None:
            return None
        inputs = {
            "review_body": body,
            "review_path": str(comment.get("path") or ""),
            "review_line": str(comment.get("line") or ""),
            "review_branch": str(ref),
        }
        got = self.intake.take(
            first,
            event=f"comment:{comment_id}",
            author=author,
            permission=self._permission,
            inputs=inputs,
            workflow=self.intake.review_workflow,
        )
        if isinstance(got, Refused) or not got.new:
            return got
        said = (
            f"adws run {got.run_id} queued: round {got.round.round if got.round else '?'}"
            if got.state == "started"
            else f"adws will not start work here: {got.reason}"
        )
        self.say(f"{key}: {said}")
        if review:
            self.api.reply(self.repo, number, int(str(comment_id)), said)
        else:
            self.api.comment(self.repo, number, said)
        return got

    def _pull_url(self, run: RunRecord) -> str | None:
        """Find the pull request a succeeded run's branch has open (None: none)."""
        given = run.inputs().inputs
        ticket = str(given.get("ticket", ""))
        if not _NUMBER.search(ticket):
            return None
        branch = str(
            given.get("review_branch")
            or branch_name(number_of(ticket), str(given.get("ticket_title", "")))
        )
        owner = self.repo.split("/", maxsplit=1)[0]
        found = self.api.open_pulls(self.repo, f"{owner}:{branch}")
        url = found[0].get("html_url") if found and isinstance(found[0], dict) else None
        return url if isinstance(url, str) else None

    def _own(self) -> str:
        gate = self.intake.gate
        return "" if gate is None else gate.own.casefold()

    def _first(self, key: str) -> Ticket | None:
        """Rebuild a ticket from its first round's run inputs (None: adws never started it)."""
        journal = self._journal()
        rows = journal_tickets.rounds(journal, key)
        first = next((row.run_id for row in rows if row.state == "started" and row.run_id), None)
        run = journal.find(first) if first is not None else "never started"
        if isinstance(run, str):
            return None
        given = run.inputs().inputs
        return Ticket(
            key,
            str(given.get("ticket_title", "")),
            str(given.get("ticket_body", "")),
            str(given.get("ticket_url", "")),
            str(given.get("ticket_author", "")),
            number_of(key),
        )

    def _permission(self, user: str) -> str:
        return self.api.permission(self.repo, user)

    def _journal(self) -> Journal:
        journal = self.intake.runs.journal()
        assert not isinstance(journal, Refused)  # noqa: S101 - the intake opened it
        return journal

    def answer(self, taken: Taken) -> None:
        """Answer what the intake decided, once: a status comment and label, or a refusal."""
        if not taken.new:
            return
        number = number_of(taken.ticket)
        if taken.state == "refused":
            self.say(f"{taken.ticket}: refused: {taken.reason}")
            self.api.comment(self.repo, number, f"adws will not start work here: {taken.reason}")
            return
        if taken.state == "deferred":
            self.say(f"{taken.ticket}: deferred: {taken.reason}")
            return
        run_id = str(taken.run_id)
        self.say(f"{taken.ticket}: run {run_id} queued")
        journal = self._journal()
        if not journal_tickets.shown(journal, run_id, None, "queued"):
            return  # another watcher's sync shows it
        made = self.api.comment(self.repo, number, f"adws run {run_id} queued; a worker starts it")
        journal_tickets.set_comment(journal, run_id, made)
        self.api.add_labels(self.repo, number, [label_for("queued")])

    def sync(self) -> None:
        """Edit the status comment (and label) of every round whose run moved on since shown.

        Each change of status is taken compare-and-set in the journal first,
        so of several watchers one shows it. A round whose comment is being
        made (shown, no comment id yet) waits for the next sync.
        """
        journal = self._journal()
        for row, was in journal_tickets.unshown(journal, self.intake.source):
            run = journal.find(str(row.run_id))
            if isinstance(run, str):  # a row no adws wrote: shown as it is, never trusted
                continue
            if (row.comment_id is None and was is not None) or not journal_tickets.shown(
                journal, run.run_id, was, run.status
            ):
                continue
            number = number_of(row.ticket)
            body = status_line(run, self._pull_url(run) if run.status == "succeeded" else None)
            if row.comment_id is None:
                made = self.api.comment(self.repo, number, body)
                journal_tickets.set_comment(journal, run.run_id, made)
            else:
                self.api.edit_comment(self.repo, row.comment_id, body)
            now, before = label_for(run.status), label_for(was or "")
            if was is None or now != before:
                self.api.add_labels(self.repo, number, [now])
                if was is not None:
                    self.api.remove_label(self.repo, number, before)
            self.say(f"{row.ticket}: {body}")
