"""Helpers shared by the shipped workflows (files starting with _ are not scanned)."""

from __future__ import annotations

import hashlib
import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from returns.io import IOResult, IOSuccess

from adws import (
    OutputContract,
    PipelineError,
    RetryPolicy,
    Step,
    WorkflowContext,
    agent_step,
    reproduce,
    sequence,
    shell_step,
    with_verification,
    worktree,
)
from adws.agents import CommandAgent
from adws.agents.parsers import claude_json
from adws.io_ops.terminal import escape_controls

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
    r"""Write a markdown report to `output_dir` (default `reports/`), named after the task.

    The output `report_path` says where it went (`adws run` prints it).
    What the report quotes (an agent's summary, file names, check output)
    is written with its control characters escaped (`\\x1b`), so `cat`ing
    the report cannot clear a screen or write a clipboard (OSC 52).
    """
    path = report_file(ctx, workflow)
    path.write_text(escape_controls("\n".join(lines) + "\n"), encoding="utf-8")
    return IOSuccess(ctx.merge_outputs({"report_path": str(path)}))


def report_file(ctx: WorkflowContext, workflow: str, title: str | None = None) -> Path:
    """Make `output_dir` (default `reports/`) and name the report of `title` (the task) in it."""
    folder = Path(str(ctx.inputs.get("output_dir", "reports")))
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{workflow}-{slug(title if title is not None else str(ctx.inputs['task']))}.md"


PROTECTED_TESTS = ("tests/**", "test/**", "**/test_*.py", "**/*_test.py", "**/conftest.py")
"""The project's tests: an attempt that changes them fails `Tampered` (checks are not weakened)."""

PROTECTED_CONFIG = (
    "**/pytest.ini",
    "**/tox.ini",
    "**/setup.cfg",
    "**/pyproject.toml[tool.pytest]",
    "**/sitecustomize.py",
    "**/usercustomize.py",
    "**/*.pth",
)
"""How the checks run: pytest's configuration files and `pyproject.toml`'s `[tool.pytest...]`
tables, and the files Python runs at start-up (`sitecustomize.py`, `*.pth`)."""

PROTECTED = PROTECTED_TESTS + PROTECTED_CONFIG
"""Everything the shipped workflows protect: the tests and how they run."""

CHECKS_RULES = """The project's tests and how they run are protected: do not change tests/,
test/, test_*.py, *_test.py or conftest.py files, pytest.ini, tox.ini, setup.cfg,
the [tool.pytest] tables of pyproject.toml, sitecustomize.py or *.pth files (an
attempt that does fails and must restore them). Checks that already failed
before you started are not held against you; do not break any other."""

REPRODUCE_PROMPT = """You are working in a git worktree of the repository at {target_dir}:
{worktree}, your current directory.
Task: {task}

Do not fix anything yet. Write a test that shows the problem: it must fail
on the code as it is now, because of the problem, and pass once the problem
is fixed. Change only test files (tests/, test_*.py, *_test.py, conftest.py);
leave the code as it is. Describe in REPRODUCER what your test shows."""

_YES = frozenset({"1", "yes", "true", "on"})
_NO = frozenset({"", "0", "no", "false", "off"})


def switch(inputs: Mapping[str, object], key: str) -> bool:
    """Read a yes/no input (absent: no); refuse any other value, naming the input.

    >>> switch({"reproduce": "yes"}, "reproduce"), switch({}, "reproduce")
    (True, False)
    """
    value = inputs.get(key, "")
    text = str(value).strip().lower() if not isinstance(value, bool) else str(value).lower()
    if text in _YES:
        return True
    if text in _NO:
        return False
    msg = f"input {key!r} must be yes or no, got {value!r}"
    raise ValueError(msg)


