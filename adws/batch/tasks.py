"""One run of a batch, as a worker executes it, and the messages it sends back.

A `Task` holds only text and numbers, so it crosses any process boundary;
the worker loads the workflow itself (with the run's `--agent`), and turns
events into journal statements (`adws.journal.store.statements`) for the
coordinator to write, one message per finished step. It reports the
process groups its steps start as they start and end, so the coordinator
can stop them if the worker dies, and what the run has spent, so the
coordinator can hold the batch to `--batch-max-cost`.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Final, TypeAlias, final

import attrs
from returns.io import IOFailure

from adws import io_ops
from adws.agents.base import AgentBackend  # attrs resolves the annotation at run time
from adws.engine.errors import ErrorType, PipelineError
from adws.journal.store.backend import JournalUrl

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from returns.io import IOResult

    from adws.agents.base import AgentRequest, AgentResponse
    from adws.engine.events import RunEvent, RunFinished, RunObserver
    from adws.engine.step import Workflow
    from adws.journal.store.schema import Statement
    from adws.runs.batches import BatchRun

__all__ = ["OVER_BUDGET", "Batch", "Cancel", "Message", "Task", "execute", "task_for"]

Message: TypeAlias = tuple[object, ...]
"""From a worker to the coordinator:

- `("journal", run_id, statements, spent)`: a finished step's journal
  statements, and what the run has spent in this session so far (USD);
  with a fifth item, True, a step's start: the worker waits for the
  coordinator's answer (`Pool.recorded`) before the step starts;
- `("groups", run_id, host, pgids)`: the process groups the run has running now;
- `("finished", run_id, status, error JSON or None, statements, refused)`:
  the run's end, its last statements, and the offline switch's refusals;
- `("failed", run_id, reason)`: the workflow did not load in the worker.

The pools add `("lost", reason)` for a worker that died.
"""

Cancel: TypeAlias = tuple[str, str, str, str]
"""A cancel for a run in flight, as it crosses to its worker: run id, who, when, why."""

OVER_BUDGET: Final[set[str]] = set()
"""The batches (by id) that reached `--batch-max-cost`: their agent calls are refused."""

_HOST: Final = socket.gethostname()


@final
@attrs.frozen
class Batch:
    """What every task of one batch shares."""

    batch_id: str
    workflow: str
    workflows_dir: str
    holder: tuple[int, str]
    """The coordinator's `(pid, host)`, recorded as running each run."""
    offline: bool = False
    """The offline switch as the coordinator had it (the pytest plugin's)."""
    max_cost: float | None = None
    """`--batch-max-cost`: past it, agent calls fail `BudgetExceeded`."""
    worktrees: str = ""
    """Where `worktree` steps make their folders ("": the shared folder, see `run_workflow`)."""
    replay_journal: Path | JournalUrl | None = None
    """The journal a run whose options name a `replay` run reads its answers from.

    `adws eval --replay-from BATCH` sets it: each of its runs answers every
    agent call from the recorded run its options name, never its agent.
    """


@final
@attrs.frozen
class Task:
    """What a worker needs to run (or resume) one run of a batch."""

    run_id: str
    batch: Batch
    inputs_json: str
    """The context the run starts from (its inputs, plus what kept steps left)."""
    options_json: str | None = None
    """The run's `RunOptions`: its agent, model, budget, `max_agents`."""
    resume_from: str | None = None
    reuse_json: str = "{}"
    """Branch outputs an earlier attempt stored: `{path: encoded outputs}`."""
    rerun: tuple[str, ...] = ()
    """Finished `rerun_on_resume` steps that run again first."""
    spent_json: str | None = None
    """What earlier sessions of the run spent (a `Usage` as JSON), for its budget."""
    lost_json: str | None = None
    """A `WorkerLost` error: the step in flight fails with it, and cleanup runs."""
    bases_json: str = "{}"
    """Each worktree's recorded base commit, by label (see `ResumeStart.bases`)."""
    decisions_json: str = "{}"
    """The decisions made at the run's approval steps, by step (see `ResumeStart.decisions`)."""


