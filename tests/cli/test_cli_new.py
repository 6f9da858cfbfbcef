"""`adws new`: a workflow and its test that pass ruff ALL, mypy strict and 100% branch coverage."""

from __future__ import annotations

import ast
import contextlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adws.cli import main
from adws.cli.new import (
    LONGEST_NAME,
    mypy_config,
    python_literal,
    render_test,
    ruff_config,
    toml_string,
)
from tests.conftest import REPO

BIN = Path(sys.executable).parent
LONGEST = "triage_incoming_bug_reports_"[:LONGEST_NAME].ljust(LONGEST_NAME, "x")

TOOLS = "the test tools (pytest, mypy, ruff, hypothesis): pip install 'adws[test]'"


def check(project: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=project, capture_output=True, text=True, check=False)


@pytest.mark.slow
def test_the_generated_project_passes_ruff_mypy_and_full_coverage(
    in_tmp: Path, capsys: pytest.CaptureFixture[str], installed_adws: Path
) -> None:
    """With nothing but what adws new wrote: ruff ALL, mypy strict against the wheel, coverage."""
    assert main(["new", "greeter"]) == 0
    assert main(["new", LONGEST, "--agent"]) == 0
    assert capsys.readouterr().err.splitlines() == [
        (
            "wrote workflows/greeter.py and tests/test_workflow_greeter.py; run them with:"
            " pytest tests/test_workflow_greeter.py"
        ),
        "added ruff's and mypy's configuration to pyproject.toml",
        TOOLS,
        (
            f"wrote workflows/{LONGEST}.py and tests/test_workflow_{LONGEST}.py; run them with:"
            f" pytest tests/test_workflow_{LONGEST}.py"
        ),
        TOOLS,
    ]
    assert (in_tmp / "pyproject.toml").read_text() == (
        "# Written by `adws new`. The test tools (pytest, mypy, ruff, hypothesis):\n"
        "#     pip install 'adws[test]'\n" + str(ruff_config()) + str(mypy_config())
    )
    ruff = str(BIN / "ruff")
    for argv in (
        # ruff's defaults, as in a project that configures nothing
        (ruff, "check", "--isolated", "."),
        (ruff, "format", "--isolated", "--check", "."),
        # and every rule, with the configuration adws new wrote
        (ruff, "check", "."),
        (ruff, "format", "--check", "."),
        # its own configuration (files, strict, the returns plugin), adws from the wheel
        (sys.executable, "-m", "mypy", "--python-executable", str(installed_adws)),
        (
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--cov=workflows",
            "--cov-branch",
            "--cov-fail-under=100",
            "tests",
        ),
    ):
        done = check(in_tmp, *argv)
        assert done.returncode == 0, (argv, done.stdout, done.stderr)
        if "mypy" in argv:
            assert done.stdout == "Success: no issues found in 4 source files\n"
    assert main(["check"]) == 0


HEADER = (
    "# Written by `adws new`. The test tools (pytest, mypy, ruff, hypothesis):\n"
    "#     pip install 'adws[test]'\n"
)


