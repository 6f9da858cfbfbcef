"""The agent's own quota parks new calls: through the real claude and codex CLIs, in processes.

The fake model API answers as a subscription does near its window's end
(`Reply.quota`: Anthropic's `anthropic-ratelimit-unified-*` headers, which
claude signed in with an OAuth token turns into a `rate_limit_event` with
`utilization`) or at it (`Reply.usage_limit`). What the CLI said is
journaled per account (`agent_quotas`), so the next run on that account
parks before it sends a request, in another process.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import pytest

from adws.testing import FakeModelAPI, Reply
from tests.agents.clis import needs
from tests.agents.test_parking import DONE, adws, environment, project

pytestmark = [pytest.mark.agent_process, pytest.mark.agent_cli, pytest.mark.slow]

__all__ = ["project"]  # the fixture, shared


def _local(moment: float) -> str:
    return time.strftime("%H:%M", time.localtime(moment))


@needs("claude")
def test_a_claude_run_reporting_96_percent_used_parks_the_next_call_until_the_reset(
    project: Path, fake_model_api: FakeModelAPI
) -> None:
    env = environment("claude", fake_model_api, project / "home")
    now = time.time()
    resets_at = int(now) + 3 * 3600
    fake_model_api.script(Reply.quota(DONE, used=0.96, resets_in=3 * 3600, now=now))
    folder = f"folder={project / 'repo'}"
    first = adws(project, env, "run", "ask", "-i", folder, "--agent", "claude")
    assert first.returncode == 0, first.stderr
    assert len(fake_model_api.requests) == 1

    second = adws(project, env, "run", "ask", "-i", folder, "--agent", "claude")
    assert second.returncode == 75, second.stderr
    assert len(fake_model_api.requests) == 1  # parked before any request
    token = hashlib.sha256(env["CLAUDE_CODE_OAUTH_TOKEN"].encode()).hexdigest()[:8]
    account = f"claude {project / 'home' / '.claude'} key {token}"
    reason = (
        f"parked until {_local(resets_at)}: agent account {account}: window five_hour"
        " 96% used (parks at 95%)"
    )
    assert reason in second.stderr

    listed = adws(project, env, "caps", "--accounts", "--json")
    assert listed.returncode == 0, listed.stderr
    [window] = json.loads(listed.stdout)
    assert (window["account"], window["window"], window["used"], window["resets_at"]) == (
        account,
        "five_hour",
        0.96,
        resets_at,
    )
    shown = adws(project, env, "caps")
    assert "five_hour" in shown.stdout
    assert "96%" in shown.stdout

    fake_model_api.script(Reply.text(DONE))
    higher = adws(
        project, env, "run", "ask", "-i", folder, "--agent", "claude", "--park-at", "0.99"
    )
    assert higher.returncode == 0, higher.stderr
    assert len(fake_model_api.requests) == 2


@pytest.mark.parametrize(
    "kind",
    [pytest.param("claude", marks=needs("claude")), pytest.param("codex", marks=needs("codex"))],
)
def test_a_usage_limit_reply_parks_the_next_run_on_that_account_without_a_request(
    kind: str, project: Path, fake_model_api: FakeModelAPI
) -> None:
    env = environment(kind, fake_model_api, project / "home")
    fake_model_api.script(Reply.usage_limit(3 * 3600, time.time()))
    folder = f"folder={project / 'repo'}"
    first = adws(project, env, "run", "ask", "-i", folder, "--agent", kind)
    assert first.returncode == 75, first.stderr
    assert len(fake_model_api.requests) == 1

    second = adws(project, env, "run", "ask", "-i", folder, "--agent", kind)
    assert second.returncode == 75, second.stderr
    assert len(fake_model_api.requests) == 1
    assert "window usage limit 100% used (parks at 95%)" in second.stderr
    run_id = second.stderr.split("(run ")[-1].split(")")[0]

    fake_model_api.script(Reply.text(DONE))
    now = adws(project, env, "resume", run_id, "--now", "--json")
    assert now.returncode == 0, now.stderr
    assert json.loads(now.stdout)["status"] == "succeeded"
    assert len(fake_model_api.requests) == 2
