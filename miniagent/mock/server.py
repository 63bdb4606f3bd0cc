"""The mock API behind a real socket, so curl and the official SDKs can use it.

Only the standard library: `http.server.ThreadingHTTPServer` reads the request,
hands method, path, headers and body to `MockAPI.handle()`, and writes the reply.
Two reply kinds need care: a delayed one (the handler sleeps first, so the client's
own timeout decides what happens) and a dropped one (the handler closes the
socket without writing anything, which clients report as a disconnect).
"""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TextIO

from miniagent.mock.api import MockAPI


class MockHTTPServer(ThreadingHTTPServer):
    """A threading HTTP server holding one `MockAPI` (`server.mock`).

    `shutdown()` stops serving and also closes the listening socket, so one call
    is enough to clean up.
    """

    daemon_threads = True

    def __init__(self, address: tuple[str, int], mock: MockAPI, log: TextIO | None = None) -> None:
        super().__init__(address, _Handler)
        self.mock = mock
        self.log = log

    def shutdown(self) -> None:
        super().shutdown()
        self.server_close()

    @property
    def base_url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"


class _Handler(BaseHTTPRequestHandler):
    server: MockHTTPServer
    protocol_version = "HTTP/1.1"  # keep-alive, as the SDKs' connection pools expect

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def do_PUT(self) -> None:
        self._serve()

    def do_DELETE(self) -> None:
        self._serve()

    def do_PATCH(self) -> None:
        self._serve()

    def _serve(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        reply = self.server.mock.handle(self.command, self.path, dict(self.headers.items()), body)
        if reply.delay:
            time.sleep(reply.delay)
        if reply.drop:
            self._log("dropped (no response)")
            self.close_connection = True
            return
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.send_header("content-length", str(len(reply.body)))
        self.end_headers()
        self.wfile.write(reply.body)

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        """One short line per request: method, path, status. Never headers, so never a key."""
        self._log(str(code))

    def log_message(self, format: str, *args: object) -> None:
        """Errors that http.server itself reports (malformed requests and the like)."""
        if self.server.log is not None:
            print("mock: " + format % args, file=self.server.log, flush=True)

    def _log(self, outcome: str) -> None:
        if self.server.log is not None:
            path = (getattr(self, "path", None) or "").split("?", 1)[0]  # unset if the request line was bad
            print(f"{self.command or '-'} {path} {outcome}", file=self.server.log, flush=True)


def serve_in_thread(mock: MockAPI | None = None, port: int = 0, host: str = "127.0.0.1",
                    log: TextIO | None = None) -> tuple[MockHTTPServer, str]:
    """Start the mock HTTP server on a background thread; returns (server, base_url).

    Port 0 picks a free port. Stop it with `server.shutdown()`. Silent unless `log`
    is given (a notebook does not want a line per request).
    """
    server = MockHTTPServer((host, port), mock or MockAPI(), log)
    # A short poll interval makes shutdown() return quickly (it waits for the next poll).
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              name="miniagent-mock", daemon=True)
    thread.start()
    return server, server.base_url
