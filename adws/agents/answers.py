"""What a parser raises when the CLI's output is not an answer, and the helpers parsers share."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from returns.result import Failure

from adws._exceptions import MalformedError
from adws.contract._strict import parse_strict_json
from adws.engine.errors import ErrorType
from adws.engine.usage import Usage

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "STATUS_NAMES",
    "AnswerError",
    "api_error",
    "count",
    "event_of",
    "json_object",
    "usage_of",
]


class AnswerError(MalformedError):
    """The tool's output is not an answer; `usage` is what the call cost anyway.

    `error_type` is the kind of failure it becomes (`AgentFailed` unless the
    CLI said more); `details` go into the error's context (`session_id`,
    `api_error_status`, `resets_at`, `permanent`, ...).
    """

    def __init__(
        self,
        message: str,
        usage: Usage | None = None,
        *,
        error_type: str = ErrorType.AGENT_FAILED,
        details: Mapping[str, object] | None = None,
    ) -> None:
        """Keep the reason, the usage, the kind of failure and what else the CLI said."""
        super().__init__(message)
        self.usage = usage
        self.error_type = error_type
        self.details = {key: value for key, value in (details or {}).items() if value is not None}


STATUS_NAMES: Final = {
    400: "bad request",
    401: "unauthorized",
    403: "forbidden",
    404: "not found",
    413: "request too large",
    429: "rate limited",
    500: "server error",
    502: "bad gateway",
    503: "unavailable",
    504: "gateway timeout",
    529: "overloaded",
}
"""How an HTTP status reads in an `AgentUnavailable` message."""

_PERMANENT_STATUSES: Final = frozenset({401, 403})
"""A key the API refuses stays refused: retrying cannot help."""


def api_error(  # noqa: PLR0913 - one error's parts, most of them optional
    cli: str,
    status: int | None,
    detail: str,
    usage: Usage | None,
    details: Mapping[str, object],
    *,
    reason: str | None = None,
) -> AnswerError:
    """Build the `AgentUnavailable` for a model API error the CLI reported.

    >>> str(api_error("claude", 429, "API Error: Rate limited", None, {}))
    'claude: API error 429 (rate limited): API Error: Rate limited'
    >>> api_error("codex", None, "stream disconnected", None, {}).args[0]
    'codex: the model API failed: stream disconnected'

    `details["limit"]` names it in a few words, for a run it parks:

    >>> api_error("codex", 429, "You've hit your usage limit", None, {}, reason="usage limit").details["limit"]
    'codex usage limit'
    """  # noqa: E501
    if status is None:
        head, limit = "the model API failed", f"{cli} model API failure"
    else:
        named = reason or STATUS_NAMES.get(status, "error")
        head, limit = f"API error {status} ({named})", f"{cli} {named}"
    found = {**details, "api_error_status": status, "limit": limit}
    if status in _PERMANENT_STATUSES:
        found["permanent"] = True
    message = f"{cli}: {head}: {detail}"
    return AnswerError(message, usage, error_type=ErrorType.AGENT_UNAVAILABLE, details=found)


def json_object(line: str, what: str) -> Mapping[str, object]:
    """Parse one strict JSON object, or raise `AnswerError` naming `what`."""
    parsed = parse_strict_json(line)
    if isinstance(parsed, Failure):
        msg = f"{what} is {parsed.failure()}"
        raise AnswerError(msg)
    value = parsed.unwrap()
    if not isinstance(value, dict):
        msg = f"{what} is not a JSON object"
        raise AnswerError(msg)
    return value


def event_of(line: str, kind: str) -> Mapping[str, object] | None:
    """Return one output line's event when it is a JSON object of type `kind`, else None.

    For describing what an agent does: a line that is not such an event is no news.

    >>> event_of('{"type": "assistant"}', "assistant"), event_of("not json", "assistant")
    ({'type': 'assistant'}, None)
    """
    parsed = parse_strict_json(line)
    if isinstance(parsed, Failure):
        return None
    event = parsed.unwrap()
    return event if isinstance(event, dict) and event.get("type") == kind else None


def count(data: Mapping[str, object], *keys: str) -> int | None:
    """Sum the integer fields present among `keys` (None when none is)."""
    found = [data[key] for key in keys if key in data]
    if not found:
        return None
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in found):
        msg = f"usage fields {', '.join(keys)} must be integers, got {found!r}"
        raise AnswerError(msg)
    return sum(found)  # type: ignore[arg-type] # every value was checked to be an int


def usage_of(**fields: object) -> Usage:
    """Build a `Usage`, refusing impossible values as an `AnswerError`."""
    try:
        return Usage(**fields)  # type: ignore[arg-type] # Usage's validators check every field
    except (TypeError, ValueError) as exc:
        msg = f"impossible usage: {exc}"
        raise AnswerError(msg) from exc
