r"""A fake model API on 127.0.0.1, so the real `claude` and `codex` CLIs run offline.

Point a CLI at it and script its replies: by order, or by a marker that
appears in the prompt (one queue per marker, so a conversation that calls a
tool and then answers reads its replies in turn):

    with FakeModelAPI() as api:
        api.script(Reply.text("STATUS: done\\nSUMMARY: ok"))
        api.script(Reply.tool("Write", {"file_path": "a.txt", "content": "hi"}),
                   Reply.text("STATUS: done"), marker="IMPLEMENT")
        agent = PRESETS["claude"].agent(env=api.claude_env(tmp_path))

It speaks Anthropic's `/v1/messages` (streamed and not) and OpenAI's
`/v1/responses` (what codex uses), with the standard library only. Replies:
text (`Reply.text`, optionally after a `delay`: a slow or silent model),
HTTP errors (`Reply.error`, with `retry-after`; `Reply.usage_limit` for
a subscription's usage limit with its reset time, as codex and claude
read it), tool calls (`Reply.tool`: Claude
Code's `Write` or `Bash`, codex's `exec_command`), dropped streams
(`Reply.drop`). A request with no reply left is answered 500 and noted in
`unanswered`. `claude_env` and `codex_env` return the environment each CLI
needs (a throwaway home, a fake key, the base URL; codex's `config.toml`
model provider is written for it). The pytest fixture `fake_model_api`
(from the adws plugin) starts one per test.
"""

from __future__ import annotations

import collections
import json
import threading
from typing import TYPE_CHECKING, Any, Final, final

import attrs

from adws._exceptions import MalformedError
from adws.testing._server import LocalServer, serving, until_signalled
from adws.testing._wire import Handler
from adws.testing.replies import Reply, replies_from_json

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

__all__ = ["FakeModelAPI", "Reply"]

FAKE_KEY: Final = "sk-adws-fake-key"
FAKE_OAUTH_TOKEN: Final = "sk-ant-oat01-adws-fake-token"  # noqa: S105 - no secret: a fake's
"""What `claude_env(..., oauth=True)` signs in with: a subscription's token, not an API key."""


