"""What a ticket is, read from what a source sends: its key, words, author, and its branch.

A ticket is data from outside. Everything read here is checked against
what GitHub (or a command's JSON) sends, field by field, and refused with
the field named (`TicketError`): a missing field, a wrong type, a body
past GitHub's own limit, a list of 10,000 labels. A ticket's words reach
a run only as its inputs (`Ticket.inputs`), never as a shell word, a path
or a flag; its branch is built from its number and a slug of safe
characters (`branch_name`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Final, final

import attrs

from adws._exceptions import MalformedError

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "MAX_BODY",
    "MAX_LABELS",
    "Ticket",
    "TicketError",
    "branch_name",
    "check_repo",
    "command_ticket",
    "field",
    "issue_ticket",
    "slug",
]

MAX_BODY: Final = 65_536
"""The longest body GitHub itself takes for an issue or a comment (characters)."""
MAX_TITLE: Final = 1_024
MAX_LABELS: Final = 100
"""GitHub allows 100 labels on an issue; a payload with more is not GitHub's."""
MAX_TEXT: Final = 2_048
"""The longest key, URL, login or label name taken from a source."""
_REPO: Final = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}")
_SLUG_LENGTH: Final = 40


class TicketError(MalformedError):
    """A payload or an API answer that is not what its source sends (the field is named)."""


def check_repo(text: str) -> str:
    """Return `OWNER/NAME` as given, or raise `TicketError` for anything else.

    >>> check_repo("octo/hello-world")
    'octo/hello-world'
    >>> check_repo("octo/..")
    Traceback (most recent call last):
    ...
    adws.tickets.values.TicketError: repository 'octo/..' is not OWNER/NAME
    """
    name = text.partition("/")[2]
    if not _REPO.fullmatch(text) or name in {".", ".."}:
        msg = f"repository {text[:200]!r} is not OWNER/NAME"
        raise TicketError(msg)
    return text


def field(
    where: str, data: Mapping[str, object], name: str, kind: type[object], most: int = MAX_TEXT
) -> object:
    """Return `data[name]` if it is a `kind` (a text at most `most` long), else raise `TicketError`.

    >>> field("issue", {"number": 7}, "number", int)
    7
    >>> field("issue", {"number": "7"}, "number", int)
    Traceback (most recent call last):
    ...
    adws.tickets.values.TicketError: issue: field 'number' is str, not int
    """
    if name not in data:
        msg = f"{where}: field {name!r} is missing"
        raise TicketError(msg)
    value = data[name]
    if (kind is int and isinstance(value, bool)) or not isinstance(value, kind):
        msg = f"{where}: field {name!r} is {type(value).__name__}, not {kind.__name__}"
        raise TicketError(msg)
    if isinstance(value, str) and len(value) > most:
        msg = f"{where}: field {name!r} is {len(value)} characters (at most {most})"
        raise TicketError(msg)
    return value


def _text(where: str, data: Mapping[str, object], name: str, most: int = MAX_TEXT) -> str:
    value = field(where, data, name, str, most)
    assert isinstance(value, str)  # noqa: S101 - `field` checked it
    return value


def _mapping(where: str, value: object) -> Mapping[str, object]:
    if not isinstance(value, dict):
        msg = f"{where} is {type(value).__name__}, not an object"
        raise TicketError(msg)
    return value


def _labels(where: str, data: Mapping[str, object]) -> tuple[str, ...]:
    labels = field(where, data, "labels", list)
    assert isinstance(labels, list)  # noqa: S101 - `field` checked it
    if len(labels) > MAX_LABELS:
        msg = f"{where}: field 'labels' has {len(labels)} (at most {MAX_LABELS})"
        raise TicketError(msg)
    return tuple(
        _text(f"{where}: labels[{index}]", _mapping(f"{where}: labels[{index}]", label), "name")
        for index, label in enumerate(labels)
    )


