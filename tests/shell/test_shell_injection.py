"""A value is data wherever its placeholder stands: shell templates against real shells."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adws import Workflow, WorkflowContext, run_workflow
from adws.shell._script import compile_script
from adws.shell.step import shell_step
from tests.conftest import REPO, failure, success

HOSTILE = [
    "$(touch pwned)",
    "`touch pwned`",
    "; touch pwned",
    '"; touch pwned; "',
    "'; touch pwned; '",
    "\\",
    "a\nEOF\ntouch pwned\n",
    "$HOME ${PATH} $1 $@ *",
    "--help",
    "",
]

TEMPLATES = {
    "bare": ("printf '%s' {v}", ""),
    "double quotes": ("printf '%s' \"{v}\"", ""),
    "inside a word": ("printf '%s' \"<\"{v}'>'", "<>"),
    "heredoc": ("cat <<EOF\n{v}\nEOF", "\n"),
    "heredoc with tabs": ("cat <<-EOF\n\t{v}\n\tEOF", "\n"),
    "command substitution": ("printf '%s' \"$(printf '%s' \"{v}\")\"", ""),
    "after a quoted heredoc": (
        "cat <<'EOF' >/dev/null\n$(touch x) {{v}}\nEOF\nprintf '%s' {v}",
        "",
    ),
}

text_without_nul = st.text(
    alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"), max_size=40
)


def expected(shape: str, value: str) -> str:
    wrap = TEMPLATES[shape][1]
    if shape == "inside a word":
        return f"<{value}>"
    if shape == "command substitution":
        return value.rstrip("\n")  # $(...) drops trailing newlines; that is the shell, not us
    return value + wrap


def stdout_of(template: str, value: str, cwd: Path) -> str:
    step = shell_step("s", template)
    ctx = success(
        run_workflow(Workflow("w", (step,)), WorkflowContext(inputs={"v": value, "cwd": str(cwd)}))
    )
    return str(ctx.inputs["s_stdout"])


@pytest.mark.parametrize("shape", sorted(TEMPLATES))
@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_values_come_out_byte_for_byte_and_run_nothing(
    shape: str, value: str, in_tmp: Path
) -> None:
    assert stdout_of(TEMPLATES[shape][0], value, in_tmp) == expected(shape, value)
    assert sorted(in_tmp.iterdir()) == []


@pytest.mark.slow
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(value=text_without_nul, shape=st.sampled_from(sorted(TEMPLATES)))
def test_any_text_in_any_template_shape_is_printed_exactly(
    value: str, shape: str, in_tmp: Path
) -> None:
    """Quotes, $(...), backticks, ;, newlines, any unicode: printed as given, nothing runs."""
    assert stdout_of(TEMPLATES[shape][0], value, in_tmp) == expected(shape, value)
    assert sorted(in_tmp.iterdir()) == []


@pytest.mark.slow
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=text_without_nul, shell=st.sampled_from(["sh", "bash"]))
def test_an_argv_that_starts_a_shell_gets_the_same_treatment(
    value: str, shell: str, in_tmp: Path
) -> None:
    step = shell_step("s", [shell, "-c", 'printf \'%s|\' "{v}" "$0" "$1"', "name", "{v}"])
    ctx = success(run_workflow(Workflow("w", (step,)), WorkflowContext(inputs={"v": value})))
    assert ctx.inputs["s_stdout"] == f"{value}|name|{value}|"
    assert sorted(in_tmp.iterdir()) == []


def test_the_reproduction_a_quoted_placeholder_from_the_command_line_creates_no_file(
    in_tmp: Path,
) -> None:
    (in_tmp / "workflows").mkdir()
    (in_tmp / "workflows" / "commit.py").write_text(
        "from adws import Workflow, shell_step\n"
        "workflow = Workflow('commit', (shell_step('s', 'echo \"{x}\"'),), inputs=('x',))\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-m", "adws", "run", "commit", "-i", "x=$(touch pwned)", "--no-journal"],
        capture_output=True,
        text=True,
        check=False,
        cwd=in_tmp,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 0, done.stderr
    assert not (in_tmp / "pwned").exists()


@pytest.mark.parametrize(
    ("template", "where", "fix"),
    [
        ("echo '{x}'", "inside single quotes", "use double quotes"),
        (
            "cat <<'EOF'\n{x}\nEOF",
            "in a heredoc with a quoted delimiter",
            "write the delimiter unquoted (<<EOF)",
        ),
        (
            'cat <<"EOF"\n{x}\nEOF',
            "in a heredoc with a quoted delimiter",
            "write the delimiter unquoted (<<EOF)",
        ),
        (
            "cat <<\\EOF\n{x}\nEOF",
            "in a heredoc with a quoted delimiter",
            "write the delimiter unquoted (<<EOF)",
        ),
        ("echo `echo {x}`", "inside backticks", "use $(...) instead"),
        ('echo "`echo {x}`"', "inside backticks", "use $(...) instead"),
        ("echo $(( {x} + 1 ))", "inside $((...))", "pass it to a command instead"),
        ("echo ${x}", "right after a $", "write {x} without a $ in front: adws expands it"),
        ("echo \\{x}", "right after a backslash", "remove it"),
        ("echo $'{x}'", "inside $'...'", "use double quotes"),
        ("echo $(echo '{x}')", "inside single quotes", "use double quotes"),
        ("echo 'a'\"'\"'{x}'", "inside single quotes", "use double quotes"),
    ],
)
def test_a_placeholder_the_shell_cannot_expand_safely_is_refused_at_definition(
    template: str, where: str, fix: str
) -> None:
    with pytest.raises(ValueError, match="placeholder") as raised:
        shell_step("commit", template)
    assert str(raised.value).startswith(f"step 'commit': placeholder {{x}} is {where}, ")
    assert str(raised.value).endswith(f"{fix})")


def test_an_argv_shell_without_arguments_after_its_script_gets_the_values_from_one(
    in_tmp: Path,
) -> None:
    step = shell_step("s", ["bash", "-e", "-c", 'printf \'%s|\' "$0" "{v}"'])
    ctx = success(run_workflow(Workflow("w", (step,)), WorkflowContext(inputs={"v": "$(x)"})))
    assert ctx.inputs["s_stdout"] == "bash|$(x)|"


def test_an_argv_shell_without_c_is_plain_argv(in_tmp: Path) -> None:
    step = shell_step("s", ["sh", "-e", "/dev/null", "{v}"])
    ctx = success(run_workflow(Workflow("w", (step,)), WorkflowContext(inputs={"v": "$(touch x)"})))
    assert (ctx.inputs["s_returncode"], sorted(in_tmp.iterdir())) == (0, [])


def test_an_argv_shell_script_is_checked_too() -> None:
    with pytest.raises(ValueError, match="inside single quotes"):
        shell_step("s", ["bash", "-o", "pipefail", "-ec", "echo '{x}'"])


@pytest.mark.parametrize(
    ("template", "script"),
    [
        ("echo {a} {b} {a}", 'echo "${1}" "${2}" "${1}"'),
        ('echo "{a}-{b}"', 'echo "${1}-${2}"'),
        ("echo {{literal}} {a}", 'echo {literal} "${1}"'),
        ("f() { echo {a}; }\nf", 'f() { echo "${1}"; }\nf'),
        ("echo \\'{a}", 'echo \\\'"${1}"'),
        ("echo $(( 1 + 2 )) {a}", 'echo $(( 1 + 2 )) "${1}"'),
        ("echo $(echo (x)) {a}", 'echo $(echo (x)) "${1}"'),
        ("cat <<A <<B\n{a}\nA\n{b}\nB\necho {a}", 'cat <<A <<B\n${1}\nA\n${2}\nB\necho "${1}"'),
        ("echo x # a comment about {a}", "echo x # a comment about ${1}"),
        ("echo x#{a}", 'echo x#"${1}"'),
        ("echo $'it\\'s' {a}", "echo $'it\\'s' \"${1}\""),
        ("cat <<<{a}", 'cat <<<"${1}"'),
        ("echo \\\n{a}", 'echo \\\n"${1}"'),
        ("echo x # {a}\necho {a}", 'echo x # ${1}\necho "${1}"'),
        ('echo "a\n{a}"', 'echo "a\n${1}"'),
        ("echo `date` `echo \\`` {a}", 'echo `date` `echo \\`` "${1}"'),
    ],
)
def test_each_placeholder_becomes_the_expansion_its_context_needs(
    template: str, script: str
) -> None:
    """Values move into private variables first (`_adws_N=$N`), then the script uses those."""
    count = len(set(re.findall(r"\$\{(\d)\}", script)))
    copies = " ".join(f"_adws_{n}=${n}" for n in range(1, count + 1))
    private = re.sub(r"\$\{(\d)\}", r"${_adws_\1}", script)
    assert compile_script(template, step_name="s").script == f"{copies}; shift {count}; {private}"


def test_script_from_runs_the_users_script_as_written(in_tmp: Path) -> None:
    step = shell_step("checks", script_from="check_command")
    workflow = Workflow("w", (step,), inputs=("check_command",))
    ctx = success(
        run_workflow(workflow, WorkflowContext(inputs={"check_command": "echo a; echo b >&2"}))
    )
    assert (ctx.inputs["checks_stdout"], ctx.inputs["checks_stderr"]) == ("a\n", "b\n")
    error = failure(run_workflow(workflow, WorkflowContext(inputs={"check_command": "exit 4"})))
    assert error.message == "`exit 4` exited with 4 and printed nothing"


def test_script_from_must_name_a_declared_input() -> None:
    with pytest.raises(ValueError, match="must be one of the workflow's inputs") as raised:
        Workflow("w", (shell_step("checks", script_from="check_command"),))
    assert str(raised.value) == (
        "workflow 'w': step 'checks' runs the script in input 'check_command', which must be "
        "one of the workflow's inputs (add inputs=('check_command', ...)) so that only the "
        "user, never a step, chooses it (or, for a script an earlier step writes, say "
        "allow_generated=True)"
    )


def test_a_step_that_writes_the_script_input_is_a_collision() -> None:
    from returns.io import IOSuccess  # noqa: PLC0415 - only this test builds a step by hand

    from adws import Step  # noqa: PLC0415 - as above

    def forge(ctx: WorkflowContext) -> IOSuccess[WorkflowContext]:
        return IOSuccess(ctx.merge_outputs({"check_command": "touch pwned"}))

    workflow = Workflow(
        "w",
        (Step("agent", forge), shell_step("checks", script_from="check_command")),
        inputs=("check_command",),
    )
    error = failure(run_workflow(workflow, WorkflowContext(inputs={"check_command": "true"})))
    assert (error.step_name, error.error_type) == ("agent", "ContextCollision")


def test_script_from_without_the_input_is_a_missing_input() -> None:
    step = shell_step("checks", script_from="check_command")
    error = failure(step.run(WorkflowContext()))
    assert error.message == (
        "the script of step 'checks' needs input 'check_command'; inputs available: none"
    )


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({}, ValueError, "shell_step 's': give either a command or script_from=INPUT, not both"),
        (
            {"command": "x", "script_from": "y"},
            ValueError,
            "shell_step 's': give either a command or script_from=INPUT, not both",
        ),
        (
            {"command": []},
            ValueError,
            "shell_step 's': an argv command must be a non-empty list of strings",
        ),
        (
            {"command": ["a", 1]},
            ValueError,
            "shell_step 's': an argv command must be a non-empty list of strings",
        ),
        (
            {"command": "x", "max_output_bytes": 0},
            ValueError,
            "shell_step 's': max_output_bytes must be an int >= 1, got 0",
        ),
        (
            {"command": "x", "max_output_bytes": True},
            TypeError,
            "shell_step 's': max_output_bytes must be an int >= 1, got True",
        ),
        (
            {"command": "x", "timeout": "5"},
            TypeError,
            "shell_step 's': timeout must be a finite number >= 0.0 or None, got '5'",
        ),
        ({"command": "x", "cwd": 3}, TypeError, "shell_step 's': cwd must be a str or None, got 3"),
    ],
)
def test_impossible_shell_steps_are_refused_at_definition(
    kwargs: dict[str, object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as raised:
        shell_step("s", **kwargs)  # type: ignore[arg-type] # wrong on purpose
    assert str(raised.value) == message


WRAPPED = [
    ["bash", "--rcfile", "/dev/null", "-c", "printf '%s' {v}"],
    ["bash", "--init-file", "/dev/null", "-c", "printf '%s' {v}"],
    ["bash", "--norc", "--noprofile", "-c", "printf '%s' {v}"],
    ["bash", "-O", "extglob", "-eo", "pipefail", "-c", "printf '%s' {v}"],
    ["bash", "-ceo", "pipefail", "printf '%s' {v}"],
    ["sh", "+e", "-c", "printf '%s' {v}"],
    ["dash", "-e", "-c", "printf '%s' {v}"],
    ["env", "bash", "-c", "printf '%s' {v}"],
    ["env", "-i", "-u", "HOME", "PATH=/usr/bin:/bin", "LANG=C", "sh", "-c", "printf '%s' {v}"],
    ["/usr/bin/env", "--chdir=.", "sh", "-c", "printf '%s' {v}"],
    ["timeout", "10", "sh", "-c", "printf '%s' {v}"],
    ["timeout", "-s", "KILL", "--kill-after=5", "10", "bash", "-c", "printf '%s' {v}"],
    ["nice", "-n", "5", "sh", "-c", "printf '%s' {v}"],
    ["nice", "-5", "sh", "-c", "printf '%s' {v}"],
    ["nohup", "sh", "-c", "printf '%s' {v}"],
    ["stdbuf", "-oL", "-e", "0", "sh", "-c", "printf '%s' {v}"],
    ["setsid", "-w", "sh", "-c", "printf '%s' {v}"],
    ["env", "timeout", "10", "nice", "sh", "-c", "printf '%s' {v}"],
]


@pytest.mark.parametrize("argv", WRAPPED, ids=[" ".join(argv[:4]) for argv in WRAPPED])
def test_a_shell_behind_options_or_wrappers_still_gets_its_values_as_data(
    argv: list[str], in_tmp: Path
) -> None:
    step = shell_step("s", argv)
    value = "$(touch pwned) `touch pwned`"
    ctx = success(run_workflow(Workflow("w", (step,)), WorkflowContext(inputs={"v": value})))
    assert (ctx.inputs["s_stdout"], sorted(in_tmp.iterdir())) == (value, [])


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (["bash", "--frobnicate", "-c", "echo {x}"], "option '--frobnicate' of 'bash'"),
        (["env", "-S", "sh -c", "echo {x}"], "option '-S' of 'env'"),
        (["timeout", "--weird", "10", "sh", "-c", "echo {x}"], "option '--weird' of 'timeout'"),
    ],
)
def test_an_argv_whose_script_cannot_be_located_is_refused_at_definition(
    argv: list[str], problem: str
) -> None:
    with pytest.raises(ValueError, match="cannot tell where the script starts") as raised:
        shell_step("s", argv)
    assert f"({problem} is not one adws knows)" in str(raised.value)


def test_an_unknown_option_is_fine_when_no_value_goes_into_the_command(in_tmp: Path) -> None:
    step = shell_step("s", ["bash", "--frobnicate", "-c", "echo {{x}}"])
    assert step.name == "s"


def test_the_scripts_own_positional_parameters_are_its_own(in_tmp: Path) -> None:
    """A value reaches its placeholder, whatever the script does with $1, $@, $# and set --."""
    said = shell_step("say", 'set -- first; printf "%s|%s|%s" "${1}" "{name}" "$#"')
    counted = shell_step("count", 'printf "%s|%s|%s" "$#" "$@" {name}')
    argv = shell_step("argv", ["bash", "-c", 'printf "%s|" "$0" "$1" "$#" "{name}"', "me", "mine"])
    ctx = success(
        run_workflow(Workflow("w", (said, counted, argv)), WorkflowContext(inputs={"name": "n"}))
    )
    assert (ctx.inputs["say_stdout"], ctx.inputs["count_stdout"], ctx.inputs["argv_stdout"]) == (
        "first|n|1",
        "0|n|",
        "me|mine|1|n|",
    )


