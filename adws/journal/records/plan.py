"""Where a resume starts, what it keeps, and the context it starts from.

A step is done when its latest record is a success or a skip by its
condition. Steps before the first step that is not done are kept (their
stored outputs rebuild the context), changed (their fingerprint differs
from the one recorded when they ran) or, for a `rerun_on_resume` step,
rerun (its outputs dropped; it runs again first). From the first open step
on (or an earlier one a resume names: `--from`), everything runs again.

Given a `Snapshot` (see `adws.journal.store.snapshots.resume_rows`), the
steps up to it count as done with today's fingerprints (the snapshot's
digest of them matched) and its context replaces the rows before it: the
attempts given are then only those recorded after it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, Literal, TypeAlias, final

import attrs

from adws.engine.context import WorkflowContext
from adws.journal.records.codec import decode_many_outputs

if TYPE_CHECKING:
    from collections.abc import Collection, Mapping, Sequence

    from adws._frozen import FrozenMap
    from adws.journal.records.runs import AttemptRecord
    from adws.journal.records.snapshots import Snapshot

__all__ = ["Action", "StepPlan", "plan_resume", "resume_point", "stored_branches"]

Action: TypeAlias = Literal["kept", "changed", "rerun", "to run"]
_DONE: Final = frozenset({"succeeded", "skipped:condition"})


@final
@attrs.frozen
class StepPlan:
    """What a resume would do with one step, and why."""

    step: str
    action: Action
    recorded: str | None = None
    current: str | None = None


def _latest(attempts: Sequence[AttemptRecord]) -> dict[str, AttemptRecord]:
    latest: dict[str, AttemptRecord] = {}
    for record in attempts:
        if record.final:
            latest[record.step] = record
    return latest


def _changed(recorded: str | None, now: str | None) -> bool:
    """Tell whether a fingerprint changed; one recorded by an older adws cannot be compared.

    Fingerprints before schema 3 were not kept, and older versions hashed
    16 characters (with a seed-dependent scheme): both count as unchanged.
    """
    if recorded is None or now is None or len(recorded) != len(now):
        return False
    return recorded != now


def plan_resume(  # noqa: PLR0913 - the run, and every way a resume can start
    steps: Sequence[str],
    attempts: Sequence[AttemptRecord],
    current: Mapping[str, str] | None = None,
    *,
    rerun: Collection[str] = (),
    start: str | None = None,
    snapshot: Snapshot | None = None,
) -> tuple[StepPlan, ...]:
    """Say, per step of the workflow as it is now, whether a resume keeps or runs it.

    `current` maps step names to today's fingerprints; a finished step whose
    recorded fingerprint differs is `changed`. A record made by an older
    adws cannot be compared and counts as kept. A finished step named in
    `rerun` (`rerun_on_resume`) is `rerun`. `start` names a finished step
    to run again from (`--from`, `--rerun-changed`): it and every step
    after it are `to run`. With a `snapshot`, a step up to it that has no
    row in `attempts` (the rows after it) is done, with today's fingerprint.
    """
    latest = _latest(attempts)
    current = current or {}
    covered = -1 if snapshot is None else snapshot.index
    plans: list[StepPlan] = []
    open_from = False
    for index, name in enumerate(steps):
        last = latest.get(name)
        now = current.get(name)
        if last is None and index <= covered and not open_from and name != start:
            plans.append(StepPlan(name, "rerun" if name in rerun else "kept", now, now))
        elif open_from or name == start or last is None or last.status not in _DONE:
            open_from = True
            plans.append(StepPlan(name, "to run", None, now))
        elif name in rerun:
            plans.append(StepPlan(name, "rerun", last.fingerprint, now))
        else:
            action: Action = "changed" if _changed(last.fingerprint, now) else "kept"
            plans.append(StepPlan(name, action, last.fingerprint, now))
    return tuple(plans)


def resume_point(  # noqa: PLR0913 - as `plan_resume`
    steps: Sequence[str],
    attempts: Sequence[AttemptRecord],
    start: WorkflowContext | None = None,
    *,
    until: str | None = None,
    drop: Collection[str] = (),
    snapshot: Snapshot | None = None,
) -> tuple[str | None, WorkflowContext]:
    """Find the first step to run and rebuild the context the steps before it left.

    The context is `start` (the run's inputs) plus the outputs each done
    step stored, in order; a record from a journal before schema 3 holds
    the whole context instead, which replaces what was built so far.
    `until` stops earlier, at a step that is done but must run again
    (`--rerun-changed`, `--from`). The outputs of the steps in `drop` are
    left out (they run again: `rerun_on_resume`). Returns `(None,
    context)` when every step is done. With a `snapshot` (which the caller
    checked runs none of `drop` or `until` again), its context is where the
    fold starts and `attempts` are the rows after it.
    """
    latest = _latest(attempts)
    base: dict[str, object] = dict((start or WorkflowContext()).inputs)
    frozen: FrozenMap | None = None
    covered = -1
    if snapshot is not None:
        # Extended as it is, never copied and frozen again; with the run's inputs an earlier
        # resume added (`-i`), which an older snapshot does not hold.
        frozen, covered = snapshot.context.inputs, snapshot.index
        base = {key: value for key, value in base.items() if key not in frozen}
    stored: list[str] = []
    first: str | None = None
    for index, name in enumerate(steps):
        last = latest.get(name)
        if last is None and index <= covered:
            continue
        if name == until or last is None or last.status not in _DONE:
            first = name
            break
        if name in drop:
            continue
        if last.outputs_json is not None:
            stored.append(last.outputs_json)
            continue
        whole = last.context()
        if whole is not None:
            base, stored, frozen = dict(whole.inputs), [], None
    for outputs in decode_many_outputs(stored):
        base.update(outputs)
    return first, WorkflowContext(inputs=base if frozen is None else frozen.extend(base))


def stored_branches(
    attempts: Sequence[AttemptRecord], step: str | None
) -> dict[str, dict[str, object]]:
    """Return the outputs each branch of parallel step `step` stored when it succeeded.

    A resume hands them to `run_workflow(reuse=...)`, so only the branches
    that did not succeed run again. The branches of a parallel step nested
    in one (`outer[1]/inner[a]`) run again with the branch they are in: that
    branch starts afresh (a verification round inside it, say, must see its
    feedback), so nothing inside it is reused.
    """
    prefix = f"{step}["
    return {
        record.step: record.outputs() or {}
        for record in attempts
        if step is not None
        and record.status == "succeeded"
        and record.step.startswith(prefix)
        and "/" not in record.step
    }
