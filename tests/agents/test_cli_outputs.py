"""What the agent CLIs print, read: claude's result and stream, codex's failures, their activity."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adws import io_ops
from adws.agents.answers import AnswerError, api_error
from adws.agents.claude_output import claude_activity, claude_json, claude_stream
from adws.agents.parsers import codex_activity, codex_jsonl
from adws.engine.usage import Usage


def result(**fields: object) -> str:
    base: dict[str, object] = {"type": "result", "is_error": False, "result": "STATUS: done"}
    return json.dumps({**base, **fields})


def refused(stdout: str, parse: object = claude_json) -> AnswerError:
    with pytest.raises(AnswerError) as caught:
        parse(stdout)  # type: ignore[operator] # a parser
    return caught.value


def test_an_api_error_names_its_status_and_keeps_the_session_and_cost() -> None:
    error = refused(
        result(
            is_error=True,
            subtype="success",
            api_error_status=429,
            result="API Error: Request rejected (429) · Rate limited",
            total_cost_usd=0.5,
            session_id="s-1",
        )
    )
    assert (error.error_type, str(error)) == (
        "AgentUnavailable",
        "claude: API error 429 (rate limited): API Error: Request rejected (429) · Rate limited",
    )
    assert error.details == {
        "session_id": "s-1",
        "api_error_status": 429,
        "limit": "claude rate limited",
    }
    assert error.usage == Usage(cost_usd=0.5)


@pytest.mark.parametrize(("status", "name"), [(401, "unauthorized"), (403, "forbidden")])
def test_a_refused_key_is_permanent(status: int, name: str) -> None:
    error = refused(result(is_error=True, api_error_status=status, result="API Error"))
    assert str(error) == f"claude: API error {status} ({name}): API Error"
    assert error.details["permanent"] is True


def test_an_unknown_status_reads_as_an_error() -> None:
    assert (
        str(api_error("claude", 418, "teapot", None, {})) == "claude: API error 418 (error): teapot"
    )


def test_the_errors_list_is_the_detail_when_there_is_one() -> None:
    error = refused(result(is_error=True, subtype="error_during_execution", errors=["a", "", "b"]))
    assert (error.error_type, str(error)) == (
        "AgentFailed",
        "claude reported an error (error_during_execution): a; b",
    )


def test_refused_tools_are_permission_denied_naming_each_tool_and_target() -> None:
    denials = [
        {"tool_name": "Write", "tool_input": {"file_path": "a.py", "content": "x"}},
        {"tool_name": "Write", "tool_input": {"file_path": "a.py", "content": "y"}},
        {"tool_name": "Bash", "tool_input": {"command": "rm -rf build"}},
        {"tool_name": "WebFetch", "tool_input": {"prompt": 3}},
        "not an object",
    ]
    error = refused(result(permission_denials=denials, total_cost_usd=0.1))
    assert error.error_type == "PermissionDenied"
    assert str(error) == (
        "claude was refused Write on a.py; Bash on rm -rf build; WebFetch; a tool;"
        " let the step change files with agent_step(..., edits=True)"
    )
    assert error.usage == Usage(cost_usd=0.1)


def test_no_denials_and_a_denial_without_input_read_plainly() -> None:
    assert claude_json(result(permission_denials=[])).text == "STATUS: done"
    error = refused(result(permission_denials=[{"tool_name": "Edit", "tool_input": "x"}]))
    assert str(error).startswith("claude was refused Edit;")


def test_a_stream_counts_the_clis_retries_and_a_rejected_limits_reset() -> None:
    lines = [
        json.dumps({"type": "system", "subtype": "init", "session_id": "s-9", "model": "opus"}),
        json.dumps({"type": "system", "subtype": "api_retry", "attempt": 1}),
        json.dumps({"type": "system", "subtype": "api_retry", "attempt": 2}),
        json.dumps({"type": "rate_limit_event", "rate_limit_info": {"status": "allowed"}}),
        json.dumps({"type": "rate_limit_event", "rate_limit_info": "nonsense"}),
        json.dumps(
            {"type": "rate_limit_event", "rate_limit_info": {"status": "rejected", "resetsAt": 99}}
        ),
        "",
        result(is_error=True, api_error_status=429, result="API Error"),
    ]
    error = refused("\n".join(lines), claude_stream)
    assert error.details == {
        "api_retries": 2,
        "session_id": "s-9",
        "resets_at": 99,
        "api_error_status": 429,
        "limit": "claude usage limit",
        "quota": [{"window": "unified", "used": 1.0, "resets_at": 99.0}],  # rejected: all used
    }
    assert str(error) == "claude: API error 429 (usage limit): API Error"


def test_a_stream_without_a_result_is_refused_naming_its_session() -> None:
    init = json.dumps({"type": "system", "subtype": "init", "session_id": "s-2"})
    error = refused(init, claude_stream)
    assert (str(error), error.details) == ("claude printed no result", {"session_id": "s-2"})


@pytest.mark.parametrize(
    ("line", "doing"),
    [
        ("not json", None),
        ('"a string"', None),
        ('{"type": "user", "message": {"content": []}}', None),
        ('{"type": "assistant", "message": "text"}', None),
        ('{"type": "assistant", "message": {"content": [{"type": "text"}]}}', None),
        (
            (
                '{"type": "assistant", "message": {"content": [{"type": "tool_use", "name": "Glob",'
                ' "input": {"pattern": "*.py"}}, {"type": "tool_use", "name": "Bash", "input": {}}]}}'
            ),
            "Bash",
        ),
    ],
)
def test_claude_activity_names_the_latest_tool_call_only(line: str, doing: str | None) -> None:
    assert claude_activity(line) == doing


@pytest.mark.parametrize(
    ("line", "doing"),
    [
        ("{", None),
        ('{"type": "item.started", "item": {"type": "reasoning"}}', None),
        ('{"type": "item.started", "item": "x"}', None),
    ],
)
def test_codex_activity_names_commands_only(line: str, doing: str | None) -> None:
    assert codex_activity(line) == doing


def codex_failure(*events: dict[str, object]) -> AnswerError:
    return refused("\n".join(json.dumps(event) for event in events), codex_jsonl)


def test_a_codex_status_in_its_message_is_the_api_status() -> None:
    error = codex_failure(
        {"type": "thread.started", "thread_id": "t-1"},
        {"type": "turn.failed", "error": {"message": "exceeded retry limit, last status: 429"}},
    )
    assert (
        str(error) == "codex: API error 429 (rate limited): exceeded retry limit, last status: 429"
    )
    assert error.details == {
        "session_id": "t-1",
        "reconnects": 0,
        "api_error_status": 429,
        "limit": "codex rate limited",
    }


def test_a_codex_usage_limit_names_its_reset_time() -> None:
    message = "You've hit your usage limit. Try again at 9:05 PM."
    error = codex_failure({"type": "error", "message": message}, {"type": "turn.failed"})
    assert str(error) == f"codex: API error 429 (usage limit): {message}"
    assert error.details["resets_at_clock"] == "21:05"


def test_a_dated_reset_becomes_an_epoch_and_a_bad_date_none() -> None:
    dated = codex_failure(
        {
            "type": "turn.failed",
            "error": {"message": "usage limit; try again at Nov 24th, 2026 1:37 AM."},
        }
    )
    assert isinstance(dated.details["resets_at"], float)
    bad = codex_failure(
        {
            "type": "turn.failed",
            "error": {"message": "usage limit; try again at Feb 30th, 2026 1:37 AM."},
        }
    )
    assert "resets_at" not in bad.details


def test_a_turn_failed_after_an_answer_is_still_a_failure() -> None:
    error = codex_failure(
        {"type": "item.completed", "item": {"type": "agent_message", "text": "STATUS: done"}},
        {"type": "turn.failed", "error": "plain text"},
    )
    assert str(error) == "codex: the model API failed: plain text"


def test_an_error_before_an_answer_is_not_a_failure() -> None:
    lines = [
        {"type": "error", "message": "transient"},
        {"type": "item.completed", "item": {"type": "agent_message", "text": "STATUS: done"}},
    ]
    assert codex_jsonl("\n".join(json.dumps(line) for line in lines)).text == "STATUS: done"


@given(st.lists(st.text(max_size=30), max_size=6))
def test_any_lines_are_an_answer_or_an_answer_error(lines: list[str]) -> None:
    """No stream, however broken, escapes the stream parser as anything but AnswerError."""
    for parse in (claude_stream, codex_jsonl):
        try:
            parse("\n".join(lines))
        except AnswerError:
            continue


def test_a_claude_usage_limit_in_json_names_its_reset_in_the_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`--output-format json` has no rate_limit_event: the result's text names the reset."""
    noon = datetime(2026, 11, 27, 12, 0, tzinfo=UTC).timestamp()
    monkeypatch.setattr(io_ops, "wall_clock", lambda: noon)
    text = "You've hit your 5-hour limit · resets 2:05pm (UTC)"
    error = refused(
        result(is_error=True, api_error_status=429, api_error="usage_limit_reached", result=text)
    )
    assert str(error) == f"claude: API error 429 (usage limit): {text}"
    assert error.details["resets_at"] == noon + 2 * 3600 + 6 * 60  # the named minute's end
    assert error.details["limit"] == "claude usage limit"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("resets 11:30am (UTC)", datetime(2026, 11, 28, 11, 31, tzinfo=UTC)),  # tomorrow's
        ("resets 12:00pm (UTC)", datetime(2026, 11, 27, 12, 1, tzinfo=UTC)),  # this minute
        ("resets Nov 30, 3:44pm (UTC)", datetime(2026, 11, 30, 15, 45, tzinfo=UTC)),
        ("resets Jan 2, 3pm (UTC)", datetime(2027, 1, 2, 15, 1, tzinfo=UTC)),  # next year's
        ("resets Nov 27, 9:00am (UTC)", datetime(2026, 11, 27, 9, 1, tzinfo=UTC)),  # just past
    ],
)
def test_claudes_named_resets_are_read_as_the_end_of_their_minute(
    text: str, expected: datetime, monkeypatch: pytest.MonkeyPatch
) -> None:
    noon = datetime(2026, 11, 27, 12, 0, tzinfo=UTC).timestamp()
    monkeypatch.setattr(io_ops, "wall_clock", lambda: noon)
    error = refused(result(is_error=True, api_error_status=429, result=f"limit · {text}"))
    assert error.details["resets_at"] == expected.timestamp()


@pytest.mark.parametrize(
    "text", ["resets 3pm (No/Such_Zone)", "resets Feb 30, 3:44pm (UTC)", "resets 3:75pm"]
)
def test_a_reset_claude_could_not_have_named_is_no_reset(text: str) -> None:
    error = refused(result(is_error=True, api_error_status=429, result=f"limit · {text}"))
    assert "resets_at" not in error.details
    assert error.details["limit"] == "claude rate limited"