COMMON_OPTIONS = [["-e"], ["-u"], ["+e"], ["-o", "errexit"], ["-eo", "nounset"]]
BASH_OPTIONS = [
    ["-o", "pipefail"],
    ["+o", "posix"],
    ["-O", "extglob"],
    ["--norc"],
    ["--rcfile", "/dev/null"],
]
AVAILABLE = [shell for shell in ("sh", "bash", "dash") if shutil.which(shell)]


@st.composite
def shell_argvs(draw: st.DrawFn) -> list[str]:
    """Draw wrappers, a shell, its options in any order with -c among them, before the script."""
    wrappers = draw(
        st.lists(
            st.sampled_from([["env"], ["env", "LC_ALL=C"], ["timeout", "30"], ["nice"], ["nohup"]]),
            max_size=2,
        )
    )
    shell = draw(st.sampled_from(AVAILABLE))
    choices = COMMON_OPTIONS + (BASH_OPTIONS if shell == "bash" else [])
    options = draw(st.lists(st.sampled_from(choices), max_size=3))
    long_options = [group for group in options if group[0].startswith("--")]
    short = [group for group in options if not group[0].startswith("--")]
    short.insert(draw(st.integers(0, len(short))), ["-c"])
    flags = [part for group in (*long_options, *short) for part in group]
    return [*(part for wrapper in wrappers for part in wrapper), shell, *flags]


