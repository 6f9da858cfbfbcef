"""The tools `adws mcp` serves: one per workflow, and four that follow a run.

Those four are `run_status`, `await_run`, `list_runs` and `cancel_run`.

A workflow's tool queues a run through `Runs.submit` (its inputs checked
as `adws run` checks them, after the call's arguments are checked against
the tool's schema) and starts it in a child of its own (see `held`); it
answers at once with the run's id and status. `await_run` waits for a run
to stop, at most `MAX_WAIT` seconds a call (an agent asks again).
Approvals are never tools: a gate waits for a person (`adws approve`).
Every answer is a JSON object; a refusal is a tool error naming why,
and starts nothing.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Final, final

import attrs

from adws.discovery import discover_workflows
from adws.engine.errors import json_safe
from adws.mcp_server.schema import check_arguments, input_schema, typed_keys
from adws.runs import Refused, RunRequest

if TYPE_CHECKING:
    from collections.abc import Callable

    from adws.journal import RunRecord
    from adws.mcp_server.held import Held
    from adws.runs import Runs

__all__ = ["MAX_LIST", "MAX_WAIT", "RUN_TOOLS", "Answer", "Tool", "Tools"]

MAX_WAIT: Final = 300.0
"""The longest one `await_run` call waits, in seconds (an MCP client times a call out)."""
DEFAULT_WAIT: Final = 60.0
MAX_LIST: Final = 100
STOPPED: Final = frozenset({"queued", "running"})
"""The statuses of a run that is still going: `await_run` waits while a run has one."""

_RUN_ID: Final = {"type": "string", "description": "the run's id (or a unique prefix)"}


def _object(properties: dict[str, object], required: tuple[str, ...] = ()) -> dict[str, object]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


@final
@attrs.frozen
class Tool:
    """One tool: its name, what it does, and the JSON Schema of its arguments."""

    name: str
    description: str
    schema: Mapping[str, object]


RUN_TOOLS: Final = (
    Tool(
        "run_status",
        "Read a run of an adws workflow from the journal: its status, spend, error, and its "
        "outputs once it ended.",
        _object({"run_id": _RUN_ID}, ("run_id",)),
    ),
    Tool(
        "await_run",
        "Wait until a run stops (ends, or waits for a person's approval), at most `timeout` "
        f"seconds (default {DEFAULT_WAIT:g}, at most {MAX_WAIT:g}); then answer as run_status. "
        "Call again while its status is queued or running.",
        _object(
            {
                "run_id": _RUN_ID,
                "timeout": {
                    "type": "number",
                    "description": f"seconds to wait, 0 to {MAX_WAIT:g} (default {DEFAULT_WAIT:g})",
                },
            },
            ("run_id",),
        ),
    ),
    Tool(
        "list_runs",
        "List recorded runs, newest first: id, workflow, status, when, spend.",
        _object(
            {
                "workflow": {"type": "string", "description": "only this workflow's runs"},
                "status": {
                    "type": "string",
                    "description": "only runs with this status (queued, running, waiting, "
                    "succeeded, failed, ...)",
                },
                "limit": {"type": "integer", "description": f"at most this many, 1 to {MAX_LIST}"},
            }
        ),
    ),
    Tool(
        "cancel_run",
        "Cancel a run: a queued, waiting or parked one at once, a running one within seconds "
        "(its cleanup steps run).",
        _object(
            {"run_id": _RUN_ID, "reason": {"type": "string", "description": "why, for the record"}},
            ("run_id",),
        ),
    ),
)
"""The tools that follow a run, whatever its workflow (a workflow may not take their names)."""


@final
@attrs.frozen
class Answer:
    """What a tool call answers: a JSON object, or (`error`) why nothing was done."""

    value: Mapping[str, object]
    error: bool = False


def _refusal(reason: str) -> Answer:
    return Answer({"error": reason}, error=True)


@final
class Tools:
    """The tools of one workflows folder over one journal, and the calls to them."""

    def __init__(self, runs: Runs, held: Held, say: Callable[[str], None]) -> None:
        """Load the workflows of `held.workflows` as tools (a module that fails is said)."""
        self.runs = runs
        self.held = held
        catalog = discover_workflows(Path(held.workflows))
        for error in catalog.errors:
            say(f"adws mcp: warning: could not load {error}")
        taken = {tool.name for tool in RUN_TOOLS}
        self.workflows: dict[str, Tool] = {}
        for name, workflow in sorted(catalog.workflows.items()):
            if name in taken:
                say(f"adws mcp: warning: workflow {name!r} is not served: a tool has its name")
                continue
            module = sys.modules[f"adws_workflows.{catalog.sources[name].stem}"]
            schema = input_schema(workflow, typed_keys(vars(module)))
            about = workflow.description or f"Run the adws workflow {name}."
            self.workflows[name] = Tool(name, f"{about} {_STARTS}", schema)

    @property
    def tools(self) -> list[Tool]:
        """List every tool: the workflows', then those that follow a run."""
        return [*self.workflows.values(), *RUN_TOOLS]

    def schema_of(self, name: str) -> Mapping[str, object] | None:
        """Return a tool's argument schema, or None when there is no such tool."""
        return next((tool.schema for tool in self.tools if tool.name == name), None)

    def call(self, name: str, arguments: Mapping[str, object] | None) -> Answer:
        """Check a call's arguments against its tool's schema, then do it.

        `await_run` answers as `run_status` here: the server waits between reads.
        """
        schema = self.schema_of(name)
        if schema is None:
            known = ", ".join(tool.name for tool in self.tools)
            return _refusal(f"no tool {name!r}; the tools: {known}")
        given = arguments or {}
        problem = check_arguments(schema, given)
        if problem is not None:
            return _refusal(f"{name}: {problem}; nothing was done")
        self.held.reap()
        if name in self.workflows:
            return self._start(name, given)
        return self._follow(name, given)

    def _follow(self, name: str, given: Mapping[str, object]) -> Answer:
        """Do what a tool that follows a run was asked."""
        if name == "list_runs":
            return self._list(given)
        run_id = str(given["run_id"])
        if not run_id.strip():
            return _refusal(f"{name}: field 'run_id' is empty; nothing was done")
        if name == "cancel_run":
            return self._cancel(run_id, given.get("reason"))
        return self.status(run_id)

    def _start(self, name: str, inputs: Mapping[str, object]) -> Answer:
        run_id = self.runs.submit(RunRequest(name, inputs, workflows=self.held.workflows))
        if isinstance(run_id, Refused):
            return _refusal(f"{name}: {run_id.reason}; nothing was started")
        self.held.start(run_id)
        return self.status(run_id)

    def status(self, run_id: str) -> Answer:
        """Answer what the journal holds of a run, with its outputs once it stopped."""
        state = self.runs.status(run_id)
        if isinstance(state, Refused):
            return _refusal(state.reason)
        record = state.record
        value = record.to_dict()
        value["error"] = None if record.error is None else record.error.to_dict()
        if record.status not in STOPPED:
            outputs: dict[str, object] = {}
            for attempt in state.attempts:
                if attempt.status == "succeeded" and "[" not in attempt.step:
                    outputs.update(attempt.checked().outputs() or {})
            value["outputs"] = json_safe(outputs)
        value["next"] = _next(record)
        return Answer(value)

    def _list(self, given: Mapping[str, object]) -> Answer:
        journal = self.runs.journal()
        assert not isinstance(journal, Refused)  # noqa: S101 - `adws mcp` opened it first
        asked = given.get("limit", 20)
        assert isinstance(asked, int | float)  # noqa: S101 - checked: an integer (3 or 3.0)
        limit = min(max(int(asked), 1), MAX_LIST)
        workflow, status = given.get("workflow"), given.get("status")
        found = journal.runs(
            workflow=None if workflow is None else str(workflow),
            status=None if status is None else str(status),
            limit=limit,
        )
        return Answer({"runs": [_listed(run) for run in found]})

    def _cancel(self, run_id: str, reason: object) -> Answer:
        said = self.runs.cancel(run_id, None if reason is None else str(reason), by=_BY)
        if isinstance(said, Refused):
            return _refusal(said.reason)
        answer = self.status(said.run_id)
        return Answer({**answer.value, "cancel": said.state})


_STARTS: Final = (
    "Starts a run and answers at once with its run_id and status; await_run waits for its "
    "outputs. A run that reaches an approval gate waits for a person (adws approve)."
)
_BY: Final = "adws mcp"
_LISTED: Final = ("run_id", "workflow", "status", "started", "finished", "seconds", "failed_step")


def _listed(run: RunRecord) -> dict[str, object]:
    whole = run.to_dict()
    return {key: whole[key] for key in _LISTED}


def _next(record: RunRecord) -> str:
    """Say what a caller can do next with a run in this state."""
    run_id, status = record.run_id, record.status
    if status in STOPPED:
        return f"await_run {run_id} waits for it to stop"
    if status == "waiting":
        return (
            f"it waits for a person at step {record.failed_step}: `adws approve {run_id}` or "
            f"`adws reject {run_id} --reason TEXT` (approvals are not tools)"
        )
    if status in {"failed", "interrupted", "parked"}:
        return f"`adws resume {run_id}` continues it from its first step that did not succeed"
    return "it ended"