@final
@attrs.frozen
class Ticket:
    """One piece of work from a source: its key (`github:OWNER/NAME#7`), words and author.

    `number` is the issue's number (None for a command's ticket, which has
    no branch of its own but the key's slug); `labels` its labels;
    `pull_request` whether the issue is a pull request (GitHub lists pull
    requests as issues too).
    """

    key: str
    title: str
    body: str
    url: str
    author: str
    number: int | None = None
    labels: tuple[str, ...] = ()
    pull_request: bool = False

    def inputs(self) -> dict[str, str]:
        """Return the run's inputs: the ticket's words as data, under their documented names.

        >>> Ticket("github:o/r#7", "Crash", "it fails", "https://x/7", "ana").inputs()["ticket"]
        'github:o/r#7'
        """
        return {
            "ticket": self.key,
            "ticket_title": self.title,
            "ticket_body": self.body,
            "ticket_url": self.url,
            "ticket_author": self.author,
        }

    @property
    def branch(self) -> str:
        """Name the branch a run of this ticket works on (`adws/<number>-<slug>`)."""
        return branch_name(self.number, self.title if self.number else self.key)


def issue_ticket(repo: str, issue: object) -> Ticket:
    """Read one issue object as GitHub's REST API (or a webhook) sends it, or raise `TicketError`.

    >>> issue_ticket("o/r", {"number": 7, "title": "Crash", "body": None, "labels": [],
    ...     "html_url": "https://x/7", "user": {"login": "ana"}}).key
    'github:o/r#7'
    """
    where = f"issue of {repo}"
    data = _mapping(where, issue)
    number = field(where, data, "number", int)
    assert isinstance(number, int)  # noqa: S101 - `field` checked it
    if number < 1:
        msg = f"{where}: field 'number' is {number}, not a positive number"
        raise TicketError(msg)
    where = f"issue {repo}#{number}"
    body = data.get("body")
    if body is not None:
        body = _text(where, data, "body", MAX_BODY)
    user = _mapping(f"{where}: field 'user'", field(where, data, "user", dict))
    return Ticket(
        f"github:{repo}#{number}",
        _text(where, data, "title", MAX_TITLE),
        body or "",
        _text(where, data, "html_url"),
        _text(f"{where}: user", user, "login"),
        number,
        _labels(where, data),
        pull_request=data.get("pull_request") is not None,
    )


def command_ticket(item: object, index: int = 0) -> Ticket:
    """Read one ticket a command printed (`key`, `title`, `body`, `url`, `author`), or raise.

    >>> command_ticket({"key": "jira:OPS-12", "title": "Slow", "body": "b", "url": "u",
    ...     "author": "ana"}).branch
    'adws/jira-ops-12'
    """
    where = f"ticket {index}"
    data = _mapping(where, item)
    key = _text(where, data, "key")
    if not key.strip():
        msg = f"{where}: field 'key' is empty"
        raise TicketError(msg)
    return Ticket(
        key,
        _text(where, data, "title", MAX_TITLE),
        _text(where, data, "body", MAX_BODY),
        _text(where, data, "url"),
        _text(where, data, "author"),
    )


def slug(text: str) -> str:
    """Make a branch-safe slug: lowercase ASCII letters and digits joined by single dashes.

    >>> slug("Crash on `rm -rf /` --force!"), slug("¿¿"), slug("a" * 50) == "a" * 40
    ('crash-on-rm-rf-force', 'ticket', True)
    """
    words = re.findall(r"[a-z0-9]+", text.lower())
    made = "-".join(words)[:_SLUG_LENGTH].strip("-")
    return made or "ticket"


def branch_name(number: int | None, title: str) -> str:
    """Name a ticket's branch from its number and a slug of its title (only safe characters).

    >>> branch_name(7, "Fix: the ../../etc crash"), branch_name(None, "jira:OPS-12")
    ('adws/7-fix-the-etc-crash', 'adws/jira-ops-12')
    """
    return f"adws/{slug(title)}" if number is None else f"adws/{number}-{slug(title)}"
