"""A worktree attempt's diff, read by a reviewer: `adws status --step -v`, `adws approvals -v`.

Real runs in real git worktrees, each command in its own process; the
agent writes what an attacker would (terminal escapes) and more than a
text's cap; a journal row is forged with sqlite3.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Final

import pytest

from tests.conftest import REPO, start_adws
from tests.workspaces.conftest import make_repo

FLOWS: Final = r"""
from pathlib import Path

from adws import OutputContract, Workflow, agent_step, approval_step, worktree
from adws.testing import FunctionAgent


def fix(request):
    folder = Path(request.cwd)
    (folder / "README").write_text("hello\nworld\n")
    (folder / "title.txt").write_text("\x1b]0;pwned\x07\n\x1b[2J gone\n")
    return "STATUS: done\nNOTE: fixed\n"


def bulk(request):
    lines = "".join(f"{number:07d} {'x' * 91}\n" for number in range(12_000))
    (Path(request.cwd) / "bulk.txt").write_text(lines)  # 1,200,000 bytes
    return "STATUS: done\nGROWN: bulk\n"


def edit(name, answer, field):
    return agent_step(name, prompt="Edit the code.", agent=FunctionAgent(answer),
                      contract=OutputContract((field,)))


review = Workflow(
    "review",
    (
        worktree(edit("edit", fix, "NOTE"), name="fix"),
        worktree(edit("grow", bulk, "GROWN"), name="bulk"),
        approval_step("merge", message="Merge both?"),
    ),
    inputs=("target_dir",),
)
"""

HOSTILE_DIFF: Final = (
    "diff --git a/title.txt b/title.txt\n"
    "new file mode 100644\n"
    "index 0000000000000000000000000000000000000000..{index}\n"
    "--- /dev/null\n"
    "+++ b/title.txt\n"
    "@@ -0,0 +1,2 @@\n"
    "+\\x1b]0;pwned\\x07\n"
    "+\\x1b[2J gone\n"
)


def adws(project: Path, *argv: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    process = start_adws(project, *argv, env={"NO_COLOR": "", **(env or {})})
    out, err = process.communicate(timeout=120)
    return process.returncode, out, err


def started(project: Path, *extra: str) -> str:
    target = f"target_dir={project / 'repo'}"
    argv = ("run", "review", "--workflows", "workflows", "-i", target, "--json", "-q", *extra)
    code, out, err = adws(project, *argv)
    run_id = str(json.loads(out)["run_id"])
    assert code == 3
    assert err.startswith(f"review waiting for approval at merge (run {run_id}): ")
    return run_id


def new_project(folder: Path) -> Path:
    (folder / "workflows").mkdir()
    (folder / "workflows" / "review.py").write_text(FLOWS)
    make_repo(folder / "repo")
    return folder


@pytest.fixture(scope="module")
def reviewed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A project with a run waiting at `merge`, its worktrees changed."""
    project = new_project(tmp_path_factory.mktemp("review"))
    return project, started(project)


