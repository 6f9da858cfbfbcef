"""The options for seeing a run: while it runs, and after (`adws status`, `adws report`).

While it runs: `-v`, `--no-transcripts`, `--otel`. Imported by
`adws.cli._parser` on every start: nothing else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable

__all__ = ["add_report", "add_seeing", "add_status", "add_transcripts"]


def add_transcripts(parser: argparse.ArgumentParser) -> None:
    """Add `--no-transcripts` (`run`, `resume`, `batch`)."""
    parser.add_argument(
        "--no-transcripts",
        action="store_true",
        help="keep only hashes and sizes of what agents were asked and answered and of what "
        "agents and commands said in errors, not the texts (as ADWS_TRANSCRIPTS=0 does); "
        "a run started so keeps none in its resumes either",
    )


def add_seeing(running: argparse.ArgumentParser) -> None:
    """Add what a run shows while it runs (`run`, `resume`)."""
    add_transcripts(running)
    running.add_argument(
        "--otel",
        action="store_true",
        help="export the run as OpenTelemetry spans over OTLP (as setting "
        "OTEL_EXPORTER_OTLP_ENDPOINT does; needs pip install 'adws[otel]')",
    )
    running.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="print the traceback of a step that raised, under its error",
    )


def add_status(
    commands: Any,  # noqa: ANN401 - argparse's private subparsers type
    parents: list[argparse.ArgumentParser],
    count: Callable[[str], int],
) -> None:
    """Add `adws status RUN [--step STEP [--attempt N]]`; `count` parses a whole number."""
    status = commands.add_parser(
        "status", parents=parents, help="show one run's steps, attempts and errors"
    )
    status.add_argument("run", help="run id (or a unique prefix)")
    status.add_argument("--json", action="store_true", help="print JSON")
    status.add_argument(
        "--mermaid",
        action="store_true",
        help="print the workflow's flowchart coloured by what happened in this run",
    )
    status.add_argument(
        "--workflows",
        metavar="DIR",
        help="folder of workflow modules, for --mermaid (default: $ADWS_WORKFLOWS or ./workflows)",
    )
    status.add_argument(
        "--step",
        metavar="STEP",
        help="print one attempt of STEP (or of a branch, verify_claims[2]) whole: each prompt "
        "and answer, the outputs it added and its error",
    )
    status.add_argument(
        "--attempt", type=count, metavar="N", help="with --step: attempt N (default: the last)"
    )
    status.add_argument(
        "-v", "--verbose", action="store_true", help="print tracebacks of steps that raised"
    )


def add_report(commands: Any, parents: list[argparse.ArgumentParser]) -> None:  # noqa: ANN401 - argparse's private subparsers type
    """Add `adws report RUN [-o FILE.html]`, `adws report --batch B` and `--eval ID`."""
    report = commands.add_parser(
        "report",
        parents=parents,
        help="write one run (or a batch) as a self-contained HTML page",
        description="Write one HTML page (inline CSS and script; it loads nothing) for RUN: "
        "its workflow, status, duration and spend, a timeline of steps, branches and "
        "attempts, the step diagram coloured by outcome, and each attempt's error, prompts "
        "and answers. With --batch, one page for every run of batch B.",
    )
    report.add_argument("run", nargs="?", help="run id (or a unique prefix)")
    report.add_argument("--batch", metavar="BATCH", help="a page for every run of this batch")
    report.add_argument(
        "--eval",
        metavar="ID",
        help="the page of an evaluation (adws eval): a bar and its 95%% interval per variant",
    )
    report.add_argument(
        "-o",
        "--output",
        metavar="FILE.html",
        help="where to write the page (- for stdout; default: .adws/reports/RUN.html beside "
        "the journal)",
    )
