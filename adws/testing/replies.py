"""`Reply`: one scripted answer of the fake model API (see `adws.testing.model_api`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal, final

import attrs

from adws._frozen import freeze_mapping

__all__ = ["Reply", "ReplyKind"]

ReplyKind = Literal["text", "error", "tool", "drop"]


@final
@attrs.frozen
class Reply:
    """One scripted answer of the fake model API.

    `delay` seconds pass before anything is sent (a slow model; the CLI
    prints nothing meanwhile). Token counts decide what the CLI says the
    call cost (claude prices them by its model).
    """

    kind: ReplyKind
    content: str = ""
    status: int = 200
    headers: Mapping[str, str] = attrs.field(factory=dict, converter=freeze_mapping)
    body: Mapping[str, Any] = attrs.field(factory=dict, converter=freeze_mapping)
    tool_name: str = ""
    arguments: Mapping[str, Any] = attrs.field(factory=dict, converter=freeze_mapping)
    delay: float = 0.0
    input_tokens: int = 10
    output_tokens: int = 5
    arguments_from: Callable[[str], Mapping[str, Any]] | None = None
    """Build the tool call's arguments from the prompt, when they can only be known then."""

    @classmethod
    def text(
        cls, text: str, *, delay: float = 0.0, input_tokens: int = 10, output_tokens: int = 5
    ) -> Reply:
        """Answer `text`, after `delay` seconds, saying it read and wrote that many tokens."""
        return cls(
            "text", text, delay=delay, input_tokens=input_tokens, output_tokens=output_tokens
        )

    @classmethod
    def error(
        cls,
        status: int,
        message: str = "fake model API error",
        *,
        retry_after: float | None = None,
        error_type: str | None = None,
    ) -> Reply:
        """Answer HTTP `status` with an API error body (and `retry-after`, when given)."""
        headers = {} if retry_after is None else {"retry-after": f"{retry_after:g}"}
        kind = error_type or {429: "rate_limit_error", 529: "overloaded_error"}.get(
            status, "api_error"
        )
        body = {"type": kind, "message": message}
        return cls("error", status=status, headers=headers, body=body)

    @classmethod
    def usage_limit(cls, resets_in: int, now: float) -> Reply:
        """Answer a subscription's usage limit, reset `resets_in` seconds after `now`.

        As each API says it: OpenAI's body (429 `usage_limit_reached` with
        `resets_in_seconds` and `resets_at`, what codex reads), and
        Anthropic's `anthropic-ratelimit-unified-*` headers (status
        `rejected`, the reset, the window that ran out), which `claude`
        reads only when signed in with an OAuth token
        (`claude_env(home, oauth=True)`): it then makes no retry and
        prints a rejected `rate_limit_event` with `resetsAt`.
        """
        resets_at = int(now) + resets_in
        body = {
            "type": "usage_limit_reached",
            "message": "You have hit your usage limit",
            "resets_in_seconds": resets_in,
            "resets_at": resets_at,
        }
        headers = {
            "anthropic-ratelimit-unified-status": "rejected",
            "anthropic-ratelimit-unified-reset": str(resets_at),
            "anthropic-ratelimit-unified-representative-claim": "five_hour",
            "anthropic-ratelimit-unified-5h-status": "rejected",
            "anthropic-ratelimit-unified-5h-reset": str(resets_at),
        }
        return cls("error", status=429, headers=headers, body=body)

    @classmethod
    def tool(
        cls,
        name: str,
        arguments: Mapping[str, Any] | Callable[[str], Mapping[str, Any]],
        *,
        input_tokens: int = 10,
    ) -> Reply:
        """Ask the CLI to run tool `name` (`Write`, `Bash`, codex's `exec_command`).

        `arguments` may be a function of the prompt (the user's text of the
        request): a file in a run's worktree has a path only the run knows,
        and the prompt can say it (`{worktree}`).
        """
        if callable(arguments):
            return cls("tool", tool_name=name, arguments_from=arguments, input_tokens=input_tokens)
        return cls("tool", tool_name=name, arguments=arguments, input_tokens=input_tokens)

    @classmethod
    def drop(cls) -> Reply:
        """Start a streamed answer and close the connection before it ends."""
        return cls("drop")
