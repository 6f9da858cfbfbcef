"""One webhook payload (a GitHub Actions event) read as a ticket's event, or why it is ignored.

`issues` (an issue `labeled` with the watcher's label, or `opened` with
it) starts a ticket's first round, asked by the payload's `sender` (who
labelled it). Any other event, action or label is ignored, with the
reason. A payload that is not what GitHub sends is a `TicketError`
naming the field; nothing starts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, final

import attrs

from adws.tickets.values import Ticket, TicketError, check_repo, field, issue_ticket

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["MAX_PAYLOAD", "Asked", "read_event"]

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


def _object(data: Mapping[str, object], name: str) -> Mapping[str, object]:
    value = field("the payload", data, name, dict)
    assert isinstance(value, dict)  # noqa: S101 - `field` checked it
    return value


def read_event(payload: object, name: str, label: str) -> Asked | str:
    """Read a webhook payload of event `name`; return what it asks, or why it is ignored.

    >>> read_event({"action": "closed"}, "issues", "adws")
    "an issues event with action 'closed' asks for nothing"
    """
    if name != "issues":
        return f"a {name} event asks for nothing (adws acts on issues labelled {label})"
    if not isinstance(payload, dict):
        msg = f"the payload is {type(payload).__name__}, not an object"
        raise TicketError(msg)
    action = field("the payload", payload, "action", str)
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
