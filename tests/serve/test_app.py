"""`adws serve`'s application in process: who may look, who may change, and what is refused.

The app runs over a real journal with runs made by real `adws` processes;
a decision from a page starts a real `adws approve` (or `reject`,
`cancel`), as the server does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio
import pytest

from adws.journal import Journal
from adws.journal.store.workspaces import approvals_of
from tests.conftest import wait_for
from tests.serve.conftest import SITE, adws, client_for, form_token, log_in, waiting_run

if TYPE_CHECKING:
    from pathlib import Path

    from starlette.testclient import TestClient

pytestmark = pytest.mark.slow

PAGES = ("/", "/approvals", "/cost", "/workers", "/caps", "/runs/abcd1234")


@pytest.mark.parametrize("path", PAGES)
def test_a_page_without_a_session_shows_nothing_but_the_way_to_log_in(
    client: TestClient, path: str
) -> None:
    answer = client.get(path)
    assert (answer.status_code, answer.headers["location"], answer.text) == (303, "/login", "")


def test_every_answer_keeps_the_page_to_itself(client: TestClient) -> None:
    answer = client.get("/login")
    assert answer.headers["content-security-policy"] == (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    )
    assert (answer.headers["x-frame-options"], answer.headers["cache-control"]) == (
        "DENY",
        "no-store",
    )
    assert "<script>" not in answer.text
    assert "style=" not in answer.text


def test_logging_in_gives_an_httponly_strict_cookie_and_names_the_person(
    client: TestClient,
) -> None:
    csrf = form_token(client.get("/login").text)
    answer = client.post(
        "/login",
        data={"csrf": csrf, "token": "the-server-token", "name": "  <ada>  "},
        headers={"origin": SITE},
    )
    cookie = answer.headers["set-cookie"]
    assert answer.status_code == 303
    assert "HttpOnly" in cookie
    assert "SameSite=strict" in cookie
    assert "signed in as &lt;ada&gt;</span>" in client.get("/").text


def test_a_wrong_token_or_no_name_logs_nobody_in(client: TestClient) -> None:
    csrf = form_token(client.get("/login").text)
    wrong = client.post(
        "/login", data={"csrf": csrf, "token": "guess", "name": "x"}, headers={"origin": SITE}
    )
    csrf = form_token(client.get("/login").text)
    nameless = client.post(
        "/login",
        data={"csrf": csrf, "token": "the-server-token", "name": " "},
        headers={"origin": SITE},
    )
    assert (wrong.status_code, nameless.status_code) == (403, 400)
    assert "that is not this server&#x27;s token" in wrong.text
    assert "give your name" in nameless.text
    assert "set-cookie" not in wrong.headers
    assert client.get("/").status_code == 303


def test_the_runs_page_lists_runs_filtered_and_a_run_s_page_draws_it(
    project: Path, journal_at: str
) -> None:
    first = waiting_run(project, journal_at, "1")
    assert adws(project, journal_at, "run", "held", "-i", "n=2", "-q").returncode == 0
    with client_for(journal_at) as client:
        log_in(client)
        every = client.get("/").text
        waiting = client.get("/?status=waiting").text
        held = client.get("/?workflow=held").text
        page = client.get(f"/runs/{first}").text
        by_prefix = client.get(f"/runs/{first[:6]}")
    assert every.count('<tr><td><a href="/runs/') == 2
    assert waiting.count('<tr><td><a href="/runs/') == 1
    assert f'href="/runs/{first}"' in waiting
    assert f'href="/runs/{first}"' not in held
    assert "ship 1?" in page
    assert f'action="/runs/{first}/approve"' in page
    assert by_prefix.status_code == 200


def test_a_ticket_filter_lists_its_rounds_runs_only(client: TestClient) -> None:
    log_in(client)
    assert '<p class="note">no run matches</p>' in client.get("/?ticket=gh%2342").text


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/runs/not-an-id", 404),
        ("/runs/ABCDEF12", 404),
        ("/runs/abcd1234", 404),
        ("/runs/..%2f..%2fetc", 400),
        ("/static/..%2fapp.py", 400),
        ("/static/nothing.js", 404),
        ("/?status=<b>", 400),
        ("/?workflow=" + "w" * 201, 400),
    ],
)
def test_what_is_not_a_page_here_is_refused(client: TestClient, path: str, status: int) -> None:
    log_in(client)
    assert client.get(path).status_code == status


def test_a_query_string_of_100_000_characters_is_414(client: TestClient) -> None:
    log_in(client)
    said: list[dict[str, object]] = []

    async def receive() -> dict[str, object]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, object]) -> None:
        said.append(message)

    scope = {
        "type": "http",
        "method": "GET",
        "path": "/",
        "raw_path": b"/",
        "query_string": b"q=" + b"x" * 100_000,
        "headers": [(b"host", b"127.0.0.1:8765")],
    }
    anyio.run(client.app, scope, receive, send)  # type: ignore[arg-type]
    assert said[0]["status"] == 414


def test_another_host_name_is_refused(sqlite_journal: str) -> None:
    Journal(sqlite_journal).close()
    with client_for(sqlite_journal, hosts=frozenset({"127.0.0.1"})) as client:
        answer = client.get("/login", headers={"host": "evil.example"})
        at_home = client.get("/login")
    assert (answer.status_code, at_home.status_code) == (400, 200)


def test_the_static_files_are_the_server_s_own(client: TestClient) -> None:
    css = client.get("/static/serve.css")
    js = client.get("/static/serve.js")
    assert css.headers["content-type"].startswith("text/css")
    assert "new EventSource('/events')" in js.text


def _approve(
    client: TestClient, run_id: str, headers: dict[str, str], **fields: str
) -> tuple[int, str]:
    page = client.get(f"/runs/{run_id}").text
    data = {"csrf": form_token(page), "note": "looks right", **fields}
    answer = client.post(f"/runs/{run_id}/approve", data=data, headers=headers)
    return answer.status_code, answer.text


def test_an_approval_from_the_page_continues_the_run_once_and_records_who(
    project: Path, sqlite_journal: str
) -> None:
    run_id = waiting_run(project, sqlite_journal)
    with client_for(sqlite_journal) as client:
        log_in(client, "grace")
        page = client.get(f"/runs/{run_id}").text
        csrf = form_token(page)
        answer = client.post(
            f"/runs/{run_id}/approve",
            data={"csrf": csrf, "note": "ship it"},
            headers={"origin": SITE},
        )
        replayed = client.post(
            f"/runs/{run_id}/approve",
            data={"csrf": csrf, "note": "again"},
            headers={"origin": SITE},
        )
        fresh = _approve(client, run_id, {"origin": SITE})
    journal = Journal(sqlite_journal)
    [decided] = approvals_of(journal, run_id)
    assert answer.status_code == 200
    assert replayed.status_code == 403
    assert fresh[0] == 409
    assert "not waiting for approval (it is succeeded)" in fresh[1]
    assert journal.find(run_id).status == "succeeded"  # type: ignore[union-attr]
    assert decided.decision is not None
    assert (decided.decision.by, decided.decision.verdict, decided.decision.note) == (
        "grace",
        "approved",
        "ship it",
    )
    assert (project / "ran.log").read_text() == "1\n"


@pytest.mark.parametrize(
    "headers",
    [
        {"origin": "http://evil.example"},
        {"referer": "http://evil.example/page"},
        {},
        {"origin": "null"},
    ],
)
def test_a_change_from_another_site_changes_nothing(
    project: Path, sqlite_journal: str, headers: dict[str, str]
) -> None:
    run_id = waiting_run(project, sqlite_journal)
    with client_for(sqlite_journal) as client:
        log_in(client)
        status, text = _approve(client, run_id, headers)
    assert (status, text) == (403, "refused: this change comes from another site\n")
    assert Journal(sqlite_journal).find(run_id).status == "waiting"  # type: ignore[union-attr]


def test_a_forged_missing_or_foreign_form_token_changes_nothing(
    project: Path, sqlite_journal: str
) -> None:
    run_id = waiting_run(project, sqlite_journal)
    with client_for(sqlite_journal) as client, client_for(sqlite_journal) as other:
        log_in(client)
        log_in(other)
        foreign = form_token(other.get(f"/runs/{run_id}").text)
        answers = [
            client.post(f"/runs/{run_id}/approve", data=data, headers={"origin": SITE})
            for data in ({"csrf": "forged"}, {"note": "x"}, {"csrf": foreign})
        ]
    assert [answer.status_code for answer in answers] == [403, 403, 403]
    assert Journal(sqlite_journal).find(run_id).status == "waiting"  # type: ignore[union-attr]


def test_a_change_without_a_session_is_refused(project: Path, sqlite_journal: str) -> None:
    run_id = waiting_run(project, sqlite_journal)
    with client_for(sqlite_journal) as client:
        answer = client.post(f"/runs/{run_id}/cancel", data={"csrf": "x"}, headers={"origin": SITE})
        logout = client.post("/logout", data={"csrf": "x"}, headers={"origin": SITE})
    assert (answer.status_code, logout.status_code) == (403, 403)
    assert Journal(sqlite_journal).find(run_id).status == "waiting"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("data", "headers", "status"),
    [
        ({"note": "x" * 20_000}, {}, 413),
        ({"note": "x" * 4_001}, {}, 400),
        ({"max_cost": "-1"}, {}, 400),
        ({"max_cost": "nan"}, {}, 400),
        ({"max_cost": "lots"}, {}, 400),
        ({}, {"content-type": "application/json"}, 415),
    ],
)
def test_a_bad_form_changes_nothing(
    project: Path,
    sqlite_journal: str,
    data: dict[str, str],
    headers: dict[str, str],
    status: int,
) -> None:
    run_id = waiting_run(project, sqlite_journal)
    with client_for(sqlite_journal) as client:
        log_in(client)
        got, _ = _approve(client, run_id, {"origin": SITE, **headers}, **data)
    assert got == status
    assert Journal(sqlite_journal).find(run_id).status == "waiting"  # type: ignore[union-attr]


def test_a_body_without_a_length_is_read_no_further_than_its_bound(
    project: Path, sqlite_journal: str
) -> None:
    run_id = waiting_run(project, sqlite_journal)

    def chunks() -> object:
        yield b"note="
        for _ in range(40):
            yield b"x" * 1_000

    with client_for(sqlite_journal) as client:
        log_in(client)
        answer = client.post(
            f"/runs/{run_id}/approve",
            content=chunks(),  # type: ignore[arg-type]
            headers={"origin": SITE, "content-type": "application/x-www-form-urlencoded"},
        )
    assert answer.status_code == 413


def test_a_rejection_says_why_and_a_cancel_ends_the_run(project: Path, sqlite_journal: str) -> None:
    first = waiting_run(project, sqlite_journal, "1")
    second = waiting_run(project, sqlite_journal, "2")
    with client_for(sqlite_journal) as client:
        log_in(client, "lin")
        reasonless = client.post(
            f"/runs/{first}/reject",
            data={"csrf": form_token(client.get(f"/runs/{first}").text, 1), "reason": " "},
            headers={"origin": SITE},
        )
        rejected = client.post(
            f"/runs/{first}/reject",
            data={"csrf": form_token(client.get(f"/runs/{first}").text, 1), "reason": "no"},
            headers={"origin": SITE},
        )
        cancelled = client.post(
            f"/runs/{second}/cancel",
            data={"csrf": form_token(client.get(f"/runs/{second}").text, 2), "reason": "moot"},
            headers={"referer": f"{SITE}/runs/{second}"},
        )
        ended = client.get(f"/runs/{second}").text
    journal = Journal(sqlite_journal)
    assert (reasonless.status_code, rejected.status_code, cancelled.status_code) == (400, 200, 200)
    assert journal.find(first).status == "failed"  # type: ignore[union-attr]
    assert journal.find(second).status == "cancelled"  # type: ignore[union-attr]
    assert journal.find(second).cancel.by == "lin"  # type: ignore[union-attr]
    assert "/cancel" not in ended


@pytest.mark.parametrize("action", ["delete", "approve"])
def test_an_unknown_action_or_a_bad_id_in_a_change_is_404(client: TestClient, action: str) -> None:
    log_in(client)
    path = "/runs/abcd1234/delete" if action == "delete" else "/runs/zz/approve"
    assert client.post(path, data={"csrf": "x"}, headers={"origin": SITE}).status_code == 404


def test_logging_out_ends_the_session(client: TestClient) -> None:
    log_in(client)
    csrf = form_token(client.get("/").text)
    answer = client.post("/logout", data={"csrf": csrf}, headers={"origin": SITE})
    assert (answer.status_code, answer.headers["location"]) == (303, "/login")
    assert client.get("/").status_code == 303


def test_the_cost_page_draws_today_s_spend_per_workflow(project: Path, journal_at: str) -> None:
    assert adws(project, journal_at, "run", "priced", "-q").returncode == 0
    with client_for(journal_at) as client:
        log_in(client)
        page = client.get("/cost").text
    assert '<svg class="chart"' in page
    assert "priced: $0.25</li>" in page


def test_a_ticket_s_runs_are_its_rounds_runs(project: Path, sqlite_journal: str) -> None:
    from adws.journal.records.tickets import TicketClaim  # noqa: PLC0415
    from adws.journal.store import tickets  # noqa: PLC0415
    from adws.runs import RunRequest, Runs  # noqa: PLC0415

    journal = Journal(sqlite_journal)
    runs = Runs(journal, whole_process=False)
    tickets.refuse(journal, TicketClaim("gh#7", "comment:1", "eve", "test", 0.0), "not a member")
    ask = TicketClaim("gh#7", "issue", "ada", "test", 0.0)
    made = runs.submit_ticket(RunRequest("held", {"n": "1"}), ask)
    assert made is not None
    other = runs.submit(RunRequest("held", {"n": "2"}))
    with client_for(sqlite_journal) as client:
        log_in(client)
        page = client.get("/?ticket=gh%237").text
        waiting = client.get("/?ticket=gh%237&status=waiting").text
    assert page.count('<tr><td><a href="/runs/') == 1
    assert f'href="/runs/{other}"' not in page
    assert '<p class="note">no run matches</p>' in waiting


def test_a_raised_budget_goes_with_the_approval(project: Path, sqlite_journal: str) -> None:
    run_id = waiting_run(project, sqlite_journal)
    with client_for(sqlite_journal) as client:
        log_in(client)
        status, _ = _approve(client, run_id, {"origin": SITE}, max_cost="5")
    record = Journal(sqlite_journal).find(run_id)
    assert status == 200
    assert not isinstance(record, str)
    assert (record.status, record.options.max_cost) == ("succeeded", 5.0)


def test_a_form_that_is_not_utf8_or_from_another_site_logs_nobody_in(client: TestClient) -> None:
    csrf = form_token(client.get("/login").text)
    garbled = client.post(
        "/login",
        content=b"csrf=" + csrf.encode() + b"&name=\xff",
        headers={"origin": SITE, "content-type": "application/x-www-form-urlencoded"},
    )
    foreign = client.post(
        "/login",
        data={"csrf": csrf, "token": "the-server-token", "name": "x"},
        headers={"origin": "http://evil.example"},
    )
    log_in(client)
    logout = client.post("/logout", data={"csrf": "forged"}, headers={"origin": SITE})
    assert (garbled.status_code, foreign.status_code, logout.status_code) == (400, 403, 403)
    assert client.get("/").status_code == 200


def test_events_need_a_session_and_are_bounded(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    from adws.serve import live  # noqa: PLC0415

    assert client.get("/events").status_code == 401
    log_in(client)
    monkeypatch.setattr(live, "MOST_STREAMS", 0)
    assert client.get("/events").status_code == 503


def test_a_decision_that_takes_longer_than_the_answer_says_the_run_goes_on(
    project: Path, sqlite_journal: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from adws.serve import deciding  # noqa: PLC0415

    run_id = waiting_run(project, sqlite_journal)
    monkeypatch.setattr(deciding, "ANSWER_SECONDS", 0.0)
    with client_for(sqlite_journal) as client:
        log_in(client)
        status, text = _approve(client, run_id, {"origin": SITE})
    assert status == 200
    assert "the run goes on in process " in text
    wait_for(lambda: Journal(sqlite_journal).find(run_id).status == "succeeded", 60)  # type: ignore[union-attr]
