"""`adws caps`: the caps that hold across runs, listed, set and removed (one command, verbs).

The listing shows the agents' own quota too: each account's windows as
its CLI last reported them (`adws.journal.store.quotas`). `--json` keeps
printing the list of caps alone (scripts read it); `--accounts --json`
prints the accounts' windows.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import TYPE_CHECKING

from adws._exceptions import MalformedError, NotFoundError
from adws.cli._args import UsageError
from adws.cli._options import add_journal, journal_of
from adws.cli._output import err, out, out_json
from adws.journal.records.caps import Cap
from adws.journal.store.caps import CapState, remove, set_cap, states
from adws.journal.store.quotas import QuotaWindow, windows
from adws.render import table

if TYPE_CHECKING:
    import argparse

__all__ = ["accounts_table", "add_caps", "caps_table", "cmd_caps"]


def add_caps(parser: argparse.ArgumentParser) -> None:
    """Declare `adws caps [--json]`, `adws caps set NAME ...` and `adws caps rm NAME`."""
    parser.description = (
        "List the caps that hold across every run sharing the journal (dollars, tokens or"
        " runs per window), each with what its window spent, reserved and has left and when"
        " it resets; `set` adds or replaces one, `rm` removes one. Then the agent accounts'"
        " quota windows, as their CLIs last reported them (share used, reset): a window past"
        " a run's --park-at parks that account's calls until it resets."
    )
    add_journal(parser)
    parser.add_argument("--json", action="store_true", help="print a JSON list (of the caps)")
    parser.add_argument(
        "--accounts", action="store_true", help="list only the agent accounts' quota windows"
    )
    verbs = parser.add_subparsers(dest="verb", metavar="{set,rm}")
    setting = verbs.add_parser(
        "set",
        help="add or replace a cap",
        description=(
            "Cap the runs sharing the journal: an amount per window. WINDOW is a duration"
            " (30s, 5m, 5h, 7d: rolling, from the window's first spend) or day/week"
            " (calendar, from local midnight in --tz)."
        ),
    )
    setting.add_argument("name", metavar="NAME", help="a plain word: letters, digits, _ . -")
    amount = setting.add_mutually_exclusive_group(required=True)
    amount.add_argument("--usd", type=float, metavar="X", help="dollars per window")
    amount.add_argument("--tokens", type=float, metavar="N", help="tokens per window")
    amount.add_argument("--runs", type=float, metavar="N", help="runs started per window")
    setting.add_argument("--per", required=True, metavar="WINDOW", help="30s, 5h, 7d, day, week")
    setting.add_argument(
        "--tz", default="UTC", metavar="ZONE", help="the zone of day/week (default: UTC)"
    )
    setting.add_argument("--workflow", metavar="W", help="only runs of this workflow")
    setting.add_argument("--agent", metavar="PRESET", help="only runs started with this --agent")
    add_journal(setting)
    removing = verbs.add_parser("rm", help="remove a cap", description="Remove a cap by name.")
    removing.add_argument("name", metavar="NAME")
    add_journal(removing)


def _amount(state: CapState, value: float) -> str:
    if state.cap is not None and state.cap.currency == "usd":
        return f"${value:,.2f}"
    return f"{value:,.0f}"


def caps_table(found: list[CapState]) -> str:
    """Render one line per cap: its limit, spent, reserved, remaining and when it resets."""
    lines = []
    for state in found:
        if state.cap is None:
            lines.append((state.name, f"unreadable: {state.error}", "-", "-", "-", "-"))
            continue
        resets = "-" if state.resets is None else state.resets.isoformat(timespec="seconds")
        lines.append(
            (
                state.name,
                state.cap.describe(),
                _amount(state, state.spent),
                _amount(state, state.reserved),
                _amount(state, state.remaining),
                resets,
            )
        )
    return table(("NAME", "CAP", "SPENT", "RESERVED", "REMAINING", "RESETS"), lines)


def accounts_table(found: list[QuotaWindow]) -> str:
    """Render one line per agent account and window: the share used and when it resets."""
    lines = [
        (
            window.account,
            window.window,
            "-" if window.used is None else f"{window.used:.0%}",
            "-"
            if window.resets_at is None
            else dt.datetime.fromtimestamp(window.resets_at, dt.UTC).isoformat(timespec="seconds"),
            window.updated,
        )
        for window in found
    ]
    return table(("AGENT ACCOUNT", "WINDOW", "USED", "RESETS", "REPORTED"), lines)


def _accounts(args: argparse.Namespace) -> int:
    found = windows(journal_of(args, readonly=True))
    if args.json:
        out_json([window.to_dict() for window in found])
    elif found:
        out(accounts_table(found))
    else:
        err("no agent account has reported its quota")
    return 0


def _set(args: argparse.Namespace, now: dt.datetime) -> int:
    currency, amount = next(
        (name, value)
        for name, value in (("usd", args.usd), ("tokens", args.tokens), ("runs", args.runs))
        if value is not None
    )
    if currency != "usd" and math.isfinite(amount) and amount == int(amount):
        amount = int(amount)
    try:
        cap = Cap.checked(
            name=args.name,
            currency=currency,
            amount=amount,
            per=args.per,
            tz=args.tz,
            workflow=args.workflow,
            agent=args.agent,
        )
    except MalformedError as exc:
        raise UsageError(str(exc)) from None
    set_cap(journal_of(args, create=True), cap, now)
    out(f"cap {cap.name}: {cap.describe()}")
    return 0


def cmd_caps(args: argparse.Namespace, now: dt.datetime | None = None) -> int:
    """List the caps, or set or remove one."""
    when = now or dt.datetime.now(dt.UTC)
    if args.verb == "set":
        return _set(args, when)
    if args.verb == "rm":
        try:
            remove(journal_of(args), args.name)
        except NotFoundError as exc:
            raise UsageError(str(exc)) from None
        out(f"removed cap {args.name}")
        return 0
    if args.accounts:
        return _accounts(args)
    journal = journal_of(args, readonly=True)
    found = states(journal, when)
    if args.json:
        out_json([state.to_dict() for state in found])
        return 0
    if found:
        out(caps_table(found))
    else:
        err(f"no caps set in {journal.path}")
    accounts = windows(journal)
    if accounts:
        out(accounts_table(accounts))
    return 0
