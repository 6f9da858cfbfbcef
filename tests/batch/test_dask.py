"""adws batch --dask on a real LocalCluster on 127.0.0.1."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import ssl
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from adws.agents.offline import OFFLINE
from adws.cli import main
from tests.batch.test_batch import FLOWS, batch_json, calls, lines, runs_of
from tests.batch.test_batch_safety import FLOWS as SAFETY
from tests.batch.test_batch_safety import lines as safety_lines
from tests.conftest import REPO, start_adws, wait_for

pytestmark = pytest.mark.slow

STEPS = """
import time
from pathlib import Path
from returns.io import IOSuccess
from adws import Step, Workflow, shell_step


def tick(name):
    def run(ctx):
        Path(f"{ctx.inputs['n']}-{name}").touch()
        time.sleep(0.4)
        return IOSuccess(ctx.merge_outputs({name: True}))
    return run


def cleanup(ctx):
    Path(f"cleaned-{ctx.inputs['n']}").write_text(str(ctx.failure))
    return IOSuccess(ctx)


ticks = Workflow(
    "ticks",
    (*(Step(f"s{i}", tick(f"s{i}")) for i in range(6)), Step("cleanup", cleanup, always_run=True)),
    inputs=("n",),
)
"""


@pytest.fixture
def project(in_tmp: Path) -> Path:
    (in_tmp / "workflows").mkdir()
    (in_tmp / "workflows" / "flows.py").write_text(FLOWS, encoding="utf-8")
    (in_tmp / "workflows" / "ticks.py").write_text(STEPS, encoding="utf-8")
    return in_tmp


def test_a_batch_runs_on_a_local_dask_cluster(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines(project, "a", "b", "c")
    code, report = batch_json(["pair", "inputs.jsonl", "--dask", "local:2"], capsys)
    assert (code, report["counts"]) == (0, {"succeeded": 3})
    runs = report["runs"]
    assert isinstance(runs, list)
    assert [run["line"] for run in runs] == [1, 2, 3]
    assert calls(project) == ["first a", "first b", "first c", "second a", "second b", "second c"]


def test_a_killed_dask_worker_costs_only_the_step_in_flight(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines(project, "die", "calm")
    code, report = batch_json(["pair", "inputs.jsonl", "--dask", "local:2"], capsys)
    assert (code, report["counts"]) == (0, {"succeeded": 2})
    assert calls(project) == ["first calm", "first die", "second calm", "second die", "second die"]


def test_a_scheduler_address_is_used_as_given(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from distributed import LocalCluster  # noqa: PLC0415 - only this test starts its own

    lines(project, "a")
    with LocalCluster(  # type: ignore[no-untyped-call] # distributed ships no annotations
        n_workers=1, threads_per_worker=1, host="127.0.0.1", dashboard_address="127.0.0.1:0"
    ) as cluster:
        code = main(
            ["batch", "pair", "inputs.jsonl", "--dask", cluster.scheduler_address, "-q", "--json"]
        )
        captured = capsys.readouterr()
    assert (code, json.loads(captured.out)["counts"]) == (0, {"succeeded": 1})
    assert captured.err.startswith(
        f"adws: warning: {cluster.scheduler_address} is not a tls:// address: whoever can reach"
    )


def test_ctrl_c_stops_each_dask_run_at_its_next_step_after_cleanup(project: Path) -> None:
    lines(project, "a", "b")
    batch = start_adws(
        project, "batch", "ticks", "inputs.jsonl", "--dask", "local:2", "--json", "-q"
    )
    wait_for(lambda: (project / "a-s1").exists() and (project / "b-s1").exists(), 60)
    batch.send_signal(signal.SIGINT)
    out, err = batch.communicate(timeout=120)
    assert batch.returncode == 130, err
    assert json.loads(out)["counts"] == {"interrupted": 2}
    assert not (project / "a-s5").exists()
    for name in ("a", "b"):
        assert (
            (project / f"cleaned-{name}").read_text().endswith("Interrupted: interrupted by Ctrl-C")
        )


def test_a_cancel_stops_one_dask_run_at_its_step_and_the_others_go_on(project: Path) -> None:
    lines(project, "a", "b")
    batch = start_adws(
        project, "batch", "ticks", "inputs.jsonl", "--dask", "local:2", "--json", "-q"
    )
    wait_for(lambda: (project / "a-s1").exists() and (project / "b-s1").exists(), 60)
    [run_a] = [
        run_id
        for run_id, line in sqlite3.connect(project / "runs.db").execute(
            "SELECT run_id, line FROM runs"
        )
        if line == 1
    ]
    assert main(["cancel", run_a, "--reason", "not a", "--journal", str(project / "runs.db")]) == 0
    out, err = batch.communicate(timeout=120)
    assert batch.returncode == 1, err
    assert json.loads(out)["counts"] == {"cancelled": 1, "succeeded": 1}
    assert not (project / "a-s5").exists()
    assert (project / "b-s5").exists()
    assert (project / "cleaned-a").read_text().endswith(": not a")


@pytest.mark.parametrize(
    ("address", "message"),
    [
        ("local:two", "--dask local:two: write local:N with N a number of worker processes"),
        ("local:0", "--dask local:0: write local:N with N a number of worker processes"),
    ],
)
def test_a_bad_dask_address_is_a_usage_error(
    project: Path, capsys: pytest.CaptureFixture[str], address: str, message: str
) -> None:
    lines(project, "a")
    assert main(["batch", "pair", "inputs.jsonl", "--dask", address]) == 2
    assert capsys.readouterr().err == f"adws: error: {message}\n"


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("garbage", "(ValueError: missing port number in address 'garbage')"),
        (
            "tcp://127.0.0.1:{port}",
            "(OSError: Timed out trying to connect to tcp://127.0.0.1:{port} after 2 s)",
        ),
    ],
)
def test_a_scheduler_out_of_reach_is_exit_2_and_records_nothing(
    project: Path, address: str, reason: str
) -> None:
    lines(project, "a")
    port = closed_port()
    address = address.format(port=port)
    process = start_adws(
        project,
        "batch",
        "pair",
        "inputs.jsonl",
        "--dask",
        address,
        env={"DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "2s"},
    )
    _, err = process.communicate(timeout=120)
    assert process.returncode == 2, err
    assert err.splitlines()[-1] == (
        f"adws: error: --dask {address}: cannot reach that scheduler {reason.format(port=port)}"
    )
    journal = project / "runs.db"
    assert not journal.exists() or sqlite3.connect(journal).execute(
        "SELECT COUNT(*) FROM runs"
    ).fetchone() == (0,)


def test_without_the_extra_dask_is_named_with_how_to_install_it(project: Path) -> None:
    lines(project, "a")
    script = (
        "import sys\nsys.modules['distributed'] = None\nsys.modules['dask'] = None\n"
        "from adws.cli import main\n"
        "raise SystemExit(main(['batch', 'pair', 'inputs.jsonl', '--dask', 'local:1']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 2
    assert done.stderr.startswith(
        "adws: error: --dask needs Dask distributed and cryptography: pip install 'adws[dask]'"
    )


# -- issue 22 on Dask: secured, stopped, and as capable as the local pool ------------------------


@pytest.fixture
def safety(in_tmp: Path) -> Path:
    (in_tmp / "workflows").mkdir()
    (in_tmp / "workflows" / "safety.py").write_text(SAFETY, encoding="utf-8")
    (in_tmp / "workflows" / "stops.py").write_text(STOPS, encoding="utf-8")
    return in_tmp


STOPS = """
from adws import CommandAgent, RetryPolicy, Workflow, agent_step, shell_step

