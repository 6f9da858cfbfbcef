"""The agent boundary: `AgentBackend`, `AgentRequest`, `AgentResponse`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, Protocol, final

import attrs

from adws._frozen import freeze_mapping
from adws.contract.validator import OutputContract
from adws.engine.usage import Usage

if TYPE_CHECKING:
    from returns.io import IOResult

    from adws.engine.errors import PipelineError

__all__ = ["AGENT_MAX_OUTPUT_BYTES", "AgentBackend", "AgentRequest", "AgentResponse"]

AGENT_MAX_OUTPUT_BYTES: Final = 1 << 20
"""How much an agent may print (on stdout, and on stderr) by default: 1 MiB."""


@final
@attrs.frozen
class AgentRequest:
    """Ask an agent one thing: the full prompt, for which step and attempt.

    `attempt` is 1 for a step's first call and grows with each call the
    step made. `timeout` (seconds) and `cwd` come from the step;
    `max_output_bytes` from its contract: a backend that runs a process stops
    it once its answer grows past that. `branch` is the path of the parallel
    branch asking (`verify_claims[0]`; empty outside one), and `contract` the
    step's output contract, for backends that answer from it (`SchemaAgent`).
    `edits` says the agent may change files in `cwd` (each CLI backend turns
    it into its own switch); `idle_timeout` is how long the agent may print
    nothing before it counts as hung (`AgentHung`). `on_activity` hears a
    short description of what the agent is doing (its latest tool call), for
    the progress line.

    `session` names a session to continue (the id the agent's CLI gave it):
    `prompt` is then only what is new, the feedback on the answer before;
    only a backend that can continue sessions gets one (see
    `adws.agents.sessions`). `on_session` hears the id of the session the
    call runs in as soon as the agent names it, so a call stopped halfway
    still has its session journaled.

    `env_pass` names the variables of adws's own environment that the step
    lets its agent see though adws keeps them home (`GH_TOKEN`, the
    journal's `PG*`; see `adws.io_ops.environment`).
    """

    prompt: str
    step_name: str
    attempt: int = 1
    timeout: float | None = None
    cwd: str | None = None
    max_output_bytes: int = AGENT_MAX_OUTPUT_BYTES
    branch: str = ""
    contract: OutputContract | None = attrs.field(default=None, eq=False)
    edits: bool = False
    idle_timeout: float | None = None
    on_activity: Callable[[str], None] | None = attrs.field(default=None, eq=False, repr=False)
    session: str | None = None
    on_session: Callable[[str], None] | None = attrs.field(default=None, eq=False, repr=False)
    env_pass: tuple[str, ...] = ()


@final
@attrs.frozen
class AgentResponse:
    """Hold an agent's answer text, what the call cost, and whatever else the backend measured.

    `usage` is what the backend reported (None when it reports nothing); the
    run charges it to the attempt, journals it and checks budgets with it.
    A backend that runs a process says how it exited (`exit_code`) and what
    it printed on stderr (its tail): the journal keeps both with the
    exchange, never as outputs.
    """

    text: str
    metadata: Mapping[str, Any] = attrs.field(factory=dict, converter=freeze_mapping)
    usage: Usage | None = None
    exit_code: int | None = None
    stderr: str = ""


class AgentBackend(Protocol):
    """Answer an `AgentRequest`, or fail as a value."""

    def __call__(self, request: AgentRequest, /) -> IOResult[AgentResponse, PipelineError]:
        """Return the agent's answer, or an `AgentFailed` / `Timeout` error."""
