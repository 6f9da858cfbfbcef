"""One webhook payload (a GitHub Actions event) read as a ticket's event, or why it is ignored.

`issues` (an issue `labeled` with the watcher's label, or `opened` with
it) starts a ticket's first round, asked by the payload's `sender` (who
labelled it); `issue_comment` and `pull_request_review_comment` (created,
starting `/adws`, on a pull request) ask for a review round, as a
watcher's poll would find it. Any other event, action or label is
ignored, with the reason. A payload that is not what GitHub sends is a `TicketError`
naming the field; nothing starts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, final

import attrs

from adws.tickets.values import (
    MAX_BODY,
    Ticket,
    TicketError,
    check_repo,
    field,
    issue_ticket,
)

__all__ = ["COMMENTS", "MAX_PAYLOAD", "Asked", "Commented", "read_event"]

COMMENTS: Final = ("issue_comment", "pull_request_review_comment")
"""The events of a comment: one that starts `/adws` on adws's pull request asks for a round."""

MAX_PAYLOAD: Final = 25 << 20
"""GitHub caps a webhook's payload at 25 MB; a bigger file is not one."""


@final
@attrs.frozen
class Asked:
    """A payload that asks for work: the repository, the ticket, its event and who asked."""

    repo: str
    ticket: Ticket
    event: str
    sender: str


@final
@attrs.frozen
class Commented:
    """A `/adws` comment a payload carries: the repository, the comment, and its pull request.

    `pull` is the pull request as the payload has it (a review comment's),
    or None for a conversation comment (the watcher looks it up); `number`
    is the pull request's number; `review`: a comment on a line.
    """

    repo: str
    comment: Mapping[str, object]
    number: int
    pull: Mapping[str, object] | None
    review: bool


def _object(data: Mapping[str, object], name: str) -> Mapping[str, object]:
    value = field("the payload", data, name, dict)
    assert isinstance(value, dict)  # noqa: S101 - `field` checked it
    return value


def read_event(payload: object, name: str, label: str) -> Asked | Commented | str:
    """Read a webhook payload of event `name`; return what it asks, or why it is ignored.

    >>> read_event({"action": "closed"}, "issues", "adws")
    "an issues event with action 'closed' asks for nothing"
    """
    if name not in {"issues", *COMMENTS}:
        return (
            f"a {name} event asks for nothing (adws acts on issues labelled {label}"
            " and /adws comments on its pull requests)"
        )
    if not isinstance(payload, dict):
        msg = f"the payload is {type(payload).__name__}, not an object"
        raise TicketError(msg)
    action = field("the payload", payload, "action", str)
    if name in COMMENTS:
        return _commented(payload, name, str(action))
    if action not in {"labeled", "opened"}:
        return f"an issues event with action {action!r} asks for nothing"
    repo = check_repo(str(field("repository", _object(payload, "repository"), "full_name", str)))
    ticket = issue_ticket(repo, _object(payload, "issue"))
    sender = str(field("sender", _object(payload, "sender"), "login", str))
    if action == "labeled":
        named = field("label", _object(payload, "label"), "name", str)
        if named != label:
            return f"the label {named!r} is not {label!r}"
    elif label not in ticket.labels:
        return f"the issue opened without the label {label!r}"
    return Asked(repo, ticket, "issue", sender)


def _commented(payload: Mapping[str, object], name: str, action: str) -> Commented | str:
    """Read a comment's payload: a `/adws` comment created on a pull request, or why not."""
    if action != "created":
        return f"a {name} event with action {action!r} asks for nothing"
    repo = check_repo(str(field("repository", _object(payload, "repository"), "full_name", str)))
    comment = _object(payload, "comment")
    body = field("comment", comment, "body", str, MAX_BODY)
    if not str(body).lstrip().startswith("/adws"):
        return "the comment does not start with /adws"
    review = name == "pull_request_review_comment"
    carrier = _object(payload, "pull_request" if review else "issue")
    number = field("the pull request" if review else "issue", carrier, "number", int)
    if not review and carrier.get("pull_request") is None:
        return "a comment on an issue, not on a pull request, asks for nothing"
    return Commented(repo, comment, int(str(number)), carrier if review else None, review)
