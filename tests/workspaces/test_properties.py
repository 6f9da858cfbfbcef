"""Values that cross a boundary in workspaces: branch names, a person's words, a notifier's output."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adws.engine.scope import Decision
from adws.journal import Journal
from adws.journal.store.workspaces import approvals_of, decide
from adws.render._page import escape
from adws.render.workspaces import workspaces_html
from adws.workspaces._git import GitError
from adws.workspaces._places import branch_label, branch_name
from adws.workspaces.notify import notify
from tests.strategies import any_text

IDENTIFIERS = st.from_regex(r"[a-z][a-z0-9_]{0,11}", fullmatch=True)
RUN_IDS = st.from_regex(r"[0-9a-f]{12}", fullmatch=True) | st.text(max_size=16)
PERSONS_WORDS = st.text(alphabet=st.characters(blacklist_categories=()), max_size=40)
"""What a person may type after --note, --reason or --by: anything, lone surrogates included."""


@st.composite
def worktree_places(draw: st.DrawFn) -> tuple[str, str]:
    """A worktree step's name and the branch path it runs in, as the executor makes them.

    Top level (no branch); a `fan_out` branch (`items[2]`); inside a branch
    of a `parallel` step; or the `parallel` branch itself (`checks[lint]`).
    """
    name = draw(IDENTIFIERS)
    parent = draw(IDENTIFIERS)
    kind = draw(st.sampled_from(["top", "fan_out", "parallel", "is_branch"]))
    if kind == "top":
        return name, ""
    if kind == "fan_out":
        return name, f"{parent}[{draw(st.integers(0, 10_000))}]"
    if kind == "parallel":
        return name, f"{parent}[{draw(IDENTIFIERS)}]"
    return name, f"{parent}[{name}]"


def accepted_by_git(branch: str) -> bool:
    done = subprocess.run(
        ["git", "check-ref-format", f"refs/heads/{branch}"], check=False, capture_output=True
    )
    return done.returncode == 0


@settings(max_examples=150, deadline=None)
@given(run_id=RUN_IDS, place=worktree_places())
def test_a_worktrees_branch_and_folder_are_ones_git_and_the_filesystem_accept(
    run_id: str, place: tuple[str, str]
) -> None:
    label = branch_label(*place)
    root = Path("/worktrees")
    if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}", run_id) is None:
        with pytest.raises(GitError, match=re.escape(repr(run_id))):
            branch_name(run_id, label)
        return
    branch = branch_name(run_id, label)
    assert accepted_by_git(branch), branch
    folder = root / run_id / label
    assert (folder.parent.parent, folder.name, folder.parent.name) == (root, label, run_id)
    assert label not in {"", ".", ".."}


@given(first=worktree_places(), second=worktree_places())
def test_two_worktrees_of_one_run_never_share_a_label(
    first: tuple[str, str], second: tuple[str, str]
) -> None:
    if first != second:
        assert branch_label(*first) != branch_label(*second)


@pytest.fixture(scope="module")
def journal(tmp_path_factory: pytest.TempPathFactory) -> Journal:
    return Journal(tmp_path_factory.mktemp("approvals") / "runs.db")


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(by=PERSONS_WORDS, note=PERSONS_WORDS, message=PERSONS_WORDS)
def test_who_decided_and_why_come_back_from_the_journal_exactly_and_show_escaped(
    journal: Journal, by: str, note: str, message: str
) -> None:
    run_id = uuid.uuid4().hex[:12]
    with journal.transaction() as db:
        from adws.journal.store.workspaces import asked_statement  # noqa: PLC0415 - beside its use

        db.execute(*asked_statement(run_id, "approve", message, None))
    decide(journal, run_id, "approve", Decision("rejected", by, "2026-01-01T00:00:00+00:00", note))
    (asked,) = approvals_of(journal, run_id)
    assert (asked.message, asked.decision) == (
        message,
        Decision("rejected", by, "2026-01-01T00:00:00+00:00", note),
    )
    page = workspaces_html([], [asked], "adws status r1 --json")
    assert f"<pre>{escape(message)}</pre>" in page
    assert page.endswith(
        f"{escape(f'rejected by {by} at 2026-01-01T00:00:00+00:00')}"
        f"{escape(f': {note}') if note else ''}</p><pre>{escape(message)}</pre></div>"
    )


def can_be_an_argument(text: str) -> bool:
    try:
        os.fsencode(text)
    except UnicodeEncodeError:
        return False
    return "\0" not in text


NOTIFIER = """
import sys
sys.stdout.buffer.write(bytes.fromhex(sys.argv[1][1:]))
sys.stderr.buffer.write(bytes.fromhex(sys.argv[2][1:]))
sys.exit(int(sys.argv[3]))
"""


@settings(max_examples=40, deadline=None)
@given(
    message=any_text,
    said=st.binary(max_size=400),
    complained=st.binary(max_size=400),
    code=st.sampled_from([0, 1, 2]),
)
def test_a_notifier_never_fails_the_run_whatever_it_is_given_or_prints(
    tmp_path_factory: pytest.TempPathFactory,
    message: str,
    said: bytes,
    complained: bytes,
    code: int,
) -> None:
    script = tmp_path_factory.getbasetemp() / "notifier.py"
    script.write_text(NOTIFIER)
    command = f"{sys.executable} {script} x{said.hex()} x{complained.hex()} {code}"
    warning = notify(command, "r1", message, timeout=30)
    if code == 0 and can_be_an_argument(message):
        assert warning is None
        return
    assert warning is not None
    assert warning.startswith(f"--notify {command!r} failed (")
    assert len(warning) < len(command) + 500  # what it printed is cut to its tail
