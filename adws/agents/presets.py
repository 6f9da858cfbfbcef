"""Command lines for the agent CLIs people already run, prompt on stdin.

`adws run --agent claude` and `--agent codex` use these; any other `--agent`
value is split like a shell would and run as it is; `--agent claude-sdk` is
reserved for `ClaudeAgent`.
"""

from __future__ import annotations

from typing import Final, final

import attrs

__all__ = ["CLAUDE_SDK", "PRESETS", "CommandPreset"]

CLAUDE_SDK: Final = "claude-sdk"
"""The `--agent` value that selects `ClaudeAgent` instead of a command."""


@final
@attrs.frozen
class CommandPreset:
    """An agent CLI's argv that reads the prompt on stdin and prints the answer.

    >>> PRESETS["claude"].argv_for("sonnet")
    ('claude', '-p', '--output-format', 'text', '--model', 'sonnet')
    """

    argv: tuple[str, ...]
    model_flag: str
    note: str

    def argv_for(self, model: str | None = None) -> tuple[str, ...]:
        """Return the argv, with the model flag when a model is given."""
        return self.argv if model is None else (*self.argv, self.model_flag, model)


PRESETS: Final = {
    "claude": CommandPreset(
        ("claude", "-p", "--output-format", "text"),
        "--model",
        "Claude Code in print mode; add `--permission-mode acceptEdits` to let it edit files.",
    ),
    "codex": CommandPreset(
        ("codex", "exec", "--sandbox", "workspace-write", "-"),
        "--model",
        "OpenAI Codex CLI; `-` reads the prompt from stdin, only the final message is printed.",
    ),
}
