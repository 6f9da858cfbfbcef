"""Find a run's workflow, give it its agents, and check the inputs it is asked to start with.

A workflow asked for by name is found in its folder (`adws.discovery`);
its agent steps get the agent the options choose (`--agent`, `--model`,
`--agent-output`: `adws.agents.swap`), then a recorder or a player when
the options say `record` or `replay` (`adws.runs.recording`; a `replay`
that names a run answers from the exchanges the journal kept, see
`adws.journal.store.cassette`). What cannot be done is a `Refused`, saying why.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, final

import attrs

from adws.agents.swap import AgentChoiceError, map_agents, select_agent, use_agent
from adws.check import check_workflow, known_inputs
from adws.discovery import discover_workflows, workflows_dir
from adws.engine.step import Workflow  # attrs resolves the annotations at run time
from adws.journal.records.options import RunOptions  # as above
from adws.journal.records.runs import UnreadableError
from adws.journal.store.cassette import JournalCassette
from adws.runs._values import Refused
from adws.runs.recording import Mode, Recording, RecordingAgent

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from adws.agents.base import AgentBackend
    from adws.journal import Journal
    from adws.runs.recording import Cassette

__all__ = [
    "Loaded",
    "absolute_options",
    "check_inputs",
    "find_workflow",
    "folder_of",
    "replays_run",
    "with_agents",
]


@final
@attrs.frozen
class Loaded:
    """A workflow ready to run: as written (its fingerprints are recorded) and with its agents.

    `options` are those to record: paths made absolute, a replayed run
    named by its whole id.
    """

    workflow: Workflow
    runnable: Workflow
    options: RunOptions


def replays_run(replay: str | None) -> bool:
    """Tell whether `replay` names a run (not a folder of recordings).

    A value with a path separator, or naming something that exists, is a folder.

    >>> replays_run("3fa85f64"), replays_run("tests/recordings"), replays_run(None)
    (True, False, False)
    """
    return replay is not None and os.sep not in replay and not Path(replay).exists()


def _absolute(path: str | None) -> str | None:
    return None if path is None else str(Path(path).resolve())


def absolute_options(options: RunOptions, folder: str | Path | None = None) -> RunOptions:
    """Make the paths of `options` absolute, so a resume works from any folder.

    `folder` is the workflows folder the run was found in (None: keep the
    options' own, made absolute); a `replay` that names a run stays its id.
    """
    replay = options.replay if replays_run(options.replay) else _absolute(options.replay)
    workflows = options.workflows if folder is None else str(folder)
    return attrs.evolve(
        options, workflows=_absolute(workflows), record=_absolute(options.record), replay=replay
    )


def find_workflow(name: str, folder: Path, say: Callable[[str], None]) -> Workflow | Refused:
    """Find the workflow `name` in `folder`, or say what is known there.

    A module that did not load is named through `say` when the workflow is
    not found (it may be the one that failed).
    """
    catalog = discover_workflows(folder)
    conflict = catalog.conflicts.get(name)
    if conflict is not None:
        files = " and ".join(path.name for path in conflict)
        return Refused(f"workflow {name!r} is defined in both {files}; rename one of them")
    found = catalog.workflows.get(name)
    if found is not None:
        return found
    for error in catalog.errors:
        say(f"warning: could not load {error}")
    known = ", ".join(sorted(catalog.workflows)) or "none"
    return Refused(
        f"unknown workflow {name!r} in {catalog.directory}; known workflows: {known}", found=False
    )


def with_agents(
    workflow: Workflow,
    options: RunOptions,
    *,
    agent: AgentBackend | None = None,
    journal: Callable[[], Journal | Refused],
) -> Loaded | Refused:
    """Give `workflow` its agents: `agent`, else the options' choice; then record or replay.

    `journal` opens the journal a `replay` of a run reads (only then).
    """
    try:
        runnable = (
            use_agent(workflow, agent)
            if agent is not None
            else select_agent(workflow, options.agent, options.model, options.agent_output)
        )
    except AgentChoiceError as exc:
        return Refused(str(exc))
    folder = options.record or options.replay
    if folder is None:
        return Loaded(workflow, runnable, options)
    recording: Cassette
    if options.record is None and replays_run(options.replay):
        cassette = _run_cassette(str(options.replay), journal)
        if isinstance(cassette, Refused):
            return cassette
        recording, options = cassette, attrs.evolve(options, replay=cassette.run_id)
    else:
        try:
            recording = Recording(Path(folder) / f"{workflow.name}.json")
        except ValueError as exc:
            return Refused(str(exc))
    mode: Mode = "record" if options.record else "replay"
    recorded = map_agents(runnable, lambda inner: RecordingAgent(inner, recording, mode))
    return Loaded(workflow, recorded, options)


def _run_cassette(
    replay: str, journal: Callable[[], Journal | Refused]
) -> JournalCassette | Refused:
    """Open the run `replay` names (an id or a unique prefix) as a cassette."""
    opened = journal()
    if isinstance(opened, Refused):
        return attrs.evolve(
            opened, reason=f"--replay {replay}: no such folder, and {opened.reason}"
        )
    found = opened.find(replay)
    if isinstance(found, str):
        return Refused(f"--replay {replay}: no such folder of recordings, and {found}")
    try:
        return JournalCassette(opened, found.run_id)
    except UnreadableError as exc:
        path = str(opened.path)
        return Refused(
            f"the journal {path} holds rows it cannot read", 1, problems=exc.problems, journal=path
        )
    except ValueError as exc:
        return Refused(str(exc))


def check_inputs(
    workflow: Workflow, inputs: Mapping[str, object], say: Callable[[str], None]
) -> Refused | None:
    """Refuse inputs a run of `workflow` cannot start with (`adws run`, `adws submit`).

    A key no step reads and the workflow does not declare is refused (a
    typo, say), an input the workflow needs and lacks too, and so is a
    workflow `adws check` reports errors for. When a Python step declares
    no `reads=`, any key might be read, so one the workflow does not
    declare is only a warning (`say`), naming the declared ones.
    """
    refused = _unknown(workflow, inputs, say)
    if refused is not None:
        return refused
    missing = workflow.missing_inputs(inputs)
    if missing:
        flags = " ".join(f"-i {key}=..." for key in missing)
        return Refused(f"workflow {workflow.name!r} needs input {', '.join(missing)}: add {flags}")
    errors = [p for p in check_workflow(workflow, given=inputs) if p.severity == "error"]
    if errors:
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        return Refused(
            f"workflow {workflow.name!r} fails adws check: {errors[0]}{more};"
            f" see `adws check {workflow.name}`"
        )
    return None


def _unknown(
    workflow: Workflow, inputs: Mapping[str, object], say: Callable[[str], None]
) -> Refused | None:
    known = known_inputs(workflow)
    if known is None:
        declared = {*workflow.inputs, *workflow.optional_inputs}
        unknown = [key for key in inputs if key not in declared]
        if unknown:
            names = ", ".join(repr(key) for key in unknown)
            takes = ", ".join(sorted(declared)) or "none"
            say(
                f"adws: warning: workflow {workflow.name!r} declares no input {names}; the"
                f" inputs it declares: {takes} (a step without reads= may still read it)"
            )
        return None
    unknown = [key for key in inputs if key not in known]
    if unknown:
        names = ", ".join(repr(key) for key in unknown)
        takes = ", ".join(sorted(known)) or "none"
        return Refused(
            f"workflow {workflow.name!r} takes no input {names}; the inputs it reads: {takes}"
        )
    return None


def folder_of(request_folder: str | Path | None, options: RunOptions) -> Path:
    """Pick the workflows folder: the request's, the options' (a resume's), else the usual one."""
    given = request_folder if request_folder is not None else options.workflows
    return workflows_dir(None if given is None else str(given))
