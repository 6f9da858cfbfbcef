"""`adws trigger --event FILE`: one webhook payload, the rules of a watcher, redeliveries idle."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

from adws.journal import Journal
from adws.testing.github_api import FakeGitHub
from adws.tickets.events import MAX_PAYLOAD, Asked, read_event
from adws.tickets.values import TicketError
from tests.conftest import start_adws
from tests.tickets.flows import project

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

TRIGGER = ("trigger", "--workflow", "ticketed", "--event")


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as fake:
        fake.add_repo("octo/app", permissions={"ana": "write", "bo": "read"})
        yield fake


def labelled(github: FakeGitHub, sender: str = "ana", label: str = "adws") -> dict[str, Any]:
    issue = github.add_issue("octo/app", "Crash", "It fails.", author="bo", labels=(label,))
    return {
        "action": "labeled",
        "label": {"name": label},
        "issue": issue,
        "repository": {"full_name": "octo/app"},
        "sender": {"login": sender},
    }


def trigger(folder: Path, github: FakeGitHub, payload: object, *more: str) -> tuple[int, str, str]:
    event = folder / "event.json"
    event.write_text(json.dumps(payload))
    env = {"ADWS_GITHUB_API_URL": github.url, "GITHUB_TOKEN": github.token}
    process = start_adws(folder, *TRIGGER, str(event), *more, env=env)
    out, err = process.communicate(timeout=120)
    return process.returncode, out, err


def test_a_labelled_issue_event_queues_one_run_and_a_redelivery_starts_nothing(
    tmp_path: Path, github: FakeGitHub
) -> None:
    folder = project(tmp_path)
    payload = labelled(github)
    code, out, err = trigger(folder, github, payload, "--event-name", "issues")
    assert code == 0, err
    (run,) = Journal(folder / "runs.db").runs()
    assert out == f"github:octo/app#1: started {run.run_id}\n"
    code, out, err = trigger(folder, github, payload, "--event-name", "issues")
    assert (code, out) == (0, f"github:octo/app#1: seen {run.run_id}\n")
    assert len(github.comments("octo/app", 1)) == 1


def test_with_work_the_run_runs_here_and_its_comment_says_how_it_ended(
    tmp_path: Path, github: FakeGitHub
) -> None:
    folder = project(tmp_path)
    code, _, err = trigger(
        folder, github, labelled(github), "--event-name", "issues", "--work", "1"
    )
    assert code == 0, err
    (run,) = Journal(folder / "runs.db").runs()
    assert run.status == "succeeded"
    assert [c["body"] for c in github.comments("octo/app", 1)] == [
        f"adws run {run.run_id} succeeded"
    ]


def test_the_sender_who_labelled_it_needs_permission(tmp_path: Path, github: FakeGitHub) -> None:
    folder = project(tmp_path)
    code, out, _ = trigger(folder, github, labelled(github, "bo"), "--event-name", "issues")
    assert code == 0
    assert out.startswith("github:octo/app#1: refused bo's permission on the repository is read")
    assert Journal(folder / "runs.db").runs() == []


def test_other_events_labels_and_actions_ask_for_nothing(
    tmp_path: Path, github: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = project(tmp_path)
    monkeypatch.setenv("GITHUB_EVENT_NAME", "push")
    code, out, _ = trigger(folder, github, {})
    assert (code, out) == (
        0,
        (
            "adws trigger: nothing to do: a push event asks for nothing "
            "(adws acts on issues labelled adws and /adws comments on its pull requests)\n"
        ),
    )
    code, out, _ = trigger(folder, github, labelled(github, label="bug"), "--event-name", "issues")
    assert (code, out) == (0, "adws trigger: nothing to do: the label 'bug' is not 'adws'\n")
    assert not (folder / "runs.db").exists()


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ([], "the payload is list, not an object"),
        ({"action": 1}, "the payload: field 'action' is int, not str"),
        ({"action": "labeled"}, "the payload: field 'repository' is missing"),
        (
            {"action": "labeled", "repository": {"full_name": "a/b/c"}},
            "repository 'a/b/c' is not OWNER/NAME",
        ),
    ],
)
def test_a_payload_github_would_not_send_is_refused_with_the_field_named(
    tmp_path: Path, github: FakeGitHub, payload: object, message: str
) -> None:
    folder = project(tmp_path)
    code, _, err = trigger(folder, github, payload, "--event-name", "issues")
    assert (code, err.strip().splitlines()[-1]) == (2, f"adws: error: {message}")
    assert not (folder / "runs.db").exists()


def test_a_payload_file_that_is_missing_huge_or_not_json_is_refused(
    tmp_path: Path, github: FakeGitHub
) -> None:
    folder = project(tmp_path)
    env = {"ADWS_GITHUB_API_URL": github.url, "GITHUB_TOKEN": github.token}
    process = start_adws(folder, *TRIGGER, "none.json", "--event-name", "issues", env=env)
    _, err = process.communicate(timeout=60)
    assert (process.returncode, err.strip()) == (
        2,
        "adws: error: cannot read the event none.json: No such file or directory",
    )
    (folder / "huge.json").write_bytes(b" " * (MAX_PAYLOAD + 1))
    process = start_adws(folder, *TRIGGER, "huge.json", "--event-name", "issues", env=env)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 2
    assert err.strip() == (
        f"adws: error: the event huge.json is over {MAX_PAYLOAD} bytes: not a GitHub payload"
    )
    (folder / "bad.json").write_text("{")
    process = start_adws(folder, *TRIGGER, "bad.json", "--event-name", "issues", env=env)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 2
    assert err.startswith("adws: error: the event bad.json is not JSON: ")


def test_a_trigger_whose_github_fails_exits_1_and_a_bad_workflow_exits_2(
    tmp_path: Path, github: FakeGitHub
) -> None:
    folder = project(tmp_path)
    payload = labelled(github)
    github.fail("GET", "/user", 502)
    code, _, err = trigger(folder, github, payload, "--event-name", "issues")
    assert code == 1
    assert "adws: error: GitHub answered GET /user with 502: injected" in err
    event = folder / "event.json"
    env = {"ADWS_GITHUB_API_URL": github.url, "GITHUB_TOKEN": github.token}
    process = start_adws(
        folder,
        "trigger",
        "--workflow",
        "untaking",
        "--event",
        str(event),
        "--event-name",
        "issues",
        env=env,
    )
    _, err = process.communicate(timeout=60)
    assert process.returncode == 2, err


def test_an_issue_opened_with_the_label_asks_and_one_without_it_does_not() -> None:
    issue = {
        "number": 3,
        "title": "t",
        "body": None,
        "labels": [{"name": "adws"}],
        "html_url": "u",
        "user": {"login": "ana"},
    }
    payload = {
        "action": "opened",
        "issue": issue,
        "repository": {"full_name": "octo/app"},
        "sender": {"login": "ana"},
    }
    asked = read_event(payload, "issues", "adws")
    assert isinstance(asked, Asked)
    assert (asked.repo, asked.ticket.key, asked.event, asked.sender) == (
        "octo/app",
        "github:octo/app#3",
        "issue",
        "ana",
    )
    assert read_event(payload, "issues", "other") == "the issue opened without the label 'other'"
    with pytest.raises(TicketError, match=r"^the payload: field 'sender' is missing$"):
        read_event({k: v for k, v in payload.items() if k != "sender"}, "issues", "adws")


def comment_payload(
    github: FakeGitHub, name: str, body: str, number: int, **more: object
) -> dict[str, Any]:
    """Comment as Ana (on the fake), and return the payload GitHub sends for it."""
    payload: dict[str, Any] = {
        "action": "created",
        "repository": {"full_name": "octo/app"},
        "sender": {"login": "ana"},
    }
    if name == "pull_request_review_comment":
        payload["comment"] = github.add_review_comment(
            "octo/app", number, body, author="ana", path="README", line=1
        )
        payload["pull_request"] = dict(github.issue("octo/app", number))
    else:
        payload["comment"] = github.comment("octo/app", number, "ana", body)
        payload["issue"] = github.issue("octo/app", number)
    return {**payload, **more}


@pytest.mark.parametrize("name", ["pull_request_review_comment", "issue_comment"])
def test_a_slash_adws_comment_event_on_adws_s_pull_request_starts_the_next_round(
    tmp_path: Path, github: FakeGitHub, name: str
) -> None:
    folder = project(tmp_path)
    code, _, err = trigger(folder, github, labelled(github), "--event-name", "issues")
    assert code == 0, err
    journal = Journal(folder / "runs.db")
    journal.write("UPDATE runs SET status = 'succeeded'", ())
    pull = github.open_issue("octo/app", "adws-bot", {"title": "Fix", "head": "adws/1-crash"})
    payload = comment_payload(github, name, "/adws also the empty case", pull["number"])
    code, out, err = trigger(folder, github, payload, "--event-name", name)
    assert code == 0, err
    assert len(journal.runs()) == 2
    assert out.startswith("github:octo/app#1: started ")
    code, out, _ = trigger(folder, github, payload, "--event-name", name)
    assert (code, len(journal.runs())) == (0, 2)


def test_comment_events_that_ask_for_nothing_are_said_and_start_nothing(
    tmp_path: Path, github: FakeGitHub
) -> None:
    folder = project(tmp_path)
    github.add_issue("octo/app", "Crash", "b", author="ana")
    review = "pull_request_review_comment"
    pull = github.open_issue("octo/app", "adws-bot", {"title": "Fix", "head": "feature/x"})
    said = {
        "edited": comment_payload(github, review, "/adws", pull["number"], action="edited"),
        "plain": comment_payload(github, review, "thanks", pull["number"]),
        "issue": comment_payload(github, "issue_comment", "/adws", 1),
        "theirs": comment_payload(github, review, "/adws", pull["number"]),
    }
    outs = {}
    for what, payload in said.items():
        name = "issue_comment" if what == "issue" else review
        code, out, err = trigger(folder, github, payload, "--event-name", name)
        assert code == 0, err
        outs[what] = out.strip()
    assert outs == {
        "edited": (
            "adws trigger: nothing to do: a pull_request_review_comment event with action"
            " 'edited' asks for nothing"
        ),
        "plain": "adws trigger: nothing to do: the comment does not start with /adws",
        "issue": (
            "adws trigger: nothing to do: a comment on an issue, not on a pull request,"
            " asks for nothing"
        ),
        "theirs": (
            "adws trigger: nothing to do: not a pull request adws opened, or adws's own comment"
        ),
    }
