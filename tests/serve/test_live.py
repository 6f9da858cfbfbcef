"""The poller behind the event streams: one read for every stream, a change flag each."""

from __future__ import annotations

import anyio

from adws.serve.live import Poller


def test_a_quiet_stream_says_it_is_still_here_and_a_change_wakes_every_stream() -> None:
    stamps = iter(["a", "a", "b", "b", "b", "b", "b", "b"])
    poller = Poller(lambda: next(stamps, "b"), interval=0.01, keepalive=0.05)

    async def main() -> list[list[str]]:
        first, second = poller.stream(), poller.stream()
        said: list[list[str]] = [[], []]
        for index, stream in enumerate((first, second)):
            said[index].append(await anext(stream))  # retry
            said[index].append(await anext(stream))  # what changed since the page was drawn
        for index, stream in enumerate((first, second)):
            said[index].append(await anext(stream))
            said[index].append(await anext(stream))
        await first.aclose()
        await second.aclose()
        return said

    said = anyio.run(main)
    assert said[0][:2] == ["retry: 2000\n\n", "event: change\ndata: 1\n\n"]
    assert set(said[0][2:] + said[1][2:]) <= {"event: change\ndata: 1\n\n", ": still here\n\n"}
    assert ": still here\n\n" in said[0][2:] + said[1][2:]
    assert poller.full() is False
