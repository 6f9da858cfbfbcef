"""Tickets read from what a source sends: every field checked, branch names safe."""

from __future__ import annotations

import re
import subprocess
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adws.tickets import Ticket, TicketError, branch_name, command_ticket, issue_ticket, slug
from adws.tickets.values import MAX_BODY, check_repo, field


def issue(**changes: object) -> dict[str, Any]:
    """Return an issue object as GitHub's REST API sends it, with `changes`."""
    base: dict[str, Any] = {
        "number": 7,
        "title": "Crash on empty input",
        "body": "It crashes.",
        "labels": [{"name": "adws"}, {"name": "bug"}],
        "html_url": "https://github.com/octo/app/issues/7",
        "user": {"login": "ana"},
    }
    return {**base, **changes}


def test_an_issue_becomes_a_ticket_with_its_key_words_author_and_labels() -> None:
    ticket = issue_ticket("octo/app", issue())
    assert ticket == Ticket(
        "github:octo/app#7",
        "Crash on empty input",
        "It crashes.",
        "https://github.com/octo/app/issues/7",
        "ana",
        7,
        ("adws", "bug"),
    )
    assert ticket.inputs() == {
        "ticket": "github:octo/app#7",
        "ticket_title": "Crash on empty input",
        "ticket_body": "It crashes.",
        "ticket_url": "https://github.com/octo/app/issues/7",
        "ticket_author": "ana",
    }
    assert ticket.branch == "adws/7-crash-on-empty-input"


def test_a_null_body_is_empty_and_a_pull_request_is_marked() -> None:
    ticket = issue_ticket("octo/app", issue(body=None, pull_request={"url": "u"}))
    assert (ticket.body, ticket.pull_request) == ("", True)


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ([], "issue of octo/app is list, not an object"),
        (issue(number="7"), "issue of octo/app: field 'number' is str, not int"),
        (issue(number=True), "issue of octo/app: field 'number' is bool, not int"),
        (issue(number=0), "issue of octo/app: field 'number' is 0, not a positive number"),
        ({"title": "t"}, "issue of octo/app: field 'number' is missing"),
        (issue(title=None), "issue octo/app#7: field 'title' is NoneType, not str"),
        (issue(body=5), "issue octo/app#7: field 'body' is int, not str"),
        (
            issue(body="x" * (MAX_BODY + 1)),
            f"issue octo/app#7: field 'body' is {MAX_BODY + 1} characters (at most {MAX_BODY})",
        ),
        (issue(user="ana"), "issue octo/app#7: field 'user' is str, not dict"),
        (issue(user={}), "issue octo/app#7: user: field 'login' is missing"),
        (issue(labels="adws"), "issue octo/app#7: field 'labels' is str, not list"),
        (
            issue(labels=[{"name": "a"}] * 10_000),
            "issue octo/app#7: field 'labels' has 10000 (at most 100)",
        ),
        (issue(labels=["adws"]), "issue octo/app#7: labels[0] is str, not an object"),
        (issue(labels=[{"name": 1}]), "issue octo/app#7: labels[0]: field 'name' is int, not str"),
    ],
)
def test_an_issue_that_github_would_not_send_is_refused_with_the_field_named(
    given: object, message: str
) -> None:
    with pytest.raises(TicketError) as raised:
        issue_ticket("octo/app", given)
    assert str(raised.value) == message


def test_a_command_ticket_takes_its_five_fields_and_branches_on_its_key() -> None:
    item = {"key": "jira:OPS-12", "title": "Slow", "body": "b", "url": "u", "author": "ana"}
    ticket = command_ticket(item, 3)
    assert (ticket.key, ticket.number, ticket.branch) == ("jira:OPS-12", None, "adws/jira-ops-12")
    with pytest.raises(TicketError, match=r"^ticket 3: field 'key' is empty$"):
        command_ticket({**item, "key": " "}, 3)
    with pytest.raises(TicketError, match=r"^ticket 0: field 'author' is missing$"):
        command_ticket({k: v for k, v in item.items() if k != "author"})


@pytest.mark.parametrize("repo", ["octo", "octo/app/x", "-octo/app", "octo/.", "octo/..", ""])
def test_a_repository_that_is_not_owner_slash_name_is_refused(repo: str) -> None:
    with pytest.raises(TicketError, match=r"is not OWNER/NAME$"):
        check_repo(repo)


def test_a_repository_named_owner_slash_name_is_taken() -> None:
    assert check_repo("octo-cat/app.js_2") == "octo-cat/app.js_2"


def test_a_field_longer_than_its_limit_is_refused() -> None:
    with pytest.raises(TicketError, match=r"^x: field 'a' is 3 characters \(at most 2\)$"):
        field("x", {"a": "abc"}, "a", str, 2)


SAFE = re.compile(r"adws/([1-9][0-9]*-)?[a-z0-9]+(-[a-z0-9]+)*")


@given(number=st.one_of(st.none(), st.integers(1, 10**12)), title=st.text(max_size=300))
def test_a_branch_name_is_the_number_and_a_slug_of_safe_characters_only(
    number: int | None, title: str
) -> None:
    name = branch_name(number, title)
    assert SAFE.fullmatch(name), name
    assert len(slug(title)) <= 40
    assert ".." not in name
    assert not name.endswith((".lock", "/"))


@given(title=st.text(max_size=80))
def test_git_takes_every_branch_name_as_a_valid_ref(title: str) -> None:
    checked = subprocess.run(
        ["git", "check-ref-format", "--branch", branch_name(7, title)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert checked.returncode == 0, checked.stderr
