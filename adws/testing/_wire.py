"""The fake model API's HTTP side: Anthropic's `/v1/messages` and OpenAI's `/v1/responses`."""

from __future__ import annotations

import itertools
import json
from typing import TYPE_CHECKING, Any, Final, Protocol

from adws.testing._server import QuietHandler

if TYPE_CHECKING:
    import threading
    from collections.abc import Mapping

    from adws.testing.replies import Reply

__all__ = ["Handler", "Script", "prompt_of"]


class Script(Protocol):
    """What the handler asks of the server's API (`FakeModelAPI` is one)."""

    closing: threading.Event
    """Set when the API closes: a reply waiting out its delay stops waiting."""

    def next_reply(self, path: str, body: Mapping[str, Any], prompt: str) -> Reply | None:
        """Return the reply for this request, or None when none is left."""
        ...


_IDS: Final = itertools.count(1)


def _texts(content: object) -> list[str]:
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [
        str(block.get("text"))
        for block in content
        if isinstance(block, dict) and block.get("type") in {"text", "input_text"}
    ]


def prompt_of(body: Mapping[str, Any]) -> str:
    """Return the user's text in a request of either API (where markers are looked for).

    >>> prompt_of({"messages": [{"role": "user", "content": "hi IMPLEMENT"}]})
    'hi IMPLEMENT'
    """
    turns = body.get("messages") or body.get("input") or []
    parts: list[str] = []
    for turn in turns if isinstance(turns, list) else []:
        if isinstance(turn, dict) and turn.get("role") == "user":
            parts += _texts(turn.get("content"))
    return "\n".join(parts)


class Handler(QuietHandler):
    """Answer one request from the API's script."""

    server_version = "adws-fake-model-api/1"

    @property
    def api(self) -> Script:
        return self.server.owner  # type: ignore[attr-defined, no-any-return] # set by LocalServer

    def do_POST(self) -> None:  # noqa: N802 - BaseHTTPRequestHandler names it
        """Route to the API the path names."""
        length = int(self.headers.get("content-length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            self._json(400, {"error": {"type": "invalid_request_error", "message": "not JSON"}})
            return
        openai = self.path.startswith("/v1/responses")
        if self.path.startswith("/v1/messages/count_tokens"):
            self._json(200, {"input_tokens": 10})
            return
        if not (openai or self.path.startswith("/v1/messages")):
            self._json(404, {"error": {"type": "not_found_error", "message": self.path}})
            return
        reply = self.api.next_reply(self.path, body, prompt_of(body))
        if reply is not None and reply.delay and self.api.closing.wait(reply.delay):
            return
        if reply is None or reply.kind == "error":
            self._error(reply, openai=openai)
        elif openai:
            self._openai(reply, stream=bool(body.get("stream")))
        else:
            self._anthropic(reply, str(body.get("model")), stream=bool(body.get("stream")))

    def _json(self, status: int, payload: object, headers: Mapping[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _error(self, reply: Reply | None, *, openai: bool) -> None:
        if reply is None:
            error: dict[str, Any] = {"type": "api_error", "message": "no reply scripted"}
            status, headers = 500, {}
        else:
            error, status, headers = dict(reply.body), reply.status, dict(reply.headers)
        payload = {"error": error} if openai else {"type": "error", "error": error}
        self._json(status, payload, headers)

    def _events(self, headers: Mapping[str, str]) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.close_connection = True

    def _send(self, name: str, payload: Mapping[str, Any]) -> None:
        self.wfile.write(f"event: {name}\ndata: {json.dumps(payload)}\n\n".encode())
        self.wfile.flush()

    def _anthropic(self, reply: Reply, model: str, *, stream: bool) -> None:
        usage = {"input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens}
        if reply.kind == "tool":
            block: dict[str, Any] = {
                "type": "tool_use",
                "id": f"toolu_{next(_IDS)}",
                "name": reply.tool_name,
                "input": dict(reply.arguments),
            }
            stop = "tool_use"
        else:
            block, stop = {"type": "text", "text": reply.content}, "end_turn"
        message: dict[str, object] = {"id": f"msg_{next(_IDS)}", "type": "message"}
        message |= {"role": "assistant", "model": model, "stop_sequence": None}
        if not stream:
            payload = {**message, "content": [block], "stop_reason": stop, "usage": usage}
            self._json(200, payload, reply.headers)
            return
        self._events(reply.headers)
        start = {
            **message,
            "content": [],
            "stop_reason": None,
            "usage": {**usage, "output_tokens": 1},
        }
        self._send("message_start", {"type": "message_start", "message": start})
        empty = {**block, "input": {}} if reply.kind == "tool" else {"type": "text", "text": ""}
        self._send(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": empty},
        )
        if reply.kind == "drop":
            self.wfile.write(b'event: content_block_delta\ndata: {"type": "content_bl')
            self.wfile.flush()
            return
        if reply.kind == "tool":
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            delta = {"type": "text_delta", "text": reply.content}
        self._send(
            "content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}
        )
        self._send("content_block_stop", {"type": "content_block_stop", "index": 0})
        end = {"stop_reason": stop, "stop_sequence": None}
        self._send("message_delta", {"type": "message_delta", "delta": end, "usage": usage})
        self._send("message_stop", {"type": "message_stop"})

    def _openai(self, reply: Reply, *, stream: bool) -> None:
        if reply.kind == "tool":
            item: dict[str, Any] = {
                "type": "function_call",
                "name": reply.tool_name,
                "arguments": json.dumps(dict(reply.arguments)),
                "call_id": f"call_{next(_IDS)}",
            }
        else:
            content = [{"type": "output_text", "text": reply.content, "annotations": []}]
            item = {"type": "message", "role": "assistant", "id": f"msg_{next(_IDS)}"}
            item["content"] = content
        usage = {
            "input_tokens": reply.input_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": reply.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": reply.input_tokens + reply.output_tokens,
        }
        response = {"id": f"resp_{next(_IDS)}", "object": "response", "status": "completed"}
        if not stream:
            self._json(200, {**response, "output": [item], "usage": usage}, reply.headers)
            return
        self._events(reply.headers)
        self._send("response.created", {"type": "response.created", "response": response})
        if reply.kind == "drop":
            self.wfile.write(b'event: response.output_item.done\ndata: {"type": "respo')
            self.wfile.flush()
            return
        self._send("response.output_item.done", {"type": "response.output_item.done", "item": item})
        done = {**response, "usage": usage}
        self._send("response.completed", {"type": "response.completed", "response": done})