stubborn = Workflow(
    "stubborn",
    (
        shell_step("work", "echo $$ > work-{n}.pid; exec sleep 60"),
        shell_step("cleanup", "echo $$ > clean-{n}.pid; exec sleep 60", always_run=True),
    ),
    inputs=("n",),
)
TOUCHING = CommandAgent(["sh", "-c", "touch ran; echo STATUS: done"])
patient = Workflow(
    "patient",
    (
        shell_step(
            "setup",
            "echo $$ > setup-{n}.pid; while [ ! -e go ]; do sleep 0.05; done",
            always_run=True,
        ),
        shell_step("work", "touch worked-{n}"),
    ),
    inputs=("n",),
)
offline = Workflow(
    "offline",
    (agent_step("ask", prompt="{n}", agent=TOUCHING, retry=RetryPolicy()),),
    inputs=("n",),
)
"""


def _tree(pid: int) -> list[psutil.Process]:
    root = psutil.Process(pid)
    return [root, *root.children(recursive=True)]


def test_a_local_dask_cluster_speaks_only_tls_and_serves_no_http(safety: Path) -> None:
    safety_lines(safety, "a")
    batch = start_adws(safety, "batch", "gated", "inputs.jsonl", "--dask", "local:1", "-q")
    wait_for(lambda: len(list(safety.glob("waiting-*"))) == 1, 60)
    listening = {
        (conn.laddr.ip, conn.laddr.port)
        for process in _tree(batch.pid)
        for conn in process.net_connections(kind="inet")
        if conn.status == psutil.CONN_LISTEN
    }
    (safety / "fixed").touch()
    (safety / "go").touch()
    _, err = batch.communicate(timeout=120)
    assert batch.returncode == 0, err
    assert len(listening) == 3  # the scheduler, the nanny and the worker: no HTTP server at all
    assert {ip for ip, _ in listening} == {"127.0.0.1"}
    assert 8787 not in {port for _, port in listening}
    stranger = ssl.create_default_context()
    stranger.check_hostname = False
    stranger.verify_mode = ssl.CERT_NONE
    for ip, port in listening:
        # Only a client with the batch's own certificate gets in: a stranger has none.
        with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
            _speak(stranger, ip, port)


def _speak(context: ssl.SSLContext, ip: str, port: int) -> None:
    """Say hello over TLS and read a byte of answer; a closed connection is an error."""
    with socket.create_connection((ip, port), timeout=10) as raw, context.wrap_socket(raw) as tls:
        tls.sendall(b"GET / HTTP/1.0\r\n\r\n")
        if not tls.recv(1):
            msg = "closed without a word"
            raise ConnectionError(msg)


def test_ctrl_c_on_dask_stops_the_step_in_flight_and_a_second_kills_cleanup(safety: Path) -> None:
    safety_lines(safety, "a")
    batch = start_adws(
        safety, "batch", "stubborn", "inputs.jsonl", "--dask", "local:1", "-q", "--json"
    )
    wait_for((safety / "work-a.pid").exists, 60)
    time.sleep(0.3)
    work = int((safety / "work-a.pid").read_text())
    batch.send_signal(signal.SIGTERM)
    wait_for((safety / "clean-a.pid").exists, 60)  # the step was stopped; its cleanup runs
    assert _gone(work)
    time.sleep(0.3)
    clean = int((safety / "clean-a.pid").read_text())
    batch.send_signal(signal.SIGTERM)
    out, err = batch.communicate(timeout=120)
    assert batch.returncode == 143, err
    assert json.loads(out)["counts"] == {"interrupted": 1}
    assert _gone(clean)


def test_ctrl_c_on_dask_during_a_cleanup_step_lets_it_finish_then_stops(safety: Path) -> None:
    safety_lines(safety, "a")
    batch = start_adws(
        safety, "batch", "patient", "inputs.jsonl", "--dask", "local:1", "-q", "--json"
    )
    wait_for((safety / "setup-a.pid").exists, 60)
    batch.send_signal(signal.SIGINT)
    time.sleep(1)
    assert psutil.pid_exists(int((safety / "setup-a.pid").read_text()))  # cleanup goes on
    (safety / "go").touch()
    (safety / "setup-a.pid").unlink()
    out, err = batch.communicate(timeout=120)
    assert batch.returncode == 130, err
    assert json.loads(out)["counts"] == {"interrupted": 1}
    assert not (safety / "worked-a").exists()


def test_a_killed_dask_workers_child_is_stopped_before_its_run_resumes(safety: Path) -> None:
    safety_lines(safety, "a")
    batch = start_adws(
        safety, "batch", "overlapping", "inputs.jsonl", "--dask", "local:1", "-q", "--json"
    )
    wait_for((safety / "child.pid").exists, 60)
    time.sleep(0.3)
    child = int((safety / "child.pid").read_text())
    os.kill(psutil.Process(child).ppid(), signal.SIGKILL)  # the Dask worker running the step
    (safety / "died").touch()
    out, err = batch.communicate(timeout=120)
    assert batch.returncode == 0, err
    assert json.loads(out)["counts"] == {"succeeded": 1}
    assert not (safety / "overlap").exists()
    assert _gone(child)


def test_a_step_using_a_multiprocessing_pool_works_on_dask(
    safety: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    safety_lines(safety, "a")
    code, report = batch_json(["pooling", "inputs.jsonl", "--dask", "local:1"], capsys)
    assert (code, report["counts"]) == (0, {"succeeded": 1})


def test_the_offline_switch_reaches_dask_workers(
    safety: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """This test is offline (the plugin's default): a worker starts no agent process either."""
    safety_lines(safety, "a")
    code, report = batch_json(["offline", "inputs.jsonl", "--dask", "local:1"], capsys)
    assert code == 1
    assert not (safety / "ran").exists()
    (run,) = runs_of(report)
    assert run["error"]["message"].startswith("offline: CommandAgent(")
    assert OFFLINE.refused == (run["error"]["message"],)  # noted here, so the plugin fails a test
    OFFLINE.reset(enabled=True)  # this test expected the refusal: it must not fail it


def _gone(pid: int, seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


def test_a_bad_line_after_the_cluster_started_records_nothing_and_stops_it(
    project: Path,
) -> None:
    (project / "inputs.jsonl").write_text('{"n": "a"}\n{"other": 1}\n', encoding="utf-8")
    process = start_adws(project, "batch", "pair", "inputs.jsonl", "--dask", "local:1")
    _, err = process.communicate(timeout=120)
    assert (process.returncode, err.splitlines()[-1]) == (
        2,
        "adws: error: inputs.jsonl, line 2: workflow 'pair' needs input n",
    )
    assert not (project / "runs.db").exists()  # nothing recorded: the file was bad
    assert [
        p.info["cmdline"]
        for p in psutil.process_iter(["cmdline"])
        if "distributed" in " ".join(p.info["cmdline"] or [])
    ] == []
