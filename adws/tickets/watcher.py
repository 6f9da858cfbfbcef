"""Watch a GitHub repository: labelled issues become runs; their status comments follow them.

One `poll` reads the open issues with the label (pull requests are
issues too, and are skipped), takes each through the `Intake` (one run
per ticket and round, the author checked), answers what is new (a status
comment and the `adws-running` label for a run queued, one comment for a
refusal), then edits the status comment of every round whose run moved
on (`sync`). An issue GitHub would not send is skipped with the field
named; nothing is started for it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Final, final

import attrs

from adws.journal.store import tickets as journal_tickets
from adws.runs import Refused
from adws.tickets.github import GitHub
from adws.tickets.intake import Intake
from adws.tickets.status import label_for, status_line
from adws.tickets.values import TicketError, issue_ticket

if TYPE_CHECKING:
    from adws.journal import Journal
    from adws.tickets.intake import Taken

__all__ = ["GitHubWatcher", "number_of"]

_NUMBER: Final = re.compile(r"#([1-9][0-9]{0,9})\Z")


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

    def poll(self) -> list[Taken] | Refused:
        """Take every labelled issue once; answer what is new; edit moved-on status comments."""
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
        self.sync()
        return taken

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
        made = self.api.comment(self.repo, number, f"adws run {run_id} queued; a worker starts it")
        journal = self._journal()
        journal_tickets.set_comment(journal, run_id, made)
        self.api.add_labels(self.repo, number, [label_for("queued")])
        journal_tickets.shown(journal, run_id, "queued")

    def sync(self) -> None:
        """Edit the status comment (and label) of every round whose run moved on since shown."""
        journal = self._journal()
        for row, was in journal_tickets.unshown(journal, self.intake.source):
            run = journal.find(str(row.run_id))
            if isinstance(run, str):  # a row no adws wrote: shown as it is, never trusted
                continue
            number = number_of(row.ticket)
            body = status_line(run)
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
            journal_tickets.shown(journal, run.run_id, run.status)
            self.say(f"{row.ticket}: {body}")
