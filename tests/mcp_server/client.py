"""Drive a real `adws mcp` process with the MCP SDK's own client, over stdio or HTTP."""

from __future__ import annotations

import os
import sys
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from tests.conftest import REPO

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from mcp.client import ClientSession

WORKFLOWS = """
import sys

from returns.io import IOSuccess

from adws import Key, OutputContract, ScriptedAgent, Step, Workflow, agent_step, approval_step, shell_step

TOPIC = Key("topic", str)
COUNT = Key("count", int)

def remember(ctx):
    return IOSuccess(ctx.merge_outputs({"count_seen": ctx.inputs.get("count", 0)}))

greet = Workflow(
    "greet",
    (
        agent_step("ask", prompt="Write about {topic}", agent=ScriptedAgent(["STATUS: done\\nSUMMARY: all about it"]),
                   contract=OutputContract(("SUMMARY",))),
        Step("remember", remember, reads=("count",), writes=("count_seen",)),
    ),
    inputs=("topic",),
    optional_inputs=("count",),
    description="Greet a topic.",
)
gated = Workflow("gated", (approval_step("ship", message="ship {topic}?"),), inputs=("topic",))
slow = Workflow("slow", (shell_step("nap", "sleep 60"),))
run_status = Workflow("run_status", (shell_step("echo", "echo hi"),))
"""

ELSEWHERE = """
import sys

from adws import Workflow, shell_step

if "held-run" in sys.argv:  # this host's runs cannot load it: the run is left to adws resume
    raise RuntimeError("not on this host")

elsewhere = Workflow("elsewhere", (shell_step("echo", "echo hi"),))
"""


def project(tmp_path: Path) -> Path:
    """Write the workflows folder the tests serve (and a module that does not load)."""
    folder = tmp_path / "workflows"
    folder.mkdir()
    (folder / "flows.py").write_text(WORKFLOWS)
    (folder / "elsewhere.py").write_text(ELSEWHERE)
    (folder / "broken.py").write_text("raise ValueError('no')\n")
    return tmp_path


def environment(tmp_path: Path) -> dict[str, str]:
    """The server's environment: ours (coverage's settings too) with adws importable."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("ADWS_")}
    return {**env, "PYTHONPATH": str(REPO)}


@asynccontextmanager
async def served(tmp_path: Path, *argv: str) -> AsyncIterator[ClientSession]:
    """Start `adws mcp --workflows workflows --journal runs.db ARGV` and open a client session."""
    from mcp.client import ClientSession  # noqa: PLC0415 - the optional SDK
    from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: PLC0415

    command = ["-m", "adws", "mcp", "--workflows", "workflows", "--journal", "runs.db", *argv]
    server = StdioServerParameters(
        command=sys.executable, args=command, env=environment(tmp_path), cwd=str(tmp_path)
    )
    with (tmp_path / "stderr.txt").open("w") as errors:
        async with (
            stdio_client(server, errlog=errors) as (reading, writing),
            ClientSession(reading, writing) as session,
        ):
            await session.initialize()
            yield session


async def call(session: ClientSession, name: str, **arguments: Any) -> tuple[bool, dict[str, Any]]:
    """Call a tool; return whether it was an error and its JSON answer."""
    result = await session.call_tool(name, arguments)
    return result.is_error, result.structured_content
