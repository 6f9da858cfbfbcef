"""hello, end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from returns.io import IOSuccess
from returns.unsafe import unsafe_perform_io

from adws import Workflow, WorkflowContext, run_workflow
from adws.cli import main
from adws.engine.events import RunFinished
from tests.conftest import Events
from tests.workflows.conftest import SHIPPED


def test_hello_retries_promotes_and_signs_off(shipped: dict[str, Workflow], events: Events) -> None:
    result = run_workflow(
        shipped["hello"], WorkflowContext(inputs={"name": "Ada"}), observers=[events]
    )
    assert isinstance(result, IOSuccess)
    assert dict(unsafe_perform_io(result.unwrap()).inputs) == {
        "name": "Ada",
        "greeting": "Hello, Ada!",
        "shout": "HELLO, ADA!",
        "shout_feedback": ("attempt 1/2 failed: StepException: warming up; try again",),
        "sign_off": "hello finished (ok)",
    }


def test_hello_through_the_cli(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "hello", "--workflows", str(SHIPPED), "-i", "name=Grace", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert [(s["name"], s["attempts"]) for s in summary["steps"]] == [
        ("greet", 1),
        ("shout", 2),
        ("sign_off", 1),
    ]
    assert summary["inputs"]["sign_off"] == "hello finished (ok)"


def test_hello_without_a_name_still_signs_off_with_the_failure(
    shipped: dict[str, Workflow], events: Events
) -> None:
    result = run_workflow(shipped["hello"], observers=[events])
    failure = unsafe_perform_io(result.failure())
    assert (failure.error_type, failure.message) == (
        "MissingInput",
        "workflow 'hello' needs input 'name'",
    )
    finished = events.events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.context.inputs["sign_off"] == (
        "hello finished (failed: MissingInput: workflow 'hello' needs input 'name')"
    )