def targets(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
    """Say what must pass: the `must_pass` input's ids, and the reproducer's when one ran.

    Outputs `targets` (ids and globs, plus the word `reproduced`; empty:
    nothing must pass, only nothing may break), `targets_note`, the line
    the agent's prompt shows (empty when nothing must pass), and `start`:
    the commit fixes start from (a reproducer's worktree commit, else `HEAD`).
    """
    given = ctx.inputs.get("must_pass", "")
    ids = given.split() if isinstance(given, str) else [str(each) for each in given or ()]
    shown = list(ids)
    reproduced = ctx.inputs.get("reproducer_ids")
    if isinstance(reproduced, list | tuple):
        ids.append("reproduced")
        shown += [str(each) for each in reproduced]
    note = ""
    if shown:
        note = (
            "These tests fail now and must pass when you are done (they must run, too):\n"
            + "\n".join(f"- {each}" for each in shown)
        )
    start = str(ctx.inputs.get("reproduction_commit", "HEAD"))
    return IOSuccess(ctx.merge_outputs({"targets": ids, "targets_note": note, "start": start}))


def targets_step(*, start: bool = False) -> Step:
    """Build the step that gathers what must pass (see `targets`); `start`: it says `start` too.

    Its reads and writes are declared for `adws check`: `start` reads a
    reproducer worktree's commit (`implement_best_of`'s attempts start from it).
    """
    reads = ("must_pass", "reproducer_ids") + (("reproduction_commit",) if start else ())
    writes = ("targets", "targets_note") + (("start",) if start else ())
    return Step("targets", targets, reads=reads, writes=writes)


def checks(name: str = "checks") -> Step:
    """Run `check_command` as the user gave it (`script_from`), its failures and passes named."""
    return shell_step(name, script_from="check_command", timeout=1800, failures="auto")


def reproducer(*, when: Callable[[WorkflowContext], bool] | None = None) -> Step:
    """Build the reproduce stage: an agent writes tests that fail on the untouched code.

    Its tests' ids become the fix's targets; its files are protected from
    the fixer (see `adws.workspaces.reproduce`).
    """
    return reproduce(
        editor("write_reproducer", REPRODUCE_PROMPT, "REPRODUCER"), checks(), when=when
    )


def editor(name: str, prompt: str, key: str) -> Step:
    """Build an agent step that changes files in its worktree and reports `key`.

    Two attempts (a malformed answer is asked again), half an hour each,
    stopped after ten minutes of silence; `edits=True`: the agent's job is
    to change files, so the CLIs must let it (and changing none is `NoChange`).
    """
    return agent_step(
        name,
        prompt=prompt,
        agent=DEMO_AGENT,
        contract=OutputContract((key,)),
        retry=RetryPolicy(max_attempts=2),
        timeout=1800,
        edits=True,
        idle_timeout=600,
    )


def asked_to_reproduce(ctx: WorkflowContext) -> bool:
    """Tell whether the run's `reproduce` input asks for a reproducer first."""
    return switch(ctx.inputs, "reproduce")


def implement_until_checks_pass(prompt: str) -> Step:
    """Build the implement ↔ checks stage: the agent edits, `check_command` judges, three rounds.

    The checks first run once on the untouched worktree (the baseline);
    the targets (`{targets}`: the `must_pass` input's ids and a
    reproducer's, see `targets`) must run and pass, and a round passes
    when besides it adds no failure (pytest, ruff and mypy failures are
    compared by id, pytest's passes listed with `-rA`); what still fails
    comes back to the agent as feedback, targets first. A baseline that
    fails naming nothing (a bare exit status) makes the whole check a
    target: it must pass. With no target, the round only shows nothing
    broke, and the proof (`implement_verified_proved`) says so. Changing
    the project's tests or how they run (`PROTECTED`) fails the round
    `Tampered`; an answer after no file changed fails `NoChange`. Neither
    step names a `cwd`: inside a `worktree` or `best_of` step both run
    there (the checks in a verify tree of the round's change), and
    `check_command` is run as the user gave it (`script_from`: no agent
    can write that input). The prompt ends with the targets and
    `CHECKS_RULES`.
    """
    return with_verification(
        editor("implement", f"{prompt}\n\n{{targets_note}}\n\n{CHECKS_RULES}", "SUMMARY"),
        checks(),
        max_attempts=3,
        baseline=True,
        protect=PROTECTED,
        must_pass="{targets}",  # noqa: S106 - an input's placeholder, no password
        # A check that fails naming nothing (`grep -q ...`) is the task's test: it must pass.
        baseline_unnamed="must_pass",
    )


def proved_lines(inputs: Mapping[str, object], failure: PipelineError | None) -> list[str]:
    """Say what the checks proved, for a report: from the outputs, or the failure's context."""
    proof = inputs.get("implement_verified_proved")
    if failure is not None:
        proof = failure.context.get("proved", proof)
    if not isinstance(proof, Mapping):
        return []
    return ["", "## What the checks proved", *str(proof.get("text", "")).splitlines()]


def verified_workspace(prompt: str, *, base: str = "HEAD") -> Step:
    """Build the `workspace` stage: in a worktree from `base`, reproduce (if asked), then fix.

    A reproducer first when the `reproduce` input asks, then the targets,
    then `implement_until_checks_pass(prompt)`; committed on the
    worktree's branch when the checks pass (see `adws.workspaces.worktree`).
    """
    return worktree(
        sequence(
            "work",
            [
                reproducer(when=asked_to_reproduce),
                targets_step(),
                implement_until_checks_pass(prompt),
            ],
        ),
        name="workspace",
        base=base,
    )
