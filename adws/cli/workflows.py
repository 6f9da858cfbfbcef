"""`adws list`, `adws show` and `adws validate`: commands about workflow definitions."""

from __future__ import annotations

from typing import TYPE_CHECKING

from adws.cli._args import UsageError, read_answer
from adws.cli._output import err, out, out_json

if TYPE_CHECKING:
    import argparse

    from adws.discovery import Catalog
    from adws.engine.step import Workflow

# Each command imports what it needs when it runs, so `adws --help` starts in a
# few milliseconds instead of importing the executor, cattrs and sqlite3.

__all__ = ["cmd_check", "cmd_list", "cmd_show", "cmd_validate", "load_workflow"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


def _catalog(args: argparse.Namespace) -> Catalog:
    from adws.discovery import discover_workflows, workflows_dir  # noqa: PLC0415 - see the note on imports

    return discover_workflows(workflows_dir(args.workflows))


def _report_load_errors(catalog: Catalog) -> None:
    for error in catalog.errors:
        err(f"warning: could not load {error}")


def load_workflow(args: argparse.Namespace) -> Workflow:
    """Find `args.workflow`, or raise a `UsageError` that says what is known."""
    catalog = _catalog(args)
    found = catalog.workflows.get(args.workflow)
    conflict = catalog.conflicts.get(args.workflow)
    if conflict is not None:
        files = " and ".join(path.name for path in conflict)
        msg = f"workflow {args.workflow!r} is defined in both {files}; rename one of them"
        raise UsageError(msg)
    if found is not None:
        return found
    _report_load_errors(catalog)
    known = ", ".join(sorted(catalog.workflows)) or "none"
    msg = f"unknown workflow {args.workflow!r} in {catalog.directory}; known workflows: {known}"
    raise UsageError(msg)


def cmd_list(args: argparse.Namespace) -> int:
    """List the workflows with the first line of each description; warn of failing checks."""
    from adws.check import check_workflow  # noqa: PLC0415 - see the note on imports

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
    from adws.check import check_workflow  # noqa: PLC0415 - see the note on imports

    catalog = _catalog(args)
    _report_load_errors(catalog)
    names = args.workflows_to_check or sorted(catalog.workflows)
    found = {}
    for name in names:
        args.workflow = name
        found[name] = check_workflow(load_workflow(args))
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
    workflow = load_workflow(args)
    from adws.render import show_text, to_mermaid  # noqa: PLC0415 - see the note on imports

    out(to_mermaid(workflow) if args.mermaid else show_text(workflow))
    return EXIT_OK


def cmd_validate(args: argparse.Namespace) -> int:
    """Check an agent's answer against one step's output contract."""
    from returns.result import Failure  # noqa: PLC0415 - see the note on imports

    from adws.agents.step import AgentSpec  # noqa: PLC0415 - see the note on imports
    from adws.contract.validator import validate_agent_output  # noqa: PLC0415 - see the note on imports
    from adws.engine.errors import json_safe  # noqa: PLC0415 - see the note on imports
    from adws.engine.step import iter_steps  # noqa: PLC0415 - see the note on imports

    workflow = load_workflow(args)
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
