"""The I/O boundary: the only code that runs subprocesses, sleeps and reads the clock.

Everything that touches the outside world goes through here, so the rest of
the package stays pure and tests can swap these functions for fakes:

- `clock`: `sleep`, `monotonic`, `utc_now`;
- `groups`: the process groups adws started, how to stop them, and the
  signals a run stops on;
- `streams`: reading a process's output as capped streams, line by line;
- `marks`: marks in a child's environment, to find what left its group and
  to tell a run's processes from others';
- `environment`: what a step's process sees of the environment (adws's
  own credentials kept home unless the step names them in `env_pass=`);
- `process`: `run_process`, which puts the three together;
- `forked`: `ForkServer`, processes forked from a server that imported
  adws once (an `adws worker`'s runs);
- `starts`: when a process started (a token a reused pid does not share);
- `reaper`: adws as a child subreaper, and the orphans it adopts stopped
  when a run ends;
- `terminal`: text from an agent or a command escaped for a terminal, and
  written where the reader may have gone (`adws runs | head`, a closed
  terminal).

`from adws import io_ops` and `io_ops.run_process(...)` keep working as they
did when this was one module. The names load on first use, so printing a line
(`adws --help`) does not import the process machinery.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from adws._lazy import lazy_names

if TYPE_CHECKING:
    from adws.io_ops.clock import monotonic, sleep, utc_now, wall_clock
    from adws.io_ops.environment import checked_env_pass, child_environment
    from adws.io_ops.forked import Forked, ForkServer, until_one_ends
    from adws.io_ops.groups import (
        CANCEL,
        GRACE_SECONDS,
        GROUPS,
        HANDLED_SIGNALS,
        TAG,
        group_alive,
        handling_signals,
        kill_all_groups,
        kill_group,
        kill_groups_of,
        process_alive,
        stop_group,
    )
    from adws.io_ops.marks import RUN_MARK, group_belongs_to
    from adws.io_ops.process import ProcessOutcome, run_process, start_process
    from adws.io_ops.reaper import become_subreaper, kill_adopted
    from adws.io_ops.starts import process_started
    from adws.io_ops.streams import DRAIN_SECONDS, tail

__all__ = [
    "CANCEL",
    "DRAIN_SECONDS",
    "GRACE_SECONDS",
    "GROUPS",
    "HANDLED_SIGNALS",
    "RUN_MARK",
    "TAG",
    "ForkServer",
    "Forked",
    "ProcessOutcome",
    "become_subreaper",
    "checked_env_pass",
    "child_environment",
    "group_alive",
    "group_belongs_to",
    "handling_signals",
    "kill_adopted",
    "kill_all_groups",
    "kill_group",
    "kill_groups_of",
    "monotonic",
    "process_alive",
    "process_started",
    "run_process",
    "sleep",
    "start_process",
    "stop_group",
    "tail",
    "until_one_ends",
    "utc_now",
    "wall_clock",
]

_HOMES = {
    "CANCEL": "adws.io_ops.groups",
    "DRAIN_SECONDS": "adws.io_ops.streams",
    "ForkServer": "adws.io_ops.forked",
    "Forked": "adws.io_ops.forked",
    "until_one_ends": "adws.io_ops.forked",
    "GRACE_SECONDS": "adws.io_ops.groups",
    "GROUPS": "adws.io_ops.groups",
    "HANDLED_SIGNALS": "adws.io_ops.groups",
    "ProcessOutcome": "adws.io_ops.process",
    "RUN_MARK": "adws.io_ops.marks",
    "TAG": "adws.io_ops.groups",
    "become_subreaper": "adws.io_ops.reaper",
    "checked_env_pass": "adws.io_ops.environment",
    "child_environment": "adws.io_ops.environment",
    "group_alive": "adws.io_ops.groups",
    "group_belongs_to": "adws.io_ops.marks",
    "handling_signals": "adws.io_ops.groups",
    "kill_adopted": "adws.io_ops.reaper",
    "kill_all_groups": "adws.io_ops.groups",
    "kill_group": "adws.io_ops.groups",
    "kill_groups_of": "adws.io_ops.groups",
    "monotonic": "adws.io_ops.clock",
    "process_alive": "adws.io_ops.groups",
    "process_started": "adws.io_ops.starts",
    "run_process": "adws.io_ops.process",
    "start_process": "adws.io_ops.process",
    "sleep": "adws.io_ops.clock",
    "stop_group": "adws.io_ops.groups",
    "tail": "adws.io_ops.streams",
    "utc_now": "adws.io_ops.clock",
    "wall_clock": "adws.io_ops.clock",
}

__getattr__, __dir__ = lazy_names(__name__, _HOMES)
