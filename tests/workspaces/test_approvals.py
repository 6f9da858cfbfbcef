"""approval_step: a run that waits for a person, and what approving or rejecting it does."""

from __future__ import annotations

import pytest

from adws import (
    PipelineError,
    RetryPolicy,
    Step,
    Workflow,
    approval_step,
    run_workflow,
    sequence,
)
from adws.engine.events import AttemptFailed, RunFinished
from adws.engine.step import default_retry_on
from adws.render import format_event, show_text
from adws.workspaces import Decision
from tests.conftest import Events, Recorder, failure, success

APPROVED = Decision("approved", "ann", "2026-01-01T00:00:00+00:00", "fine")


def workflow(recorder: Recorder) -> Workflow:
    return Workflow(
        "w",
        (
            Step("before", recorder.ok("before", branch="adws/r/x")),
            approval_step("ok", message="merge {branch}?", timeout=60),
            Step("after", recorder.ok("after")),
            Step("cleanup", recorder.ok("cleanup"), always_run=True),
        ),
    )


def test_reaching_an_approval_step_pauses_the_run_without_cleanup(
    recorder: Recorder, events: Events
) -> None:
    error = failure(run_workflow(workflow(recorder), observers=[events], run_id="r"))
    assert (error.step_name, error.error_type, error.message) == (
        "ok",
        "AwaitingApproval",
        "merge adws/r/x?",
    )
    assert dict(error.context) == {
        "message": "merge adws/r/x?",
        "timeout": 60,
        "attempts": 1,
        "feedback": (),
    }
    assert recorder.names == ["before"]  # neither `after` nor the always_run `cleanup`
    finished = events.events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.status == "waiting"
    paused = next(e for e in events.events if isinstance(e, AttemptFailed))
    assert format_event(paused) == "[2/4] ok … waiting for approval: merge adws/r/x?"
    assert format_event(finished).startswith("w waiting for approval at ok (run r): adws approve r")


def test_an_approved_run_goes_on_and_keeps_the_decision(recorder: Recorder) -> None:
    final = success(run_workflow(workflow(recorder), decisions={"ok": APPROVED}))
    assert final.inputs["ok_approval"] == {
        "verdict": "approved",
        "by": "ann",
        "at": "2026-01-01T00:00:00+00:00",
        "note": "fine",
    }
    assert recorder.names == ["before", "after", "cleanup"]


def test_a_rejected_run_runs_its_cleanup_and_fails_rejected(recorder: Recorder) -> None:
    rejected = Decision("rejected", "bob", "2026-01-01T00:00:00+00:00", "")
    error = failure(run_workflow(workflow(recorder), decisions={"ok": rejected}))
    assert (error.error_type, error.message) == ("Rejected", "rejected by bob: no reason given")
    assert error.context["decision"]["by"] == "bob"
    assert recorder.names == ["before", "cleanup"]


def test_waiting_and_rejected_are_never_retried(recorder: Recorder) -> None:
    assert not default_retry_on(PipelineError("ok", "Rejected", "no"))
    assert not default_retry_on(PipelineError("ok", "AwaitingApproval", "?"))
    step = approval_step("ok", message="go?")
    always = Step("ok", step.run, kind="approval", retry=RetryPolicy(3, retry_on=lambda _e: True))
    error = failure(run_workflow(Workflow("w", (always,))))
    assert error.context["attempts"] == 1


def test_a_message_naming_a_missing_input_fails_before_anyone_is_asked() -> None:
    error = failure(run_workflow(Workflow("w", (approval_step("ok", message="merge {branch}?"),))))
    assert error.error_type == "MissingInput"


def test_an_approval_step_inside_another_step_is_refused() -> None:
    inner = sequence("stage", [approval_step("ok", message="go?")])
    with pytest.raises(ValueError, match="approval step 'ok' is inside step 'stage'"):
        Workflow("w", (inner,))


def test_show_describes_the_wait() -> None:
    shown = show_text(Workflow("w", (approval_step("ok", message="go?", timeout=90),)))
    assert shown.splitlines()[2] == (
        "  1. ok: approval · 1 attempt · waits for a person to approve: 'go?' (rejected after 90s)"
    )


@pytest.mark.parametrize(
    ("arguments", "kind", "message"),
    [
        ({"message": 3}, TypeError, "approval_step 'ok': message must be a str, got 3"),
        ({"message": "{Who}"}, ValueError, "approval_step 'ok': the message has {Who}"),
        ({"message": "go?", "timeout": -1}, ValueError, "approval_step 'ok': timeout must be"),
    ],
)
def test_impossible_arguments_are_refused_at_definition(
    arguments: dict[str, object], kind: type[Exception], message: str
) -> None:
    with pytest.raises(kind) as raised:
        approval_step("ok", **arguments)  # type: ignore[arg-type] # wrong on purpose
    assert str(raised.value).startswith(message)
