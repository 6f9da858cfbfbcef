"""What agent CLIs say of their account's quota, read and checked, and whose account it is."""

from __future__ import annotations

import hashlib
import json

import pytest

from adws.agents import ClaudeAgent, CommandAgent
from adws.agents.parsers import claude_stream, codex_jsonl
from adws.agents.quota import account_of, agent_account, claude_quota, codex_quota, reports_of
from adws.engine.caps import QuotaReport
from adws.engine.errors import ErrorType, PipelineError

RESULT = '{"type": "result", "is_error": false, "result": "STATUS: done", "num_turns": 1}'
REAL = {
    "status": "allowed_warning",
    "resetsAt": 1795967447,
    "rateLimitType": "five_hour",
    "utilization": 0.96,
    "isUsingOverage": False,
    "surpassedThreshold": 0.9,
    "unifiedWindows": {
        "five_hour": {"utilization": 0.96, "resetsAt": 1795967447, "surpassedThreshold": 0.9},
        "seven_day": {"utilization": 0.41, "resetsAt": 1796400000},
        "broken": "nonsense",
    },
}
"""What claude 2.1.330 printed for `Reply.quota(..., used=0.96)`, plus a second window."""


def test_claude_streams_rate_limit_event_becomes_the_answers_quota() -> None:
    event = {"type": "rate_limit_event", "rate_limit_info": REAL}
    response = claude_stream("\n".join([json.dumps(event), RESULT]))
    assert reports_of(response.metadata, None) == (
        QuotaReport("five_hour", 0.96, 1795967447.0),
        QuotaReport("seven_day", 0.41, 1796400000.0),
    )


def test_claude_says_nothing_of_quota_without_a_rate_limit_event() -> None:
    assert "quota" not in claude_stream(RESULT).metadata


def test_a_rejected_window_is_used_whole_and_forged_values_are_dropped() -> None:
    info = {"status": "rejected", "resetsAt": 1795967447000, "rateLimitType": "seven_day"}
    assert claude_quota(info) == [{"window": "seven_day", "used": 1.0, "resets_at": None}]
    forged = {"utilization": "all", "resetsAt": True, "rateLimitType": "x" * 99}
    assert claude_quota(forged) == [{"window": "x" * 40, "used": None, "resets_at": None}]
    assert claude_quota({"utilization": 7.5})[0]["used"] == 1.0  # never more than whole


def test_codex_rate_limits_on_any_event_become_the_answers_quota() -> None:
    limits = {
        "primary": {"used_percent": 96.0, "window_minutes": 300, "resets_at": 1795967447},
        "secondary": {"used_percent": 12, "window_minutes": True, "resets_in_seconds": "soon"},
        "credits": None,
    }
    lines = [
        {"type": "thread.started", "thread_id": "t-1"},
        {"type": "token_count", "rate_limits": limits},
        {"type": "item.completed", "item": {"type": "agent_message", "text": "STATUS: done"}},
        {"type": "turn.completed", "usage": {"input_tokens": 3, "output_tokens": 1}},
    ]
    response = codex_jsonl("\n".join(json.dumps(line) for line in lines))
    assert reports_of(response.metadata, None) == (
        QuotaReport("300m", 0.96, 1795967447.0),
        QuotaReport("secondary", 0.12, None),
    )
    assert codex_quota({"primary": "nonsense"}, 0.0) == []


def test_reports_of_an_answer_keep_only_well_formed_windows() -> None:
    said = {
        "quota": (
            {"window": "w", "used": 0.5, "resets_at": 100.0},
            {"window": 3, "used": 0.5},
            "nonsense",
            {"window": "v", "used": -1, "resets_at": "later"},
        )
    }
    assert reports_of(said, None) == (
        QuotaReport("w", 0.5, 100.0),
        QuotaReport("v", None, None),
    )
    assert reports_of({"quota": "nonsense"}, None) == ()


@pytest.mark.parametrize(
    ("error_type", "context", "expected"),
    [
        (
            ErrorType.PARKED,
            {"limit": "codex usage limit", "wake_at": 2000.0},
            (QuotaReport("usage limit", 1.0, 2000.0),),
        ),
        (
            ErrorType.AGENT_UNAVAILABLE,
            {"limit": "claude usage limit", "resets_at": 3000},
            (QuotaReport("usage limit", 1.0, 3000.0),),
        ),
        (ErrorType.AGENT_UNAVAILABLE, {"limit": "claude usage limit"}, ()),
        (ErrorType.AGENT_UNAVAILABLE, {"resets_at": 3000}, ()),
        (ErrorType.AGENT_FAILED, {"limit": "claude usage limit", "resets_at": 3000}, ()),
    ],
)
def test_a_usage_limit_failure_that_names_its_reset_is_the_usage_limit_window_used_whole(
    error_type: str, context: dict[str, object], expected: tuple[QuotaReport, ...]
) -> None:
    error = PipelineError("ask", error_type, "limit", context)
    assert reports_of(error.context, error) == expected


def test_an_account_is_the_cli_its_home_and_a_hash_of_its_key_never_the_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    for name in ("OPENAI_API_KEY", "CODEX_API_KEY", "CLAUDE_CONFIG_DIR", "CODEX_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", "/home/u")
    assert account_of(("claude",), None) == "claude /home/u"
    assert account_of(("tool",), {"CLAUDE_CONFIG_DIR": "/x"}) == "tool /home/u"
    secret = "sk-ant-secret"  # noqa: S105 - a fake key, to show it is never kept
    keyed = agent_account(CommandAgent("claude -p", env={"ANTHROPIC_API_KEY": secret}))
    digest = hashlib.sha256(secret.encode()).hexdigest()[:8]
    assert keyed == f"claude /home/u key {digest}"
    assert secret not in keyed
    sdk = agent_account(ClaudeAgent(env={"CLAUDE_CONFIG_DIR": "/team/.claude"}))
    assert sdk == "claude /team/.claude"