def task_for(batch: Batch, run: BatchRun, inputs: Callable[[str], str]) -> Task:
    """Build the task that starts, or continues, one run of a batch.

    `inputs` reads a queued run's recorded inputs when the run does not
    carry them (a new batch keeps them in the journal until then).
    """
    from adws.journal.records.codec import encode_context, encode_outputs  # noqa: PLC0415 - the coordinator's side

    options = run.options.to_json()
    start = run.start
    if start is None:
        recorded = run.inputs_json if run.inputs_json is not None else inputs(run.run_id)
        return Task(run.run_id, batch, recorded, options)
    reuse = {path: encode_outputs(outputs) for path, outputs in start.reuse.items()}
    return Task(
        run.run_id,
        batch,
        encode_context(start.context),
        options,
        start.resume_from,
        json.dumps(reuse),
        start.rerun,
        None if start.spent is None else json.dumps(start.spent.to_dict()),
        bases_json=json.dumps(dict(start.bases)),
        decisions_json=json.dumps({step: d.to_dict() for step, d in start.decisions.items()}),
    )


@final
@attrs.frozen
class _BatchCapped:
    """Refuse agent calls once the batch has spent its `--batch-max-cost`."""

    inner: AgentBackend
    batch_id: str
    max_cost: float

    def __call__(self, request: AgentRequest, /) -> IOResult[AgentResponse, PipelineError]:
        if self.batch_id in OVER_BUDGET:
            message = (
                f"the batch has spent its ${self.max_cost:.4f} budget (--batch-max-cost); "
                "the agent was not called"
            )
            return IOFailure(
                PipelineError(
                    request.step_name,
                    ErrorType.BUDGET_EXCEEDED,
                    message,
                    {"batch_budget": self.max_cost},
                )
            )
        return self.inner(request)


_Loaded: TypeAlias = tuple["Workflow | None", dict[str, str], str, str | None]
_LOADED: dict[tuple[str, str, str, str | None], _Loaded] = {}
"""The workflows this worker process has loaded: workflow, step fingerprints, whole, problem."""


def _load(task: Task) -> _Loaded:
    """Load the task's workflow with its agent and the batch's cap, once per worker process."""
    from adws.agents.swap import map_agents, select_agent  # noqa: PLC0415 - a worker loads adws here
    from adws.discovery import discover_workflows  # noqa: PLC0415 - as above
    from adws.journal.identity.fingerprint import fingerprint, step_fingerprints  # noqa: PLC0415 - as above
    from adws.journal.records.options import RunOptions  # noqa: PLC0415 - as above

    batch = task.batch
    # The run a task replays is applied per task (`_replayed`): every run shares one load.
    options = attrs.evolve(RunOptions.from_json(task.options_json), replay=None)
    key = (batch.workflows_dir, batch.workflow, batch.batch_id, options.to_json())
    if key in _LOADED:  # loading and fingerprinting cost more than a run
        return _LOADED[key]
    found = discover_workflows(Path(batch.workflows_dir)).workflows.get(batch.workflow)
    if found is None:
        loaded: _Loaded = (None, {}, "", f"workflow {batch.workflow!r} did not load in the worker")
    else:
        steps = step_fingerprints(found)
        # The coordinator checked these options before the batch started: they make an agent.
        workflow = select_agent(found, options.agent, options.model, options.agent_output)
        if batch.max_cost is not None:
            cap = batch.max_cost
            workflow = map_agents(workflow, lambda agent: _BatchCapped(agent, batch.batch_id, cap))
        loaded = (workflow, steps, fingerprint(found, steps), None)
    _LOADED[key] = loaded
    return loaded


