"""What a command that runs a run prints: progress while it runs, and what it left.

`watching` builds the observers `adws.runs.Runs` runs with (progress lines
on stderr unless `-q`, spans over OTLP with `--otel`); `ended` prints what
the run left (why it did not succeed, where its files went, `--json`) and
returns the exit code.
"""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING, Final

from adws._optional import import_optional
from adws.cli import EXIT_CODES
from adws.cli._args import UsageError
from adws.cli._options import refused
from adws.cli._output import err, out_json
from adws.journal.store.exchanges import keeps_transcripts
from adws.render import Progress, error_lines
from adws.render.errors import cleanup_lines
from adws.runs import HandedOver, Refused
from adws.runs.interrupts import EXIT_BY_SIGNAL

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Iterator, Sequence

    from adws.engine.events import RunEvent, RunObserver
    from adws.runs import RunOutcome, Starting

__all__ = ["ended", "printer", "traced", "watching"]

EXIT_FAILED: Final = EXIT_CODES["failed"]
_OTLP_ENDPOINTS: Final = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


def printer(*, verbose: bool = False, kept: str | None = None) -> Callable[[RunEvent], None]:
    """Return an observer that prints a run's progress on stderr (see `adws.render.Progress`)."""
    lines = Progress(verbose=verbose, kept=kept).lines

    def progress(event: RunEvent, /) -> None:
        for line in lines(event):
            err(line)

    return progress


@contextlib.contextmanager
def traced(args: argparse.Namespace) -> Iterator[RunObserver | None]:
    """Export the run as OpenTelemetry spans when `--otel` or the OTLP endpoint asks for it."""
    endpoint = any(os.environ.get(name) for name in _OTLP_ENDPOINTS)
    if not (args.otel or endpoint):
        yield None
        return
    try:
        import_optional("opentelemetry")  # the installed SDK, never a workflow of that name
        from adws.otel import Tracing  # noqa: PLC0415 - imports the OpenTelemetry SDK
    except ImportError as exc:
        msg = f"--otel needs the OpenTelemetry SDK: pip install 'adws[otel]' ({exc})"
        raise UsageError(msg) from exc
    kept = keeps_transcripts(refused=bool(args.no_transcripts))
    tracing = Tracing.over_otlp(transcripts=kept)
    with tracing:
        yield tracing.observe


def watching(
    args: argparse.Namespace, tracing: RunObserver | None
) -> Callable[[Starting], Sequence[RunObserver]]:
    """Build the observers a run is watched with, once it is known (a resume says so first)."""

    def observers(starting: Starting) -> Sequence[RunObserver]:
        if starting.resumed and not args.quiet:
            used = f" with {starting.options}" if starting.options else ""
            err(f"resuming run {starting.run_id}{used}")
        found: list[RunObserver] = []
        if not args.quiet:
            found.append(printer(verbose=args.verbose, kept=starting.kept))
        if tracing is not None:
            found.append(tracing)
        return found

    return observers


def _error_details(outcome: RunOutcome, *, quiet: bool, verbose: bool) -> None:
    """Say what the progress lines did not: all of it under -q, else what cleanup broke."""
    error = outcome.summary.error
    if error is None:
        return
    details = [f"  {line}" for line in error_lines(error, verbose=verbose)] if quiet else []
    for line in details + cleanup_lines(error, verbose=verbose):
        err(line)


def ended(args: argparse.Namespace, outcome: RunOutcome | HandedOver | Refused) -> int:
    """Print what a run left (or why it did not run) and return the command's exit code."""
    if isinstance(outcome, Refused):
        return refused(outcome)
    if isinstance(outcome, HandedOver):
        err(
            f"run {outcome.run_id} continues on host {outcome.host}: adws worker there, "
            f"or adws resume {outcome.run_id} on {outcome.host}"
        )
        return EXIT_CODES["succeeded"]
    summary = outcome.summary
    quiet = bool(args.quiet)
    if quiet and summary.finished is not None and outcome.status != "succeeded":
        printer()(summary.finished)  # -q hides progress, never why a run did not succeed
    _error_details(outcome, quiet=quiet, verbose=bool(args.verbose))
    if summary.finished is not None and not quiet:
        final = summary.finished.context.inputs
        for key in final:
            if key.endswith("_path") and key not in outcome.given:
                err(f"{key}: {final[key]}")
    if args.json:
        payload = summary.to_dict()
        payload["status"] = outcome.status
        payload["options"] = outcome.options.to_dict()
        out_json(payload)
    code = EXIT_CODES.get(outcome.status, EXIT_FAILED)
    if outcome.status == "interrupted" and outcome.signal is not None:
        code = EXIT_BY_SIGNAL.get(outcome.signal, code)
    if outcome.problems:
        err(
            f"adws: the journal {outcome.journal} did not record this run completely "
            f"({'; '.join(outcome.problems)}); `adws resume {outcome.run_id}` may run "
            "finished steps again"
        )
        code = code or EXIT_FAILED
    return code
