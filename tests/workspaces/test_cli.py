"""approvals, approve, reject, resume and status through main([...]), on real git repositories."""

from __future__ import annotations

import json
import shlex
import sqlite3
import sys
from pathlib import Path

import pytest

from adws.cli import main
from adws.journal import Journal
from adws.journal.store.workspaces import approvals_of
from tests.conftest import shared_worktree
from tests.workspaces.conftest import git, make_repo

GATED = """
from pathlib import Path

from returns.io import IOFailure, IOSuccess

from adws import PipelineError, Step, Workflow, approval_step, worktree


def change(ctx):
    folder = Path(ctx.inputs["worktree"])
    (folder / "half.txt").write_text("half\\n")
    if not Path("gate").exists():
        return IOFailure(PipelineError("", "ShellFailed", "the gate is closed"))
    (folder / "change.txt").write_text("done\\n")
    return IOSuccess(ctx.merge_outputs({"summary": "add change.txt"}))


def cleanup(ctx):
    with open("cleanup.log", "a") as log:
        log.write(("ok" if ctx.failure is None else ctx.failure.error_type) + "\\n")
    return IOSuccess(ctx.merge_outputs({"cleaned": True}))


def steps(timeout):
    return (
        worktree(Step("impl", change, reads=("worktree",), writes=("summary",))),
        approval_step("approve", message="Merge {impl_branch}? {impl_diffstat.text}", timeout=timeout),
        Step("cleanup", cleanup, always_run=True, reads=(), writes=("cleaned",)),
    )


workflow = Workflow("gated", steps(None), inputs=("target_dir",))
quick = Workflow("gated_quick", steps(0.001), inputs=("target_dir",))
"""


@pytest.fixture
def project(in_tmp: Path) -> Path:
    """A folder with the gated workflows, a repository, and the gate open."""
    (in_tmp / "workflows").mkdir()
    (in_tmp / "workflows" / "gated.py").write_text(GATED)
    make_repo(in_tmp / "repo")
    (in_tmp / "gate").touch()
    return in_tmp


def adws(*argv: str) -> int:
    return main(list(argv))


def start(workflow: str = "gated", *extra: str) -> int:
    return adws("run", workflow, "-i", "target_dir=repo", *extra)


def only_run(project: Path) -> str:
    (record,) = Journal(project / ".adws" / "runs.db").runs()
    return record.run_id


def test_a_run_that_reaches_an_approval_waits_with_exit_3_and_is_listed(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert start() == 3
    run_id = only_run(project)
    err = capsys.readouterr().err
    assert f"gated waiting for approval at approve (run {run_id}): adws approve {run_id}" in err
    assert not (project / "cleanup.log").exists()  # the run has not ended
    assert adws("approvals") == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"{run_id} · gated · approve · asked ")
    assert lines[0].endswith(" · expires never")
    assert lines[1:] == [
        f"  Merge adws/{run_id}/impl? 2 files changed, 2 insertions(+)",
        f"  (adws approve {run_id} --note ... | adws reject {run_id} --reason ...)",
    ]
    assert adws("approvals", "--json") == 0
    (listed,) = json.loads(capsys.readouterr().out)
    assert (listed["run_id"], listed["step"], listed["decision"]) == (run_id, "approve", None)
    assert adws("runs", "--status", "waiting", "--json") == 0
    assert [r["run_id"] for r in json.loads(capsys.readouterr().out)] == [run_id]


