"""The REST client against the fake GitHub: endpoints, pages, typed failures, rate limits."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from adws.testing.github_api import FakeGitHub
from adws.tickets.github import (
    GitHub,
    GitHubAuthError,
    GitHubError,
    GitHubForbiddenError,
    GitHubInvalidError,
    GitHubUnavailableError,
    token_from,
    wait_for,
)
from adws.tickets.values import TicketError

if TYPE_CHECKING:
    from collections.abc import Iterator


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as fake:
        fake.add_repo("octo/app", permissions={"ana": "write", "bo": "read"})
        yield fake


def client(fake: FakeGitHub, slept: list[float] | None = None, **how: object) -> GitHub:
    return GitHub(
        fake.url,
        fake.token,
        sleep=(slept if slept is not None else []).append,
        clock=lambda: 1_000.0,
        **how,  # type: ignore[arg-type] # the keywords a test passes
    )


def test_the_client_reads_the_login_permissions_and_labelled_issues_over_pages(
    github: FakeGitHub,
) -> None:
    for number in range(1, 131):
        github.add_issue("octo/app", f"issue {number}", None, author="ana", labels=("adws",))
    github.add_issue("octo/app", "unlabelled", None, author="ana")
    api = client(github)
    assert api.login() == "adws-bot"
    assert (api.permission("octo/app", "ana"), api.permission("octo/app", "zed")) == (
        "write",
        "none",
    )
    listed = api.labelled("octo/app", "adws")
    assert [issue["number"] for issue in listed] == list(range(1, 131))
    assert github.count("GET", "/repos/octo/app/issues") == 2
    assert repr(api) == f"GitHub({github.url!r})"


def test_comments_labels_pulls_and_replies_go_to_their_endpoints(github: FakeGitHub) -> None:
    github.add_issue("octo/app", "Crash", "b", author="ana", labels=("adws",))
    api = client(github)
    made = api.comment("octo/app", 1, "adws run r1 started")
    api.edit_comment("octo/app", made, "adws run r1 failed")
    api.add_labels("octo/app", 1, ["adws-running"])
    api.remove_label("octo/app", 1, "adws")
    api.remove_label("octo/app", 1, "never-there")
    assert [c["body"] for c in github.comments("octo/app", 1)] == ["adws run r1 failed"]
    assert [label["name"] for label in github.issue("octo/app", 1)["labels"]] == ["adws-running"]
    pull = api.create_pull(
        "octo/app", {"title": "Fix", "head": "adws/1-crash", "base": "main", "draft": True}
    )
    assert pull["number"] == 2
    assert [p["number"] for p in api.open_pulls("octo/app", "octo:adws/1-crash")] == [2]
    review = github.add_review_comment(
        "octo/app", 2, "/adws use a guard", author="ana", path="app.py", line=3
    )
    api.reply("octo/app", 2, review["id"], "on it")
    comments = api.comments_since("octo/app", "", review=True)
    assert [(c["body"], c["in_reply_to_id"]) for c in comments] == [
        ("/adws use a guard", None),
        ("on it", review["id"]),
    ]
    assert [c["body"] for c in api.comments_since("octo/app", "", review=False)] == [
        "adws run r1 failed"
    ]


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (401, GitHubAuthError),
        (403, GitHubForbiddenError),
        (422, GitHubInvalidError),
        (502, GitHubUnavailableError),
        (404, GitHubError),
    ],
)
def test_a_failure_is_typed_by_its_status_and_never_retried(
    github: FakeGitHub, status: int, kind: type[GitHubError]
) -> None:
    github.fail("POST", "/repos/octo/app/pulls", status, body={"message": "nope"})
    with pytest.raises(kind) as raised:
        client(github).create_pull("octo/app", {"title": "t", "head": "b"})
    assert (type(raised.value), raised.value.status, str(raised.value)) == (
        kind,
        status,
        f"GitHub answered POST /repos/octo/app/pulls with {status}: nope",
    )
    assert github.count("POST", "/repos/octo/app/pulls") == 1


def test_a_failure_without_a_message_says_its_status(github: FakeGitHub) -> None:
    github.fail("PATCH", "/repos/octo/app/issues/comments/9", 500, body=["x"])
    with pytest.raises(GitHubUnavailableError, match=r"with 500$"):
        client(github).edit_comment("octo/app", 9, "b")


def test_a_bad_token_is_unauthorized(github: FakeGitHub) -> None:
    with pytest.raises(GitHubAuthError, match=r"401: Bad credentials$"):
        GitHub(github.url, "wrong").login()


def test_a_spent_rate_limit_is_waited_out_until_its_reset_then_asked_again(
    github: FakeGitHub,
) -> None:
    headers = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1060"}
    github.fail("GET", "/user", 403, headers=headers, body={"message": "rate limit exceeded"})
    github.fail("GET", "/user", 429, headers={"retry-after": "7"})
    slept: list[float] = []
    said: list[str] = []
    assert client(github, slept, said=said.append).login() == "adws-bot"
    assert slept == [61.0, 7.0]
    assert said[0] == (
        "GitHub's rate limit is spent (GET /user: 403); waiting 61s for x-ratelimit-reset"
    )
    assert github.count("GET", "/user") == 3


def test_the_wait_of_a_rate_limit_is_bounded_and_read_safely() -> None:
    assert wait_for({"retry-after": "99999"}, 0.0) == 3600.0
    assert wait_for({"retry-after": "soon"}, 0.0) == 60.0
    assert wait_for({"x-ratelimit-remaining": "0"}, 0.0) == 61.0
    assert wait_for({"x-ratelimit-remaining": "0", "x-ratelimit-reset": "5"}, 100.0) == 1.0
    assert wait_for({"x-ratelimit-remaining": "10"}, 0.0) is None


def test_a_timeout_or_no_server_is_unavailable(github: FakeGitHub) -> None:
    github.delay("GET", "/user", 5.0)
    with pytest.raises(GitHubUnavailableError, match=r"^GitHub did not answer GET /user: "):
        client(github, timeout=0.3).login()
    with pytest.raises(GitHubUnavailableError) as raised:
        GitHub("http://127.0.0.1:9", "t", timeout=2).login()
    assert raised.value.status == 0


def test_answers_not_shaped_as_github_sends_are_refused_naming_the_field(
    github: FakeGitHub,
) -> None:
    api = client(github)
    github.fail("GET", "/user", 200, body={"name": "x"})
    with pytest.raises(TicketError, match=r"^GitHub's answer to GET /user has no field 'login'$"):
        api.login()
    github.fail("GET", "/repos/octo/app/issues", 200, body={"items": []})
    with pytest.raises(TicketError, match=r"is dict, not a list$"):
        api.labelled("octo/app", "adws")
    github.fail("GET", "/repos/octo/app/pulls", 200, body={"x": 1})
    with pytest.raises(TicketError, match=r"pulls is not a list$"):
        api.open_pulls("octo/app", "octo:b")
    github.fail("POST", "/repos/octo/app/issues/1/comments", 201, body={"id": "1"})
    with pytest.raises(TicketError, match=r"has no integer field 'id'$"):
        api.comment("octo/app", 1, "b")
    github.fail("GET", "/repos/octo/app/collaborators/ana/permission", 200, body={"x": 1})
    assert api.permission("octo/app", "ana") == "none"
    github.fail("GET", "/repos/octo/app/collaborators/ana/permission", 500)
    with pytest.raises(GitHubUnavailableError):
        api.permission("octo/app", "ana")
    github.fail("DELETE", "/repos/octo/app/issues/1/labels/x", 403)
    with pytest.raises(GitHubForbiddenError):
        api.remove_label("octo/app", 1, "x")


def test_an_answer_that_is_not_json_is_refused(github: FakeGitHub) -> None:
    github.fail("GET", "/user", 200, body="not json", raw=True)
    api = client(github)
    with pytest.raises(TicketError, match=r"^GitHub's answer to GET /user is not JSON$"):
        api.call("GET", "/user", query={"x": 1})


def test_a_base_url_that_is_not_http_is_refused() -> None:
    with pytest.raises(TicketError, match=r"^ADWS_GITHUB_API_URL: 'file:///etc' is not an http"):
        GitHub("file:///etc", "t")


def test_the_token_comes_from_github_token_gh_token_or_gh(tmp_path: Path) -> None:
    assert token_from({"GH_TOKEN": "b"}) == "b"
    gh = tmp_path / "gh"
    gh.write_text("#!/bin/sh\necho tok-from-gh\n")
    gh.chmod(gh.stat().st_mode | stat.S_IXUSR)
    path = f"{tmp_path}{os.pathsep}{os.environ['PATH']}"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH", path)
        assert token_from({}) == "tok-from-gh"
        gh.write_text("#!/bin/sh\nexit 1\n")
        assert token_from({}) is None
        with pytest.raises(GitHubAuthError, match=r"^no GitHub token: set GITHUB_TOKEN"):
            GitHub.from_env({})
    made = GitHub.from_env({"GITHUB_TOKEN": "t", "ADWS_GITHUB_API_URL": "http://x:1/api/"})
    assert made.base == "http://x:1/api"
    assert GitHub.from_env({"GITHUB_TOKEN": "t"}).base == "https://api.github.com"


def test_pages_are_followed_at_most_fifty_times(github: FakeGitHub) -> None:
    loop = f'<{github.url}/repos/octo/app/issues?page=2>; rel="next"'
    github.fail("GET", "/repos/octo/app/issues", 200, times=60, headers={"link": loop}, body=[1])
    assert client(github).labelled("octo/app", "adws") == [1] * 50
    assert github.count("GET", "/repos/octo/app/issues") == 50


def test_a_comment_is_edited_by_its_id_among_others(github: FakeGitHub) -> None:
    github.add_issue("octo/app", "Crash", None, author="ana")
    api = client(github)
    first, second = api.comment("octo/app", 1, "one"), api.comment("octo/app", 1, "two")
    api.edit_comment("octo/app", second, "edited")
    assert [(c["id"], c["body"]) for c in github.comments("octo/app", 1)] == [
        (first, "one"),
        (second, "edited"),
    ]


def test_a_slow_answer_within_the_timeout_is_answered(github: FakeGitHub) -> None:
    github.delay("GET", "/user", 0.2)
    assert client(github).login() == "adws-bot"
