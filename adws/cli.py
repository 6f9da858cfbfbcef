"""The `adws` command line: the one place that prints and picks exit codes.

Exit codes: 0 succeeded, 1 failed, 2 usage or invalid workflow, 3 blocked,
130 interrupted. After a run, every input the run produced whose name ends
in `_path` is printed, so a workflow can tell its user where its artifacts
went (`report_path: reports/...md`).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Final

from returns.result import Failure

from adws.agent_step import AgentSpec, use_agent
from adws.agents.command import CommandAgent
from adws.context import WorkflowContext
from adws.contract import validate_agent_output
from adws.discovery import Catalog, discover_workflows, workflows_dir
from adws.errors import ErrorType, PipelineError, json_safe
from adws.executor import run_workflow
from adws.render import format_event, show_text, to_mermaid
from adws.step import Workflow, iter_steps
from adws.summary import RunSummary

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from adws.events import RunEvent

__all__ = ["EXIT_CODES", "main"]

EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
EXIT_USAGE: Final = 2
EXIT_BLOCKED: Final = 3
EXIT_INTERRUPTED: Final = 130
EXIT_CODES: Final = {
    "succeeded": EXIT_OK,
    "failed": EXIT_FAILED,
    "blocked": EXIT_BLOCKED,
    "interrupted": EXIT_INTERRUPTED,
}
_INPUT: Final = re.compile(r"([a-z][a-z0-9_]*)=(.*)", re.DOTALL)


class UsageError(Exception):
    """A mistake on the command line; reported on stderr with exit code 2."""


def _err(message: str) -> None:
    print(message, file=sys.stderr)


def _out(message: str) -> None:
    print(message)


# -- workflows -----------------------------------------------------------------


def _catalog(args: argparse.Namespace) -> Catalog:
    return discover_workflows(workflows_dir(args.workflows))


def _report_load_errors(catalog: Catalog) -> None:
    for error in catalog.errors:
        _err(f"warning: could not load {error}")


def _workflow(args: argparse.Namespace) -> Workflow:
    catalog = _catalog(args)
    found = catalog.workflows.get(args.workflow)
    if found is not None:
        return found
    _report_load_errors(catalog)
    known = ", ".join(sorted(catalog.workflows)) or "none"
    msg = f"unknown workflow {args.workflow!r} in {catalog.directory}; known workflows: {known}"
    raise UsageError(msg)


# -- inputs --------------------------------------------------------------------


def parse_inputs(pairs: Sequence[str], inputs_file: str | None) -> dict[str, object]:
    """Merge `--inputs FILE.json` with `-i key=value` pairs (the pairs win)."""
    inputs: dict[str, object] = {}
    if inputs_file is not None:
        path = Path(inputs_file)
        try:
            loaded = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            msg = f"cannot read inputs file {path}: {exc.strerror}"
            raise UsageError(msg) from exc
        except ValueError as exc:
            msg = f"inputs file {path} is not valid JSON: {exc}"
            raise UsageError(msg) from exc
        if not isinstance(loaded, dict):
            msg = f"inputs file {path} must hold a JSON object, not {type(loaded).__name__}"
            raise UsageError(msg)
        inputs.update(loaded)
    for pair in pairs:
        match = _INPUT.fullmatch(pair)
        if match is None:
            msg = (
                f"bad input {pair!r}: expected KEY=VALUE with KEY in lower_snake_case, "
                "for example -i topic=rust"
            )
            raise UsageError(msg)
        inputs[match.group(1)] = match.group(2)
    return inputs


# -- commands ------------------------------------------------------------------


def _cmd_list(args: argparse.Namespace) -> int:
    catalog = _catalog(args)
    _report_load_errors(catalog)
    if not catalog.workflows:
        _err(f"no workflows found in {catalog.directory}")
        return EXIT_USAGE if catalog.errors else EXIT_OK
    width = max(len(name) for name in catalog.workflows)
    for name in sorted(catalog.workflows):
        description = catalog.workflows[name].description.strip().splitlines()
        _out(f"{name:<{width}}  {description[0] if description else ''}".rstrip())
    return EXIT_OK


def _cmd_show(args: argparse.Namespace) -> int:
    workflow = _workflow(args)
    _out(to_mermaid(workflow) if args.mermaid else show_text(workflow))
    return EXIT_OK


def _progress(event: RunEvent) -> None:
    _err(format_event(event))


def _print_error_details(error: PipelineError) -> None:
    problems = error.context.get("problems")
    if error.error_type == ErrorType.CONTRACT_VIOLATION and problems:
        _err("problems with the agent's answer:")
        for problem in problems:
            _err(f"  - {problem}")
    for late in error.context.get("always_run_failures", ()):
        _err(f"also failed while cleaning up: {late}")


def _select_agent(workflow: Workflow, agent: str | None) -> Workflow:
    if agent is None:
        return workflow
    try:
        backend = CommandAgent(agent)
    except ValueError as exc:
        msg = f"--agent: {exc}"
        raise UsageError(msg) from exc
    return use_agent(workflow, backend)


def _execute(args: argparse.Namespace, workflow: Workflow, ctx: WorkflowContext) -> int:
    summary = RunSummary()
    observers: list[Callable[[RunEvent], None]] = [summary]
    if not args.quiet:
        observers.append(_progress)
    run_workflow(workflow, ctx, observers=observers)
    if summary.error is not None:
        _print_error_details(summary.error)
    if summary.finished is not None and not args.quiet:
        final = summary.finished.context.inputs
        for key in final:
            if key.endswith("_path") and key not in ctx.inputs:
                _err(f"{key}: {final[key]}")
    if args.json:
        _out(json.dumps(summary.to_dict(), indent=2))
    return EXIT_CODES.get(summary.status, EXIT_FAILED)


def _cmd_run(args: argparse.Namespace) -> int:
    inputs = parse_inputs(args.input, args.inputs)
    workflow = _select_agent(_workflow(args), args.agent)
    missing = workflow.missing_inputs(inputs)
    if missing:
        flags = " ".join(f"-i {key}=..." for key in missing)
        msg = f"workflow {workflow.name!r} needs input {', '.join(missing)}: add {flags}"
        raise UsageError(msg)
    return _execute(args, workflow, WorkflowContext(inputs=inputs))


def _read_answer(source: str) -> str:
    if source == "-":
        return sys.stdin.read()
    try:
        return Path(source).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        msg = f"cannot read {source}: {exc.strerror}"
        raise UsageError(msg) from exc


def _cmd_validate(args: argparse.Namespace) -> int:
    workflow = _workflow(args)
    steps = {step.name: step for step in iter_steps(workflow.steps)}
    step = steps.get(args.step)
    if step is None:
        msg = f"workflow {workflow.name!r} has no step {args.step!r}; steps: {', '.join(steps)}"
        raise UsageError(msg)
    if not isinstance(step.spec, AgentSpec):
        msg = f"step {args.step!r} is a {step.kind} step; only agent steps have an output contract"
        raise UsageError(msg)
    text = _read_answer(args.file)
    result = validate_agent_output(text, step.spec.contract, step_name=step.name)
    if isinstance(result, Failure):
        error = result.failure()
        _out(f"invalid: {error.error_type}")
        for problem in error.context.get("problems", (error.message,)):
            _out(f"  - {problem}")
        return EXIT_FAILED
    report = result.unwrap()
    payload = {"status": report.status, "fields": dict(report.fields), "data": report.data}
    _out(json.dumps(json_safe(payload), indent=2, ensure_ascii=False))
    return EXIT_OK


# -- the parser ----------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--workflows",
        metavar="DIR",
        help="folder of workflow modules (default: $ADWS_WORKFLOWS or ./workflows)",
    )
    parser = argparse.ArgumentParser(
        prog="adws",
        description="Run AI-developer workflows as pipelines that fail closed.",
        epilog="Exit codes: 0 succeeded, 1 failed, 2 usage or invalid workflow, "
        "3 blocked, 130 interrupted.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    listing = commands.add_parser("list", parents=[common], help="list the workflows")
    listing.set_defaults(handler=_cmd_list)

    show = commands.add_parser("show", parents=[common], help="describe a workflow's steps")
    show.add_argument("workflow", help="workflow name")
    show.add_argument("--mermaid", action="store_true", help="print a Mermaid flowchart")
    show.set_defaults(handler=_cmd_show)

    run = commands.add_parser("run", parents=[common], help="run a workflow")
    run.add_argument("workflow", help="workflow name")
    run.add_argument(
        "-i", "--input", action="append", default=[], metavar="KEY=VALUE", help="an input"
    )
    run.add_argument("--inputs", metavar="FILE.json", help="inputs from a JSON object")
    run.add_argument("--json", action="store_true", help="print a JSON summary on stdout")
    run.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    run.add_argument(
        "--agent",
        metavar="CMD",
        help="run every agent step with this command (prompt on stdin), e.g. 'claude -p'",
    )
    run.set_defaults(handler=_cmd_run)

    validate = commands.add_parser(
        "validate", parents=[common], help="check an agent answer against a step's contract"
    )
    validate.add_argument("--workflow", required=True, help="workflow name")
    validate.add_argument("--step", required=True, help="agent step name")
    validate.add_argument("file", help="file holding the answer, or - for stdin")
    validate.set_defaults(handler=_cmd_validate)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return its exit code."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits for --help and usage errors
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        return handler(args)
    except UsageError as exc:
        _err(f"adws: error: {exc}")
        return EXIT_USAGE
