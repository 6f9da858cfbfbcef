"""A shell behind any wrapper adws knows gets its values as data; behind any other, it is refused."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adws import Workflow, WorkflowContext, run_workflow
from adws.shell._argv import locate_script
from adws.shell.step import shell_step
from tests.conftest import success
from tests.shell.test_shell_injection import text_without_nul

HOSTILE = "$(touch pwned) `touch pwned`; touch pwned"
ROOT = os.geteuid() == 0
UNSHARE = (
    subprocess.run(["unshare", "-r", "true"], check=False, capture_output=True).returncode == 0
)


@pytest.fixture
def lock(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A lock file outside the test's working folder, which must stay empty."""
    return str(tmp_path_factory.mktemp("locks") / "lock")


def printed(argv: list[str], value: str) -> str:
    step = shell_step("s", argv)
    ctx = success(run_workflow(Workflow("w", (step,)), WorkflowContext(inputs={"v": value})))
    return str(ctx.inputs["s_stdout"])


CHAIN = ["env", "-i", "PATH=/usr/bin:/bin", "flock", "{lock}", "ionice", "-c", "3", "xargs"]
WRAPPED = [
    ["flock", "{lock}", "sh", "-c", "printf '%s' {v}"],
    ["flock", "-w", "5", "{lock}", "sh", "-c", "printf '%s' {v}"],
    ["flock", "-xnw5", "{lock}", "bash", "-ec", "printf '%s' {v}"],
    ["flock", "--timeout=5", "-n", "--", "{lock}", "sh", "-c", "printf '%s' {v}"],
    ["ionice", "-c", "3", "sh", "-c", "printf '%s' {v}"],
    ["ionice", "-c3", "-t", "sh", "-c", "printf '%s' {v}"],
    ["ionice", "--class", "best-effort", "--classdata=7", "sh", "-c", "printf '%s' {v}"],
    ["xargs", "sh", "-c", "printf '%s' {v}"],
    ["xargs", "-0", "-n", "1", "-P", "1", "sh", "-c", "printf '%s' {v}"],
    ["xargs", "--max-args=1", "--delimiter", "\\n", "sh", "-c", "printf '%s' {v}"],
    ["timeout", "-s", "KILL", "5", "sh", "-c", "printf '%s' {v}"],
    ["nice", "-n", "5", "setsid", "-w", "sh", "-c", "printf '%s' {v}"],
    [*CHAIN, "sh", "-c", "printf '%s' {v}"],
]
AS_ROOT = [
    ["chroot", "/", "sh", "-c", "printf '%s' {v}"],
    ["chroot", "--skip-chdir", "/", "bash", "-c", "printf '%s' {v}"],
]
IN_NAMESPACES = [
    ["unshare", "-r", "sh", "-c", "printf '%s' {v}"],
    ["unshare", "-rm", "--propagation", "private", "sh", "-c", "printf '%s' {v}"],
    ["unshare", "--map-root-user", "--user", "--fork", "sh", "-c", "printf '%s' {v}"],
]


@pytest.mark.parametrize("argv", WRAPPED, ids=[" ".join(argv[:4]) for argv in WRAPPED])
def test_a_shell_behind_each_known_wrapper_gets_its_values_as_data(
    argv: list[str], lock: str, in_tmp: Path
) -> None:
    """The reproduction: `flock LOCK sh -c "echo {x}"` once ran the value as shell code."""
    command = [lock if part == "{lock}" else part for part in argv]
    assert (printed(command, HOSTILE), sorted(in_tmp.iterdir())) == (HOSTILE, [])


@pytest.mark.skipif(not ROOT, reason="chroot needs root")
@pytest.mark.parametrize("argv", AS_ROOT, ids=[" ".join(argv[:3]) for argv in AS_ROOT])
def test_a_shell_behind_chroot_gets_its_values_as_data(argv: list[str], in_tmp: Path) -> None:
    assert (printed(argv, HOSTILE), sorted(in_tmp.iterdir())) == (HOSTILE, [])


