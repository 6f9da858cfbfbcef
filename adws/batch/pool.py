"""Where a batch's runs execute (`Pool`), and how the coordinator passes a signal on (`Stop`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, final

from adws import io_ops

if TYPE_CHECKING:
    import contextlib

    from adws.batch.tasks import Cancel, Message, Task

__all__ = ["Pool", "Stop"]


class Pool(Protocol):
    """Where a batch's runs execute: `LocalPool` or `DaskPool`, one slot per run in flight."""

    def start(self) -> Any:  # noqa: ANN401 - a pipe for the local pool, a number for Dask
        """Open a slot that can take a task."""

    def send(self, slot: Any, task: Task) -> None:  # noqa: ANN401 - as above
        """Give the slot a task."""

    def receive(self, timeout: float) -> list[tuple[Any, Message]]:
        """Return the messages waiting (up to `timeout`); `("lost", how)` for a dead worker."""

    def forget(self, slot: Any) -> None:  # noqa: ANN401 - as above
        """Drop a slot whose worker died."""

    def signal_all(self, signum: int) -> None:
        """Pass a signal on: the first stops every run after its cleanup, a second kills."""

    def over_budget(self, batch_id: str) -> None:
        """Refuse every agent call of the batch from now on (`--batch-max-cost`)."""

    def cancel(self, slot: Any, cancel: Cancel) -> None:  # noqa: ANN401 - as above
        """Stop the run in flight in `slot` as `adws cancel` asked (its cleanup still runs)."""

    def recorded(self, slot: Any, run_id: str, why: str | None) -> None:  # noqa: ANN401 - as above
        """Answer a worker waiting to start a step: recorded (`why` None), or why it must stop."""

    def close(self, grace: float = 5.0) -> None:
        """Stop everything this pool started."""


@final
class Stop:
    """The coordinator's signal handler: the first signal stops, a second one kills."""

    def __init__(self, pool: Pool) -> None:
        """Pass signals on to `pool`'s workers; none has come yet."""
        self.pool = pool
        self.signals = 0
        self.first = 0

    def __call__(self, signum: int, _frame: object) -> None:
        """Count the signal and pass it on to every worker."""
        self.signals += 1
        self.first = self.first or signum
        self.pool.signal_all(signum)  # the workers stop their runs (then, the second time, die)

    def halt(self) -> None:
        """Stop the batch as a first Ctrl-C would, though no signal came (the journal failed)."""
        if not self.signals:
            self.signals = 1
            self.pool.signal_all(io_ops.HANDLED_SIGNALS[1])  # SIGTERM: stop after cleanup

    def installed(self) -> contextlib.AbstractContextManager[None]:
        """Handle SIGINT and SIGTERM this way while the batch runs."""
        return io_ops.handling_signals(self)
