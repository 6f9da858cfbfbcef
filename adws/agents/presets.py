"""Command lines for the agent CLIs people already run, prompt on stdin.

`adws run --agent claude` and `--agent codex` use these; any other `--agent`
value is split like a shell would and run as it is; `--agent claude-sdk` is
reserved for `ClaudeAgent`. Each preset knows its CLI: the switch that lets
it edit files, how to read its output (whatever the exit code), how to tell
what it is doing, and how much its output repeats the answer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final, final

import attrs

from adws.agents.base import AgentResponse
from adws.agents.claude_output import claude_activity, claude_stream
from adws.agents.command import CommandAgent
from adws.agents.parsers import codex_activity, codex_jsonl, text
from adws.agents.sessions import CLAUDE, CODEX, SessionSwitch

__all__ = ["CLAUDE_SDK", "PRESETS", "CommandPreset"]

CLAUDE_SDK: Final = "claude-sdk"
"""The `--agent` value that selects `ClaudeAgent` instead of a command."""


@final
@attrs.frozen
class CommandPreset:
    """An agent CLI's argv that reads the prompt on stdin and prints the answer.

    `parse` reads the answer and its usage from what the CLI prints;
    `edits_argv`/`no_edits_argv` are its switch for a step's `edits`;
    `output_factor` is how many times its output may repeat the answer (a
    stream of events holds it twice: the assistant message, then the
    result), so the output cap never cuts an answer under the step's cap;
    `activity` names the agent's latest tool call from one output line;
    `permanent_stderr` are refusals no retry can change; `sessions` how it
    continues a session and names the one a call runs in; `budget_flag` its
    switch that caps one call's spend (see `CommandAgent`).

    >>> PRESETS["claude"].argv_for("sonnet")
    ('claude', '-p', '--output-format', 'stream-json', '--verbose', '--model', 'sonnet')
    """

    argv: tuple[str, ...]
    model_flag: str
    note: str
    parse: Callable[[str], AgentResponse] = text
    edits_argv: tuple[str, ...] = ()
    no_edits_argv: tuple[str, ...] = ()
    output_factor: int = 1
    activity: Callable[[str], str | None] | None = None
    permanent_stderr: tuple[str, ...] = ()
    sessions: SessionSwitch | None = None
    budget_flag: str | None = None

    def argv_for(self, model: str | None = None) -> tuple[str, ...]:
        """Return the argv, with the model flag when a model is given."""
        return self.argv if model is None else (*self.argv, self.model_flag, model)

    def agent(
        self,
        model: str | None = None,
        *,
        timeout: float | None = None,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> CommandAgent:
        """Build the `CommandAgent` that runs this CLI (with the given limits)."""
        return CommandAgent(
            self.argv_for(model),
            timeout=timeout,
            cwd=cwd,
            env=env,
            parse=self.parse,
            edits_argv=self.edits_argv,
            no_edits_argv=self.no_edits_argv,
            output_factor=self.output_factor,
            activity=self.activity,
            permanent_stderr=self.permanent_stderr,
            sessions=self.sessions,
            budget_flag=self.budget_flag,
        )


PRESETS: Final = {
    "claude": CommandPreset(
        ("claude", "-p", "--output-format", "stream-json", "--verbose"),
        "--model",
        "Claude Code in print mode, its event stream read for the answer, cost, tokens, turns,"
        " session, refused tools and API errors; `edits=True` adds"
        " `--permission-mode acceptEdits`; a retry continues its session (`--resume`).",
        claude_stream,
        edits_argv=("--permission-mode", "acceptEdits"),
        # The answer comes twice (assistant message, then result), JSON-escaped each time.
        output_factor=4,
        activity=claude_activity,
        sessions=CLAUDE,
        # Checked by the CLI after each model reply: a call stops once past it.
        budget_flag="--max-budget-usd",
    ),
    "codex": CommandPreset(
        ("codex", "exec", "--json", "-"),
        "--model",
        "OpenAI Codex CLI; `-` reads the prompt from stdin; its JSON events give the final"
        " message, the tokens (codex reports no cost) and the thread; `edits=True` runs it"
        " with `--sandbox workspace-write`, else `--sandbox read-only`; a retry continues its"
        " thread (`codex exec resume`).",
        codex_jsonl,
        edits_argv=("--sandbox", "workspace-write"),
        no_edits_argv=("--sandbox", "read-only"),
        output_factor=2,
        activity=codex_activity,
        permanent_stderr=("Not inside a trusted directory",),
        sessions=CODEX,
    ),
}
