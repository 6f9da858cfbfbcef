"""`adws new`: a workflow and its test that pass ruff ALL, mypy strict and 100% branch coverage."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from adws.cli import main
from adws.cli.new import ruff_config
from tests.conftest import REPO

BIN = Path(sys.executable).parent

MYPY_INI = """
[mypy]
strict = True
plugins = returns.contrib.mypy.returns_plugin
explicit_package_bases = True

[mypy-adws.*]
# adws is checked as an installed, typed package (py.typed), not as the user's own code.
follow_imports = silent

[mypy-claude_agent_sdk.*]
ignore_missing_imports = True
"""


def check(project: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    # MYPYPATH lets mypy see adws's sources, which an editable install hides from it.
    env = {**os.environ, "MYPYPATH": str(REPO)}
    return subprocess.run(argv, cwd=project, capture_output=True, text=True, check=False, env=env)


def test_the_generated_project_passes_ruff_mypy_and_full_coverage(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["new", "greeter"]) == 0
    assert main(["new", "asker", "--agent"]) == 0
    assert capsys.readouterr().err.splitlines() == [
        (
            "wrote workflows/greeter.py and tests/test_workflow_greeter.py; run them with:"
            " pytest tests/test_workflow_greeter.py"
        ),
        """added ruff's configuration (select = ["ALL"]) to pyproject.toml""",
        (
            "wrote workflows/asker.py and tests/test_workflow_asker.py; run them with:"
            " pytest tests/test_workflow_asker.py"
        ),
    ]
    assert (in_tmp / "pyproject.toml").read_text() == ruff_config().lstrip("\n")
    (in_tmp / "mypy.ini").write_text(MYPY_INI)
    ruff = str(BIN / "ruff")
    for argv in (
        # ruff's defaults, as in a project that configures nothing
        (ruff, "check", "--isolated", "."),
        (ruff, "format", "--isolated", "--check", "."),
        # and every rule, with the configuration adws new wrote
        (ruff, "check", "."),
        (ruff, "format", "--check", "."),
        (str(BIN / "mypy"), "workflows", "tests"),
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
    assert main(["check"]) == 0


def test_an_existing_pyproject_gains_the_config_unless_ruff_is_configured(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (in_tmp / "pyproject.toml").write_text('[project]\nname = "mine"')
    assert main(["new", "one"]) == 0
    assert (in_tmp / "pyproject.toml").read_text() == (
        '[project]\nname = "mine"\n' + ruff_config().lstrip("\n")
    )
    capsys.readouterr()
    (in_tmp / "ruff.toml").write_text("line-length = 120\n")
    (in_tmp / "pyproject.toml").write_text("")
    assert main(["new", "two"]) == 0
    said = capsys.readouterr().err.splitlines()
    assert (
        said[1]
        == "ruff is configured in ruff.toml already; to hold these files to every rule, use:"
    )
    assert "\n".join(said[2:]) == ruff_config().strip()
    assert (in_tmp / "pyproject.toml").read_text() == ""


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


def test_new_writes_into_the_workflows_folder_given(in_tmp: Path) -> None:
    outside = in_tmp.parent / f"{in_tmp.name}-flows"
    assert main(["new", "greeter", "--workflows", str(outside)]) == 0
    assert (outside / "greeter.py").exists()
    test = (in_tmp / "tests" / "test_workflow_greeter.py").read_text()
    assert f'WORKFLOWS = Path(__file__).resolve().parents[1] / "{outside}"' in test
