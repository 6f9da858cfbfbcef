"""`adws eval --changed-since REF`: which steps of a workflow changed since a git ref.

The workflows folder as it was at REF is taken out of git (`git archive`)
into a temporary folder, and the workflow's step fingerprints there
(`adws.journal.identity.fingerprint`: a step's code, prompt, contract,
settings, and the helper modules of the folder it imports) are computed
in a separate Python process, so the old modules never mix with the ones
this evaluation runs. A step whose fingerprint differs, is new, or is
gone counts as changed; a folder or workflow that did not exist at REF
changed whole. A prompt a step reads from a file named by an input is
not part of any fingerprint: such a file is checked by its own content
(`git diff REF -- FILE`) when a task or variant names it.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from adws.cli._args import UsageError
from adws.discovery import discover_workflows
from adws.journal.identity.fingerprint import step_fingerprints

if TYPE_CHECKING:
    from collections.abc import Iterable

    from adws.engine.step import Workflow

__all__ = ["changed_steps", "print_fingerprints"]


def _git(folder: Path, *argv: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(  # noqa: S603 - git with arguments, no shell
        ["git", *argv],  # noqa: S607 - the user's git, from PATH
        cwd=folder,
        capture_output=True,
        check=False,
    )


def print_fingerprints(folder: str, name: str) -> None:
    """Print the step fingerprints of workflow `name` in `folder` as JSON (null: none there).

    Run in its own process by `changed_steps`, on the folder as it was at the ref.
    """
    found = discover_workflows(Path(folder)).workflows.get(name)
    print(json.dumps(None if found is None else step_fingerprints(found)))  # noqa: T201 - read by the parent process


def _then(folder: Path, ref: str, name: str) -> dict[str, str] | None:
    """Return the workflow's step fingerprints at `ref` (None: no such folder or workflow then)."""
    top = _git(folder, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        msg = f"--changed-since {ref}: {folder} is not in a git repository"
        raise UsageError(msg)
    if _git(folder, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").returncode != 0:
        msg = f"--changed-since {ref}: git knows no commit {ref!r} in {folder}"
        raise UsageError(msg)
    root = Path(top.stdout.decode().strip()).resolve()
    inside = folder.resolve().relative_to(root)
    archive = _git(root, "archive", "--format=tar", ref, "--", inside.as_posix())
    if archive.returncode != 0:  # the folder did not exist at `ref`
        return None
    with tempfile.TemporaryDirectory(prefix="adws-changed-") as place:
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(place, filter="data")
        code = "import sys; from adws.cli._eval_changed import print_fingerprints; "
        code += "print_fingerprints(*sys.argv[1:])"
        done = subprocess.run(  # noqa: S603 - this Python, with arguments, no shell
            [sys.executable, "-c", code, str(Path(place) / inside), name],
            capture_output=True,
            text=True,
            check=False,
        )
    if done.returncode != 0:
        why = done.stderr.strip() or "no message"
        msg = f"--changed-since {ref}: the workflows folder at {ref} did not load"
        msg += f" (exit {done.returncode}): {why}"
        raise UsageError(msg)
    then: dict[str, str] | None = json.loads(done.stdout)
    return then


def _files_changed(folder: Path, ref: str, named: Iterable[str]) -> list[str]:
    """Return the files among `named` (input values) whose content git says changed since `ref`."""
    files = sorted({value for value in named if value and Path(value).is_file()})
    return [
        name
        for name in files
        if _git(folder, "diff", "--quiet", ref, "--", str(Path(name).resolve())).returncode != 0
    ]


def changed_steps(
    folder: Path, ref: str, workflow: Workflow, inputs: Iterable[object] = ()
) -> list[str]:
    """Name what changed in `workflow` since `ref`: its steps, then files its inputs name.

    An empty list: nothing did, the evaluation has nothing to measure.
    """
    then = _then(folder, ref, workflow.name)
    if then is None:
        return [step.name for step in workflow.steps]
    now = step_fingerprints(workflow)
    steps = [name for name in {**then, **now} if then.get(name) != now.get(name)]
    return steps + _files_changed(folder, ref, (str(value) for value in inputs))
