"""`adws list`, `show`, `check` and `validate`: commands about workflow definitions."""

from __future__ import annotations

from typing import TYPE_CHECKING

from returns.result import Failure

from adws.agents.step import AgentSpec
from adws.check import check_workflow
from adws.cli._args import UsageError, read_answer
from adws.cli._options import add_workflows
from adws.cli._output import err, out, out_json
from adws.contract.validator import validate_agent_output
from adws.discovery import discover_workflows, workflows_dir
from adws.engine.errors import json_safe
from adws.engine.step import iter_steps
from adws.render import show_text, to_mermaid
from adws.runs import Refused, find_workflow

if TYPE_CHECKING:
    import argparse

    from adws.discovery import Catalog
    from adws.engine.step import Workflow

__all__ = [
    "add_check",
    "add_list",
    "add_show",
    "add_validate",
    "cmd_check",
    "cmd_list",
    "cmd_show",
    "cmd_validate",
    "load_workflow",
]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


def add_list(parser: argparse.ArgumentParser) -> None:
    """Declare `adws list`."""
    add_workflows(parser)


def add_show(parser: argparse.ArgumentParser) -> None:
    """Declare `adws show WORKFLOW [--mermaid]`."""
    add_workflows(parser)
    parser.add_argument("workflow", help="workflow name")
    parser.add_argument("--mermaid", action="store_true", help="print a Mermaid flowchart")


def add_check(parser: argparse.ArgumentParser) -> None:
    """Declare `adws check [WORKFLOW ...] [--json]`."""
    parser.description = (
        "Check that every step reads only what an earlier step writes or the "
        "workflow's inputs declare, that no key is written twice, and list outputs nobody "
        "reads. Exit codes: 0 no errors, 1 an error (or a module that did not load)."
    )
    add_workflows(parser)
    parser.add_argument(
        "workflows_to_check", nargs="*", metavar="WORKFLOW", help="workflow names (default: all)"
    )
    parser.add_argument("--json", action="store_true", help="print the problems as JSON")


def add_validate(parser: argparse.ArgumentParser) -> None:
    """Declare `adws validate --workflow W --step S FILE`."""
    add_workflows(parser)
    parser.add_argument("--workflow", required=True, help="workflow name")
    parser.add_argument("--step", required=True, help="agent step name")
    parser.add_argument("file", help="file holding the answer, or - for stdin")


def _catalog(args: argparse.Namespace) -> Catalog:
    return discover_workflows(workflows_dir(args.workflows))


def _report_load_errors(catalog: Catalog) -> None:
    for error in catalog.errors:
        err(f"warning: could not load {error}")


def load_workflow(name: str, folder: str | None) -> Workflow:
    """Find the workflow `name` in `folder` (`--workflows`), or raise a `UsageError` saying why."""
    found = find_workflow(name, workflows_dir(folder), err)
    if isinstance(found, Refused):
        raise UsageError(found.reason)
    return found


def cmd_list(args: argparse.Namespace) -> int:
    """List the workflows with the first line of each description; warn of failing checks."""
    catalog = _catalog(args)
    _report_load_errors(catalog)
    if not catalog.workflows:
        err(f"no workflows found in {catalog.directory}")
        return EXIT_USAGE if catalog.errors else EXIT_OK
    width = max(len(name) for name in catalog.workflows)
    for name in sorted(catalog.workflows):
        workflow = catalog.workflows[name]
        description = workflow.description.strip().splitlines()
        summary = description[0] if description else ""
        if not workflow.steps:
            summary = f"{summary} (no steps)".strip()
        out(f"{name:<{width}}  {summary}".rstrip())
        errors = [p for p in check_workflow(workflow) if p.severity == "error"]
        if errors:
            noun = "error" if len(errors) == 1 else "errors"
            err(
                f"warning: {name} fails adws check ({len(errors)} {noun}: {errors[0]});"
                f" run `adws check {name}`"
            )
    return EXIT_OK


def cmd_check(args: argparse.Namespace) -> int:
    """Check the dataflow of the workflows named (all, when none is); exit 1 on an error."""
    catalog = _catalog(args)
    _report_load_errors(catalog)
    names = args.workflows_to_check or sorted(catalog.workflows)
    found = {}
    for name in names:
        found[name] = check_workflow(load_workflow(name, args.workflows))
    if args.json:
        out_json({name: [p.to_dict() for p in problems] for name, problems in found.items()})
    else:
        for name, problems in found.items():
            errors = sum(1 for problem in problems if problem.severity == "error")
            verdict = "ok" if not errors else f"{errors} error{'s' if errors > 1 else ''}"
            out(f"{name}: {verdict}")
            for problem in problems:
                out(f"  {problem}")
    failed = any(p.severity == "error" for problems in found.values() for p in problems)
    return EXIT_FAILED if failed or catalog.errors else EXIT_OK


def cmd_show(args: argparse.Namespace) -> int:
    """Describe a workflow's steps, as text or a Mermaid flowchart."""
    workflow = load_workflow(args.workflow, args.workflows)

    out(to_mermaid(workflow) if args.mermaid else show_text(workflow))
    return EXIT_OK


def cmd_validate(args: argparse.Namespace) -> int:
    """Check an agent's answer against one step's output contract."""
    workflow = load_workflow(args.workflow, args.workflows)
    steps = {step.name: step for step in iter_steps(workflow.steps)}
    step = steps.get(args.step)
    if step is None:
        msg = f"workflow {workflow.name!r} has no step {args.step!r}; steps: {', '.join(steps)}"
        raise UsageError(msg)
    if not isinstance(step.spec, AgentSpec):
        msg = f"step {args.step!r} is a {step.kind} step; only agent steps have an output contract"
        raise UsageError(msg)
    text = read_answer(args.file)
    result = validate_agent_output(text, step.spec.contract, step_name=step.name)
    if isinstance(result, Failure):
        error = result.failure()
        out(f"invalid: {error.error_type}")
        for problem in error.context.get("problems", (error.message,)):
            out(f"  - {problem}")
        return EXIT_FAILED
    report = result.unwrap()
    payload = {"status": report.status, "fields": dict(report.fields), "data": report.data}
    out_json(json_safe(payload))
    return EXIT_OK
