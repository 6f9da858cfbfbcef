"""Faults stay values: exits raised by user code, broken retry_on, sleeps, empty workflows."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest
from returns.io import IOResult, IOSuccess

from adws import (
    PipelineError,
    RetryPolicy,
    Step,
    Workflow,
    WorkflowContext,
    run_workflow,
    with_verification,
)
from adws.cli import main
from adws.engine.executor import current_sleep
from adws.journal import Journal
from tests.conftest import REPO, Events, FakeSleep, Recorder, failure, success

if TYPE_CHECKING:
    from pathlib import Path


class Quit(BaseException):
    """A custom BaseException, as a library might raise."""


def keep(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
    return IOSuccess(ctx)


@pytest.mark.parametrize(
    ("raised", "code"), [(SystemExit(0), 0), (SystemExit("usage"), "usage"), (Quit("bye"), None)]
)
def test_an_exit_raised_by_a_step_is_a_step_exception_and_cleanup_runs(
    raised: BaseException, code: object, recorder: Recorder
) -> None:
    def run(_ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        raise raised

    workflow = Workflow(
        "w", (Step("parse", run), Step("cleanup", recorder.ok("cleanup"), always_run=True))
    )
    error = failure(run_workflow(workflow))
    assert (error.step_name, error.error_type) == ("parse", "StepException")
    assert error.message == f"step 'parse' raised {type(raised).__name__}: {raised}"
    assert error.context.get("exit_code") == code
    assert recorder.names == ["cleanup"]
    seen = recorder.seen("cleanup")[0].failure
    assert seen is not None
    assert (seen.step_name, seen.message) == ("parse", error.message)


def test_an_exit_in_a_condition_is_a_step_exception() -> None:
    def when(_ctx: WorkflowContext) -> bool:
        raise SystemExit(2)

    error = failure(run_workflow(Workflow("w", (Step("s", keep, when=when),))))
    assert (error.error_type, error.message, error.context["exit_code"]) == (
        "StepException",
        "the condition of step 's' raised SystemExit: 2",
        2,
    )


def test_a_retry_on_that_raises_ends_the_retries_naming_it_and_keeping_the_error(
    recorder: Recorder,
) -> None:
    def picky(_error: PipelineError) -> bool:
        raise SystemExit(0)

    step = Step("b", recorder.fail("b"), retry=RetryPolicy(3, retry_on=picky))
    error = failure(run_workflow(Workflow("w", (step,))))
    assert recorder.names == ["b"]
    assert (error.step_name, error.error_type) == ("b", "StepException")
    assert error.message == (
        "the retry_on test_a_retry_on_that_raises_ends_the_retries_naming_it_and_keeping_the_error"
        ".<locals>.picky of step 'b' raised SystemExit: 0"
    )
    assert error.context["error"] == {
        "step_name": "b",
        "error_type": "ShellFailed",
        "message": "b broke",
        "context": {},
    }
    assert error.context["attempts"] == 1


def test_an_observer_that_exits_is_detached_and_the_run_goes_on(events: Events) -> None:
    def quitter(_event: object) -> None:
        raise SystemExit(0)

    ctx = success(run_workflow(Workflow("w", (Step("s", keep),)), observers=[quitter, events]))
    assert ctx == WorkflowContext()
    assert events.kinds()[0] == "ObserverFailed"


def test_ctrl_c_inside_a_step_is_not_swallowed_as_an_exception(recorder: Recorder) -> None:
    def interrupted(_ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        raise KeyboardInterrupt

    workflow = Workflow("w", (Step("a", interrupted), Step("z", recorder.ok("z"), always_run=True)))
    error = failure(run_workflow(workflow))
    assert (error.error_type, error.message) == ("Interrupted", "interrupted by Ctrl-C")
    assert recorder.names == ["z"]


def test_the_injected_sleep_reaches_retries_inside_with_verification(fake_sleep: FakeSleep) -> None:
    rec = Recorder()
    main_step = Step("main", rec.fail("main", times=2, made=1), retry=RetryPolicy(3, delay=7))
    verify = Step("verify", rec.ok("verify"))
    combined = with_verification(main_step, verify)
    success(run_workflow(Workflow("w", (combined,)), sleep=fake_sleep))
    assert fake_sleep.calls == [7.0, 14.0]
    assert current_sleep() is not fake_sleep


def test_an_empty_workflow_is_the_identity() -> None:
    ctx = WorkflowContext(inputs={"a": 1}, outputs={"b": 2}, feedback=("f",))
    assert success(run_workflow(Workflow("nothing", ()), ctx)) is ctx


def test_an_empty_workflow_is_listed_as_having_no_steps(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (in_tmp / "workflows").mkdir()
    (in_tmp / "workflows" / "nothing.py").write_text(
        "from adws import Workflow\nworkflow = Workflow('nothing', (), description='Does nothing.')\n"
        "bare = Workflow('bare', ())\n",
        encoding="utf-8",
    )
    assert main(["list"]) == 0
    assert capsys.readouterr().out == "bare     (no steps)\nnothing  Does nothing. (no steps)\n"
    assert main(["run", "nothing", "--json", "-q"]) == 0


def test_sys_exit_in_a_step_fails_the_cli_run_with_json_and_a_recorded_failure(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (in_tmp / "workflows").mkdir()
    (in_tmp / "workflows" / "argv.py").write_text(
        "import sys\nfrom pathlib import Path\nfrom returns.io import IOSuccess\nfrom adws import Step, Workflow\n"
        "def parse(ctx):\n    sys.exit(0)\n"
        "def cleanup(ctx):\n    Path('cleaned').write_text(str(ctx.failure))\n    return IOSuccess(ctx)\n"
        "workflow = Workflow('argv', (Step('parse', parse), Step('cleanup', cleanup, always_run=True)))\n",
        encoding="utf-8",
    )
    import json  # noqa: PLC0415 - only this test reads JSON

    assert main(["run", "argv", "--json", "-q"]) == 1
    payload = json.loads(capsys.readouterr().out)
    assert (payload["status"], payload["error"]["context"]["exit_code"]) == ("failed", 0)
    assert (
        in_tmp / "cleaned"
    ).read_text() == "parse: StepException: step 'parse' raised SystemExit: 0"
    [run] = Journal(in_tmp / ".adws" / "runs.db").runs()
    assert run.status == "failed"


def test_from_adws_import_agent_step_is_the_function_however_adws_was_imported() -> None:
    """No module shadows the function: `adws.agent_step` is the function, not a module."""
    script = (
        "import adws.agents.step, adws.engine.concurrency, adws.engine.combinators\n"
        "from adws import agent_step, ScriptedAgent, Step\n"
        "import adws\n"
        "step = agent_step('a', prompt='p', agent=ScriptedAgent([]))\n"
        "print(type(step).__name__, adws.agent_step is adws.agents.step.agent_step)\n"
        "try:\n"
        "    import adws.agent_step\n"
        "except ModuleNotFoundError as exc:\n"
        "    print(exc.name)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert (done.returncode, done.stdout) == (0, "Step True\nadws.agent_step\n"), done.stderr
