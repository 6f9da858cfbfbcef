"""A workflow that takes a ticket's inputs, for the tickets' tests (written into a project)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from pathlib import Path

FLOWS: Final = """
import os
import time

from returns.io import IOFailure, IOSuccess

from adws import PipelineError, Step, Workflow

TICKET = ("ticket", "ticket_title", "ticket_body", "ticket_url", "ticket_author")


def note(ctx):
    with open("ran.log", "a") as log:
        log.write(ctx.inputs["ticket"] + " " + repr(sorted(os.environ)) + "\\n")
    while os.path.exists("hold"):
        time.sleep(0.05)
    if os.path.exists("fail"):
        return IOFailure(PipelineError("note", "Failed", "on purpose"))
    return IOSuccess(ctx)


REVIEW = ("review_body", "review_path", "review_line", "review_branch")
ticketed = Workflow(
    "ticketed",
    (Step("note", note, reads=TICKET + REVIEW, writes=()),),
    inputs=TICKET,
    optional_inputs=REVIEW,
)
untaking = Workflow("untaking", (Step("note", note, reads=("n",), writes=()),), inputs=("n",))
"""


def project(folder: Path) -> Path:
    """Write the workflows into `folder/workflows`; return `folder`."""
    (folder / "workflows").mkdir(parents=True, exist_ok=True)
    (folder / "workflows" / "ticketed.py").write_text(FLOWS)
    return folder
