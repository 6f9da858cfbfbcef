"""`adws mcp` as a real process, driven by the MCP SDK's own client over stdio."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import pytest

from adws.journal import Journal
from adws.mcp_server.schema import MAX_FIELD_BYTES
from tests.mcp_server.client import call, project, served

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from mcp.client import ClientSession

pytest.importorskip("mcp", reason="the mcp extra is not installed: pip install -e '.[mcp]'")
pytestmark = pytest.mark.slow


def run(tmp_path: Path, body: Callable[[ClientSession], Awaitable[None]]) -> None:
    async def main() -> None:
        async with served(tmp_path) as session:
            await body(session)

    anyio.run(main)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return project(tmp_path)


def test_each_workflow_is_a_tool_with_its_inputs_typed_and_the_run_tools_follow(
    folder: Path,
) -> None:
    listed: list[Any] = []

    async def body(session: ClientSession) -> None:
        listed.extend((await session.list_tools()).tools)

    run(folder, body)
    assert [tool.name for tool in listed] == [
        "elsewhere",
        "gated",
        "greet",
        "slow",
        "run_status",
        "await_run",
        "list_runs",
        "cancel_run",
    ]
    greet = listed[2]
    assert greet.input_schema == {
        "type": "object",
        "properties": {
            "topic": {"description": "required input (str); read by ask", "type": "string"},
            "count": {"description": "optional input (int); read by remember", "type": "integer"},
        },
        "required": ["topic"],
        "additionalProperties": False,
    }
    assert greet.description.startswith("Greet a topic. Starts a run and answers at once")
    assert "approve" not in " ".join(tool.name for tool in listed)
    said = (folder / "stderr.txt").read_text()
    assert "adws mcp: warning: could not load broken.py: ValueError: no (line 1)" in said
    assert "adws mcp: warning: workflow 'run_status' is not served: a tool has its name" in said


def test_a_call_starts_a_run_and_await_run_returns_its_outputs(folder: Path) -> None:
    answers: list[dict[str, Any]] = []

    async def body(session: ClientSession) -> None:
        error, started = await call(session, "greet", topic="rust", count=3)
        assert error is False
        answers.append(started)
        error, ended = await call(session, "await_run", run_id=started["run_id"], timeout=60)
        answers.append(ended)
        answers.append((await call(session, "run_status", run_id=started["run_id"][:6]))[1])
        answers.append((await call(session, "list_runs", workflow="greet", limit=500.0))[1])

    run(folder, body)
    started, ended, status, listed = answers
    assert (started["workflow"], started["status"]) in {
        ("greet", "running"),
        ("greet", "succeeded"),
    }
    assert "outputs" not in started or started["status"] == "succeeded"
    assert (ended["status"], ended["error"]) == ("succeeded", None)
    assert ended["outputs"] == {"summary": "all about it", "count_seen": 3}
    assert ended["next"] == "it ended"
    assert status == ended
    assert [(run["run_id"], run["status"]) for run in listed["runs"]] == [
        (started["run_id"], "succeeded")
    ]
    journal = Journal(folder / "runs.db", readonly=True)
    record = journal.find(started["run_id"])
    assert not isinstance(record, str)
    assert (record.status, dict(record.inputs().inputs)) == (
        "succeeded",
        {"topic": "rust", "count": 3},
    )


def test_a_run_at_an_approval_gate_waits_for_a_person_and_cancel_run_ends_it(folder: Path) -> None:
    answers: list[dict[str, Any]] = []

    async def body(session: ClientSession) -> None:
        _, started = await call(session, "gated", topic="v2")
        answers.append((await call(session, "await_run", run_id=started["run_id"]))[1])
        answers.append(
            (await call(session, "cancel_run", run_id=started["run_id"], reason="no"))[1]
        )

    run(folder, body)
    waiting, cancelled = answers
    run_id = waiting["run_id"]
    assert (waiting["status"], waiting["failed_step"]) == ("waiting", "ship")
    assert waiting["next"] == (
        f"it waits for a person at step ship: `adws approve {run_id}` or "
        f"`adws reject {run_id} --reason TEXT` (approvals are not tools)"
    )
    assert (cancelled["status"], cancelled["cancel"]) == ("cancelled", "cancelled")
    assert cancelled["next"] == "it ended"


def test_a_running_run_is_cancelled_through_its_holder(folder: Path) -> None:
    answers: list[dict[str, Any]] = []

    async def body(session: ClientSession) -> None:
        _, started = await call(session, "slow")
        run_id = started["run_id"]
        answers.append((await call(session, "await_run", run_id=run_id, timeout=0.5))[1])
        answers.append((await call(session, "cancel_run", run_id=run_id))[1])
        answers.append((await call(session, "await_run", run_id=run_id, timeout=60))[1])

    run(folder, body)
    going, asked, ended = answers
    assert (going["status"], going["next"]) == (
        "running",
        f"await_run {going['run_id']} waits for it to stop",
    )
    assert "outputs" not in going
    assert asked["cancel"] == "requested"
    assert ended["status"] == "cancelled"


def test_runs_still_going_when_the_server_stops_end_interrupted_for_adws_resume(
    folder: Path,
) -> None:
    started: list[str] = []

    async def body(session: ClientSession) -> None:
        started.append((await call(session, "slow"))[1]["run_id"])

    run(folder, body)
    record = Journal(folder / "runs.db", readonly=True).find(started[0])
    assert not isinstance(record, str)
    assert record.status == "interrupted"


def test_a_run_its_child_cannot_load_is_left_interrupted_for_adws_resume(folder: Path) -> None:
    answers: list[dict[str, Any]] = []

    async def body(session: ClientSession) -> None:
        _, started = await call(session, "elsewhere")
        run_id = started["run_id"]
        for _ in range(300):  # the child ends at once; the next call settles what it left
            await anyio.sleep(0.1)
            _, listed = await call(session, "list_runs")
            if listed["runs"][0]["status"] != "running":
                break
        answers.append((await call(session, "run_status", run_id=run_id))[1])

    run(folder, body)
    (status,) = answers
    assert status["status"] == "interrupted"
    assert status["next"] == (
        f"`adws resume {status['run_id']}` continues it from its first step that did not succeed"
    )


@pytest.mark.parametrize(
    ("name", "arguments", "said"),
    [
        ("greet", {"topic": 3}, "greet: field 'topic' must be a string, not integer"),
        (
            "greet",
            {"topic": "x", "count": "3"},
            "greet: field 'count' must be an integer, not string",
        ),
        ("greet", {}, "greet: missing required field 'topic'"),
        (
            "greet",
            {"topic": "x", "tpoic": "y"},
            "greet: unknown field 'tpoic'; the fields: topic, count",
        ),
        (
            "greet",
            {"topic": "x" * (MAX_FIELD_BYTES + 1)},
            "greet: field 'topic' holds 65,539 bytes; at most 65,536 are taken",
        ),
        ("cancel_run", {"run_id": " "}, "cancel_run: field 'run_id' is empty"),
        (
            "approve",
            {"run_id": "r"},
            "no tool 'approve'; the tools: elsewhere, gated, greet, slow, run_status, await_run, list_runs, cancel_run",
        ),
    ],
)
def test_bad_input_is_a_tool_error_naming_the_field_and_starts_nothing(
    folder: Path, name: str, arguments: dict[str, Any], said: str
) -> None:
    answers: list[tuple[bool, dict[str, Any]]] = []

    async def body(session: ClientSession) -> None:
        answers.append(await call(session, name, **arguments))
        answers.append(await call(session, "list_runs"))

    run(folder, body)
    (error, answer), (_, listed) = answers
    assert error is True
    assert answer["error"] in {f"{said}; nothing was done", said}
    assert listed == {"runs": []}


def test_what_adws_run_refuses_is_a_tool_error_and_an_unknown_run_is_named(folder: Path) -> None:
    (folder / "workflows" / "typo.py").write_text(
        "from adws import Workflow, shell_step\n"
        "typo = Workflow('typo', (shell_step('echo', 'echo {topic} {tpoic}'),), inputs=('topic',))\n"
    )
    answers: list[tuple[bool, dict[str, Any]]] = []

    async def body(session: ClientSession) -> None:
        answers.append(await call(session, "typo", topic="x"))
        answers.append(await call(session, "run_status", run_id="nosuchrun"))
        answers.append(await call(session, "cancel_run", run_id="nosuchrun"))

    run(folder, body)
    (error, refused), (missing_error, missing), (cancel_error, cancel) = answers
    assert error is True
    assert refused["error"].startswith("typo: workflow 'typo' fails adws check: ")
    assert refused["error"].endswith("; nothing was started")
    assert (missing_error, cancel_error) == (True, True)
    assert missing == cancel == {"error": "no run 'nosuchrun' in runs.db"}
    assert json.loads(json.dumps(missing)) == missing


def test_on_a_teams_postgresql_journal_a_call_runs_to_its_end(
    folder: Path, postgres_url: str
) -> None:
    answers: list[dict[str, Any]] = []

    async def main() -> None:
        async with served(folder, "--journal", postgres_url) as session:
            _, started = await call(session, "greet", topic="pg")
            answers.append((await call(session, "await_run", run_id=started["run_id"]))[1])

    anyio.run(main)
    (ended,) = answers
    assert (ended["status"], ended["outputs"]) == (
        "succeeded",
        {"summary": "all about it", "count_seen": 0},
    )
