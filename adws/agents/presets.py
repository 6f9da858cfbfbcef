"""Command lines for the agent CLIs people already run, prompt on stdin.

`adws run --agent claude` and `--agent codex` use these; any other `--agent`
value is split like a shell would and run as it is; `--agent claude-sdk` is
reserved for `ClaudeAgent`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, final

import attrs

from adws.agents.base import AgentResponse
from adws.agents.parsers import claude_json, codex_jsonl, text

__all__ = ["CLAUDE_SDK", "PRESETS", "CommandPreset"]

CLAUDE_SDK: Final = "claude-sdk"
"""The `--agent` value that selects `ClaudeAgent` instead of a command."""


@final
@attrs.frozen
class CommandPreset:
    """An agent CLI's argv that reads the prompt on stdin and prints the answer.

    `parse` reads the answer and its usage from what the CLI prints.

    >>> PRESETS["claude"].argv_for("sonnet")
    ('claude', '-p', '--output-format', 'json', '--model', 'sonnet')
    """

    argv: tuple[str, ...]
    model_flag: str
    note: str
    parse: Callable[[str], AgentResponse] = text

    def argv_for(self, model: str | None = None) -> tuple[str, ...]:
        """Return the argv, with the model flag when a model is given."""
        return self.argv if model is None else (*self.argv, self.model_flag, model)


PRESETS: Final = {
    "claude": CommandPreset(
        ("claude", "-p", "--output-format", "json"),
        "--model",
        "Claude Code in print mode, its JSON result read for the answer, cost, tokens and turns;"
        " add `--permission-mode acceptEdits` to let it edit files.",
        claude_json,
    ),
    "codex": CommandPreset(
        ("codex", "exec", "--json", "--sandbox", "workspace-write", "-"),
        "--model",
        "OpenAI Codex CLI; `-` reads the prompt from stdin; its JSON events give the final"
        " message and the tokens (codex reports no cost).",
        codex_jsonl,
    ),
}
