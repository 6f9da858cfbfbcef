"""shell_step against real processes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from returns.io import IOFailure, IOResult, IOSuccess
from returns.unsafe import unsafe_perform_io

from adws import PipelineError, Step, Workflow, WorkflowContext, run_workflow
from adws.shell.step import ShellSpec, shell_step


def run(step_inputs: dict[str, object], *steps: Step) -> IOResult[WorkflowContext, PipelineError]:
    return run_workflow(Workflow("w", steps), WorkflowContext(inputs=step_inputs))


def final(result: IOResult[WorkflowContext, PipelineError]) -> dict[str, object]:
    assert isinstance(result, IOSuccess)
    return dict(unsafe_perform_io(result.unwrap()).inputs)


def failure(result: IOResult[WorkflowContext, PipelineError]) -> PipelineError:
    assert isinstance(result, IOFailure)
    error: PipelineError = unsafe_perform_io(result.failure())
    return error


def test_a_string_command_runs_under_sh_and_records_its_output() -> None:
    inputs = final(run({"who": "world"}, shell_step("greet", "echo hello {who}; echo warn >&2")))
    assert inputs == {
        "who": "world",
        "greet_stdout": "hello world\n",
        "greet_stderr": "warn\n",
        "greet_returncode": 0,
    }


@pytest.mark.parametrize(
    "hostile", ["$(touch pwned)", "; touch pwned", "`touch pwned`", "x' ; touch pwned; '", "a\nb"]
)
def test_substituted_values_arrive_as_literal_text(
    hostile: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    inputs = final(run({"v": hostile}, shell_step("echo", "printf '%s' {v}")))
    assert inputs["echo_stdout"] == hostile
    assert not (tmp_path / "pwned").exists()


def test_an_argv_list_runs_without_a_shell(tmp_path: Path) -> None:
    step = shell_step(
        "py", [sys.executable, "-c", "import sys; print(sys.argv[1])", "{arg}"], cwd="{where}"
    )
    inputs = final(run({"arg": "$(not expanded)", "where": str(tmp_path)}, step))
    assert inputs["py_stdout"] == "$(not expanded)\n"


def test_a_non_zero_exit_is_shell_failed_with_the_output_tail() -> None:
    error = failure(run({}, shell_step("checks", "echo 'FAILED test_x'; echo oops >&2; exit 3")))
    assert (error.step_name, error.error_type) == ("checks", "ShellFailed")
    assert error.message == (
        "`echo 'FAILED test_x'; echo oops >&2; exit 3` exited with 3:\nFAILED test_x\noops"
    )
    assert (
        error.context["returncode"],
        error.context["stdout_tail"],
        error.context["stderr_tail"],
    ) == (3, "FAILED test_x\n", "oops\n")


def test_a_silent_failure_says_there_was_no_output() -> None:
    assert (
        failure(run({}, shell_step("f", ["false"]))).message
        == "`false` exited with 1 and printed nothing"
    )


def test_a_missing_binary_is_shell_failed() -> None:
    error = failure(run({}, shell_step("tool", ["no-such-tool-here"])))
    assert (
        error.message
        == "could not run `no-such-tool-here`: no-such-tool-here: No such file or directory"
    )


def test_a_missing_cwd_is_named_as_a_folder_not_a_program(tmp_path: Path) -> None:
    missing = tmp_path / "x" / "y"
    step = shell_step("tool", ["true"], cwd="{where}")
    error = failure(run({"where": str(missing)}, step))
    assert (error.step_name, error.error_type, error.message) == (
        "tool",
        "ShellFailed",
        f"could not run `true`: working folder {missing} does not exist",
    )


@pytest.mark.slow
def test_a_timeout_kills_the_group_and_is_a_timeout() -> None:
    error = failure(run({}, shell_step("slow", "sleep 30", timeout=0.2)))
    assert (error.error_type, error.message) == (
        "Timeout",
        "`sleep 30` ran past its 0.2s timeout and was killed",
    )


def test_a_missing_input_is_named_before_anything_runs(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    error = failure(run({"a": 1}, shell_step("s", f"touch {marker} {{nope}}")))
    assert (error.error_type, error.message) == (
        "MissingInput",
        "the command of step 's' needs input 'nope'; inputs available: a",
    )
    assert not marker.exists()
    error = failure(run({}, shell_step("s", ["echo", "{x}", "{y}", "{x}"])))
    assert error.context["missing"] == ("x", "y")
    error = failure(run({}, shell_step("s", ["true"], cwd="{dir}")))
    assert error.message == "the cwd of step 's' needs input 'dir'; inputs available: none"


def test_the_spec_describes_the_step() -> None:
    step = shell_step("s", ["make", "check"], timeout=5, cwd="/tmp")
    assert (step.kind, step.spec) == ("shell", ShellSpec(("make", "check"), 5, "/tmp"))


def test_a_field_of_an_agents_json_goes_into_a_command_as_data(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    step = shell_step(
        "apply", 'echo "{triage_json.label}" > out/{issue_id}.label', cwd=str(tmp_path)
    )
    triage = {"label": "bug; rm -rf ~ $(whoami)", "score": [3]}
    final(run({"triage_json": triage, "issue_id": 7}, step))
    assert (tmp_path / "out" / "7.label").read_text() == "bug; rm -rf ~ $(whoami)\n"


def test_a_misspelt_field_fails_naming_the_path_before_anything_runs(tmp_path: Path) -> None:
    step = shell_step("apply", "touch {triage_json.lable}", cwd=str(tmp_path))
    error = failure(run({"triage_json": {"label": "bug"}}, step))
    assert error.error_type == "MissingInput"
    assert error.message == (
        "the command of step 'apply' needs {triage_json.lable}: triage_json has no field"
        " 'lable' (it has: label); inputs available: triage_json"
    )
    assert list(tmp_path.iterdir()) == []


def test_argv_parts_and_the_cwd_read_paths_too(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    step = shell_step("s", ["sh", "-c", 'pwd; echo "$1"', "sh", "{p.names[1]}"], cwd="{p.dir}")
    outputs = final(run({"p": {"names": ["a", "b c"], "dir": str(tmp_path / "sub")}}, step))
    assert outputs["s_stdout"] == f"{tmp_path / 'sub'}\nb c\n"
    plain = shell_step("t", [sys.executable, "-c", "import sys; print(sys.argv[1])", "{p.x}"])
    assert final(run({"p": {"x": "{y}"}}, plain))["t_stdout"] == "{y}\n"


@pytest.mark.parametrize(
    "command",
    [
        "echo {Nope}",
        ["echo", "{a..b}"],
        ["sh", "-c", "echo {x[}"],
    ],
)
def test_a_brace_typo_in_a_command_does_not_load(command: str | list[str]) -> None:
    with pytest.raises(ValueError, match=r"which looks like a placeholder but is not one"):
        shell_step("s", command)


def test_the_shells_own_braces_stay_the_shells() -> None:
    step = shell_step("s", 'X=1; echo "${HOME:+home}" ${X} {{literal}} "${9-none}" {v}')
    assert final(run({"v": "value"}, step))["s_stdout"] == "home 1 {literal} none value\n"


@pytest.mark.parametrize("command", ["echo ${x}", 'echo "${x.y}"'])
def test_a_placeholder_right_after_a_dollar_is_still_refused(command: str) -> None:
    with pytest.raises(ValueError, match=r"is right after a \$"):
        shell_step("s", command)


@pytest.mark.parametrize(
    "command", ["{x}", "  {script} ", ["sh", "-c", "{x}"], ["bash", "-ec", "{x.y}"]]
)
def test_a_script_that_is_one_placeholder_is_refused_pointing_to_script_from(
    command: str | list[str],
) -> None:
    with pytest.raises(ValueError, match=r"whose value would run as a command name") as raised:
        shell_step("verify", command)
    assert "shell_step(name, script_from=KEY)" in str(raised.value)
    assert "allow_generated=True" in str(raised.value)
