"""Snapshots: a resume reads one snapshot and the rows after it, and gets what every row gives."""

from __future__ import annotations

import hashlib
import json
import signal
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from returns.io import IOFailure, IOSuccess

from adws import PipelineError, Step, Workflow, WorkflowContext, run_workflow
from adws.engine.events import RunFinished, RunStarted, StepSkipped, StepSucceeded
from adws.journal import Journal, JournalObserver, plan_resume, prune, resume_point
from adws.journal.identity.fingerprint import step_fingerprints
from adws.journal.store.snapshots import (
    CODEC,
    SNAPSHOT_EVERY,
    SnapshotIgnored,
    SnapshotKeeper,
    resume_rows,
)
from tests.conftest import start_adws, wait_for

if TYPE_CHECKING:
    from returns.io import IOResult

    from adws.journal.records.plan import StepPlan
    from adws.journal.records.snapshots import Snapshot


def _adds(i: int) -> Step:
    def run(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        return IOSuccess(ctx.merge_outputs({f"k{i}": [i, str(i)]}))

    return Step(f"s{i}", run)


def _interrupts(_ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
    raise KeyboardInterrupt


def _fails(_ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
    return IOFailure(PipelineError("", "Broken", "at the last step"))


def _parks(_ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
    return IOFailure(PipelineError("", "Parked", "usage limit", {"wake_at": 1.0e9}))


def _line(n: int, last: Step) -> Workflow:
    """A workflow of `n` steps, each adding one key, whose last is `last`."""
    return Workflow("line", (*(_adds(i) for i in range(n - 1)), last))


def _record(journal: Journal, workflow: Workflow, run_id: str = "r") -> dict[str, str]:
    current = step_fingerprints(workflow)
    run_workflow(
        workflow,
        WorkflowContext(inputs={"topic": "x"}),
        observers=[JournalObserver(journal, "fp", current)],
        run_id=run_id,
    )
    return current


_Start: TypeAlias = "tuple[tuple[StepPlan, ...], tuple[str | None, WorkflowContext]]"


def _both_ways(
    journal: Journal, workflow: Workflow, run_id: str = "r"
) -> tuple[Snapshot | None, int, _Start, _Start]:
    """Resume from the snapshot and from every row: return the snapshot, rows read, both starts."""
    names = [step.name for step in workflow.steps]
    current = step_fingerprints(workflow)
    record = journal.find(run_id)
    assert not isinstance(record, str)
    rows = resume_rows(journal, record, names, current)
    fast = (
        plan_resume(names, rows.attempts, current, snapshot=rows.snapshot),
        resume_point(names, rows.attempts, record.inputs(), snapshot=rows.snapshot),
    )
    every = journal.attempts(run_id)
    slow = (plan_resume(names, every, current), resume_point(names, every, record.inputs()))
    return rows.snapshot, len(rows.attempts), fast, slow


@pytest.fixture
def journal(journal_at: str) -> Journal:
    if "://" not in journal_at:
        Path(journal_at).parent.mkdir()
    return Journal(journal_at)


def _snapshots(journal: Journal) -> list[tuple[object, ...]]:
    return journal.query(
        "SELECT run_id, step, step_index, through, codec, size, sha256, body FROM snapshots"
        " ORDER BY id"
    )


def test_a_long_run_keeps_its_newest_periodic_snapshot_with_its_size_and_hash(
    journal: Journal,
) -> None:
    _record(journal, _line(250, _adds(249)))
    ((run_id, step, index, through, codec, size, sha256, body),) = _snapshots(journal)
    assert (run_id, step, index, codec) == ("r", "s199", 199, CODEC)
    assert journal.query("SELECT MAX(id) FROM attempts WHERE step = 's199'") == [(through,)]
    data = str(body).encode()
    assert (size, sha256) == (len(data), hashlib.sha256(data).hexdigest())


def test_a_resume_at_step_1000_reads_one_snapshot_and_fewer_than_k_rows(
    journal: Journal,
) -> None:
    workflow = _line(1_000, Step("last", _interrupts))
    _record(journal, workflow)
    snapshot, read, fast, slow = _both_ways(journal, workflow)
    assert snapshot is not None
    assert (snapshot.step, snapshot.index, read) == ("s998", 998, 1)
    assert read < SNAPSHOT_EVERY
    assert fast == slow
    assert fast[1][0] == "last"


def test_a_failed_run_resumes_from_its_periodic_snapshot_and_the_rows_after_it(
    journal: Journal,
) -> None:
    workflow = _line(1_000, Step("last", _fails))
    _record(journal, workflow)
    snapshot, read, fast, slow = _both_ways(journal, workflow)
    assert snapshot is not None
    assert (snapshot.index, read) == (945, 54)
    assert fast == slow


def test_a_parked_run_keeps_the_context_of_its_last_finished_step(journal: Journal) -> None:
    workflow = _line(5, Step("wait", _parks))
    _record(journal, workflow)
    snapshot, read, fast, slow = _both_ways(journal, workflow)
    assert snapshot is not None
    assert (snapshot.step, read) == ("s3", 1)
    made = {f"k{i}": (i, str(i)) for i in range(4)}  # frozen, as the step saw them
    assert dict(snapshot.context.inputs) == {"topic": "x", **made}
    assert fast == slow


def test_a_run_that_waits_for_approval_keeps_a_snapshot(journal: Journal) -> None:
    from adws import approval_step  # noqa: PLC0415 - the approval kit is loaded lazily

    workflow = Workflow("gated", (_adds(0), approval_step("ship", message="ship?"), _adds(2)))
    _record(journal, workflow)
    snapshot, _, fast, slow = _both_ways(journal, workflow)
    assert snapshot is not None
    assert snapshot.step == "s0"
    assert fast == slow


def test_a_run_stopped_at_its_first_step_keeps_no_snapshot(journal: Journal) -> None:
    _record(journal, Workflow("one", (Step("first", _interrupts),)))
    assert _snapshots(journal) == []


@pytest.mark.parametrize(
    ("tamper", "failed"),
    [
        ("UPDATE snapshots SET codec = 'pickle'", "its codec is 'pickle', not 'adws-context-1'"),
        ("UPDATE snapshots SET size = size + 1", "its size is"),
        ("UPDATE snapshots SET sha256 = 'abc'", "its sha256 does not match its body"),
        ("UPDATE snapshots SET through = NULL", "its step or attempt row is missing"),
        ("UPDATE snapshots SET through = through + 5", "past the run's rows"),
        ("UPDATE snapshots SET step_index = -1", "past the run's rows"),
    ],
)
def test_a_tampered_snapshot_is_ignored_with_a_warning_and_the_rows_give_the_same_start(
    journal: Journal, tamper: str, failed: str
) -> None:
    workflow = _line(6, Step("last", _interrupts))
    _record(journal, workflow)
    journal.write(tamper, ())
    with pytest.warns(SnapshotIgnored, match=r"run r: snapshot \d+ \(after step 's4'\) is ignored"):
        snapshot, read, fast, slow = _both_ways(journal, workflow)
    assert (snapshot, read, fast) == (None, 6, slow)


def test_a_tampered_snapshot_warning_says_what_failed(journal: Journal) -> None:
    workflow = _line(6, Step("last", _interrupts))
    _record(journal, workflow)
    journal.write("UPDATE snapshots SET codec = 'pickle'", ())
    with pytest.warns(SnapshotIgnored) as caught:
        _both_ways(journal, workflow)
    assert str(caught[0].message).endswith(
        "is ignored: its codec is 'pickle', not 'adws-context-1'; the context is rebuilt"
        " from the step rows"
    )


def test_a_snapshot_whose_body_does_not_decode_is_ignored(journal: Journal) -> None:
    workflow = _line(6, Step("last", _interrupts))
    _record(journal, workflow)
    body = '{"inputs": [1'
    data = body.encode()
    journal.write(
        "UPDATE snapshots SET body = ?, size = ?, sha256 = ?",
        (body, len(data), hashlib.sha256(data).hexdigest()),
    )
    with pytest.warns(SnapshotIgnored, match="its body cannot be decoded: the inputs in the"):
        snapshot, _, fast, slow = _both_ways(journal, workflow)
    assert (snapshot, fast) == (None, slow)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(cut=st.integers(min_value=0, max_value=400), junk=st.binary(min_size=1, max_size=8))
def test_any_damage_to_a_snapshot_body_is_found_and_the_start_is_unchanged(
    tmp_path: Path, cut: int, junk: bytes
) -> None:
    folder = tmp_path / f"j{cut}-{junk.hex()}"
    folder.mkdir()
    journal = Journal(folder / "runs.db")
    workflow = _line(12, Step("last", _interrupts))
    _record(journal, workflow)
    ((body,),) = journal.query("SELECT body FROM snapshots")
    text = str(body)
    spoiled = text[:cut] + junk.decode("latin-1") + text[cut + 1 :]
    journal.write("UPDATE snapshots SET body = ?", (spoiled,))
    with pytest.warns(SnapshotIgnored):
        snapshot, _, fast, slow = _both_ways(journal, workflow)
    assert (snapshot, fast) == (None, slow)
    journal.close()


def test_a_changed_step_before_the_snapshot_is_found_as_without_one(journal: Journal) -> None:
    workflow = _line(6, Step("last", _interrupts))
    _record(journal, workflow)

    def other(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        return IOSuccess(ctx.merge_outputs({"k1": "changed"}))

    edited = Workflow("line", (workflow.steps[0], Step("s1", other), *workflow.steps[2:]))
    snapshot, read, fast, slow = _both_ways(journal, edited)
    assert (snapshot, read, fast) == (None, 6, slow)
    assert [item.action for item in fast[0]][:3] == ["kept", "changed", "kept"]


def test_a_workflow_without_the_snapshot_step_reads_every_row(journal: Journal) -> None:
    workflow = _line(6, Step("last", _interrupts))
    _record(journal, workflow)
    shorter = Workflow("line", workflow.steps[:3])
    snapshot, read, fast, slow = _both_ways(journal, shorter)
    assert (snapshot, read, fast) == (None, 6, slow)


def test_a_resume_that_runs_a_covered_step_again_does_not_use_the_snapshot(
    journal: Journal,
) -> None:
    workflow = _line(6, Step("last", _interrupts))
    current = _record(journal, workflow)
    record = journal.find("r")
    assert not isinstance(record, str)
    names = [step.name for step in workflow.steps]
    assert resume_rows(journal, record, names, current, first_rerun=4).snapshot is None
    assert resume_rows(journal, record, names, current, first_rerun=5).snapshot is not None


def test_rows_recorded_after_a_snapshot_for_steps_it_covers_make_it_stale(
    journal: Journal,
) -> None:
    workflow = _line(6, Step("last", _interrupts))
    _record(journal, workflow)
    names = [step.name for step in workflow.steps]
    record = journal.find("r")
    assert not isinstance(record, str)
    start = resume_point(names, journal.attempts("r"), record.inputs(), until="s2")
    assert start[0] == "s2"
    run_workflow(  # `--from s2`, failing at s3: the snapshot after s4 no longer stands
        Workflow("line", (*workflow.steps[:3], Step("s3", _fails), *workflow.steps[4:])),
        start[1],
        observers=[JournalObserver(journal, "fp", step_fingerprints(workflow))],
        run_id="r",
        resume_from="s2",
    )
    snapshot, read, fast, slow = _both_ways(journal, workflow)
    assert (snapshot, fast) == (None, slow)
    assert read == len(journal.attempts("r"))


def test_a_snapshot_ignores_a_row_of_a_later_step_before_it_and_adds_later_inputs(
    journal: Journal,
) -> None:
    workflow = _line(6, Step("last", _interrupts))
    _record(journal, workflow)
    journal.add_inputs("r", {"extra": 1})  # `adws resume -i extra=1` of an earlier resume
    _, _, fast, slow = _both_ways(journal, workflow)
    assert fast == slow
    assert fast[1][1].inputs["extra"] == 1


def test_prune_deletes_a_runs_snapshots_with_it(journal: Journal) -> None:
    _record(journal, _line(4, Step("last", _interrupts)))
    assert len(_snapshots(journal)) == 1
    assert prune(journal, keep=0) == 1
    assert _snapshots(journal) == []


def test_a_journal_read_without_the_snapshots_table_reads_every_row(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "runs.db")
    workflow = _line(4, Step("last", _interrupts))
    _record(journal, workflow)
    journal.write("DROP TABLE snapshots", ())
    journal.close()
    old = Journal(tmp_path / "runs.db", readonly=True)
    snapshot, read, fast, slow = _both_ways(old, workflow)
    assert (snapshot, read, fast) == (None, 4, slow)


def test_a_snapshot_plan_counts_a_covered_step_named_to_rerun_as_rerun() -> None:
    from adws.journal.records.snapshots import Snapshot  # noqa: PLC0415 - only here

    snapshot = Snapshot(1, "b", 1, 7, WorkflowContext(inputs={"a": 1, "b": 2}))
    plan = plan_resume(["a", "b", "c"], [], {"a": "1", "b": "2"}, rerun={"a"}, snapshot=snapshot)
    assert [(item.step, item.action, item.recorded) for item in plan] == [
        ("a", "rerun", "1"),
        ("b", "kept", "2"),
        ("c", "to run", None),
    ]
    started = plan_resume(["a", "b", "c"], [], {}, start="b", snapshot=snapshot)
    assert [item.action for item in started] == ["kept", "to run", "to run"]


def test_the_keeper_skips_steps_before_a_resumes_first_and_after_a_failure() -> None:
    keeper = SnapshotKeeper({}, every=1)
    ctx = WorkflowContext(inputs={"a": 1})
    keeper.statements(RunStarted("r", "w", ("a", "b", "c", "d"), ctx, first_step=2, resumed=True))
    assert keeper.statements(StepSucceeded("r", "a", 0, 4, 1, 0.0, ctx)) == []
    assert len(keeper.statements(StepSkipped("r", "c", 2, 4, "condition"))) == 2
    assert keeper.statements(StepSkipped("r", "d", 3, 4, "halted")) == []
    assert keeper.statements(StepSucceeded("r", "d", 3, 4, 1, 0.0, ctx)) == []
    finished = RunFinished("r", "w", "interrupted", None, ctx, 0.0)
    assert keeper.statements(finished) == []  # the boundary after c is kept already


LONG = """
import json, os, time
from returns.io import IOSuccess
from adws import Step, Workflow

def make(i):
    def run(ctx):
        return IOSuccess(ctx.merge_outputs({f"k{i}": [i, str(i)]}))
    return run

def wait(ctx):
    if not os.path.exists("reached"):
        open("reached", "w").close()
        time.sleep(60)  # interrupted here
    return IOSuccess(ctx.merge_outputs({"waited": True}))

def last(ctx):
    with open("final.json", "w") as out:
        json.dump(dict(ctx.inputs), out, sort_keys=True)
    return IOSuccess(ctx)

long = Workflow("long", (*(Step(f"s{i}", make(i)) for i in range(240)), Step("wait", wait),
                         Step("last", last)))
"""


@pytest.mark.slow
@pytest.mark.parametrize("snapshot", ["as kept", "forged"])
def test_a_run_interrupted_in_one_process_resumes_from_its_snapshot_in_another(
    tmp_path: Path, journal_at: str, snapshot: str
) -> None:
    if "://" not in journal_at:
        Path(journal_at).parent.mkdir()
    (tmp_path / "workflows").mkdir()
    (tmp_path / "workflows" / "long.py").write_text(LONG)
    env = {"ADWS_JOURNAL": journal_at, "PYTHONHASHSEED": "1"}
    first = start_adws(tmp_path, "run", "long", "-i", "topic=x", env=env)
    wait_for((tmp_path / "reached").exists)
    first.send_signal(signal.SIGINT)
    _, err = first.communicate(timeout=60)
    assert first.returncode == 130, err
    journal = Journal(journal_at)
    ((run_id, step, index, *_),) = _snapshots(journal)
    assert (step, index) == ("s239", 239)
    tampered = snapshot == "forged"
    if tampered:
        journal.write("UPDATE snapshots SET sha256 = 'forged'", ())
    journal.close()
    second = start_adws(
        tmp_path, "resume", str(run_id), "--json", env={**env, "PYTHONHASHSEED": "2"}
    )
    out, err = second.communicate(timeout=120)
    assert (second.returncode, json.loads(out)["status"]) == (0, "succeeded"), err
    warned = f"run {run_id}: snapshot" in err and "its sha256 does not match its body" in err
    assert warned is tampered
    final = json.loads((tmp_path / "final.json").read_text())
    assert final == {
        "topic": "x",
        "waited": True,
        **{f"k{i}": [i, str(i)] for i in range(240)},
    }


def test_a_snapshot_that_cannot_be_written_never_costs_the_runs_end(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "runs.db")

    def drops(_ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        journal.write("DROP TABLE snapshots", ())
        raise KeyboardInterrupt

    observer = JournalObserver(journal, "fp")
    run_workflow(_line(3, Step("last", drops)), observers=[observer], run_id="r")
    assert (observer.failure, observer.lost) == (None, 0)
    [run] = journal.runs()
    assert (run.status, run.failed_step) == ("interrupted", "last")


def test_a_record_listed_without_its_newest_row_reads_every_row(journal: Journal) -> None:
    workflow = _line(4, Step("last", _interrupts))
    current = _record(journal, workflow)
    [listed] = journal.runs()
    names = [step.name for step in workflow.steps]
    rows = resume_rows(journal, listed, names, current)
    assert (rows.snapshot, len(rows.attempts)) == (None, 4)


def test_a_short_failed_run_keeps_no_snapshot_and_its_resume_reads_every_row(
    journal: Journal,
) -> None:
    workflow = _line(3, Step("last", _fails))
    _record(journal, workflow)
    snapshot, read, fast, slow = _both_ways(journal, workflow)
    assert (_snapshots(journal), snapshot, read, fast) == ([], None, 3, slow)
