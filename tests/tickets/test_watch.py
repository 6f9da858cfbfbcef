"""`adws watch github` and `adws trigger` as users run them: real processes, the fake GitHub."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from typing import TYPE_CHECKING

import pytest

from adws.journal import Journal
from adws.journal.store import tickets as journal_tickets
from adws.testing.github_api import FAKE_TOKEN, FakeGitHub
from tests.conftest import start_adws, wait_for
from tests.tickets.flows import project

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = pytest.mark.slow

WATCH = ("watch", "github", "--repo", "octo/app", "--workflow", "ticketed")


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as fake:
        fake.add_repo("octo/app", permissions={"ana": "write", "bo": "read"})
        yield fake


def env_of(github: FakeGitHub, **more: str) -> dict[str, str]:
    return {"ADWS_GITHUB_API_URL": github.url, "GITHUB_TOKEN": github.token, **more}


def adws(
    folder: Path, github: FakeGitHub, *argv: str, timeout: float = 120, **env: str
) -> tuple[int, str, str]:
    process = start_adws(folder, *argv, env=env_of(github, **env))
    out, err = process.communicate(timeout=timeout)
    return process.returncode, out, err


def test_a_labelled_issue_becomes_one_queued_run_with_a_status_comment_and_a_label(
    tmp_path: Path, github: FakeGitHub
) -> None:
    folder = project(tmp_path)
    github.add_issue(
        "octo/app", "Crash on empty input", "It fails.", author="ana", labels=("adws",)
    )
    github.add_issue("octo/app", "Not for adws", "", author="ana")
    code, _, err = adws(folder, github, *WATCH, "--once")
    assert code == 0, err
    journal = Journal(folder / "runs.db")
    (run,) = journal.runs()
    assert (run.status, run.workflow) == ("queued", "ticketed")
    assert [c["body"] for c in github.comments("octo/app", 1)] == [
        f"adws run {run.run_id} queued; a worker starts it"
    ]
    labels = [label["name"] for label in github.issue("octo/app", 1)["labels"]]
    assert labels == ["adws", "adws-running"]
    assert "github:octo/app#1: run " in err
    assert "adws watch: 1 tickets: 1 started, 0 refused" in err
    code, _, err = adws(folder, github, *WATCH, "--once")
    assert code == 0, err
    assert len(journal.runs()) == 1
    assert len(github.comments("octo/app", 1)) == 1
    assert "adws watch: 1 tickets: 0 started, 0 refused" in err


def test_an_author_without_permission_is_refused_once_with_one_comment(
    tmp_path: Path, github: FakeGitHub
) -> None:
    folder = project(tmp_path)
    github.add_issue("octo/app", "Please", "do it", author="bo", labels=("adws",))
    github.add_issue("octo/app", "Mine", "by the bot", author="adws-bot", labels=("adws",))
    for _ in range(2):
        code, _, err = adws(folder, github, *WATCH, "--once")
        assert code == 0, err
    assert [c["body"] for c in github.comments("octo/app", 1)] == [
        (
            "adws will not start work here: bo's permission on the repository is read "
            "(write, maintain or admin, or --allow bo)"
        )
    ]
    assert [c["body"] for c in github.comments("octo/app", 2)] == [
        (
            "adws will not start work here: adws-bot is the login of the token adws runs as; "
            "its own comments start nothing"
        )
    ]
    assert Journal(folder / "runs.db").runs() == []
    assert github.count("GET", "/repos/octo/app/collaborators/bo/permission") == 1
    code, _, err = adws(folder, github, *WATCH, "--once", "--allow", "bo")
    assert code == 0
    assert Journal(folder / "runs.db").runs() == []


def test_with_work_the_run_runs_and_its_comment_is_edited_to_how_it_ended(
    tmp_path: Path, github: FakeGitHub
) -> None:
    folder = project(tmp_path)
    github.add_issue("octo/app", "Crash", "It fails.", author="ana", labels=("adws",))
    code, _, err = adws(folder, github, *WATCH, "--once", "--work", "1")
    assert code == 0, err
    (run,) = Journal(folder / "runs.db").runs()
    assert run.status == "succeeded"
    assert [c["body"] for c in github.comments("octo/app", 1)] == [
        f"adws run {run.run_id} succeeded"
    ]
    assert [label["name"] for label in github.issue("octo/app", 1)["labels"]] == [
        "adws",
        "adws-done",
    ]
    ran = (folder / "ran.log").read_text()
    assert ran.startswith("github:octo/app#1 ")
    assert FAKE_TOKEN not in err


def test_a_failed_run_says_where_and_how_to_resume_and_is_labelled_failed(
    tmp_path: Path, github: FakeGitHub
) -> None:
    folder = project(tmp_path)
    (folder / "fail").write_text("")
    github.add_issue("octo/app", "Crash", "It fails.", author="ana", labels=("adws",))
    code, _, err = adws(folder, github, *WATCH, "--once", "--work", "1")
    assert code == 0, err
    (run,) = Journal(folder / "runs.db").runs()
    assert [c["body"] for c in github.comments("octo/app", 1)] == [
        f"adws run {run.run_id} failed at step note: on purpose; adws resume {run.run_id}"
    ]
    assert [label["name"] for label in github.issue("octo/app", 1)["labels"]] == [
        "adws",
        "adws-failed",
    ]


def test_a_rate_limited_poll_waits_for_the_reset_then_goes_on(
    tmp_path: Path, github: FakeGitHub
) -> None:
    folder = project(tmp_path)
    github.add_issue("octo/app", "Crash", "It fails.", author="ana", labels=("adws",))
    reset = str(int(time.time()) + 2)
    github.fail(
        "GET",
        "/repos/octo/app/issues",
        403,
        headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": reset},
        body={"message": "API rate limit exceeded"},
    )
    started = time.monotonic()
    code, _, err = adws(folder, github, *WATCH, "--once")
    assert code == 0, err
    assert time.monotonic() - started >= 1.5
    assert "GitHub's rate limit is spent (GET /repos/octo/app/issues: 403); waiting" in err
    assert len(Journal(folder / "runs.db").runs()) == 1
    listed = [r for r in github.requests if r["path"] == "/repos/octo/app/issues"]
    assert len(listed) == 2


def test_a_502_is_tried_again_at_the_next_poll_and_a_bad_token_stops_with_exit_1(
    tmp_path: Path, github: FakeGitHub
) -> None:
    folder = project(tmp_path)
    github.fail("GET", "/repos/octo/app/issues", 502)
    code, _, err = adws(folder, github, *WATCH, "--once")
    assert code == 0
    assert "adws watch: GitHub answered GET /repos/octo/app/issues with 502: injected;" in err
    code, _, err = adws(folder, github, *WATCH, "--once", GITHUB_TOKEN="wrong")  # noqa: S106 - a wrong one on purpose
    assert code == 1
    assert "adws: error: GitHub answered GET /user with 401: Bad credentials" in err
    github.fail("GET", "/repos/octo/app/issues", 403, body={"message": "Resource not accessible"})
    code, _, err = adws(folder, github, *WATCH, "--once")
    assert code == 1
    assert "with 403: Resource not accessible" in err


def test_an_issue_github_would_not_send_is_skipped_with_its_field_named(
    tmp_path: Path, github: FakeGitHub
) -> None:
    folder = project(tmp_path)
    github.add_issue("octo/app", "ok", "b", author="ana", labels=("adws",))
    github.issue("octo/app", 1)["labels"] = [{"name": "adws"}] * 10_000
    code, _, err = adws(folder, github, *WATCH, "--once")
    assert code == 0
    assert "skipped: issue octo/app#1: field 'labels' has 10000 (at most 100)" in err
    assert Journal(folder / "runs.db").runs() == []


def test_pull_requests_are_issues_too_and_are_not_tickets(
    tmp_path: Path, github: FakeGitHub
) -> None:
    folder = project(tmp_path)
    github.open_issue("octo/app", "ana", {"title": "PR", "head": "b", "labels": ["adws"]})
    code, _, err = adws(folder, github, *WATCH, "--once")
    assert code == 0, err
    assert Journal(folder / "runs.db").runs() == []


def test_a_workflow_that_cannot_take_tickets_stops_the_watcher_with_exit_2(
    tmp_path: Path, github: FakeGitHub
) -> None:
    folder = project(tmp_path)
    github.add_issue("octo/app", "Crash", "", author="ana", labels=("adws",))
    code, _, err = adws(
        folder, github, "watch", "github", "--repo", "octo/app", "--workflow", "untaking", "--once"
    )
    assert code == 2
    assert "adws: error: " in err
    code, _, err = adws(
        folder, github, "watch", "github", "--repo", "octo/..", "--workflow", "ticketed", "--once"
    )
    assert (code, err.strip().splitlines()[-1]) == (
        1,
        "adws: error: repository 'octo/..' is not OWNER/NAME",
    )


def test_a_watcher_killed_and_restarted_starts_nothing_twice(
    tmp_path: Path, github: FakeGitHub
) -> None:
    folder = project(tmp_path)
    github.add_issue("octo/app", "Crash", "It fails.", author="ana", labels=("adws",))
    watcher = start_adws(folder, *WATCH, "--poll", "0.2", env=env_of(github))
    wait_for(lambda: (folder / "runs.db").exists() and Journal(folder / "runs.db").runs())
    watcher.kill()
    watcher.communicate()
    github.add_issue("octo/app", "Slow", "It is slow.", author="ana", labels=("adws",))
    again = start_adws(folder, *WATCH, "--poll", "0.2", env=env_of(github))
    wait_for(lambda: len(Journal(folder / "runs.db").runs()) == 2)
    time.sleep(1.0)
    again.send_signal(signal.SIGTERM)
    _, err = again.communicate(timeout=30)
    assert again.returncode == 143, err
    journal = Journal(folder / "runs.db")
    assert len(journal.runs()) == 2
    assert [len(journal_tickets.rounds(journal, f"github:octo/app#{n}")) for n in (1, 2)] == [1, 1]
    assert [len(github.comments("octo/app", n)) for n in (1, 2)] == [1, 1]


def test_two_watchers_at_once_on_postgres_start_one_run_per_ticket(
    tmp_path: Path, github: FakeGitHub, postgres_url: str
) -> None:
    folder = project(tmp_path)
    for number in range(1, 6):
        github.add_issue("octo/app", f"issue {number}", "b", author="ana", labels=("adws",))
    env = env_of(github, ADWS_JOURNAL=postgres_url)
    watchers = [start_adws(folder, *WATCH, "--poll", "0.1", env=env) for _ in range(2)]
    journal = Journal(postgres_url)
    wait_for(lambda: journal.has_table("tickets") and len(journal.runs()) == 5)
    time.sleep(1.0)
    for watcher in watchers:
        watcher.send_signal(signal.SIGINT)
    for watcher in watchers:
        _, err = watcher.communicate(timeout=30)
        assert watcher.returncode == 130, err
        assert postgres_url.split("@", maxsplit=1)[0] not in err
    assert len(journal.runs()) == 5
    assert [len(github.comments("octo/app", n)) for n in range(1, 6)] == [1] * 5


def test_with_work_the_watcher_runs_a_worker_until_it_stops(
    tmp_path: Path, github: FakeGitHub
) -> None:
    folder = project(tmp_path)
    github.add_issue("octo/app", "Crash", "It fails.", author="ana", labels=("adws",))
    watcher = start_adws(folder, *WATCH, "--poll", "0.2", "--work", "1", env=env_of(github))
    wait_for(
        lambda: (
            github.comments("octo/app", 1)
            and "succeeded" in github.comments("octo/app", 1)[0]["body"]
        ),
        60,
    )
    watcher.send_signal(signal.SIGTERM)
    _, err = watcher.communicate(timeout=60)
    assert watcher.returncode == 143, err


def test_the_token_is_in_no_output_journal_byte_or_step_environment(
    tmp_path: Path, github: FakeGitHub
) -> None:
    folder = project(tmp_path)
    github.add_issue("octo/app", "Crash", "It fails.", author="ana", labels=("adws",))
    code, out, err = adws(folder, github, *WATCH, "--once", "--work", "1")
    assert code == 0, err
    assert FAKE_TOKEN not in out + err
    assert FAKE_TOKEN.encode() not in (folder / "runs.db").read_bytes()
    ran = (folder / "ran.log").read_text()
    assert FAKE_TOKEN not in ran
    for requested in github.requests:
        assert FAKE_TOKEN not in json.dumps(requested)
    assert os.environ.get("GITHUB_TOKEN") != FAKE_TOKEN
    (run,) = Journal(folder / "runs.db").runs()
    for argv in (("status", run.run_id, "-v"), ("status", run.run_id, "--json")):
        code, out, err = adws(folder, github, *argv)
        assert code == 0, err
        assert FAKE_TOKEN not in out + err
    code, _, err = adws(folder, github, "report", run.run_id, "-o", "page.html")
    assert code == 0, err
    assert FAKE_TOKEN not in (folder / "page.html").read_text()


def test_watch_help_explains_itself(tmp_path: Path, github: FakeGitHub) -> None:
    code, out, _ = adws(tmp_path, github, "watch", "github", "--help")
    assert code == 0
    assert "write, maintain or admin" in out
    assert "x-ratelimit-reset" in out
    done = subprocess.run(
        ["python", "-m", "adws", "--help"], capture_output=True, text=True, check=False
    )
    assert "watch" in done.stdout


def test_runs_ticket_lists_rounds_and_refusals_and_status_shows_the_ticket(
    tmp_path: Path, github: FakeGitHub
) -> None:
    folder = project(tmp_path)
    github.add_issue("octo/app", "Crash", "It fails.", author="ana", labels=("adws",))
    github.add_issue("octo/app", "Please", "", author="bo", labels=("adws",))
    code, _, err = adws(folder, github, *WATCH, "--once")
    assert code == 0, err
    (run,) = Journal(folder / "runs.db").runs()
    code, out, _ = adws(folder, github, "runs", "--ticket", "github:octo/app#1")
    assert (code, out) == (0, f"round 1 · issue · by ana · run {run.run_id} (queued)\n")
    code, out, _ = adws(folder, github, "runs", "--ticket", "github:octo/app#2", "--json")
    (row,) = json.loads(out)
    assert (row["state"], row["author"], row["run_id"]) == ("refused", "bo", None)
    code, _, err = adws(folder, github, "runs", "--ticket", "github:octo/app#9")
    assert (code, err.strip()) == (
        0,
        f"no rounds of ticket 'github:octo/app#9' recorded in {folder / 'runs.db'}",
    )
    code, out, _ = adws(folder, github, "status", run.run_id)
    assert "ticket github:octo/app#1 · round 1 (issue, by ana)\n" in out
    code, out, _ = adws(folder, github, "status", run.run_id, "--json")
    assert json.loads(out)["ticket"]["ticket"] == "github:octo/app#1"
