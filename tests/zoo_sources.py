"""A zoo of step kinds as workflow module sources, for resume tests across processes.

Each test writes these into a temporary workflows folder and runs `adws`
on them in separate processes (with different `PYTHONHASHSEED`s), the way
a user runs, resumes and inspects a workflow from several shells.
"""

from __future__ import annotations

ZOO = '''
"""Every kind of step whose fingerprint must hold across processes."""

from __future__ import annotations

import dataclasses
import enum
import functools
from pathlib import Path
from typing import Literal

import attrs
import zoo_helpers
from returns.io import IOFailure, IOResult, IOSuccess

from adws import (
    ErrorType,
    Key,
    OutputContract,
    PipelineError,
    Step,
    Workflow,
    WorkflowContext,
    agent_step,
    fan_out,
    parallel,
    shell_step,
    with_verification,
)
from adws.testing import FunctionAgent

FACTOR = 3
CONFIG = {"tags": {"b", "a", "c"}, "limits": (1, 2), "nested": {"x": frozenset({"p", "q"})}}
SEEN: list[str] = []
"""A list the steps append to while they run: not part of any fingerprint."""


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


@attrs.frozen
class Part:
    name: str
    tags: frozenset[str] = attrs.field(factory=frozenset)


@attrs.frozen
class Report:
    kind: Literal["bug", "feature"]
    colour: Colour
    parts: tuple[Part, ...]
    labels: frozenset[str]

    def title(self) -> str:
        return f"{self.kind}: {len(self.parts)}"


@attrs.frozen
class Note:
    text: str
    score: int = attrs.field(default=0, validator=attrs.validators.in_({0, 1, 2, 3}))


@dataclasses.dataclass(frozen=True)
class Weights:
    words: int = 2
    tags: tuple[str, ...] = ("x", "y")


REPORT = Key("report_json", Report)
COUNT = Key("count", int)


def answer(request):
    log(f"agent:{request.branch or request.step_name}")
    if request.step_name == "ask":
        return (
            "STATUS: done\\n"
            'REPORT_JSON: {"kind": "bug", "colour": "red", "labels": ["b", "a"],'
            ' "parts": [{"name": "p", "tags": ["t2", "t1"]}]}'
        )
    if request.step_name == "note":
        return 'STATUS: done\\nNOTE_JSON: {"text": "n", "score": 2}'
    return "STATUS: done\\nDRAFT: a draft"


AGENT = FunctionAgent(answer)


def log(line):
    with Path("calls.log").open("a", encoding="utf-8") as calls:
        calls.write(line + "\\n")


def make_counter(extra):
    def count(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        log("count")
        SEEN.append("count")
        report = ctx.get(REPORT)
        total = len(report.parts) * FACTOR + extra + len(CONFIG["tags"])
        return IOSuccess(ctx.merge_outputs({COUNT: total, "items": ["i0", "i1"]}))

    return count


def scale(ctx: WorkflowContext, *, factor: int, weights: Weights) -> IOResult[WorkflowContext, PipelineError]:
    log("scale")
    return IOSuccess(ctx.merge_outputs({"scaled": ctx.get(COUNT) * factor * weights.words}))


def types_check(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
    log("types")
    return IOSuccess(ctx.merge_outputs({"typed": True}))


def review(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
    log("review")
    return IOSuccess(ctx.merge_outputs({"reviewed": ctx.inputs["draft"].upper()}))


def finish(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
    log("finish")
    if not Path("fixed").exists():
        return IOFailure(PipelineError("finish", ErrorType.STEP_EXCEPTION, "not fixed yet"))
    return IOSuccess(ctx.merge_outputs({"done": zoo_helpers.suffix(ctx.inputs["reviewed"])}))


def cleanup(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
    log("cleanup")
    return IOSuccess(ctx)


workflow = Workflow(
    "zoo",
    (
        agent_step(
            "ask",
            prompt="Report on {topic}.",
            agent=AGENT,
            contract=OutputContract(schemas={"REPORT_JSON": Report}),
        ),
        Step("count", make_counter(1), reads=(REPORT,), writes=(COUNT, "items")),
        Step(
            "scale",
            functools.partial(scale, factor=2, weights=Weights()),
            reads=(COUNT,),
            writes=("scaled",),
        ),
        parallel(
            "checks",
            [
                shell_step("lint", ["echo", "{topic}"]),
                Step("types", types_check, reads=(), writes=("typed",)),
            ],
        ),
        fan_out(
            "notes",
            agent_step(
                "note",
                prompt="Note on {item}.",
                agent=AGENT,
                contract=OutputContract(schemas={"NOTE_JSON": Note}),
            ),
            over="items",
        ),
        with_verification(
            agent_step("draft", prompt="Draft {topic}.", agent=AGENT, contract=OutputContract(("DRAFT",))),
            Step("review", review, reads=("draft",), writes=("reviewed",)),
        ),
        Step("finish", finish, reads=("reviewed",), writes=("done",)),
        Step("cleanup", cleanup, always_run=True, reads=(), writes=()),
    ),
    inputs=("topic",),
)
'''

ZOO_HELPERS = '''
"""A sibling module of the workflow (not named _*.py): its source counts too."""


def suffix(text):
    return text + "!"
'''

SCRATCH = '''
"""The shape of every worktree workflow: setup makes a folder, teardown removes it."""

import shutil
from pathlib import Path

from returns.io import IOFailure, IOSuccess

from adws import ErrorType, PipelineError, Step, Workflow

SCRATCH_DIR = Path("scratch")


def setup(ctx):
    SCRATCH_DIR.mkdir()
    with Path("calls.log").open("a") as calls:
        calls.write("setup\\n")
    return IOSuccess(ctx.merge_outputs({"scratch": str(SCRATCH_DIR.resolve())}))


def work(ctx):
    with Path("calls.log").open("a") as calls:
        calls.write("work\\n")
    if not Path(ctx.inputs["scratch"]).is_dir():
        return IOFailure(PipelineError("work", ErrorType.STEP_EXCEPTION, "no scratch folder"))
    if not Path("fixed").exists():
        return IOFailure(PipelineError("work", ErrorType.STEP_EXCEPTION, "not fixed yet"))
    (Path(ctx.inputs["scratch"]) / "out.txt").write_text("made")
    return IOSuccess(ctx.merge_outputs({"made": (Path(ctx.inputs["scratch"]) / "out.txt").read_text()}))


def teardown(ctx):
    with Path("calls.log").open("a") as calls:
        calls.write("teardown\\n")
    shutil.rmtree(SCRATCH_DIR, ignore_errors=True)
    return IOSuccess(ctx)


workflow = Workflow(
    "scratch",
    (
        Step("prepare", lambda ctx: IOSuccess(ctx.merge_outputs({"prepared": 1}))),
        Step("setup", setup, rerun_on_resume=True),
        Step("work", work),
        Step("teardown", teardown, always_run=True),
    ),
)
'''
