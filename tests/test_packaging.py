"""adws installs like any library: sdist and wheel, a fresh venv, mypy in a project of one's own.

Offline; how the wheel is built and installed is in tests/packaging.py.
"""

from __future__ import annotations

import shlex
import sys
import zipfile
from pathlib import Path

import pytest

from tests.packaging import REPO, fresh_venv, mypy, pip_into, run, source_copy

pytestmark = pytest.mark.slow

_PROJECT = '''\
"""A project of one's own that uses adws."""

from returns.io import IOResult, IOSuccess

from adws import PipelineError, Step, Workflow, WorkflowContext


def greet(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
    """Write a greeting."""
    return IOSuccess(ctx.merge_outputs({"greeting": f"Hello, {ctx.inputs['name']}!"}))


workflow = Workflow("greet", (Step("greet", greet),), inputs=("name",))
'''

_MISUSE = '''\
"""A project that passes adws a wrong type."""

from adws import Workflow

workflow = Workflow("greet", steps=42)
'''


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "use_adws.py").write_text(_PROJECT)
    (folder / "mypy.ini").write_text("[mypy]\nplugins = returns.contrib.mypy.returns_plugin\n")
    return folder


def test_the_sdist_and_the_wheel_pass_twine_check(adws_dist: Path) -> None:
    names = sorted(p.name for p in adws_dist.iterdir())
    checked = run(sys.executable, "-m", "twine", "check", "--strict", *sorted(adws_dist.iterdir()))

    assert names == ["adws-0.1.0-py3-none-any.whl", "adws-0.1.0.tar.gz"]
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.count("PASSED") == 2


def test_the_wheel_holds_adws_with_its_type_marker_and_nothing_else(adws_dist: Path) -> None:
    with zipfile.ZipFile(adws_dist / "adws-0.1.0-py3-none-any.whl") as wheel:
        names = wheel.namelist()
        entry_points = wheel.read("adws-0.1.0.dist-info/entry_points.txt").decode()

    assert "adws/py.typed" in names
    assert "adws/testing/model_api.py" in names
    assert set() == {n.split("/")[0] for n in names} - {"adws", "adws-0.1.0.dist-info"}
    assert "adws = adws.cli:main" in entry_points
    assert "adws = adws.testing.plugin" in entry_points


def test_the_installed_wheel_prints_its_version(installed_adws: Path) -> None:
    done = run(installed_adws.parent / "adws", "--version")

    assert (done.returncode, done.stdout) == (0, "adws 0.1.0\n")


def test_the_installed_wheel_imports_adws_from_its_own_venv(
    installed_adws: Path, tmp_path: Path
) -> None:
    code = "import adws.engine.executor as m; print(m.__file__)"
    done = run(installed_adws, "-c", code, cwd=tmp_path)  # not the checkout, which `-c` would see

    assert done.stdout.startswith(str(installed_adws.parent.parent)), done.stdout + done.stderr


def test_the_installed_wheel_runs_the_hello_workflow(installed_adws: Path, tmp_path: Path) -> None:
    done = run(
        installed_adws.parent / "adws",
        "run",
        "hello",
        "-i",
        "name=Ada",
        "--workflows",
        REPO / "workflows",
        cwd=tmp_path,
    )

    assert done.returncode == 0, done.stdout + done.stderr
    assert "hello succeeded" in done.stderr
    assert (tmp_path / ".adws" / "runs.db").is_file()


def test_a_project_importing_the_installed_wheel_passes_mypy_strict(
    installed_adws: Path, project: Path
) -> None:
    done = mypy(installed_adws, project, ".")

    assert (done.returncode, done.stdout) == (0, "Success: no issues found in 1 source file\n")


def test_mypy_sees_adws_types_in_the_installed_wheel(installed_adws: Path, project: Path) -> None:
    (project / "use_adws.py").write_text(_MISUSE)

    done = mypy(installed_adws, project, ".")

    assert done.returncode == 1
    assert 'Argument "steps" to "Workflow" has incompatible type "int"' in done.stdout


def test_the_readme_editable_install_is_seen_by_mypy(tmp_path: Path, project: Path) -> None:
    """Run the README's own `pip install -e` line; setuptools' default hook would hide adws."""
    readme = (REPO / "README.md").read_text()
    line = next(ln for ln in readme.splitlines() if ln.startswith("pip install -e /path/to/adws"))
    source = source_copy(tmp_path)
    (source / "tests").mkdir()  # a checkout's own tests must not become a user's `tests`
    (source / "tests" / "__init__.py").touch()
    words = [str(source) if w == "/path/to/adws" else w for w in shlex.split(line)[2:]]
    python = fresh_venv(tmp_path / "venv")
    pip_into(python, "--no-build-isolation", *words)

    done = mypy(python, project, ".")
    tests_hidden = run(python, "-c", "import tests", cwd=project)

    assert (done.returncode, done.stdout) == (0, "Success: no issues found in 1 source file\n")
    assert "No module named 'tests'" in tests_hidden.stderr