@pytest.fixture(scope="module")
def hashes_only(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The same, run with --no-transcripts (in a journal of its own: a text is kept once)."""
    project = new_project(tmp_path_factory.mktemp("hashes"))
    return project, started(project, "--no-transcripts")


def index_of(out: str) -> str:
    found = re.search(r"index 0{40}\.\.([0-9a-f]{40})\n", out)
    assert found is not None
    return found.group(1)


def test_status_step_names_the_diff_and_how_to_see_it(reviewed: tuple[Path, str]) -> None:
    project, run_id = reviewed
    code, out, err = adws(project, "status", run_id, "--step", "fix")
    assert (code, err) == (0, "")
    assert out.endswith(
        "\n\ndiff of worktree fix (attempt 1): 2 files changed, +3 -0 (393 bytes); "
        f"adws status {run_id} --step fix --attempt 1 -v shows it\n"
    )


def test_status_step_verbose_shows_the_diff_whole_and_escaped(
    reviewed: tuple[Path, str],
) -> None:
    project, run_id = reviewed
    code, out, err = adws(project, "status", run_id, "--step", "fix", "-v")
    assert (code, err) == (0, "")
    assert "\x1b" not in out
    assert "\x07" not in out
    tail = out[out.index("\n\ndiff of worktree fix") :]
    assert tail.startswith(
        "\n\ndiff of worktree fix (attempt 1): 2 files changed, +3 -0 (393 bytes):\n"
        "  diff --git a/README b/README\n"
    )
    assert tail.endswith(
        "".join(f"  {line}\n" for line in HOSTILE_DIFF.format(index=index_of(out)).splitlines())
    )


def test_status_step_verbose_says_when_the_journal_kept_part_of_a_diff(
    reviewed: tuple[Path, str],
) -> None:
    project, run_id = reviewed
    code, out, err = adws(project, "status", run_id, "--step", "bulk", "-v")
    assert (code, err) == (0, "")
    assert (
        "\n\ndiff of worktree bulk (attempt 1): 1 file changed, +10381 -0 in its first 1,048,576 "
        "bytes (1,212,192 bytes):\n  diff --git a/bulk.txt b/bulk.txt\n"
    ) in out
    assert out.endswith("\n  … cut: the journal keeps the first 1,048,576 bytes of a diff\n")


def test_status_step_json_holds_the_diffs(reviewed: tuple[Path, str]) -> None:
    project, run_id = reviewed
    code, out, err = adws(project, "status", run_id, "--step", "fix", "--json")
    assert (code, err) == (0, "")
    (diff,) = json.loads(out)["diffs"]
    text = diff.pop("text")
    assert text.startswith("diff --git a/README b/README\n")
    assert text.endswith("+\x1b]0;pwned\x07\n+\x1b[2J gone\n")
    assert diff == {
        "step": "fix",
        "attempt": 1,
        "label": "fix",
        "recorded": diff["recorded"],
        "sha256": diff["sha256"],
        "size": 393,
        "cut": False,
        "taken": True,
    }
    assert "\x1b" not in out  # the escape is JSON's own: \u001b


def test_status_step_of_a_run_without_transcripts_says_the_diff_was_not_kept(
    hashes_only: tuple[Path, str],
) -> None:
    project, run_id = hashes_only
    code, out, err = adws(project, "status", run_id, "--step", "fix", "-v")
    assert (code, err) == (0, "")
    assert re.search(
        r"\n\ndiff of worktree fix \(attempt 1\): not kept \(393 bytes, sha256 [0-9a-f]{32}…; "
        r"transcripts were off\)\n$",
        out,
    )


def test_approvals_verbose_shows_each_worktree_s_diff_capped(
    reviewed: tuple[Path, str],
) -> None:
    project, run_id = reviewed
    code, out, err = adws(project, "approvals", "-v")
    assert (code, err) == (0, "")
    assert "\x1b" not in out
    assert out.startswith(f"{run_id} · review · merge · asked ")
    assert "  Merge both?\n  diff of worktree fix (step fix, attempt 1): 2 files changed" in out
    hostile = HOSTILE_DIFF.format(index=index_of(out))
    assert "".join(f"    {line}\n" for line in hostile.splitlines()) in out
    assert (
        "  diff of worktree bulk (step bulk, attempt 1): 1 file changed, +10381 -0 in its first "
        "1,048,576 bytes (1,212,192 bytes):\n    diff --git a/bulk.txt b/bulk.txt\n"
    ) in out
    assert (
        f"\n    +0000156 {'x' * 43}"  # the head stops mid-line, 16,000 bytes in
        f"\n    … 1,016,576 bytes cut: adws status {run_id} --step bulk --attempt 1 -v shows all"
        f"\n    {'x' * 37}\n    +0010222 "  # the tail starts mid-line, 16,000 bytes from its end
    ) in out
    assert out.endswith(
        "\n    … cut: the journal keeps the first 1,048,576 bytes of a diff\n"
        f"  (adws approve {run_id} --note ... | adws reject {run_id} --reason ...)\n"
    )


def test_approvals_verbose_says_a_diff_was_not_kept(hashes_only: tuple[Path, str]) -> None:
    project, run_id = hashes_only
    code, out, err = adws(project, "approvals", "-v")
    assert (code, err) == (0, "")
    assert out.startswith(f"{run_id} · review · merge · asked ")
    assert re.search(
        r"\n  Merge both\?\n"
        r"  diff of worktree fix \(step fix, attempt 1\): not kept \(393 bytes, sha256 "
        r"[0-9a-f]{32}…; transcripts were off\)\n"
        r"  diff of worktree bulk \(step bulk, attempt 1\): not kept \(1,212,192 bytes, sha256 "
        r"[0-9a-f]{32}…; transcripts were off\)\n  \(adws approve ",
        out,
    )
    code, listed, err = adws(project, "approvals", "--json", "-v")
    assert (code, err) == (0, "")
    diffs = json.loads(listed)[0]["diffs"]
    assert [(d["label"], d["size"], d["cut"], d["text"]) for d in diffs] == [
        ("fix", 393, False, None),
        ("bulk", 1_212_192, False, None),
    ]


def test_approvals_shows_no_diff_without_verbose(reviewed: tuple[Path, str]) -> None:
    project, run_id = reviewed
    code, out, err = adws(project, "approvals")
    assert (code, err) == (0, "")
    assert "diff" not in out
    code, listed, err = adws(project, "approvals", "--json")
    assert (code, err) == (0, "")
    assert [(item["run_id"], sorted(item)) for item in json.loads(listed)] == [
        (
            run_id,
            [
                "asked",
                "decision",
                "message",
                "run_id",
                "step",
                "timeout",
                "waits_elsewhere",
                "workflow",
            ],
        )
    ]


def test_approvals_json_verbose_holds_each_worktree_s_latest_diff(
    reviewed: tuple[Path, str],
) -> None:
    project, run_id = reviewed
    code, out, err = adws(project, "approvals", "--json", "-v")
    assert (code, err) == (0, "")
    (listed,) = json.loads(out)
    assert listed["run_id"] == run_id
    diffs = listed["diffs"]
    assert [(d["label"], d["step"], d["attempt"], d["size"], d["cut"]) for d in diffs] == [
        ("fix", "fix", 1, 393, False),
        ("bulk", "bulk", 1, 1_212_192, True),
    ]
    assert diffs[0]["text"].endswith("+\x1b]0;pwned\x07\n+\x1b[2J gone\n")
    assert len(diffs[1]["text"].encode()) == 1_048_576


def in_a_terminal(project: Path, *argv: str, env: dict[str, str]) -> str:
    """Run `adws ARGV` with a pseudo-terminal as its stdout; return what the terminal got."""
    main_fd, child_fd = os.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "adws", *argv],
        cwd=project,
        env={
            **os.environ,
            "ADWS_JOURNAL": str(project / "runs.db"),
            "PYTHONPATH": str(REPO),
            "TERM": "xterm",
            **env,
        },
        stdout=child_fd,
        stderr=subprocess.DEVNULL,
    )
    os.close(child_fd)
    got = b""
    while True:
        try:
            chunk = os.read(main_fd, 1 << 16)
        except OSError:  # EIO: the child closed the terminal's last writer
            break
        if not chunk:
            break
        got += chunk
    os.close(main_fd)
    assert process.wait(timeout=60) == 0
    return got.decode().replace("\r\n", "\n")


def test_a_terminal_gets_the_diff_coloured_and_still_escaped(
    reviewed: tuple[Path, str],
) -> None:
    project, run_id = reviewed
    out = in_a_terminal(project, "status", run_id, "--step", "fix", "-v", env={})
    assert ("  \x1b[1mdiff --git a/README b/README\x1b[0m\n  \x1b[1mindex ce01362") in out
    assert (
        "  \x1b[36m@@ -1 +1,2 @@\x1b[0m\n   hello\n  \x1b[32m+world\x1b[0m\n"
        "  \x1b[1mdiff --git a/title.txt b/title.txt\x1b[0m\n"
    ) in out
    assert "  \x1b[32m+\\x1b]0;pwned\\x07\x1b[0m\n  \x1b[32m+\\x1b[2J gone\x1b[0m\n" in out
    assert re.findall(r"\x1b[^\[]|\x1b\[(?!(?:0|1|32|36)m)", out) == []  # only its own colours
    reviewed_out = in_a_terminal(project, "approvals", "-v", env={})
    assert "    \x1b[32m+world\x1b[0m\n" in reviewed_out


@pytest.mark.parametrize("env", [{"NO_COLOR": "1"}, {"TERM": "dumb"}])
def test_no_color_or_a_dumb_terminal_gets_no_colour(
    reviewed: tuple[Path, str], env: dict[str, str]
) -> None:
    project, run_id = reviewed
    out = in_a_terminal(project, "status", run_id, "--step", "fix", "-v", env=env)
    assert "  +world\n" in out
    assert "\x1b" not in out


def test_a_forged_diff_row_is_named_and_the_rest_shown(
    reviewed: tuple[Path, str], tmp_path: Path
) -> None:
    project = Path(shutil.copytree(reviewed[0], tmp_path / "forged"))
    run_id = reviewed[1]
    with sqlite3.connect(project / "runs.db") as forged:
        forged.execute(
            "UPDATE diffs SET diff_size = -5 WHERE run_id = ? AND label = 'fix'", (run_id,)
        )
    forged.close()
    code, out, err = adws(project, "status", run_id, "--step", "fix", "-v")
    assert code == 1
    assert out.endswith(
        "\n\ndiff of worktree fix (attempt 1): unreadable (0 bytes; the rows it cannot read "
        "are named on stderr)\n"
    )
    assert err == (
        f"adws: the journal {project / 'runs.db'} holds rows it cannot read:\n"
        f"  diffs row of run {run_id}, step fix, attempt 1: diff_size is not a whole number "
        "from 0 to 9223372036854775807: -5\n"
    )
    code, out, err = adws(project, "approvals", "-v")
    assert code == 1
    assert "  diff of worktree fix (step fix, attempt 1): unreadable (0 bytes;" in out
    assert f"  diffs row of run {run_id}, step fix, attempt 1: diff_size" in err
    code, out, err = adws(project, "report", run_id, "-o", "page.html")
    assert (code, out) == (1, "page.html\n")
    assert f"  diffs row of run {run_id}, step fix, attempt 1: diff_size" in err
