"""An OpenAI-compatible chat completions server on 127.0.0.1, scriptable, for tests.

    with FakeOpenAI() as fake:              # or the `fake_openai` fixture
        fake.script(FakeOpenAI.rate_limited(retry_after="1"), FakeOpenAI.answer("A note."))
        ... LLMConfig(provider="openai", base_url=fake.base_url) ...
        assert len(fake.requests) == 2

Scripted replies are used first, in order; then every request gets the default: a valid JSON
note that echoes the start of the fenced data, or for a week summary (data lines "[id] ...") a
JSON summary citing every id. Usage counts tokens as OpenAI does (cl100k_base when available).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from digest.summarize.tokens import count_tokens
from loopback import QuietHTTPServer


@dataclass(frozen=True)
class Reply:
    """One canned behaviour: a status, a body (content, full JSON, or raw bytes), a delay."""

    status: int = 200
    content: str | None = None  # the assistant message for a 200; None: the default answer
    body: dict[str, Any] | None = None  # a whole JSON body instead (errors)
    raw: bytes | None = None  # bytes that are not JSON at all
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


class FakeOpenAI:
    """POST /v1/chat/completions, with every request body recorded in `requests`."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []  # the JSON bodies, in arrival order
        self.headers: list[dict[str, str]] = []  # their headers, lower-cased names
        self.replies: deque[Reply] = deque()
        self.reject_json_schema = False  # answer 400 to response_format json_schema
        self.delay_s = 0.0  # added to every reply
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self.httpd = QuietHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()  # wakes hung replies
        self.httpd.shutdown()
        self.httpd.server_close()

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self.replies.extend(replies)

    # -- canned behaviours ---------------------------------------------------

    @staticmethod
    def answer(
        summary: str, key_points: list[str] | None = None, tags: list[str] | None = None
    ) -> Reply:
        note = {"summary": summary, "key_points": key_points or [], "tags": tags or []}
        return Reply(content=json.dumps(note))

    @staticmethod
    def text(content: str, delay_s: float = 0.0) -> Reply:
        """Any assistant content: prose, malformed JSON, a preamble before the JSON."""
        return Reply(content=content, delay_s=delay_s)

    @staticmethod
    def error(
        status: int, message: str, *, code: str | None = None, headers: dict[str, str] | None = None
    ) -> Reply:
        body = {"error": {"message": message, "type": code or "server_error", "code": code}}
        return Reply(status=status, body=body, headers=headers or {})

    @staticmethod
    def rate_limited(retry_after: str = "1") -> Reply:
        headers = {"Retry-After": retry_after}
        return FakeOpenAI.error(
            429, "Rate limit reached", code="rate_limit_exceeded", headers=headers
        )

    @staticmethod
    def insufficient_quota() -> Reply:
        message = "You exceeded your current quota, please check your plan and billing details."
        return FakeOpenAI.error(429, message, code="insufficient_quota")

    @staticmethod
    def hang(seconds: float = 30.0) -> Reply:
        """Answer only after `seconds` (or when the server stops)."""
        return Reply(delay_s=seconds)

    # -- what was asked --------------------------------------------------------

    def messages(self, index: int = -1) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.requests[index]["messages"])

    def next_reply(self, request: dict[str, Any], headers: dict[str, str]) -> Reply:
        with self._lock:
            self.requests.append(request)
            self.headers.append(headers)
            if self.reject_json_schema and _format(request) == "json_schema":
                body = {
                    "error": {
                        "message": "response_format type json_schema is not supported",
                        "type": "invalid_request_error",
                        "param": "response_format",
                        "code": None,
                    }
                }
                return Reply(status=400, body=body)
            return self.replies.popleft() if self.replies else Reply()

    def enter(self) -> None:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def wait(self, seconds: float) -> None:
        if seconds > 0:
            self._stopping.wait(seconds)


def _handler_for(fake: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if self.path.rstrip("/") != "/v1/chat/completions":
                self._send(Reply(status=404, body={"error": {"message": f"no route {self.path}"}}))
                return
            fake.enter()
            try:
                request = json.loads(raw or b"{}")
                headers = {name.lower(): value for name, value in self.headers.items()}
                reply = fake.next_reply(request, headers)
                fake.wait(reply.delay_s + fake.delay_s)
                self._send(reply, request)
            finally:
                fake.leave()

        def _send(self, reply: Reply, request: dict[str, Any] | None = None) -> None:
            body = _body(reply, request or {})
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (our timeout) before the answer

    return Handler


def _body(reply: Reply, request: dict[str, Any]) -> bytes:
    if reply.raw is not None:
        return reply.raw
    if reply.body is not None:
        return json.dumps(reply.body).encode()
    content = reply.content if reply.content is not None else default_content(request)
    messages = request.get("messages", [])
    prompt_tokens = sum(4 + count_tokens(str(m.get("content", ""))) for m in messages) + 3
    completion = {
        "id": f"chatcmpl-fake-{time.monotonic_ns()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model", "fake"),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": count_tokens(content),
            "total_tokens": prompt_tokens + count_tokens(content),
        },
    }
    return json.dumps(completion).encode()


def default_content(request: dict[str, Any]) -> str:
    """A valid note echoing the data's first words, or a week summary citing every [id]."""
    users = [m for m in request.get("messages") or [] if m.get("role") == "user"] or [{}]
    data = str(users[0].get("content", ""))  # the fenced data (a repair turn comes later)
    if ids := [int(i) for i in re.findall(r"^\[(\d+)\]", data, re.MULTILINE)]:
        statement = {"text": "This week's items have a common thread.", "items": ids}
        return json.dumps({"statements": [statement], "must_read": ids[:1]})
    lines = [line for line in data.splitlines()[1:-1] if not line.startswith(("Title:", "URL:"))]
    words = re.findall(r"[^\W_]+", " ".join(lines))[:12]
    summary = f"A note on: {' '.join(words)} and more. It echoes {len(words)} words of the data."
    return json.dumps({"summary": summary, "key_points": words[:2], "tags": ["fake"]})


def _format(request: dict[str, Any]) -> str | None:
    response_format = request.get("response_format")
    return response_format.get("type") if isinstance(response_format, dict) else None


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as running:
        yield running
