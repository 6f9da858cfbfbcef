"""The shipped failure parsers, on what real pytest, ruff and mypy print."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from returns.io import IOSuccess
from returns.unsafe import unsafe_perform_io

from adws import Step, Workflow, WorkflowContext, run_workflow, shell_step
from adws.shell.failures import (
    CommandOutput,
    exit_status,
    failures_of,
    junit,
    mypy,
    passes_of,
    ruff,
)
from adws.shell.failures import (
    pytest as pytest_parser,
)
from adws.shell.step import ShellSpec
from tests.conftest import failure, success

TESTS = (
    "import pytest\n\n\ndef test_a():\n    assert 1 == 2\n\n\n"
    "@pytest.mark.parametrize('x', [1, 2])\ndef test_p(x):\n    assert x == 1\n\n\n"
    "class TestC:\n    def test_m(self):\n        assert 0\n"
)


def ran(tmp_path: Path, *argv: str) -> CommandOutput:
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}  # -rf would hide errors
    done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
    return CommandOutput(done.stdout, done.stderr, done.returncode, str(tmp_path))


def test_pytest_failures_are_named_by_node_id(tmp_path: Path) -> None:
    (tmp_path / "test_b.py").write_text(TESTS)
    output = ran(tmp_path, sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider")
    assert sorted(pytest_parser(output)) == [
        "test_b.py::TestC::test_m",
        "test_b.py::test_a",
        "test_b.py::test_p[2]",
    ]
    assert pytest_parser(output)["test_b.py::test_a"] == "FAILED test_b.py::test_a - assert 1 == 2"
    (tmp_path / "test_broken.py").write_text("import nowhere_at_all\n")
    output = ran(tmp_path, sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider")
    assert sorted(pytest_parser(output)) == ["test_broken.py"]


def test_junit_failures_are_named_by_class_and_test(tmp_path: Path) -> None:
    (tmp_path / "test_b.py").write_text(TESTS)
    argv = (sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--junitxml=r.xml")
    found = junit("r.xml")(ran(tmp_path, *argv))
    assert found == {
        "test_b::test_a": "FAILURE test_b::test_a - assert 1 == 2",
        "test_b::test_p[2]": "FAILURE test_b::test_p[2] - assert 2 == 1",
        "test_b.TestC::test_m": "FAILURE test_b.TestC::test_m - assert 0",
    }
    assert junit.__name__ == "junit"
    assert junit("r.xml").__name__ == "junit('r.xml')"


def test_a_junit_report_that_is_missing_or_broken_names_nothing(tmp_path: Path) -> None:
    output = CommandOutput("", "", 1, str(tmp_path))
    assert junit("missing.xml")(output) == {}
    (tmp_path / "bad.xml").write_text("<testsuite><testcase")
    assert junit("bad.xml")(output) == {}
    (tmp_path / "err.xml").write_text('<s><testcase classname="c" name="t"><error/></testcase></s>')
    assert junit("err.xml")(output) == {"c::t": "ERROR c::t -"}


def test_ruff_findings_are_named_without_line_numbers_in_both_formats(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("import os\n")
    ruff_bin = str(Path(sys.executable).with_name("ruff"))
    base = (ruff_bin, "check", "--no-cache", "--isolated", "--select", "F401", "a.py")
    expected = ["a.py: F401 `os` imported but unused"]
    assert sorted(ruff(ran(tmp_path, *base))) == expected
    assert sorted(ruff(ran(tmp_path, *base, "--output-format=concise"))) == expected


def test_mypy_errors_are_named_without_line_numbers(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text('x: int = "a"\n')
    output = ran(tmp_path, sys.executable, "-m", "mypy", "--no-incremental", "a.py")
    assert list(mypy(output)) == [
        (
            'a.py: Incompatible types in assignment (expression has type "str", variable has type'
            ' "int")  [assignment]'
        )
    ]


def test_a_parser_that_finds_nothing_falls_back_to_the_exit_status() -> None:
    assert failures_of(pytest_parser, CommandOutput("", "", 4)) == {"exit status": "exited with 4"}
    assert exit_status(CommandOutput("out", "", 1)) == {"exit status": "exited with 1: out"}


def test_a_failing_shell_step_carries_its_failures_and_a_passing_one_none(tmp_path: Path) -> None:
    (tmp_path / "test_b.py").write_text("def test_a():\n    assert 0\n")
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    step = shell_step("checks", argv, cwd=str(tmp_path), failures="pytest")
    error = failure(run_workflow(Workflow("w", (step,))))
    assert error.context["failures"] == ("test_b.py::test_a",)
    assert dict(error.context["failure_details"]) == {
        "test_b.py::test_a": "FAILED test_b.py::test_a - assert 0"
    }
    passing = shell_step("ok", ["true"], failures=exit_status)
    assert success(run_workflow(Workflow("w", (passing,)))).inputs["ok_failures"] == ()
    assert passing.spec == ShellSpec(("true",), None, None, failures="exit_status")


def test_an_unknown_parser_name_is_refused_naming_the_choices() -> None:
    with pytest.raises(
        ValueError,
        match=r"failures='jest' is no parser adws ships; give one of 'auto', 'exit_status', 'mypy', 'pytest', 'ruff'",
    ):
        shell_step("checks", "make check", failures="jest")


def test_a_step_without_a_parser_is_unchanged() -> None:
    step = shell_step("ok", ["true"])
    assert isinstance(step.spec, ShellSpec)
    assert step.spec.failures is None
    assert isinstance(run_workflow(Workflow("w", (step,))), IOSuccess)
    assert isinstance(step, Step)


def test_pytest_and_junit_list_what_passed_when_asked(tmp_path: Path) -> None:
    (tmp_path / "test_b.py").write_text(TESTS)
    argv = (sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--junitxml=r.xml")
    plain = ran(tmp_path, *argv)
    listed = ran(tmp_path, *argv, "-rA")
    verbose = ran(tmp_path, sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider")
    assert (passes_of(pytest_parser, plain), passes_of(pytest_parser, listed)) == (
        None,  # pytest -q counts passes but names none
        ["test_b.py::test_p[1]"],
    )
    assert passes_of(pytest_parser, verbose) == ["test_b.py::test_p[1]"]
    assert passes_of(junit("r.xml"), plain) == ["test_b::test_p[1]"]
    assert passes_of(ruff, plain) is None  # a parser that cannot list passes
    assert passes_of(pytest_parser, CommandOutput("make: *** [check] Error 2", "", 2)) is None


def test_a_failure_the_parser_cannot_name_says_so_and_a_success_lists_its_passes(
    tmp_path: Path,
) -> None:
    (tmp_path / "test_b.py").write_text("def test_ok():\n    pass\n")
    checks = shell_step(
        "checks",
        [sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider"],
        failures="pytest",
        cwd=str(tmp_path),
    )
    done = unsafe_perform_io(checks.run(WorkflowContext()).unwrap())
    assert done.outputs["checks_passed"] == ("test_b.py::test_ok",)
    crash = shell_step("crash", "echo boom; exit 3", failures="pytest")
    error = unsafe_perform_io(crash.run(WorkflowContext()).failure())
    assert (error.context["failures"], error.context["unnamed"]) == (("exit status",), True)
    assert "passed" not in error.context  # not pytest's output: nothing said what passed
