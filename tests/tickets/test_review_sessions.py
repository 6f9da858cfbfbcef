"""A review round continues its parent's agent sessions on the parent's host, and only there.

The real `claude` CLI against the fake model API, `adws trigger --work 1`
in its own process for each round; the second host is a UTS namespace with
its own host name (`unshare --uts`, as tests/cli/test_hosts.py).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from typing import TYPE_CHECKING, Any

import pytest

from adws.journal import Journal
from adws.journal.store.sessions import sessions_of
from adws.testing import FakeModelAPI, Reply
from adws.testing.github_api import FakeGitHub
from tests.agents.clis import needs, on_path
from tests.agents.test_real_cli_sessions import turns
from tests.conftest import REPO

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = [pytest.mark.slow, pytest.mark.agent_process, pytest.mark.agent_cli, needs("claude")]

FLOWS = """
import json
import os

from adws import OutputContract, Workflow, agent_step
from adws.agents.presets import PRESETS

ask = agent_step(
    "ask",
    prompt="Fix the issue {ticket_title}.",
    agent=PRESETS["claude"].agent(env=json.loads(os.environ["CLAUDE_ENV"])),
    contract=OutputContract(("SUMMARY",)),
)
sessioned = Workflow(
    "sessioned",
    (ask,),
    inputs=("ticket", "ticket_title", "ticket_body", "ticket_url", "ticket_author"),
    optional_inputs=("review_body", "review_path", "review_line", "review_branch"),
)
"""
FIRST = "STATUS: done\nSUMMARY: first round"


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as fake:
        fake.add_repo("octo/app", permissions={"ana": "write"})
        yield fake


def trigger(  # noqa: PLR0913 - the round, and where it runs
    folder: Path,
    github: FakeGitHub,
    api: FakeModelAPI,
    payload: dict[str, Any],
    name: str,
    *,
    host: str | None = None,
) -> None:
    """Run `adws trigger --work 1` for one event, on this host or on `host`."""
    event = folder / "event.json"
    event.write_text(json.dumps(payload))
    command = [sys.executable, "-m", "adws", "trigger", "--workflow", "sessioned"]
    command += ["--event", str(event), "--event-name", name, "--work", "1"]
    if host is not None:
        command = ["unshare", "--uts", "sh", "-c", f'hostname {host} && exec "$@"', "sh", *command]
    env = {
        **os.environ,
        "ADWS_JOURNAL": str(folder / "runs.db"),
        "PYTHONPATH": str(REPO),
        "PATH": on_path(),
        "ADWS_GITHUB_API_URL": github.url,
        "GITHUB_TOKEN": github.token,
        "CLAUDE_ENV": json.dumps(api.claude_env(folder / "home")),
    }
    env.pop("ADWS_WORKFLOWS", None)
    done = subprocess.run(
        command, cwd=folder, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr


def two_rounds(
    tmp_path: Path, github: FakeGitHub, api: FakeModelAPI, *, host: str | None
) -> tuple[Journal, str, str]:
    """Run a labelled issue's round here, then a `/adws` round on `host`; return both runs."""
    (tmp_path / "workflows").mkdir()
    (tmp_path / "workflows" / "sessioned.py").write_text(FLOWS)
    api.script(Reply.text(FIRST), Reply.text("STATUS: done\nSUMMARY: second round"))
    issue = github.add_issue("octo/app", "Crash", "It fails.", author="ana", labels=("adws",))
    labelled = {
        "action": "labeled",
        "label": {"name": "adws"},
        "issue": issue,
        "repository": {"full_name": "octo/app"},
        "sender": {"login": "ana"},
    }
    trigger(tmp_path, github, api, labelled, "issues")
    journal = Journal(tmp_path / "runs.db")
    (first,) = journal.runs()
    pull = github.open_issue("octo/app", "adws-bot", {"title": "Fix", "head": "adws/1-crash"})
    comment = {
        "action": "created",
        "repository": {"full_name": "octo/app"},
        "sender": {"login": "ana"},
        "comment": github.comment("octo/app", pull["number"], "ana", "/adws the empty case too"),
        "issue": github.issue("octo/app", pull["number"]),
    }
    trigger(tmp_path, github, api, comment, "issue_comment", host=host)
    (second,) = [run for run in journal.runs() if run.run_id != first.run_id]
    assert (first.status, second.status) == ("succeeded", "succeeded")
    return journal, first.run_id, second.run_id


def test_a_review_round_on_the_parents_host_continues_its_agent_session(
    tmp_path: Path, github: FakeGitHub, fake_model_api: FakeModelAPI
) -> None:
    journal, first, second = two_rounds(tmp_path, github, fake_model_api, host=None)
    (parent,) = sessions_of(journal, first)
    (child,) = sessions_of(journal, second)
    assert (child.continued, child.continues, child.from_attempt, child.why) == (
        True,
        parent.session_id,
        1,
        "",
    )
    _, again = (request["body"] for request in fake_model_api.requests)
    said = turns(again)
    assert ("assistant", [FIRST]) in said  # the parent's exchange, carried by its session
    assert said[-1][0] == "user"
    assert "Fix the issue Crash." in said[-1][1][0]


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None,
    reason="a second host is a UTS namespace: `unshare --uts` needs root",
)
def test_a_review_round_on_another_host_starts_afresh_and_says_why(
    tmp_path: Path, github: FakeGitHub, fake_model_api: FakeModelAPI
) -> None:
    journal, first, second = two_rounds(tmp_path, github, fake_model_api, host="laptop")
    (parent,) = sessions_of(journal, first)
    (child,) = sessions_of(journal, second)
    here = socket.gethostname()
    assert (child.continued, child.continues, child.why) == (
        False,
        parent.session_id,
        (
            f"the parent run {first} ran on host {here}, where its agents' sessions are;"
            " this round runs on laptop"
        ),
    )
    assert child.session_id != parent.session_id
    _, fresh = (request["body"] for request in fake_model_api.requests)
    assert "assistant" not in [role for role, _ in turns(fresh)]
    assert "first round" not in json.dumps(fresh)