@pytest.mark.skipif(not UNSHARE, reason="this machine allows no user namespaces")
@pytest.mark.parametrize("argv", IN_NAMESPACES, ids=[" ".join(argv[:3]) for argv in IN_NAMESPACES])
def test_a_shell_behind_unshare_gets_its_values_as_data(argv: list[str], in_tmp: Path) -> None:
    assert (printed(argv, HOSTILE), sorted(in_tmp.iterdir())) == (HOSTILE, [])


@pytest.mark.parametrize(
    ("argv", "script_at"),
    [
        (("sudo", "sh", "-c", "x"), 3),
        (("sudo", "-u", "bob", "-E", "sh", "-c", "x"), 6),
        (("sudo", "-nu", "bob", "bash", "-ec", "x"), 5),
        (("sudo", "--preserve-env=PATH", "--user=bob", "--", "sh", "-c", "x"), 6),
        (("busybox", "sh", "-c", "x"), 3),
        (("/bin/busybox", "ash", "-ec", "x"), 3),
        (("busybox", "env", "busybox", "hush", "-c", "x"), 5),
        (("su",), None),
        (("su", "-", "bob"), None),
        (("su", "-l", "-s", "/bin/sh", "--", "bob"), None),
        (("chroot", "/srv/root"), None),
        (("flock", "/tmp/lock"), None),
        (("xargs",), None),
        (("grep", "-c", "sh", "notes.txt"), None),
        (("make", "-C", "sh"), None),
    ],
)
def test_each_wrapper_is_read_as_the_program_reads_it(
    argv: tuple[str, ...], script_at: int | None
) -> None:
    assert locate_script(argv) == script_at


@pytest.mark.parametrize(
    ("argv", "program", "shell"),
    [
        (["docker", "exec", "box", "sh", "-c", "echo {v}"], "docker", "sh"),
        (["ssh", "host", "bash", "-o", "pipefail", "-ec", "make"], "ssh", "bash"),
        (["env", "uv", "run", "/bin/dash", "-c", "echo {v}"], "uv", "dash"),
        (["find", ".", "-exec", "zsh", "--weird", "-c", "echo {v}", ";"], "find", "zsh"),
        (["parallel", "sh", "-c", "echo ok", ":::", "sh", "-c", "echo {v}"], "parallel", "sh"),
    ],
)
def test_an_unknown_program_that_starts_a_shell_with_c_is_refused_at_definition(
    argv: list[str], program: str, shell: str
) -> None:
    """Refused with or without a placeholder: adws cannot tell what the program does with it."""
    with pytest.raises(ValueError, match="neither a shell") as raised:
        shell_step("s", argv)
    assert str(raised.value) == (
        f"shell_step 's': {program!r} is neither a shell nor a wrapper adws knows, and its"
        f" arguments start {shell!r} with -c: adws cannot tell how {program!r} hands that script"
        " on, so a value could run as shell code there; start the shell first, or behind a"
        " wrapper adws knows (env, timeout, nice, nohup, stdbuf, setsid, flock, ionice, xargs,"
        " chroot, unshare, sudo, busybox)"
    )


SU_SCRIPT = (
    "su's -c hands its script to the user's login shell with no room for the values:"
    " write ['sudo', '-u', USER, 'sh', '-c', SCRIPT]"
)


@pytest.mark.parametrize(
    ("argv", "why"),
    [
        (
            ["flock", "/tmp/lock", "-c", "echo {v}"],
            (
                "flock's -c hands its script to a shell with no room for the values:"
                " write ['flock', LOCK, 'sh', '-c', SCRIPT]"
            ),
        ),
        (
            ["su", "-c", "echo {v}", "bob"],
            SU_SCRIPT,
        ),
        (
            ["su", "bob", "--session-command={v}"],
            SU_SCRIPT,
        ),
        (
            ["su", "-", "bob", "-lc", "echo {v}"],
            SU_SCRIPT,
        ),
        (
            ["su", "--", "bob", "-c", "echo {v}"],
            "su hands the arguments after the user to the user's login shell",
        ),
    ],
)
def test_a_wrapper_that_runs_a_script_itself_takes_no_values(argv: list[str], why: str) -> None:
    with pytest.raises(ValueError, match="cannot pass values safely") as raised:
        shell_step("s", argv)
    assert str(raised.value) == f"shell_step 's': cannot pass values safely in {argv}: {why}"


