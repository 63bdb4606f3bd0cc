"""A server that answers the handshake and the tool list, then breaks on tools/call.

    python -m miniagent.mcp.servers.broken crash     exits in the middle of the call
    python -m miniagent.mcp.servers.broken hang      never answers (and ignores the end of its stdin)
    python -m miniagent.mcp.servers.broken garbage   writes a line that is not JSON-RPC
    python -m miniagent.mcp.servers.broken deaf      answers the tool list, then never reads its stdin again
"""

import os
import sys
import threading
import time

from miniagent.builtin_tools import calculate
from miniagent.mcp import encode_line
from miniagent.mcp.server import Server, run

MODE = sys.argv[1] if len(sys.argv) > 1 else "crash"


class Broken(Server):
    def handle(self, message):
        response = super().handle(message)
        if MODE == "deaf" and isinstance(message, dict) and message.get("method") == "tools/list":
            os.write(1, encode_line(response))  # its answer, and then it reads nothing more, ever
            threading.Event().wait()
        return response

    def _call(self, params: dict) -> dict:
        if MODE == "crash":
            print("about to crash: out of memory (pretend)", file=sys.stderr, flush=True)
            os._exit(3)
        if MODE == "garbage":
            os.write(1, b"Traceback (most recent call last): oops\n")  # straight to stdout, past the protocol
            return super()._call(params)
        while True:  # hang: no answer, ever; closing stdin does not stop it either
            time.sleep(60)


if __name__ == "__main__":
    run(Broken([calculate], info={"name": f"broken-{MODE}", "version": "1.0"}))
