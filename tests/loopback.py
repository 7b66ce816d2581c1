"""A real HTTP server on 127.0.0.1 for tests: routes map paths to responses, requests are logged."""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Response:
    status: int = 200
    body: bytes | str = b""
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "text/html; charset=utf-8"
    delay_s: float = 0.0


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


Handler = Callable[[Request], Response]


# How often a server's loop looks for a request to stop: stopping waits up to this long.
POLL_S = 0.01
# The [fetch] table of a config whose pages this server answers: loopback allowed, no pause
# between requests, and a timeout wide enough for a loaded machine.
LOOPBACK_FETCH = """[fetch]
allow_private_addresses = ["127.0.0.1/32"]
timeout_s = 30  # loopback pages answer at once: a wide margin for a loaded machine
per_host_delay_s = 0
"""


class QuietHTTPServer(ThreadingHTTPServer):
    """Clients that hang up early are what many tests do on purpose: no traceback for them."""

    def handle_error(self, request: object, client_address: object) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            super().handle_error(request, client_address)  # type: ignore[arg-type]


class LoopbackServer:
    """Serve `routes` (path -> Response or callable) on 127.0.0.1; unknown paths answer 404."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.routes: dict[str, Response | Handler] = {}
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        server = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                request = Request(
                    method=self.command,
                    path=self.path,
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=self.rfile.read(length) if length else b"",
                )
                with server._lock:
                    server.requests.append(request)
                route = server.routes.get(self.path) or server.routes.get(self.path.split("?")[0])
                response = route(request) if callable(route) else route
                if response is None:
                    response = Response(404, b"not found", content_type="text/plain")
                if response.delay_s:
                    time.sleep(response.delay_s)
                body = response.body.encode() if isinstance(response.body, str) else response.body
                try:
                    self.send_response(response.status)
                    self.send_header("Content-Type", response.content_type)
                    self.send_header("Content-Length", str(len(body)))
                    for name, value in response.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            do_GET = do_POST = do_HEAD = _serve

        self.httpd = QuietHTTPServer((host, 0), _Handler)
        self.httpd.daemon_threads = True
        self.host = host
        self.port = self.httpd.server_address[1]
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": POLL_S}, daemon=True
        )

    def url(self, path: str = "/") -> str:
        return f"http://{self.host}:{self.port}{path}"

    def hits(self, path: str) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.path.split("?")[0] == path.split("?")[0]]

    def reset(self) -> None:
        """No routes and no requests logged: as new, for the next test."""
        with self._lock:
            self.routes.clear()
            self.requests.clear()

    def start(self) -> LoopbackServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@contextmanager
def serving(host: str = "127.0.0.1") -> Iterator[LoopbackServer]:
    server = LoopbackServer(host).start()
    try:
        yield server
    finally:
        server.stop()


def free_port() -> int:
    """A port nobody listens on right now, for servers that cannot bind port 0 themselves."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port