def test_a_wrapper_that_runs_a_script_itself_runs_one_without_values(
    lock: str, in_tmp: Path
) -> None:
    assert printed(["flock", lock, "-c", "printf locked"], "") == "locked"


@pytest.mark.skipif(not ROOT, reason="su without a password needs root")
def test_su_runs_a_script_without_values(in_tmp: Path) -> None:
    assert printed(["su", "-c", "printf switched", "root"], "") == "switched"


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (["ionice", "-p", "1", "sh", "-c", "echo {v}"], "option '-p' of 'ionice'"),
        (["xargs", "-I", "%", "sh", "-c", "echo {v}"], "option '-I' of 'xargs'"),
        (["flock", "-xq", "/tmp/lock", "sh", "-c", "echo {v}"], "option '-xq' of 'flock'"),
        (
            ["unshare", "--net=x", "--wat=1", "sh", "-c", "echo {v}"],
            "option '--wat=1' of 'unshare'",
        ),
        (["sudo", "-s", "echo", "{v}"], "option '-s' of 'sudo'"),
        (["sudo", "--login", "sh", "-c", "echo {v}"], "option '--login' of 'sudo'"),
        (["su", "-x", "{v}"], "option '-x' of 'su'"),
        (
            ["chroot", "--userspec=1:1", "--fresh", "/", "sh", "-c", "echo {v}"],
            "option '--fresh' of 'chroot'",
        ),
    ],
)
def test_a_wrapper_option_adws_does_not_know_is_refused_when_a_value_goes_in(
    argv: list[str], problem: str
) -> None:
    with pytest.raises(ValueError, match="cannot tell where the script starts") as raised:
        shell_step("s", argv)
    assert f"({problem} is not one adws knows)" in str(raised.value)


WRAPPER_CHOICES = [
    ["env"],
    ["env", "-i", "PATH=/usr/sbin:/usr/bin:/sbin:/bin"],  # chroot is in /usr/sbin
    ["timeout", "-s", "KILL", "30"],
    ["nice", "-n", "3"],
    ["nohup"],
    ["stdbuf", "-oL"],
    ["setsid", "-w"],
    ["flock", "-w", "30", "{lock}"],
    ["flock", "-x", "{lock}"],
    ["ionice", "-c", "3"],
    ["ionice", "-c2", "-n", "7"],
    ["xargs"],
    ["xargs", "-n", "1"],
    *([["chroot", "/"]] if ROOT else []),
    *([["unshare", "-r"]] if UNSHARE else []),
]


@st.composite
def wrapped_argvs(draw: st.DrawFn) -> list[str]:
    """Draw a chain of known wrappers with their options, then a shell with -c."""
    wrappers = draw(
        st.lists(
            st.sampled_from(WRAPPER_CHOICES),
            min_size=1,
            max_size=3,
            unique_by=lambda wrapper: wrapper[0],  # one flock: a second would wait for the first
        )
    )
    shell = draw(st.sampled_from([["sh", "-c"], ["bash", "-ec"], ["sh", "-e", "-c"]]))
    return [*(part for wrapper in wrappers for part in wrapper), *shell]


@pytest.mark.slow
@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(argv=wrapped_argvs(), value=text_without_nul)
def test_no_value_in_any_wrapped_script_runs_as_shell_code(
    argv: list[str], value: str, lock: str, in_tmp: Path
) -> None:
    command = [lock if part == "{lock}" else part for part in argv]
    script = "printf '%s|' {v} \"{v}\"; printf '%s' \"$0\""
    assert (printed([*command, script, "me"], value), sorted(in_tmp.iterdir())) == (
        f"{value}|{value}|me",
        [],
    )
