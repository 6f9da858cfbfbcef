"""`adws new NAME [--agent]`: a workflow module and its test, ready for strict CI.

What it writes passes `ruff check` with every rule, `ruff format`, `mypy
--strict` (with the returns plugin) and 100% line and branch coverage as
generated; `tests/cli/test_new.py` proves it on a fresh project. It never
overwrites a file.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Final

from adws.cli._args import UsageError
from adws.cli._output import err

if TYPE_CHECKING:
    import argparse

__all__ = ["cmd_new", "render_module", "render_test"]

_PLAIN: Final = '''"""{name}: greet a subject (replace this with what the workflow does).

Run it with `adws run {name} -i subject=world`; check it with `adws check {name}`.
"""

# ruff: noqa: INP001 - workflow modules are loaded by path, not imported as a package
from __future__ import annotations

from adws import Key, PipelineError, Step, Workflow, WorkflowContext
from returns.io import IOResult, IOSuccess

SUBJECT = Key("subject", str)
GREETING = Key("greeting", str)


def greet(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
    """Write a greeting for the subject."""
    return IOSuccess(ctx.merge_outputs({{GREETING: f"Hello, {{ctx.get(SUBJECT)}}!"}}))


workflow = Workflow(
    "{name}",
    (Step("greet", greet, reads=(SUBJECT,), writes=(GREETING,)),),
    description="Greet a subject.",
    inputs=(SUBJECT.name,),
)
'''

_AGENT: Final = '''"""{name}: ask an agent, then keep its checked answer (make it your own).

Run it with `adws run {name} -i question="..."`; `--agent claude` is the default agent here.
"""

# ruff: noqa: INP001 - workflow modules are loaded by path, not imported as a package
from __future__ import annotations

from adws import Key, OutputContract, PipelineError, Step, Workflow, WorkflowContext, agent_step
from adws.agents import CommandAgent
from adws.agents.parsers import claude_json
from returns.io import IOResult, IOSuccess

AGENT = CommandAgent("claude -p --output-format json", parse=claude_json, timeout=600)
"""Claude Code in print mode; tests replace it (see tests/test_workflow_{name}.py)."""

QUESTION = Key("question", str)
ANSWER = Key("answer", str)
RESULT = Key("result", str)

PROMPT = """Answer this question in one paragraph: {{question}}"""


def finish(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
    """Turn the agent's checked answer into the run's result."""
    return IOSuccess(ctx.merge_outputs({{RESULT: ctx.get(ANSWER).strip()}}))


workflow = Workflow(
    "{name}",
    (
        agent_step("ask", prompt=PROMPT, agent=AGENT, contract=OutputContract(("ANSWER",))),
        Step("finish", finish, reads=(ANSWER,), writes=(RESULT,)),
    ),
    description="Ask an agent a question and keep its checked answer.",
    inputs=(QUESTION.name,),
)
'''

_HEAD: Final = '''"""The {name} workflow, end to end through the real executor, offline."""

# ruff: noqa: INP001 - pytest collects this file by path; make tests/ a package if you like
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from adws.check import check_workflow
from adws.discovery import discover_workflows
from adws.testing import {imports}

if TYPE_CHECKING:
    from adws import Workflow

WORKFLOWS = Path(__file__).resolve().parents[1] / "{workflows}"


def load() -> Workflow:
    """Load the workflow the way `adws run` does."""
    return discover_workflows(WORKFLOWS).workflows["{name}"]


def test_its_dataflow_has_no_errors() -> None:
    """Every step reads only what an earlier step wrote or the inputs declare."""
    assert [p for p in check_workflow(load()) if p.severity == "error"] == []  # noqa: S101 - pytest
'''

_PLAIN_TEST: Final = '''

def test_it_greets_the_subject() -> None:
    """The greeting names the subject it was given."""
    report = run(load(), {{"subject": "world"}})
    assert report.status == "succeeded"  # noqa: S101 - pytest
    assert report.inputs["greeting"] == "Hello, world!"  # noqa: S101 - pytest
'''

_AGENT_TEST: Final = '''

def test_a_rejected_answer_is_retried_and_the_checked_one_kept() -> None:
    """The first answer lacks its report block; the agent is told so and answers again."""
    agent = ScriptedAgent.by_step(
        {{"ask": ["I think it is 42.", "STATUS: done\\nANSWER: It is 42.\\n"]}}
    )
    report = run(load(), {{"question": "What is the answer?"}}, agent=agent)
    assert report.status == "succeeded"  # noqa: S101 - pytest
    assert report.inputs["result"] == "It is 42."  # noqa: S101 - pytest
    assert [r.attempt for r in report["ask"].requests] == [1, 2]  # noqa: S101 - pytest
'''


def render_module(name: str, *, agent: bool) -> str:
    """Return the workflow module `adws new` writes."""
    return (_AGENT if agent else _PLAIN).format(name=name)


def render_test(name: str, *, agent: bool, workflows: str = "workflows") -> str:
    """Return the test module `adws new` writes next to it."""
    imports = "ScriptedAgent, run" if agent else "run"
    head = _HEAD.format(name=name, imports=imports, workflows=workflows)
    return head + (_AGENT_TEST if agent else _PLAIN_TEST).format(name=name)


def cmd_new(args: argparse.Namespace) -> int:
    """Write workflows/NAME.py and tests/test_workflow_NAME.py; never overwrite."""
    from adws._checks import is_input_name  # noqa: PLC0415 - see the note on imports in workflows.py
    from adws.discovery import workflows_dir  # noqa: PLC0415 - see the note on imports in workflows.py

    name = args.name
    if not is_input_name(name):
        msg = f"workflow name {name!r} is not an identifier: use lower-case letters, digits and _"
        raise UsageError(msg)
    here, folder = Path.cwd().resolve(), workflows_dir(args.workflows).resolve()
    where = folder.relative_to(here) if folder.is_relative_to(here) else folder
    module = where / f"{name}.py"
    test = Path("tests") / f"test_workflow_{name}.py"
    existing = [str(path) for path in (module, test) if path.exists()]
    if existing:
        verb = "exists" if len(existing) == 1 else "exist"
        msg = f"{' and '.join(existing)} {verb} already; adws new never overwrites a file"
        raise UsageError(msg)
    folder.mkdir(parents=True, exist_ok=True)
    test.parent.mkdir(parents=True, exist_ok=True)
    module.write_text(render_module(name, agent=args.agent), encoding="utf-8")
    test.write_text(render_test(name, agent=args.agent, workflows=str(where)), encoding="utf-8")
    err(f"wrote {module} and {test}; run them with: pytest {test}")
    return 0
