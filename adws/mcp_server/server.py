"""Serve the tools over MCP (the `mcp` SDK's low-level server): stdio, or HTTP on loopback.

The SDK is imported here only, so `adws mcp` without it says how to
install it (`pip install adws[mcp]`) instead of failing on import.
`await_run` polls the journal between `anyio.sleep`s, so a long wait
never blocks another call.
"""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Any, Final

import anyio

from adws import io_ops
from adws.mcp_server.tools import DEFAULT_WAIT, MAX_WAIT, STOPPED, Answer
from adws.runs.interrupts import EXIT_BY_SIGNAL

if TYPE_CHECKING:
    from mcp.server import Server
    from mcp_types import CallToolRequestParams, CallToolResult, ListToolsResult

    from adws.mcp_server.tools import Tools

__all__ = ["LOOPBACK", "serve"]

LOOPBACK: Final = "127.0.0.1"
POLL_SECONDS: Final = 0.2
"""How often `await_run` reads the journal while a run goes on."""


def _waited(arguments: dict[str, Any] | None) -> float:
    """Return the seconds an `await_run` call waits: its `timeout`, within 0 to `MAX_WAIT`.

    >>> _waited({"timeout": 900}), _waited({"timeout": -1}), _waited({})
    (300.0, 0.0, 60.0)
    """
    given = (arguments or {}).get("timeout", DEFAULT_WAIT)
    return min(max(float(given), 0.0), MAX_WAIT)


def server(tools: Tools) -> Server[Any]:
    """Build the MCP server of `tools`."""
    from mcp.server import Server  # noqa: PLC0415 - the optional SDK, loaded by `adws mcp` only
    from mcp_types import CallToolResult, ListToolsResult, TextContent, Tool  # noqa: PLC0415

    def result(answer: Answer) -> CallToolResult:
        text = json.dumps(answer.value, indent=1)
        return CallToolResult(
            content=[TextContent(type="text", text=text)],
            structured_content=dict(answer.value),
            is_error=answer.error,
        )

    async def list_tools(_ctx: object, _params: object) -> ListToolsResult:
        listed = [
            Tool(name=tool.name, description=tool.description, input_schema=dict(tool.schema))
            for tool in tools.tools
        ]
        return ListToolsResult(tools=listed)

    async def call_tool(_ctx: object, params: CallToolRequestParams) -> CallToolResult:
        answer = tools.call(params.name, params.arguments)
        if params.name != "await_run" or answer.error:
            return result(answer)
        deadline = io_ops.monotonic() + _waited(params.arguments)
        while answer.value["status"] in STOPPED and io_ops.monotonic() < deadline:
            await anyio.sleep(POLL_SECONDS)
            answer = tools.status(str(answer.value["run_id"]))
        return result(answer)

    return Server("adws", on_list_tools=list_tools, on_call_tool=call_tool)


async def _stdio(tools: Tools) -> None:
    from mcp.server.stdio import stdio_server  # noqa: PLC0415 - the optional SDK

    served = server(tools)
    async with stdio_server() as (reading, writing):
        await served.run(reading, writing, served.create_initialization_options())


async def _http(tools: Tools, port: int) -> None:
    import uvicorn  # noqa: PLC0415 - the SDK's own dependency, for --http only

    app = server(tools).streamable_http_app(host=LOOPBACK)
    config = uvicorn.Config(app, host=LOOPBACK, port=port, log_level="warning")
    await uvicorn.Server(config).serve()


def serve(tools: Tools, port: int | None = None) -> int:
    """Serve `tools` on stdin and stdout, or (`port`) streamable HTTP on 127.0.0.1, until closed.

    Return 0 when the client went (stdin closed), else the exit code of the
    signal that stopped it (Ctrl-C 130, SIGTERM 143, SIGHUP 129, as `adws
    worker`). The runs still going are stopped as it stops: they end
    `interrupted`, and `adws resume` (or a worker) continues them.
    """
    stopped: list[int] = []

    def stop(signum: int, _frame: object) -> None:
        stopped.append(signum)
        if port is None:
            # The SDK reads stdin in a thread that no signal stops, so the loop would wait for
            # the client to close it: end here, once the runs are stopped. (uvicorn stops
            # itself on a signal, then passes it on to here.)
            tools.held.stop()
            sys.stderr.flush()
            os._exit(EXIT_BY_SIGNAL[signum])

    try:
        with io_ops.handling_signals(stop):
            if port is None:
                anyio.run(_stdio, tools)
            else:
                anyio.run(_http, tools, port)
    finally:
        tools.held.stop()
    return EXIT_BY_SIGNAL[stopped[0]] if stopped else 0
