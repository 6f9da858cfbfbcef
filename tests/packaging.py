"""adws built and installed as a user gets it: an sdist, a wheel, a fresh venv, offline.

The sdist and wheel are built without build isolation (setuptools comes with
the dev extra), from a copy of the sources, so building writes nothing into
the checkout. A fresh venv gets the wheel (or an editable install) and
nothing else; it sees adws's dependencies through one `.pth` line naming this
venv's site-packages, which holds no `adws` of its own that could shadow the
one under test (an editable install here is an import hook that only this
venv's own `.pth` files start).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Final

REPO: Final = Path(__file__).resolve().parent.parent


def run(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run a program to its end and keep its output."""
    return subprocess.run(
        [str(a) for a in args], cwd=cwd, capture_output=True, text=True, check=False, timeout=180
    )


def source_copy(into: Path) -> Path:
    """Copy what the sdist is built from into `into/src`."""
    source = into / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    shutil.copytree(REPO / "adws", source / "adws", ignore=shutil.ignore_patterns("__pycache__"))
    return source


def build(where: Path) -> Path:
    """Build the sdist, then the wheel from it (as `python -m build` does); return the folder."""
    out = where / "dist"
    built = run(
        sys.executable, "-m", "build", "--no-isolation", "--outdir", out, source_copy(where)
    )
    assert built.returncode == 0, built.stdout + built.stderr
    return out


def fresh_venv(where: Path) -> Path:
    """Make a venv with no packages, seeing adws's dependencies; return its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    python = where / "bin" / "python"
    site = run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])")
    deps = sysconfig.get_paths()["purelib"]
    (Path(site.stdout.strip()) / "zz_adws_dependencies.pth").write_text(deps + "\n")
    return python


def pip_into(python: Path, *args: str | Path) -> None:
    """Install into the venv of `python`, offline, with this venv's pip."""
    # --ignore-installed: the adws the venv sees through its `.pth` line is neither reused
    # nor uninstalled.
    done = run(
        sys.executable,
        "-m",
        "pip",
        "--python",
        python,
        "install",
        "--quiet",
        "--no-index",
        "--no-deps",
        "--ignore-installed",
        *args,
    )
    assert done.returncode == 0, done.stderr


def mypy(python: Path, project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run `mypy --strict` in `project` against the packages the venv of `python` has."""
    return run(
        sys.executable,
        "-m",
        "mypy",
        "--strict",
        "--no-incremental",
        "--python-executable",
        python,
        *args,
        cwd=project,
    )
