"""The I/O boundary: the only code that runs subprocesses, sleeps and reads the clock.

Everything that touches the outside world goes through here, so the rest of
the package stays pure and tests can swap these functions for fakes:

- `clock`: `sleep`, `monotonic`, `utc_now`;
- `groups`: the process groups adws started, how to stop them, and the
  signals a run stops on;
- `streams`: reading a process's output as capped streams, line by line;
- `marks`: marks in a child's environment, to find what left its group and
  to tell a run's processes from others';
- `process`: `run_process`, which puts the three together;
- `terminal`: text from an agent or a command escaped for a terminal, and
  written where the reader may have gone (`adws runs | head`, a closed
  terminal).

`from adws import io_ops` and `io_ops.run_process(...)` keep working as they
did when this was one module.
"""

from adws.io_ops.clock import monotonic, sleep, utc_now, wall_clock
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
from adws.io_ops.process import ProcessOutcome, run_process
from adws.io_ops.streams import DRAIN_SECONDS, tail

__all__ = [
    "CANCEL",
    "DRAIN_SECONDS",
    "GRACE_SECONDS",
    "GROUPS",
    "HANDLED_SIGNALS",
    "RUN_MARK",
    "TAG",
    "ProcessOutcome",
    "group_alive",
    "group_belongs_to",
    "handling_signals",
    "kill_all_groups",
    "kill_group",
    "kill_groups_of",
    "monotonic",
    "process_alive",
    "run_process",
    "sleep",
    "stop_group",
    "tail",
    "utc_now",
    "wall_clock",
]
