"""adws installs like any library: sdist and wheel, a fresh venv, mypy in a project of one's own.

Everything runs offline. The sdist and wheel are built without build isolation (setuptools
comes with the dev extra); the fresh venvs get the wheel (or the README's editable install)
and nothing else, and see adws's dependencies through one `.pth` line naming this venv's
site-packages, which holds no `adws` of its own to shadow the one under test.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO

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


def _run(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in args], cwd=cwd, capture_output=True, text=True, check=False, timeout=120
    )


def _source_copy(into: Path) -> Path:
    """Copy what the sdist is built from, so building writes nothing into the checkout."""
    source = into / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    shutil.copytree(REPO / "adws", source / "adws", ignore=shutil.ignore_patterns("__pycache__"))
    return source


def _fresh_venv(where: Path) -> Path:
    """Make a venv with no packages; adws's dependencies come from this venv by a `.pth` line."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    python = where / "bin" / "python"
    site = _run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])")
    deps = sysconfig.get_paths()["purelib"]
    (Path(site.stdout.strip()) / "zz_adws_dependencies.pth").write_text(deps + "\n")
    return python


def _pip_into(python: Path, *args: str | Path) -> None:
    # --ignore-installed: the adws this venv sees through the `.pth` line is neither reused
    # nor uninstalled.
    done = _run(
        sys.executable,
        "-m",
        "pip",
        "--python",
        python,
        "install",
        "--quiet",
        "--ignore-installed",
        *args,
    )
    assert done.returncode == 0, done.stderr


def _mypy(python: Path, project: Path) -> subprocess.CompletedProcess[str]:
    return _run(
        sys.executable,
        "-m",
        "mypy",
        "--strict",
        "--no-incremental",
        "--python-executable",
        python,
        ".",
        cwd=project,
    )


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Build the sdist, then the wheel from it, as `python -m build` does by default."""
    where = tmp_path_factory.mktemp("dist")
    built = _run(
        sys.executable,
        "-m",
        "build",
        "--no-isolation",
        "--outdir",
        where / "out",
        _source_copy(where),
    )
    assert built.returncode == 0, built.stdout + built.stderr
    return where / "out"


@pytest.fixture(scope="module")
def installed(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Install the wheel, offline and with nothing else, into a fresh venv; return its python."""
    python = _fresh_venv(tmp_path_factory.mktemp("fresh") / "venv")
    _pip_into(python, "--no-index", "--no-deps", "--find-links", dist, "adws")
    return python


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "use_adws.py").write_text(_PROJECT)
    (folder / "mypy.ini").write_text("[mypy]\nplugins = returns.contrib.mypy.returns_plugin\n")
    return folder


def test_the_sdist_and_the_wheel_pass_twine_check(dist: Path) -> None:
    names = sorted(p.name for p in dist.iterdir())
    checked = _run(sys.executable, "-m", "twine", "check", "--strict", *sorted(dist.iterdir()))

    assert names == ["adws-0.1.0-py3-none-any.whl", "adws-0.1.0.tar.gz"]
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.count("PASSED") == 2


def test_the_wheel_holds_adws_with_its_type_marker_and_nothing_else(dist: Path) -> None:
    with zipfile.ZipFile(dist / "adws-0.1.0-py3-none-any.whl") as wheel:
        names = wheel.namelist()
        entry_points = wheel.read("adws-0.1.0.dist-info/entry_points.txt").decode()

    assert "adws/py.typed" in names
    assert "adws/testing/model_api.py" in names
    assert set() == {n.split("/")[0] for n in names} - {"adws", "adws-0.1.0.dist-info"}
    assert "adws = adws.cli:main" in entry_points
    assert "adws = adws.testing.plugin" in entry_points


def test_the_installed_wheel_prints_its_version(installed: Path) -> None:
    done = _run(installed.parent / "adws", "--version")

    assert (done.returncode, done.stdout) == (0, "adws 0.1.0\n")


def test_the_installed_wheel_imports_adws_from_its_own_venv(
    installed: Path, tmp_path: Path
) -> None:
    code = "import adws.engine.executor as m; print(m.__file__)"
    done = _run(installed, "-c", code, cwd=tmp_path)  # not the checkout, which `-c` would see

    assert done.stdout.startswith(str(installed.parent.parent)), done.stdout + done.stderr


def test_the_installed_wheel_runs_the_hello_workflow(installed: Path, tmp_path: Path) -> None:
    done = _run(
        installed.parent / "adws",
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
    installed: Path, project: Path
) -> None:
    done = _mypy(installed, project)

    assert (done.returncode, done.stdout) == (0, "Success: no issues found in 1 source file\n")


def test_mypy_sees_adws_types_in_the_installed_wheel(installed: Path, project: Path) -> None:
    (project / "use_adws.py").write_text(_MISUSE)

    done = _mypy(installed, project)

    assert done.returncode == 1
    assert 'Argument "steps" to "Workflow" has incompatible type "int"' in done.stdout


def test_the_readme_editable_install_is_seen_by_mypy(tmp_path: Path, project: Path) -> None:
    """Run the README's own `pip install -e` line; setuptools' default hook would hide adws."""
    readme = (REPO / "README.md").read_text()
    line = next(ln for ln in readme.splitlines() if ln.startswith("pip install -e /path/to/adws"))
    source = _source_copy(tmp_path)
    (source / "tests").mkdir()  # a checkout's own tests must not become a user's `tests`
    (source / "tests" / "__init__.py").touch()
    words = [str(source) if w == "/path/to/adws" else w for w in shlex.split(line)[2:]]
    python = _fresh_venv(tmp_path / "venv")
    _pip_into(python, "--no-index", "--no-deps", "--no-build-isolation", *words)

    done = _mypy(python, project)
    tests_hidden = _run(python, "-c", "import tests", cwd=project)

    assert (done.returncode, done.stdout) == (0, "Success: no issues found in 1 source file\n")
    assert "No module named 'tests'" in tests_hidden.stderr