def test_approve_continues_the_run_and_records_who_when_and_why(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    start()
    run_id = only_run(project)
    assert adws("approve", run_id, "--note", "looks right", "--by", "ann") == 0
    assert (project / "cleanup.log").read_text() == "ok\n"
    capsys.readouterr()
    assert adws("status", run_id) == 0
    out = capsys.readouterr().out
    assert f"  impl: branch adws/{run_id}/impl from " in out
    assert "· removed (the branch stays)" in out
    assert "  approve: asked " in out
    assert "· approved by ann at " in out
    assert out.rstrip().endswith(": looks right")
    assert adws("status", run_id, "--json") == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["approvals"][0]["decision"]["by"] == "ann"
    assert shown["worktrees"][0]["state"] == "removed"
    assert adws("approvals") == 0
    assert "no run waits for approval" in capsys.readouterr().err


def test_the_report_page_shows_the_worktrees_and_the_decision_escaped(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    start()
    run_id = only_run(project)
    assert adws("approve", run_id, "--note", "<b>ship</b> \udcff", "--by", "ann") == 0
    capsys.readouterr()
    assert adws("report", run_id, "-o", "-") == 0
    page = capsys.readouterr().out
    assert f"<tr><td>impl</td><td><code>adws/{run_id}/impl</code></td><td><code>" in page
    assert "</code></td><td>removed (the branch stays)</td></tr>" in page
    assert "<h2>approvals</h2>" in page
    assert ": &lt;b&gt;ship&lt;/b&gt; \\udcff</p><pre>Merge adws/" in page
    (asked,) = approvals_of(Journal(project / ".adws" / "runs.db"), run_id)
    assert asked.decision is not None
    assert asked.decision.note == "<b>ship</b> \udcff"  # kept exactly, shown escaped


def test_status_shows_an_open_question_and_its_timeout(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert start("gated_quick") == 3
    run_id = only_run(project)
    capsys.readouterr()
    assert adws("status", run_id) == 0  # status only reads: the expired wait stays open
    assert "· waiting (timeout 0.001s)" in capsys.readouterr().out


def test_a_waiting_run_whose_question_the_journal_lost_is_not_listed(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    start()
    with sqlite3.connect(project / ".adws" / "runs.db") as db:
        db.execute("DELETE FROM approvals")
    db.close()
    capsys.readouterr()
    assert adws("approvals", "--json") == 0
    assert json.loads(capsys.readouterr().out) == []


def test_approve_without_by_records_the_login_name(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOGNAME", "carol")
    start()
    run_id = only_run(project)
    assert adws("approve", run_id) == 0
    (asked,) = approvals_of(Journal(project / ".adws" / "runs.db"), run_id)
    assert asked.decision is not None
    assert (asked.decision.by, asked.decision.note) == ("carol", "")


def test_a_login_name_nobody_can_tell_is_unknown(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import getpass  # noqa: PLC0415 - the boundary faked here

    def nobody() -> str:
        raise OSError

    monkeypatch.setattr(getpass, "getuser", nobody)
    start()
    run_id = only_run(project)
    assert adws("approve", run_id) == 0
    (asked,) = approvals_of(Journal(project / ".adws" / "runs.db"), run_id)
    assert asked.decision is not None
    assert asked.decision.by == "unknown"


def test_reject_runs_the_cleanup_and_ends_the_run_rejected_for_good(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    start()
    run_id = only_run(project)
    assert adws("reject", run_id, "--reason", "too big", "--by", "bob") == 1
    assert (project / "cleanup.log").read_text() == "Rejected\n"
    assert "gated failed in" in capsys.readouterr().err
    (record,) = Journal(project / ".adws" / "runs.db").runs()
    assert (record.status, record.error.message) == ("failed", "rejected by bob: too big")  # type: ignore[union-attr] # an error
    assert adws("resume", run_id) == 2
    assert (
        f"run {run_id} was rejected at 'approve': rejected by bob: too big"
        in capsys.readouterr().err
    )
    assert adws("approve", run_id) == 2
    assert f"run {run_id} is not waiting for approval (it is failed)" in capsys.readouterr().err


def test_a_resume_of_a_waiting_run_waits_again_and_keeps_when_it_was_asked(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    start()
    run_id = only_run(project)
    journal = Journal(project / ".adws" / "runs.db")
    (first,) = approvals_of(journal, run_id)
    assert adws("resume", run_id) == 3
    assert approvals_of(journal, run_id) == [first]
    assert "[2/3] approve … waiting for approval: Merge" in capsys.readouterr().err


def test_a_wait_past_its_timeout_is_rejected_by_whoever_sees_it_first(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for command in (("approvals",), ("approve", "{run}"), ("resume", "{run}")):
        (project / ".adws" / "runs.db").unlink(missing_ok=True)
        assert start("gated_quick") == 3
        run_id = only_run(project)
        capsys.readouterr()
        code = adws(*(part.format(run=run_id) for part in command))
        assert code == (0 if command == ("approvals",) else 1)
        err = capsys.readouterr().err
        assert (
            f"adws: run {run_id} waited for approval at approve past its 0.001s timeout; it is"
            " rejected (reason: timeout)"
        ) in err
        (record,) = Journal(project / ".adws" / "runs.db").runs()
        assert (record.status, record.error.message) == ("failed", "rejected by adws: timeout")  # type: ignore[union-attr] # an error
    assert (project / "cleanup.log").read_text() == "Rejected\nRejected\nRejected\n"


def test_an_expired_wait_that_cannot_be_ended_stays_listed(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert start("gated_quick") == 3
    run_id = only_run(project)
    (project / "workflows" / "gated.py").unlink()
    capsys.readouterr()
    assert adws("approvals") == 0
    captured = capsys.readouterr()
    assert f"adws: run {run_id} could not be ended: " in captured.err
    assert captured.out.startswith(f"{run_id} · gated_quick · approve")


def test_notify_is_called_once_with_the_run_id_and_the_message(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = "import sys; open('notified.log', 'a').write(repr(sys.argv[1:]) + chr(10))"
    notify = shlex.join([sys.executable, "-c", script])
    assert start("gated", "--notify", notify) == 3
    run_id = only_run(project)
    assert adws("approve", run_id, "--by", "ann") == 0
    message = f"Merge adws/{run_id}/impl? 2 files changed, 2 insertions(+)"
    assert (project / "notified.log").read_text() == f"{[run_id, message]!r}\n"
    (record,) = Journal(project / ".adws" / "runs.db").runs()
    assert record.options.notify == notify
    assert "warning" not in capsys.readouterr().err


def test_a_notify_command_that_fails_is_only_a_warning(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert start("gated", "--notify", "false") == 3
    assert "adws: warning: --notify 'false' failed (exited with 1)" in capsys.readouterr().err


def test_an_edited_kept_worktree_refuses_a_resume_naming_the_file_unless_forced(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "gate").unlink()
    assert start() == 1
    run_id = only_run(project)
    folder = shared_worktree(project / "repo", run_id, "impl")
    assert (folder / "half.txt").read_text() == "half\n"
    (folder / "half.txt").write_text("edited by hand\n")
    (project / "gate").touch()
    capsys.readouterr()
    assert adws("resume", run_id) == 2
    err = capsys.readouterr().err
    assert err == (
        f"adws: error: run {run_id} cannot be resumed as it was left: worktree impl"
        f" ({folder.resolve()}) changed since run {run_id} last recorded it: half.txt; pass"
        " --accept-drift to go on with the worktree as it is (a missing one starts again from"
        " its base)\n"
    )
    assert adws("resume", run_id, "--accept-drift") == 3
    commit = git(project / "repo", "rev-parse", f"adws/{run_id}/impl")
    assert git(project / "repo", "show", f"{commit}:half.txt") == "half"  # rewritten by the step


def test_a_worktree_adws_removed_is_not_drift_and_starts_again_from_its_base(
    project: Path,
) -> None:
    assert start() == 3
    run_id = only_run(project)
    base = git(project / "repo", "rev-parse", "main")
    (project / "repo" / "later.txt").write_text("later\n")
    git(project / "repo", "add", "later.txt")
    git(project / "repo", "commit", "-q", "-m", "main moves on")
    assert adws("resume", run_id, "--from", "impl") == 3
    assert git(project / "repo", "rev-parse", f"adws/{run_id}/impl^") == base


def test_a_missing_kept_worktree_refuses_a_resume_and_force_starts_it_again(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil  # noqa: PLC0415 - only this test

    (project / "gate").unlink()
    assert start() == 1
    run_id = only_run(project)
    folder = shared_worktree(project / "repo", run_id, "impl")
    shutil.rmtree(folder)
    (project / "gate").touch()
    capsys.readouterr()
    assert adws("resume", run_id) == 2
    assert f"worktree impl ({folder.resolve()}) is missing" in capsys.readouterr().err
    assert adws("resume", run_id, "--accept-drift") == 3


# -- one flag for each refusal (trust, fourth pass) ---------------------------------------------


def edit_cleanup(project: Path) -> None:
    """Change the definition of the finished step `impl` (its function's code)."""
    module = project / "workflows" / "gated.py"
    module.write_text(module.read_text().replace('"add change.txt"', '"add change.txt!"'))


def test_keep_changed_takes_a_new_baseline_so_a_later_approve_is_not_refused(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert start() == 3
    run_id = only_run(project)
    edit_cleanup(project)
    capsys.readouterr()
    assert adws("approve", run_id) == 2
    assert "pass --keep-changed to keep the outputs it made" in capsys.readouterr().err
    assert adws("resume", run_id, "--force") == 2  # --force no longer keeps a changed step
    assert adws("resume", run_id, "--keep-changed") == 3  # it waits again, at approve
    assert adws("resume", run_id, "--plan") == 0
    assert "1. impl: kept" in capsys.readouterr().out
    assert adws("approve", run_id, "--by", "ann") == 0


def test_keep_changed_on_approve_keeps_the_step_and_approves(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert start() == 3
    run_id = only_run(project)
    edit_cleanup(project)
    assert adws("approve", run_id, "--keep-changed", "--by", "ann") == 0
    capsys.readouterr()
    assert adws("status", run_id) == 0
    assert capsys.readouterr().out.splitlines()[0] == f"run {run_id} · gated · succeeded"


def test_reject_checks_no_definition_and_no_worktree_it_only_runs_the_cleanup(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert start() == 3
    run_id = only_run(project)
    edit_cleanup(project)
    (project / "cleanup.log").unlink(missing_ok=True)
    assert adws("reject", run_id, "--reason", "not now", "--by", "bob") == 1
    assert (project / "cleanup.log").read_text() == "Rejected\n"
    capsys.readouterr()
    assert adws("resume", run_id) == 2
    assert "was rejected at 'approve': " in capsys.readouterr().err


def test_resume_plan_shows_the_drift_the_resume_refuses(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "gate").unlink()
    assert start() == 1
    run_id = only_run(project)
    folder = shared_worktree(project / "repo", run_id, "impl")
    (folder / "half.txt").write_text("edited by hand\n")
    capsys.readouterr()
    assert adws("resume", run_id, "--plan") == 0
    drift = [line for line in capsys.readouterr().out.splitlines() if line.startswith("drift:")]
    assert drift == [
        (
            f"drift: worktree impl ({folder.resolve()}) changed since run {run_id} last recorded "
            "it: half.txt; a resume refuses it (--accept-drift goes on with it)"
        )
    ]
    (project / "gate").touch()
    assert adws("resume", run_id, "--force") == 2  # --force no longer goes on with drift
    assert adws("resume", run_id, "--accept-drift") == 3


def test_approve_on_a_forged_waiting_run_with_nothing_left_is_refused(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert start() == 3
    run_id = only_run(project)
    db = sqlite3.connect(project / ".adws" / "runs.db")
    db.execute("UPDATE attempts SET status = 'succeeded', error = NULL")
    db.execute(
        "INSERT INTO attempts (run_id, step, step_index, attempt, status, recorded, seconds)"
        " VALUES (?, 'cleanup', 2, 1, 'succeeded', '', 0)",
        (run_id,),
    )
    db.commit()
    db.close()
    capsys.readouterr()
    assert adws("approve", run_id) == 2
    assert capsys.readouterr().err == (
        f"adws: error: run {run_id} has nothing left to decide: every step succeeded\n"
    )
