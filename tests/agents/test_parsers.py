"""Parsers of agent CLIs' JSON, and CommandAgent(parse=...) with real processes."""

from __future__ import annotations

import json
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adws.agents import AgentRequest, AgentResponse, CommandAgent
from adws.agents.parsers import AnswerError, claude_json, codex_jsonl, text
from adws.engine.usage import Usage
from tests.conftest import failure, success


def envelope(**fields: object) -> str:
    base: dict[str, object] = {"type": "result", "is_error": False, "result": "STATUS: done"}
    return json.dumps({**base, **fields})


def test_claude_json_reads_the_answer_and_every_usage_field() -> None:
    response = claude_json(
        envelope(
            total_cost_usd=0.5,
            num_turns=4,
            usage={"input_tokens": 1, "cache_creation_input_tokens": 2, "output_tokens": 3},
            modelUsage={"opus": {}, "haiku": {}},
            session_id="s",
            duration_ms=10,
        )
    )
    assert response == AgentResponse(
        "STATUS: done", {"session_id": "s", "duration_ms": 10}, Usage(0.5, 3, 3, 4, "opus")
    )


@pytest.mark.parametrize(
    ("stdout", "message"),
    [
        (
            "Error: rate limited",
            "claude's output is not valid JSON: Expecting value at line 1 column 1",
        ),
        ("[1, 2]", "claude's output is not a JSON object"),
        ('{"type": "assistant"}', "claude's output is not a result object (type 'assistant')"),
        (envelope(result=None), "claude's result object has no result text"),
        (envelope(usage=[1]), "claude's usage is not an object: [1]"),
        (
            envelope(usage={"input_tokens": "many"}),
            (
                "usage fields input_tokens, cache_creation_input_tokens, cache_read_input_tokens"
                " must be integers, got ['many']"
            ),
        ),
        (
            envelope(total_cost_usd=-5),
            "impossible usage: Usage: cost_usd must be a finite number >= 0.0 or None, got -5",
        ),
        (
            envelope(num_turns=True),
            "impossible usage: Usage: turns must be an int >= 0, got True",
        ),
    ],
)
def test_claude_json_refuses_what_is_not_a_result(stdout: str, message: str) -> None:
    with pytest.raises(AnswerError) as caught:
        claude_json(stdout)
    assert str(caught.value) == message


def test_an_error_result_is_refused_but_keeps_what_it_cost() -> None:
    with pytest.raises(AnswerError) as caught:
        claude_json(
            envelope(is_error=True, subtype="error_max_turns", result="", total_cost_usd=1.5)
        )
    assert str(caught.value) == "claude reported an error (error_max_turns): no detail"
    assert caught.value.usage == Usage(cost_usd=1.5)


def test_codex_jsonl_takes_the_last_message_and_sums_the_turns() -> None:
    lines = [
        {"type": "item.completed", "item": {"type": "agent_message", "text": "first"}},
        {"type": "item.completed", "item": {"type": "reasoning", "text": "thinking"}},
        {"type": "turn.completed", "usage": {"input_tokens": 10, "output_tokens": 1}},
        {"type": "item.completed", "item": {"type": "agent_message", "text": "STATUS: done"}},
        {"type": "turn.completed", "usage": {"input_tokens": 20, "output_tokens": 2}},
    ]
    stdout = "\n".join(json.dumps(line) for line in lines) + "\n\n"
    assert codex_jsonl(stdout) == AgentResponse(
        "STATUS: done", {"session_id": None, "reconnects": 0}, Usage(None, 30, 3, 2)
    )


@pytest.mark.parametrize(
    ("lines", "message", "usage"),
    [
        (
            ["not json"],
            "codex's line 1 is not valid JSON: Expecting value at line 1 column 1",
            None,
        ),
        (
            [{"type": "turn.completed"}],
            "codex's line 1: turn.completed has no usage object",
            Usage(),
        ),
        (
            [
                {"type": "turn.completed", "usage": {"input_tokens": 5}},
                {"type": "turn.failed", "error": {"message": "quota"}},
            ],
            "codex: the model API failed: quota",
            Usage(None, 5, None, 1),
        ),
        ([{"type": "error", "message": "boom"}], "codex: the model API failed: boom", None),
        ([{"type": "thread.started"}], "codex printed no agent_message", None),
    ],
)
def test_codex_jsonl_refuses_failed_or_empty_turns(
    lines: list[object], message: str, usage: Usage | None
) -> None:
    stdout = "\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines)
    with pytest.raises(AnswerError) as caught:
        codex_jsonl(stdout)
    assert (str(caught.value), caught.value.usage) == (message, usage)


@given(st.text())
def test_arbitrary_output_is_an_answer_or_an_answer_error(stdout: str) -> None:
    """No output, however broken, escapes a parser as anything but AnswerError."""
    for parse in (claude_json, codex_jsonl):
        try:
            response = parse(stdout)
        except AnswerError:
            continue
        assert isinstance(response.text, str)


def test_a_deeply_nested_envelope_is_refused_not_a_crash() -> None:
    with pytest.raises(AnswerError, match="nests"):
        claude_json("[" * 100_000 + "]" * 100_000)


@pytest.mark.agent_process  # a real command answers
def test_command_agent_reads_its_answer_through_parse() -> None:
    script = f"import json; print(json.dumps({json.loads(envelope(total_cost_usd=0.25))!r}))"
    agent = CommandAgent([sys.executable, "-c", script], parse=claude_json)
    response = success(agent(AgentRequest("p", "s")))
    assert (response.text, response.usage) == ("STATUS: done", Usage(cost_usd=0.25))
    assert response.metadata["command"].startswith(sys.executable)


@pytest.mark.agent_process  # a real command answers
def test_a_refused_answer_is_agent_failed_with_the_tail_of_stdout_and_its_usage() -> None:
    script = 'print(\'{"type": "result", "is_error": true, "total_cost_usd": 0.5}\')'
    agent = CommandAgent([sys.executable, "-c", script], parse=claude_json)
    error = failure(agent(AgentRequest("p", "s")))
    assert error.error_type == "AgentFailed"
    assert error.message.endswith(": claude reported an error (error): no detail")
    assert error.context["usage"] == Usage(cost_usd=0.5).to_dict()
    assert (
        error.context["stdout_tail"]
        == '{"type": "result", "is_error": true, "total_cost_usd": 0.5}\n'
    )


@pytest.mark.agent_process  # a real command answers
def test_a_parser_of_your_own_may_refuse_with_a_plain_value_error() -> None:
    def picky(stdout: str) -> AgentResponse:
        msg = f"expected YES, got {stdout.strip()!r}"
        raise ValueError(msg)

    error = failure(CommandAgent(["echo", "no"], parse=picky)(AgentRequest("p", "s")))
    assert error.message == "agent command `echo no`: expected YES, got 'no'"
    assert "usage" not in error.context


def test_parse_must_be_callable() -> None:
    with pytest.raises(TypeError, match="CommandAgent: parse must be callable, got 'json'"):
        CommandAgent(["cat"], parse="json")  # type: ignore[arg-type] # the mistake under test


def test_text_is_stdout_as_it_is() -> None:
    assert text(" a \n") == AgentResponse(" a \n")
