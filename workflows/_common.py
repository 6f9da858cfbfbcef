"""Helpers shared by the shipped workflows (files starting with _ are not scanned)."""

from __future__ import annotations

import hashlib
import re
import sys
from collections.abc import Mapping
from pathlib import Path

from returns.io import IOResult, IOSuccess

from adws import (
    OutputContract,
    PipelineError,
    RetryPolicy,
    Step,
    WorkflowContext,
    agent_step,
    shell_step,
    with_verification,
)
from adws.agents import CommandAgent
from adws.agents.parsers import claude_json

DEMO_AGENT = CommandAgent(
    [sys.executable, str(Path(__file__).resolve().parent.parent / "demo" / "demo_agent.py")],
    parse=claude_json,
)
"""The offline demo agent: the default until `adws run --agent CMD` picks a real one.

It prints Claude Code's JSON result with a made-up usage, so `adws cost` has
figures to show offline.
"""


def slug(text: str) -> str:
    """Make a short file-name-safe slug, unique per text.

    The readable part alone would collide (`C++` and `C#` both give `c`; every
    topic in another script gives nothing), so a short hash of the exact
    text follows it.

    >>> slug("Railway-oriented programming!")
    'railway-oriented-programming-b469b5e3'
    >>> slug("Программирование")
    '43881bae'
    """
    readable = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60].strip("-")
    digest = hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:8]
    return f"{readable}-{digest}" if readable else digest


def change_lines(inputs: Mapping[str, object], name: str) -> list[str]:
    r"""Describe the change a `worktree` or `best_of` step committed, for a markdown report.

    >>> stat = {"files": [{"path": "a.py", "added": 2, "deleted": 0}], "text": "1 file changed"}
    >>> print("\n".join(change_lines({"w_branch": "adws/r/w", "w_commit": "c0ffee", "w_diffstat": stat}, "w")))
    - branch: `adws/r/w`
    - commit: `c0ffee`
    - 1 file changed
      - `a.py` (+2 -0)
    """  # noqa: E501
    stat = inputs.get(f"{name}_diffstat")
    stat = stat if isinstance(stat, Mapping) else {}
    lines = [
        f"- branch: `{inputs.get(f'{name}_branch')}`",
        f"- commit: `{inputs.get(f'{name}_commit')}`",
        f"- {stat.get('text', 'no changes')}",
    ]
    files = stat.get("files", ())
    lines.extend(f"  - `{f['path']}` (+{f['added']} -{f['deleted']})" for f in files)
    return lines


def save_report(
    ctx: WorkflowContext, workflow: str, lines: list[str]
) -> IOResult[WorkflowContext, PipelineError]:
    """Write a markdown report to `output_dir` (default `reports/`), named after the task.

    The output `report_path` says where it went (`adws run` prints it).
    """
    folder = Path(str(ctx.inputs.get("output_dir", "reports")))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{workflow}-{slug(str(ctx.inputs['task']))}.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return IOSuccess(ctx.merge_outputs({"report_path": str(path)}))


PROTECTED_TESTS = ("tests/**", "test/**", "**/test_*.py", "**/*_test.py", "**/conftest.py")
"""The project's tests: an attempt that changes them fails `Tampered` (checks are not weakened)."""

CHECKS_RULES = """The project's tests are protected: do not change tests/, test/, test_*.py,
*_test.py or conftest.py files (an attempt that does fails and must restore them).
Checks that already failed before you started are not held against you; do not
break any other."""


def implement_until_checks_pass(prompt: str) -> Step:
    """Build the implement ↔ checks stage: the agent edits, `check_command` judges, three rounds.

    The checks first run once on the untouched worktree (the baseline); a
    round passes when it adds no failure (pytest, ruff and mypy failures are
    compared by id; any other failure is one id: the exit status), and only
    new failures come back to the agent as feedback. Changing the project's
    tests (`PROTECTED_TESTS`) fails the round `Tampered`. Neither step
    names a `cwd`: inside a `worktree` or `best_of` step both run in the
    worktree, and `check_command` is run as the user gave it (`script_from`:
    no agent can write that input). The prompt ends with `CHECKS_RULES`.
    """
    return with_verification(
        agent_step(
            "implement",
            prompt=f"{prompt}\n\n{CHECKS_RULES}",
            agent=DEMO_AGENT,
            contract=OutputContract(("SUMMARY",)),
            retry=RetryPolicy(max_attempts=2),
            timeout=1800,
            # The agent's job is to change files in its worktree: say so, or CLIs refuse.
            edits=True,
            idle_timeout=600,
        ),
        shell_step("checks", script_from="check_command", timeout=1800, failures="auto"),
        max_attempts=3,
        baseline=True,
        protect=PROTECTED_TESTS,
    )