def _lost(workflow: Workflow, step_name: str, error_json: str) -> Workflow:
    """Return `workflow` with `step_name` failing at once with the recorded `WorkerLost` error."""
    from returns.io import IOFailure  # noqa: PLC0415 - as above

    from adws.engine.step import Step  # noqa: PLC0415 - as above
    from adws.journal.records.codec import decode_error  # noqa: PLC0415 - as above

    error = decode_error(error_json)

    def lost(_ctx: object) -> IOFailure[PipelineError]:
        return IOFailure(error)

    steps = tuple(
        Step(step.name, lost, always_run=step.always_run) if step.name == step_name else step
        for step in workflow.steps
    )
    return attrs.evolve(workflow, steps=steps)


_SENDERS: Final[dict[str, Callable[[Message], None]]] = {}
"""How to reach the coordinator, by the run id of each task running in this process."""
_SENDERS_LOCK: Final = threading.Lock()


def _replayed(workflow: Workflow, where: Path | JournalUrl, run_id: str) -> Workflow:
    """Answer every agent call of `workflow` from the recorded run `run_id`, a fresh cassette.

    Each run gets its own cassette: a prompt asked again takes the next
    recorded answer of its own run, whatever other runs replay meanwhile.
    """
    from adws.agents.swap import map_agents  # noqa: PLC0415 - as above
    from adws.journal import Journal  # noqa: PLC0415 - as above
    from adws.journal.store.cassette import JournalCassette  # noqa: PLC0415 - as above
    from adws.runs.recording import RecordingAgent  # noqa: PLC0415 - as above

    journal = Journal(where, readonly=True)
    try:
        cassette = JournalCassette(journal, run_id)
    finally:
        journal.close()
    return map_agents(workflow, lambda inner: RecordingAgent(inner, cassette, "replay"))


def _report_groups(_snapshot: tuple[int, ...]) -> None:
    """Tell the coordinator which process groups the run starting or reaping one has now."""
    tag = str(io_ops.TAG.get())
    with contextlib.suppress(Exception):  # a step never breaks over bookkeeping
        with _SENDERS_LOCK:
            send = _SENDERS[tag]  # a process started outside a task has none: a KeyError
        send(("groups", tag, _HOST, io_ops.GROUPS.current(tag=tag)))


class _Forwarder:
    """Turn a run's events into journal messages: one per finished step, the rest at the end."""

    def __init__(
        self,
        task: Task,
        send: Callable[[Message], None],
        loaded: _Loaded,
        confirm: Callable[[], str | None] | None = None,
    ) -> None:
        self.task, self.send, self.confirm = task, send, confirm
        _, self.steps, self.whole, _ = loaded
        from adws.journal.records.options import RunOptions  # noqa: PLC0415 - as above
        from adws.journal.store.exchanges import keeps_transcripts  # noqa: PLC0415 - as above

        refused = bool(RunOptions.from_json(task.options_json).no_transcripts)
        self.transcripts = keeps_transcripts(refused=refused)
        self.pending: list[Statement] = []
        self.spent = 0.0
        self.finished: RunFinished | None = None

    def __call__(self, event: RunEvent) -> None:
        from adws.engine.events import (  # noqa: PLC0415 - as above
            AttemptFailed,
            RunFinished,
            RunStarted,
            StepStarted,
            StepSucceeded,
        )
        from adws.journal.store.statements import statements_for  # noqa: PLC0415 - as above

        task = self.task
        if isinstance(event, StepStarted) and not event.always_run and self.confirm is not None:
            self._started()
            return
        statements = statements_for(
            event,
            self.whole,
            self.steps,
            row_exists=True,
            options=task.options_json,
            holder=task.batch.holder,
            transcripts=self.transcripts,
        )
        self.pending.extend(statements)
        if isinstance(event, RunFinished):
            self.finished = event
            return
        if isinstance(event, AttemptFailed | StepSucceeded) and event.usage is not None:
            self.spent += event.usage.cost_usd or 0.0
        if statements and not isinstance(event, RunStarted):
            pending, self.pending = self.pending, []
            self.send(("journal", task.run_id, pending, self.spent))

    def _started(self) -> None:
        """Send what is pending with the step's start, and wait for the coordinator to record it.

        Raises `JournalLost` (the run stops at this step boundary,
        `interrupted`) when the coordinator could not record it.
        """
        from adws.journal.store.observer import JournalLost  # noqa: PLC0415 - as above
        from adws.journal.store.statements import starting_statement  # noqa: PLC0415 - as above

        assert self.confirm is not None  # noqa: S101 - only called with one
        pending, self.pending = [*self.pending, starting_statement(self.task.run_id)], []
        self.send(("journal", self.task.run_id, pending, self.spent, True))
        why = self.confirm()
        if why is not None:
            raise JournalLost(why)