@final
class FakeModelAPI(LocalServer):
    """Serve scripted replies on 127.0.0.1 (an ephemeral port, unless given one) until closed."""

    def __init__(self, port: int = 0) -> None:
        """Bind `port` (0: any free one) and start serving in a daemon thread."""
        self._lock = threading.Lock()
        self._queues: dict[str | None, collections.deque[Reply]] = {None: collections.deque()}
        self.requests: list[dict[str, Any]] = []
        """Every request: `path`, `body`, the `marker` it matched and the `reply` kind sent."""
        self.unanswered: list[str] = []
        super().__init__(Handler, port)

    def script(self, *replies: Reply, marker: str | None = None) -> None:
        """Queue `replies` for requests whose prompt holds `marker` (any request when None)."""
        with self._lock:
            self._queues.setdefault(marker, collections.deque()).extend(replies)

    def unused(self) -> dict[str | None, int]:
        """Return how many replies are left per marker (None: the unmarked queue)."""
        with self._lock:
            return {marker: len(queue) for marker, queue in self._queues.items() if queue}

    def next_reply(self, path: str, body: Mapping[str, Any], prompt: str) -> Reply | None:
        """Take the reply for this request: the first marker in the prompt with replies left."""
        with self._lock:
            chosen = next(
                (m for m, q in self._queues.items() if m is not None and q and m in prompt),
                None,
            )
            queue = self._queues[chosen]
            reply = queue.popleft() if queue else None
            self.requests.append(
                {"path": path, "body": body, "marker": chosen, "reply": reply and reply.kind}
            )
            if reply is None:
                self.unanswered.append(prompt[-200:])
            elif reply.arguments_from is not None:
                reply = attrs.evolve(reply, arguments=reply.arguments_from(prompt))
            return reply

    def claude_env(
        self, home: Path, *, max_retries: int = 2, oauth: bool = False
    ) -> dict[str, str]:
        """Return the environment that points `claude` (or the SDK's CLI) at this API.

        A throwaway `home` keeps the user's settings and sessions out;
        `max_retries` bounds the CLI's own API retries (its default is 10).
        `oauth` signs in as a subscription does (`CLAUDE_CODE_OAUTH_TOKEN`,
        no API key): only then does claude read a usage limit
        (`Reply.usage_limit`) and say when it resets.
        """
        home.mkdir(parents=True, exist_ok=True)
        signed_in = {"CLAUDE_CODE_OAUTH_TOKEN": FAKE_OAUTH_TOKEN} if oauth else {}
        return {
            "HOME": str(home),
            "CLAUDE_CONFIG_DIR": str(home / ".claude"),
            "ANTHROPIC_BASE_URL": self.url,
            "ANTHROPIC_API_KEY": "" if oauth else FAKE_KEY,
            **signed_in,
            "ANTHROPIC_AUTH_TOKEN": "",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_MAX_RETRIES": str(max_retries),
        }

    def codex_env(
        self, home: Path, *, max_retries: int = 2, model: str = "gpt-fake"
    ) -> dict[str, str]:
        """Return the environment that points `codex` at this API (writing its `config.toml`)."""
        codex_home = home / ".codex"
        codex_home.mkdir(parents=True, exist_ok=True)
        provider = {
            "name": "adws fake model API",
            "base_url": f"{self.url}/v1",
            "wire_api": "responses",
            "env_key": "ADWS_FAKE_API_KEY",
            "request_max_retries": max_retries,
            "stream_max_retries": max_retries,
            "stream_idle_timeout_ms": 300_000,
        }
        lines = [f"model = {json.dumps(model)}", 'model_provider = "adws_fake"', ""]
        lines.append("[model_providers.adws_fake]")
        lines += [f"{key} = {json.dumps(value)}" for key, value in provider.items()]
        (codex_home / "config.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
        return {"HOME": str(home), "CODEX_HOME": str(codex_home), "ADWS_FAKE_API_KEY": FAKE_KEY}


def _script_file(api: FakeModelAPI, path: str, now: float) -> None:
    """Queue the replies of the file at `path`; one that cannot be read is a `ValueError`."""
    from pathlib import Path  # noqa: PLC0415 - only the command line needs it

    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        queues = replies_from_json(data, now)
    except (OSError, ValueError, RecursionError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else str(exc)
        msg = f"--replies {path}: {reason}"
        raise MalformedError(msg) from exc
    for marker, replies in queues.items():
        api.script(*replies, marker=marker)


def _write_env(path: str, env: Mapping[str, str]) -> None:
    """Write `env` as lines a shell sources, whole or not at all (a waiter sees it complete)."""
    import os  # noqa: PLC0415 - only the command line needs it
    import shlex  # noqa: PLC0415 - as above
    from pathlib import Path  # noqa: PLC0415 - as above

    target = Path(path)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    lines = "".join(f"export {name}={shlex.quote(value)}\n" for name, value in env.items())
    temporary.write_text(lines, encoding="utf-8")
    temporary.replace(target)


def main(argv: list[str] | None = None) -> int:
    r"""Serve scripted replies until stopped, after saying the environment a CLI needs.

        `python -m adws.testing.model_api --replies replies.json --env-file fake.env`
        queues the file's replies (a list, answered in order, or
        `{"replies": [...], "by_marker": {"PLAN": [...]}}`: see
        `adws.testing.replies.replies_from_json`), then writes to `fake.env`
        one `export NAME=VALUE` line per variable `claude` and `codex` need
        (claude signed in with a fake OAuth token; `ADWS_FAKE_API_URL` is the
        server's address), so a shell can `. fake.env` and run either CLI, or
        `adws`, offline against it. The file appears whole once the server
        answers. `--text 'STATUS: done'` and `--usage-limit 5` queue more
        replies in order (`
    ` in a text is a new line); `--port` picks the
        port; `--home` the throwaway home (default: a temporary folder,
        removed at the end). Without `--env-file` the environment of `--cli`
        is printed on stdout instead. It serves until SIGTERM or Ctrl-C and
        exits 0; a replies file it cannot read exits 2, naming what is wrong.
    """
    import argparse  # noqa: PLC0415 - only the command line needs it
    import shlex  # noqa: PLC0415 - as above
    import sys  # noqa: PLC0415 - as above
    import tempfile  # noqa: PLC0415 - as above
    import time  # noqa: PLC0415 - as above
    from pathlib import Path  # noqa: PLC0415 - as above

    parser = argparse.ArgumentParser(prog="python -m adws.testing.model_api")
    parser.add_argument("--replies", metavar="FILE.json", help="queue the replies in this file")
    parser.add_argument("--port", type=int, default=0, help="the port (default: any free one)")
    parser.add_argument("--env-file", metavar="FILE", help="write the CLIs' environment here")
    parser.add_argument("--home", help="a throwaway home for the CLI (default: a temporary one)")
    parser.add_argument("--cli", choices=["claude", "codex"], default="claude")
    parser.add_argument(
        "--usage-limit",
        type=int,
        action="append",
        dest="replies_given",
        metavar="SECONDS",
        help="queue a usage limit resetting SECONDS from now",
    )
    parser.add_argument(
        "--text", action="append", dest="replies_given", metavar="TEXT", help="queue an answer"
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="adws-fake-home-") as default_home:
        api = serving("adws.testing.model_api", args.port, lambda: FakeModelAPI(args.port))
        with api:
            try:
                if args.replies is not None:
                    _script_file(api, args.replies, time.time())
            except ValueError as exc:
                parser.exit(2, f"adws.testing.model_api: {exc}\n")
            for reply in args.replies_given or []:
                if isinstance(reply, int):
                    api.script(Reply.usage_limit(reply, time.time()))
                else:
                    api.script(Reply.text(reply.replace("\\n", "\n")))
            # Before the environment is out: whoever read it may stop the server at once.
            stop = until_signalled()
            home = Path(args.home or default_home)
            if args.env_file is not None:
                both = {**api.claude_env(home, oauth=True), **api.codex_env(home)}
                _write_env(args.env_file, {**both, "ADWS_FAKE_API_URL": api.url})
            else:
                env = (
                    api.codex_env(home) if args.cli == "codex" else api.claude_env(home, oauth=True)
                )
                for name, value in env.items():
                    sys.stdout.write(f"export {name}={shlex.quote(value)}\n")
                sys.stdout.flush()
            stop.wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
