"""Turn definitions, events and journal records into text and pages; `adws.cli` prints them.

One module per thing drawn: `progress` (the lines a run prints), `errors`
(an error whole), `status` (`adws runs`, `adws status`, `--step`, `resume
--plan`), `workspaces` (a run's worktrees and approvals), `diffs` (a
worktree attempt's diff, for a reviewer), `describe` (`adws show`),
`mermaid` (flowcharts) and `report` (the HTML page of `adws report`).
"""

from adws.render._text import table
from adws.render.describe import describe_retry, show_text
from adws.render.errors import error_lines, whole_error
from adws.render.mermaid import step_outcomes, to_mermaid
from adws.render.progress import Progress, format_event
from adws.render.status import attempt_text, plan_text, runs_table, status_text
from adws.render.workspaces import workspaces_text

__all__ = [
    "Progress",
    "attempt_text",
    "describe_retry",
    "error_lines",
    "format_event",
    "plan_text",
    "runs_table",
    "show_text",
    "status_text",
    "step_outcomes",
    "table",
    "to_mermaid",
    "whole_error",
    "workspaces_text",
]