def execute(
    task: Task,
    send: Callable[[Message], None],
    observers: Sequence[RunObserver] = (),
    *,
    confirm: Callable[[], str | None] | None = None,
) -> None:
    """Run one task to its end, streaming journal statements through `send`.

    With `confirm` (the local pool's workers), each step that is not
    cleanup starts only once the coordinator says it recorded its start
    (`confirm` returns None); else the run stops there as `interrupted`,
    as `adws run` does when its journal is lost (`JournalLost`).

    Every agent exchange travels as statements too (its texts compressed
    here, in the worker), so the coordinator writes a batch's transcripts
    as it writes a run's.

    Ctrl-C (or SIGTERM turned into it by the worker) ends the run as
    `interrupted` after its `always_run` steps, like `adws run`.
    """
    from adws.agents.offline import OFFLINE  # noqa: PLC0415 - as above
    from adws.engine.scope import Decision  # noqa: PLC0415 - as above
    from adws.engine.usage import Usage  # noqa: PLC0415 - as above
    from adws.journal.records.codec import decode_context, decode_outputs, encode_error  # noqa: PLC0415 - as above
    from adws.journal.records.options import RunOptions  # noqa: PLC0415 - as above
    from adws.runs import Plan, Setting  # noqa: PLC0415 - as above
    from adws.runs import execute as run_plan  # noqa: PLC0415 - as above

    loaded = _load(task)
    workflow, problem = loaded[0], loaded[3]
    if workflow is None:
        send(("failed", task.run_id, problem))
        return
    if task.lost_json is not None and task.resume_from is not None:
        workflow = _lost(workflow, task.resume_from, task.lost_json)
    OFFLINE.reset(enabled=task.batch.offline)
    options = RunOptions.from_json(task.options_json)
    if task.batch.replay_journal is not None and options.replay is not None:
        workflow = _replayed(workflow, task.batch.replay_journal, options.replay)
    spent = None if task.spent_json is None else Usage.from_dict(json.loads(task.spent_json))
    forward = _Forwarder(task, send, loaded, confirm)
    reuse = {path: decode_outputs(text) for path, text in json.loads(task.reuse_json).items()}
    with _SENDERS_LOCK:
        _SENDERS[task.run_id] = send
    io_ops.GROUPS.on_change = _report_groups
    tag = io_ops.TAG.set(task.run_id)
    # The coordinator, the batch's one journal writer, records the run from `forward`'s
    # statements, and runs its `--notify` command: here the run has no journal of its own.
    setting = Setting(None, io_ops.sleep, task.batch.worktrees, whole_process=False, notifies=False)
    plan = Plan(
        workflow,
        decode_context(task.inputs_json),
        task.run_id,
        loaded[1],
        loaded[2],
        options,
        task.resume_from,
        reuse,
        spent,
        task.rerun,
        json.loads(task.bases_json),
        {step: Decision(**fields) for step, fields in json.loads(task.decisions_json).items()},
    )
    try:
        run_plan(setting, plan, [*observers, forward])
    finally:
        io_ops.TAG.reset(tag)
        with _SENDERS_LOCK:
            _SENDERS.pop(task.run_id, None)
    # The forwarder saw the end unless an observer before it failed and the run ended early.
    end = forward.finished
    status, error = (end.status, end.error) if end is not None else ("failed", None)
    send(("finished", task.run_id, status, encode_error(error), forward.pending, OFFLINE.refused))
