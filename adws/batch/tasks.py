"""One run of a batch, as a worker executes it, and the messages it sends back.

A `Task` holds only text and numbers, so it crosses any process boundary;
the worker loads the workflow itself and turns each event into journal
statements (`adws.journal.statements`) for the coordinator to write.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias, final

import attrs

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from adws.events import RunEvent, RunObserver
    from adws.step import Workflow

__all__ = ["Message", "Task", "execute"]

Message: TypeAlias = tuple[object, ...]
"""`("journal", run_id, statements)`, `("finished", run_id, status, error JSON or None)`,
`("claimed", worker, run_id)` or `("failed", run_id, reason)`."""


_LOADED: dict[tuple[str, str], tuple[Workflow | None, dict[str, str], str]] = {}
"""The workflows this worker process has loaded, with their fingerprints."""


@final
@attrs.frozen
class Task:
    """What a worker needs to run (or resume) one run of a batch."""

    run_id: str
    workflow: str
    workflows_dir: str
    inputs_json: str
    resume_from: str | None = None
    reuse_json: str = "{}"
    """Branch outputs an earlier attempt stored: `{path: encoded outputs}`."""


def execute(
    task: Task, send: Callable[[Message], None], observers: Sequence[RunObserver] = ()
) -> None:
    """Run one task to its end, streaming journal statements through `send`.

    Ctrl-C (or SIGTERM turned into it by the worker) ends the run as
    `interrupted` after its `always_run` steps, like `adws run`.
    """
    from adws.discovery import discover_workflows  # noqa: PLC0415 - a worker loads adws here
    from adws.events import RunFinished  # noqa: PLC0415 - as above
    from adws.executor import run_workflow  # noqa: PLC0415 - as above
    from adws.journal.codec import decode_context, decode_outputs, encode_error  # noqa: PLC0415 - as above
    from adws.journal.fingerprint import fingerprint, step_fingerprints  # noqa: PLC0415 - as above
    from adws.journal.statements import statements_for  # noqa: PLC0415 - as above

    key = (task.workflows_dir, task.workflow)
    if key not in _LOADED:  # once per worker: loading and fingerprinting cost more than a run
        found = discover_workflows(Path(task.workflows_dir)).workflows.get(task.workflow)
        steps = {} if found is None else step_fingerprints(found)
        _LOADED[key] = (found, steps, "" if found is None else fingerprint(found, steps))
    workflow, steps, whole = _LOADED[key]
    if workflow is None:
        send(("failed", task.run_id, f"workflow {task.workflow!r} did not load in the worker"))
        return
    finished: list[RunFinished] = []

    def forward(event: RunEvent) -> None:
        statements = statements_for(event, whole, steps, row_exists=True)
        if statements:
            send(("journal", task.run_id, statements))
        if isinstance(event, RunFinished):
            finished.append(event)

    reuse = {path: decode_outputs(text) for path, text in json.loads(task.reuse_json).items()}
    run_workflow(
        workflow,
        decode_context(task.inputs_json),
        observers=[*observers, forward],
        run_id=task.run_id,
        resume_from=task.resume_from,
        reuse=reuse,
    )
    # The forwarder is the run's only observer: it saw the end unless sending itself failed.
    status, error = (finished[-1].status, finished[-1].error) if finished else ("failed", None)
    send(("finished", task.run_id, status, encode_error(error)))
