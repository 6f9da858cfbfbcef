"""Read the answer and its usage from agent CLIs that print JSON.

A `CommandAgent(argv, parse=...)` hands its stdout to one of these (or any
function of the same shape). A parser returns the `AgentResponse`, or raises
`AnswerError` (a `ValueError`), which the agent turns into `AgentFailed`
with stdout's tail; `AnswerError.usage` keeps what a failed call still
cost, so it is charged and journaled. Every field is checked: a cost that
is negative, not a number or not finite is refused, so output that forges
a refund cannot stretch a budget.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from returns.result import Failure

from adws._strict import parse_strict_json
from adws.agents.base import AgentResponse
from adws.usage import Usage

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["PARSERS", "AnswerError", "claude_json", "claude_usage", "codex_jsonl", "text"]


class AnswerError(ValueError):
    """The tool's output is not an answer; `usage` is what the call cost anyway."""

    def __init__(self, message: str, usage: Usage | None = None) -> None:
        """Keep the reason and the usage."""
        super().__init__(message)
        self.usage = usage


def text(stdout: str) -> AgentResponse:
    """Take stdout as the answer, with no usage (the default).

    >>> text("STATUS: done").text
    'STATUS: done'
    """
    return AgentResponse(stdout)


def _json_object(line: str, what: str) -> Mapping[str, object]:
    parsed = parse_strict_json(line)
    if isinstance(parsed, Failure):
        msg = f"{what} is {parsed.failure()}"
        raise AnswerError(msg)
    value = parsed.unwrap()
    if not isinstance(value, dict):
        msg = f"{what} is not a JSON object"
        raise AnswerError(msg)
    return value


def _count(data: Mapping[str, object], *keys: str) -> int | None:
    """Sum the integer fields present among `keys` (None when none is)."""
    found = [data[key] for key in keys if key in data]
    if not found:
        return None
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in found):
        msg = f"usage fields {', '.join(keys)} must be integers, got {found!r}"
        raise AnswerError(msg)
    return sum(found)  # type: ignore[arg-type] # every value was checked to be an int


def _usage(**fields: object) -> Usage:
    try:
        return Usage(**fields)  # type: ignore[arg-type] # Usage's validators check every field
    except (TypeError, ValueError) as exc:
        msg = f"impossible usage: {exc}"
        raise AnswerError(msg) from exc


def claude_usage(cost: object, tokens: object, turns: object, model: object) -> Usage:
    """Build a `Usage` from Claude's result fields (the CLI's JSON and the SDK's message).

    Input tokens count cache reads and cache writes too: the model read them all.

    >>> claude_usage(0.5, {"input_tokens": 2, "cache_creation_input_tokens": 8}, 3, None)
    Usage(cost_usd=0.5, input_tokens=10, output_tokens=None, turns=3, model=None)
    """
    tokens = tokens or {}
    if not isinstance(tokens, dict):
        msg = f"claude's usage is not an object: {tokens!r}"
        raise AnswerError(msg)
    return _usage(
        cost_usd=cost,
        input_tokens=_count(
            tokens, "input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"
        ),
        output_tokens=_count(tokens, "output_tokens"),
        turns=turns,
        model=model,
    )


def claude_json(stdout: str) -> AgentResponse:
    """Read `claude -p --output-format json`: one result object.

    The answer is `result`; the usage is `total_cost_usd`, `num_turns`, the
    first model of `modelUsage`, and `usage`'s tokens (input counts cache
    reads and writes too). `is_error: true` is an `AnswerError` that still
    carries the usage.

    >>> envelope = '{"type": "result", "is_error": false, "result": "STATUS: done",'
    >>> envelope += ' "total_cost_usd": 0.02, "num_turns": 1,'
    >>> envelope += ' "usage": {"input_tokens": 5, "cache_read_input_tokens": 100,'
    >>> envelope += ' "output_tokens": 7}}'
    >>> response = claude_json(envelope)
    >>> response.text, response.usage.describe()
    ('STATUS: done', '$0.0200, 112 tokens')
    """
    envelope = _json_object(stdout.strip(), "claude's output")
    if envelope.get("type") != "result":
        msg = f"claude's output is not a result object (type {envelope.get('type')!r})"
        raise AnswerError(msg)
    models = envelope.get("modelUsage")
    model = next(iter(models), None) if isinstance(models, dict) else None
    usage = claude_usage(
        envelope.get("total_cost_usd"), envelope.get("usage"), envelope.get("num_turns"), model
    )
    answer = envelope.get("result")
    if envelope.get("is_error") is not False:
        detail = answer if isinstance(answer, str) and answer else "no detail"
        msg = f"claude reported an error ({envelope.get('subtype', 'error')}): {detail}"
        raise AnswerError(msg, usage)
    if not isinstance(answer, str):
        msg = "claude's result object has no result text"
        raise AnswerError(msg, usage)
    metadata = {
        "session_id": envelope.get("session_id"),
        "duration_ms": envelope.get("duration_ms"),
    }
    return AgentResponse(answer, metadata, usage)


def codex_jsonl(stdout: str) -> AgentResponse:
    r"""Read `codex exec --json`: one event per line.

    The answer is the last `item.completed` item of type `agent_message`;
    the usage sums every `turn.completed` event's tokens (codex reports no
    cost). A `turn.failed` or `error` event is an `AnswerError`.

    >>> lines = [
    ...     '{"type": "item.completed", "item": {"type": "agent_message", "text": "STATUS: done"}}',
    ...     '{"type": "turn.completed", "usage": {"input_tokens": 30, "output_tokens": 4}}',
    ... ]
    >>> response = codex_jsonl("\n".join(lines))
    >>> response.text, response.usage.describe()
    ('STATUS: done', '34 tokens')
    """
    answer: str | None = None
    usage = Usage()
    for number, line in enumerate(stdout.splitlines(), 1):
        if not line.strip():
            continue
        event = _json_object(line, f"codex's line {number}")
        kind = event.get("type")
        item = event.get("item")
        if kind == "item.completed" and isinstance(item, dict):
            if item.get("type") == "agent_message" and isinstance(item.get("text"), str):
                answer = item["text"]
        elif kind == "turn.completed":
            tokens = event.get("usage")
            if not isinstance(tokens, dict):
                msg = f"codex's line {number}: turn.completed has no usage object"
                raise AnswerError(msg, usage)
            usage += _usage(
                input_tokens=_count(tokens, "input_tokens"),
                output_tokens=_count(tokens, "output_tokens"),
                turns=1,
            )
        elif kind in {"turn.failed", "error"}:
            msg = f"codex reported {kind}: {event.get('error') or event.get('message')}"
            raise AnswerError(msg, usage if usage.known else None)
    if answer is None:
        msg = "codex printed no agent_message"
        raise AnswerError(msg, usage if usage.known else None)
    return AgentResponse(answer, {}, usage if usage.known else None)


PARSERS: Final = {"text": text, "claude-json": claude_json, "codex-jsonl": codex_jsonl}
"""The parsers by name, for `adws run --agent-output NAME`."""
