"""The fake GitHub: state, what a person does, injected answers, and its own program."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from adws.testing.github_api import FAKE_TOKEN, FakeGitHub

if TYPE_CHECKING:
    from collections.abc import Iterator


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as fake:
        fake.add_repo("octo/app", permissions={"ana": "admin"})
        fake.add_token("tok-ana", "ana")
        yield fake


def ask(
    fake: FakeGitHub, method: str, path: str, body: bytes | None = None, token: str = FAKE_TOKEN
) -> tuple[int, Any]:
    request = urllib.request.Request(fake.url + path, data=body, method=method)  # noqa: S310 - the fake's
    request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:  # noqa: S310 - as above
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as failed:
        return failed.code, json.loads(failed.read())


def test_a_person_opens_an_issue_with_their_own_token_and_every_request_is_recorded(
    github: FakeGitHub,
) -> None:
    status, made = ask(
        github,
        "POST",
        "/repos/octo/app/issues",
        json.dumps({"title": "Crash", "body": "b", "labels": ["adws"]}).encode(),
        "tok-ana",
    )
    assert (status, made["number"], made["user"], made["labels"]) == (
        201,
        1,
        {"login": "ana"},
        [{"name": "adws"}],
    )
    assert ask(github, "GET", "/repos/octo/app") == (
        200,
        {"full_name": "octo/app", "default_branch": "main"},
    )
    status, review = ask(
        github,
        "POST",
        "/repos/octo/app/pulls/1/comments",
        json.dumps({"body": "/adws again", "path": "a.py", "line": 2}).encode(),
        "tok-ana",
    )
    assert (status, review["path"], review["line"], review["user"]) == (
        201,
        "a.py",
        2,
        {"login": "ana"},
    )
    assert github.requests[0] == {
        "method": "POST",
        "path": "/repos/octo/app/issues",
        "query": {},
        "login": "ana",
    }


def test_what_is_not_there_is_not_found_and_bad_json_is_a_400(github: FakeGitHub) -> None:
    github.add_issue("octo/app", "Crash", None, author="ana")
    assert ask(github, "GET", "/repos/octo/none")[0] == 404
    assert ask(github, "GET", "/nowhere")[0] == 404
    assert ask(github, "POST", "/repos/octo/app/issues", b"{")[0] == 400
    for path in ("/issues/9/comments", "/issues/9/labels", "/pulls/9/comments"):
        assert ask(github, "POST", "/repos/octo/app" + path, b"{}")[0] == 404
    assert ask(github, "DELETE", "/repos/octo/app/issues/9/labels/x")[0] == 404
    assert ask(github, "PATCH", "/repos/octo/app/issues/comments/9", b"{}")[0] == 404
    assert ask(github, "POST", "/repos/octo/app/pulls/1/comments/9/replies", b"{}")[0] == 404


def test_a_pull_request_needs_a_head_and_a_title_and_one_is_open_per_branch(
    github: FakeGitHub,
) -> None:
    pulls = "/repos/octo/app/pulls"
    assert ask(github, "POST", pulls, b'{"head": "b"}')[0] == 422
    made = json.dumps({"title": "Fix", "head": "octo:b"}).encode()
    assert ask(github, "POST", pulls, made)[1]["head"] == {"ref": "b", "label": "octo:b"}
    status, said = ask(github, "POST", pulls, made)
    assert (status, said["message"]) == (422, "A pull request already exists for octo:b.")
    assert github.issue("octo/app", 1)["pull_request"] == {"url": "/repos/octo/app/pulls/1"}
    github.issue("octo/app", 1)["state"] = "closed"
    assert ask(github, "GET", pulls + "?head=octo:b")[1] == []
    assert len(ask(github, "GET", pulls + "?state=all")[1]) == 1
    assert len(ask(github, "GET", "/repos/octo/app/issues?state=all")[1]) == 1


def test_a_delayed_answer_ends_when_the_fake_closes() -> None:
    fake = FakeGitHub()
    fake.delay("GET", "/user", 30.0)
    failed: list[BaseException] = []

    def asking() -> None:
        try:
            ask(fake, "GET", "/user")
        except Exception as exc:  # noqa: BLE001 - whatever the client saw
            failed.append(exc)

    thread = threading.Thread(target=asking)
    thread.start()
    while not fake.requests:
        threading.Event().wait(0.01)
    fake.close()
    thread.join(10)
    assert not thread.is_alive()
    assert len(failed) == 1


def test_the_state_is_written_back_after_every_change(tmp_path: Path) -> None:
    saved = tmp_path / "state.json"
    with FakeGitHub(save=saved) as fake:
        fake.add_repo("octo/app")
        fake.add_issue("octo/app", "Crash", None, author="ana")
        fake.comment("octo/app", 1, "ana", "me too")
    state = json.loads(saved.read_text())
    assert [i["title"] for i in state["repos"]["octo/app"]["issues"]] == ["Crash"]
    with FakeGitHub(state=state) as again:
        assert [c["body"] for c in again.comments("octo/app", 1)] == ["me too"]


def test_the_program_serves_from_a_state_file_and_says_its_url_and_token(tmp_path: Path) -> None:
    saved = tmp_path / "state.json"
    with subprocess.Popen(
        [sys.executable, "-m", "adws.testing.github_api", "--state", str(saved)],
        stdout=subprocess.PIPE,
        text=True,
    ) as process:
        assert process.stdout is not None
        url, token = process.stdout.readline().strip(), process.stdout.readline().strip()
        request = urllib.request.Request(url + "/user")  # noqa: S310 - the fake's
        request.add_header("Authorization", f"Bearer {token}")
        with urllib.request.urlopen(request, timeout=10) as answer:  # noqa: S310 - as above
            assert json.loads(answer.read())["login"] == "adws-bot"
        process.terminate()
        assert process.wait(10) == 0
    assert json.loads(saved.read_text())["tokens"] == {FAKE_TOKEN: "adws-bot"}


def test_the_program_refuses_a_state_file_that_is_not_json(tmp_path: Path) -> None:
    saved = tmp_path / "state.json"
    saved.write_text("{")
    done = subprocess.run(
        [sys.executable, "-m", "adws.testing.github_api", "--state", str(saved)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.startswith(f"adws.testing.github_api: {saved}: not JSON: ")


def test_the_program_says_when_it_cannot_serve_on_its_port() -> None:
    with FakeGitHub() as fake:
        port = fake.url.rsplit(":", 1)[1]
        done = subprocess.run(
            [sys.executable, "-m", "adws.testing.github_api", "--port", port],
            capture_output=True,
            text=True,
            check=False,
        )
    assert done.returncode == 2
    assert done.stderr.startswith(f"adws.testing.github_api: cannot serve on port {port}: ")