@pytest.mark.slow
@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(argv=shell_argvs(), value=text_without_nul)
def test_any_shell_argv_in_any_option_order_runs_no_value_as_code(
    in_tmp: Path, argv: list[str], value: str
) -> None:
    step = shell_step("s", [*argv, "printf '%s' {v}"])
    ctx = success(run_workflow(Workflow("w", (step,)), WorkflowContext(inputs={"v": value})))
    assert (ctx.inputs["s_stdout"], sorted(in_tmp.iterdir())) == (value, [])


@pytest.mark.parametrize(
    "argv",
    [
        ["env", "--", "sh", "-c", "printf '%s' {v}"],
        ["sh", "-c", "--", "printf '%s' {v}"],
        ["bash", "-c", "-", "printf '%s' {v}"],
    ],
)
def test_the_end_of_options_is_read_as_the_programs_read_it(argv: list[str], in_tmp: Path) -> None:
    step = shell_step("s", argv)
    value = "$(touch pwned)"
    ctx = success(run_workflow(Workflow("w", (step,)), WorkflowContext(inputs={"v": value})))
    assert (ctx.inputs["s_stdout"], sorted(in_tmp.iterdir())) == (value, [])


def test_wrappers_with_no_command_run_no_script() -> None:
    from adws.shell._argv import locate_script  # noqa: PLC0415 - the one test of it alone

    assert (locate_script(("env",)), locate_script(("timeout", "10"))) == (None, None)