def test_an_existing_pyproject_gains_the_config_of_each_tool_not_configured(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (in_tmp / "pyproject.toml").write_text('[project]\nname = "mine"')
    assert main(["new", "one"]) == 0
    assert main(["new", "two"]) == 0  # the second finds both there and adds nothing
    assert (in_tmp / "pyproject.toml").read_text() == (
        '[project]\nname = "mine"\n' + HEADER + str(ruff_config()) + str(mypy_config())
    )
    assert capsys.readouterr().err.splitlines()[1:] == [
        "added ruff's and mypy's configuration to pyproject.toml",
        TOOLS,
        "wrote workflows/two.py and tests/test_workflow_two.py; run them with: pytest tests/test_workflow_two.py",
        TOOLS,
    ]


def test_a_tool_configured_elsewhere_is_shown_its_config_and_the_other_added(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (in_tmp / "ruff.toml").write_text("line-length = 120\n")
    (in_tmp / "pyproject.toml").write_text("")
    assert main(["new", "two"]) == 0
    said = capsys.readouterr().err
    assert said.splitlines()[1:3] == [
        "added mypy's configuration to pyproject.toml",
        "ruff is configured in ruff.toml already; to hold these files to every rule, use:",
    ]
    assert str(ruff_config()).strip() + "\n" + TOOLS + "\n" in said
    assert (in_tmp / "pyproject.toml").read_text() == HEADER + str(mypy_config())


@pytest.mark.parametrize(
    ("name", "text", "shown"),
    [
        ("mypy.ini", "[mypy]\n", "mypy.ini"),
        (".mypy.ini", "[mypy]\n", ".mypy.ini"),
        ("setup.cfg", "[mypy]\nstrict = True\n", "setup.cfg"),
        ("pyproject.toml", "[tool.mypy]\nstrict = true\n", "pyproject.toml"),
    ],
)
def test_mypy_configured_already_is_left_alone(
    in_tmp: Path, capsys: pytest.CaptureFixture[str], name: str, text: str, shown: str
) -> None:
    (in_tmp / name).write_text(text)
    assert main(["new", "one"]) == 0
    said = capsys.readouterr().err
    assert (
        f"mypy is configured in {shown} already; to check these files strictly, with the"
        f" returns plugin, use:\n{str(mypy_config()).strip()}\n"
    ) in said
    assert "[tool.mypy]" not in (in_tmp / "pyproject.toml").read_text().replace(text, "")


def test_a_setup_cfg_without_mypy_does_not_count(in_tmp: Path) -> None:
    (in_tmp / "setup.cfg").write_text("[metadata]\nname = mine\n")
    assert main(["new", "one"]) == 0
    assert str(mypy_config()) in (in_tmp / "pyproject.toml").read_text()


def test_new_never_overwrites(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["new", "greeter"]) == 0
    (in_tmp / "tests" / "test_workflow_greeter.py").unlink()
    assert main(["new", "greeter", "--agent"]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "adws: error: workflows/greeter.py exists already; adws new never overwrites a file"
    )


def test_new_needs_an_identifier(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["new", "My Flow"]) == 2
    assert capsys.readouterr().err == (
        "adws: error: workflow name 'My Flow' is not an identifier: use lower-case letters,"
        " digits and _\n"
    )


workflow_names = st.from_regex(r"[a-z][a-z0-9_]*", fullmatch=True).filter(
    lambda name: len(name) <= LONGEST_NAME
)


@settings(max_examples=60)
@given(name=st.one_of(workflow_names, st.just(LONGEST)), agent=st.booleans())
def test_no_line_adws_new_writes_passes_88_columns(name: str, *, agent: bool) -> None:
    """`triage_incoming_bug_reports --agent` once wrote a 103-column docstring line."""
    with tempfile.TemporaryDirectory() as folder, contextlib.chdir(folder):
        assert main(["new", name, *(["--agent"] if agent else [])]) == 0
        written = sorted(path for path in Path(folder).rglob("*") if path.is_file())
        too_long = [
            (path.name, line)
            for path in written
            for line in path.read_text(encoding="utf-8").splitlines()
            if len(line) > 88  # ruff's default line length
        ]
    assert (len(written), too_long) == (3, [])


def test_a_name_too_long_for_88_columns_is_refused(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = "x" * (LONGEST_NAME + 1)
    assert main(["new", name, "--agent"]) == 2
    assert capsys.readouterr().err == (
        f"adws: error: workflow name {name!r} has {LONGEST_NAME + 1} characters; adws new takes"
        f" at most {LONGEST_NAME}, so that no line it writes passes 88 columns\n"
    )
    assert sorted(in_tmp.iterdir()) == []


def test_new_writes_into_the_workflows_folder_given(in_tmp: Path) -> None:
    outside = in_tmp.parent / f"{in_tmp.name}-flows"
    assert main(["new", "greeter", "--workflows", str(outside)]) == 0
    assert (outside / "greeter.py").exists()
    test = (in_tmp / "tests" / "test_workflow_greeter.py").read_text()
    assert f'WORKFLOWS = Path(__file__).resolve().parents[1] / "{outside}"' in test


@given(
    folder=st.text(
        alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"), min_size=1
    )
)
def test_any_workflows_folder_is_data_in_the_generated_test(folder: str) -> None:
    """A folder named with quotes, backslashes or code stays a string: nothing of it runs."""
    source = render_test("greeter", agent=False, workflows=folder)
    tree = ast.parse(source)
    [assignment] = [
        node
        for node in tree.body
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "WORKFLOWS"
    ]
    assert isinstance(assignment.value, ast.BinOp)
    assert isinstance(assignment.value.right, ast.Constant)
    assert assignment.value.right.value == folder
    assert ast.literal_eval(python_literal(folder)) == folder


def test_a_quote_in_the_workflows_folder_injects_nothing_under_pytest(in_tmp: Path) -> None:
    """The reproduction: a `"` in --workflows once closed the string and ran the rest."""
    folder = 'flows" + __import__("os").system("touch pwned") + "'
    assert main(["new", "greeter", "--workflows", folder]) == 0
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=in_tmp,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert not (in_tmp / "pwned").exists()


def test_new_never_writes_through_a_dangling_symbolic_link(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = in_tmp.parent / f"{in_tmp.name}-outside"
    (in_tmp / "workflows").mkdir()
    (in_tmp / "workflows" / "greeter.py").symlink_to(outside / "greeter.py")
    assert main(["new", "greeter"]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "adws: error: workflows/greeter.py exists already; adws new never overwrites a file"
    )
    assert not outside.exists()


def test_a_pyproject_that_is_a_symbolic_link_is_not_written_through(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    elsewhere = in_tmp.parent / f"{in_tmp.name}-pyproject.toml"
    (in_tmp / "pyproject.toml").symlink_to(elsewhere)
    assert main(["new", "greeter"]) == 0
    said = capsys.readouterr().err
    assert (
        "pyproject.toml is a symbolic link; to hold these files to every rule and checked:\n"
        f"{str(ruff_config()).strip()}\n{str(mypy_config()).strip()}\n"
    ) in said
    assert not elsewhere.exists()


def test_a_file_that_appears_while_new_writes_is_not_overwritten(in_tmp: Path) -> None:
    from adws.cli._args import UsageError  # noqa: PLC0415 - the error the command raises
    from adws.cli.new import _create  # noqa: PLC0415 - the writer alone, with a file already there

    (in_tmp / "taken.py").write_text("mine")
    with pytest.raises(UsageError, match="appeared meanwhile"):
        _create(in_tmp / "taken.py", "theirs")
    assert (in_tmp / "taken.py").read_text() == "mine"


def test_a_workflows_folder_toml_cannot_hold_leaves_pyproject_alone(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert ruff_config("a\udc80b") is None
    assert mypy_config("a\udc80b") is None
    assert toml_string('w"x\x7f') == '"w\\"x\\u007f"'
    assert main(["new", "greeter", "--workflows", "fl\udc80ws"]) == 0
    assert "cannot be written in TOML" in capsys.readouterr().err
    assert not (in_tmp / "pyproject.toml").exists()


@pytest.mark.parametrize("folder", ["tests", "workflows"])
def test_a_symlinked_tests_or_workflows_folder_refuses_before_anything_is_written(
    in_tmp: Path, capsys: pytest.CaptureFixture[str], folder: str
) -> None:
    outside = in_tmp.parent / f"{in_tmp.name}-outside"
    outside.mkdir()
    (in_tmp / folder).symlink_to(outside, target_is_directory=True)
    assert main(["new", "greeter"]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"adws: error: {folder} is a symbolic link; adws new never writes through one (the files"
        " would land where it points): write into a real folder (--workflows DIR)"
    )
    assert (sorted(outside.iterdir()), sorted(p.name for p in in_tmp.iterdir())) == ([], [folder])


def test_a_link_anywhere_on_the_way_is_refused_named_as_given(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = in_tmp.parent / f"{in_tmp.name}-away"
    (outside / "deep").mkdir(parents=True)
    (in_tmp / "flows").symlink_to(outside, target_is_directory=True)
    assert main(["new", "greeter", "--workflows", "flows/deep"]) == 2
    assert "adws: error: flows is a symbolic link" in capsys.readouterr().err
    elsewhere = in_tmp.parent / f"{in_tmp.name}-linked"
    elsewhere.symlink_to(outside, target_is_directory=True)
    assert main(["new", "greeter", "--workflows", str(elsewhere / "deep")]) == 2
    assert f"adws: error: {elsewhere} is a symbolic link" in capsys.readouterr().err
    assert sorted(outside.rglob("*")) == [outside / "deep"]


def test_a_hard_linked_pyproject_is_not_rewritten_in_place(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shared = in_tmp.parent / f"{in_tmp.name}-shared.toml"
    shared.write_text('[project]\nname = "theirs"\n')
    (in_tmp / "pyproject.toml").hardlink_to(shared)
    assert main(["new", "greeter"]) == 0
    assert (
        "pyproject.toml has 2 hard links (writing it would change them all); to hold these files"
        f" to every rule and checked:\n{str(ruff_config()).strip()}\n{str(mypy_config()).strip()}\n"
    ) in capsys.readouterr().err
    assert shared.read_text() == '[project]\nname = "theirs"\n'
    assert (in_tmp / "workflows" / "greeter.py").exists()


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (
            lambda path: path.write_bytes(b'[project]\nname = "caf\xe9"\n'),
            (
                "pyproject.toml is not UTF-8 (byte 0xe9 at offset 21); TOML is UTF-8: fix it, then"
                " run adws new again (nothing was written)"
            ),
        ),
        (
            lambda path: path.mkdir(),
            "cannot read pyproject.toml (Is a directory); nothing was written",
        ),
    ],
    ids=["latin-1", "a folder"],
)
def test_a_pyproject_adws_new_cannot_read_refuses_before_anything_is_written(
    in_tmp: Path, capsys: pytest.CaptureFixture[str], make: Any, said: str
) -> None:
    make(in_tmp / "pyproject.toml")
    assert main(["new", "greeter"]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"adws: error: {said}"
    assert sorted(p.name for p in in_tmp.iterdir()) == ["pyproject.toml"]
