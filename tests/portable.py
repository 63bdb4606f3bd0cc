"""What a test needs of the system it runs on, said once: a test that cannot run on a system is skipped
there with the reason, never failed with a traceback (the CI matrix runs Linux, macOS and Windows)."""

from __future__ import annotations

import os
import sys

import pytest

WINDOWS = os.name == "nt"

# Windows has no SIGINT to send to a child (only console events, to a whole process group): a test that
# presses Ctrl-C in another process runs where that exists. The code path it checks is KeyboardInterrupt,
# which in-process tests raise on every system.
sends_ctrl_c = pytest.mark.skipif(WINDOWS, reason="Ctrl-C cannot be sent to one child process on Windows")

# Linux routes all of 127.0.0.0/8 to loopback; macOS and Windows only 127.0.0.1 unless configured.
second_loopback_address = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="needs 127.0.0.2 on loopback, which only Linux has by default")

# select() on a pipe is POSIX (Windows selects sockets only).
selects_a_pipe = pytest.mark.skipif(WINDOWS, reason="select() on a pipe does not exist on Windows")


def process_gone(proc) -> bool:
    """The child has exited and been reaped: no process with its pid is left."""
    if proc.poll() is None:
        return False
    if WINDOWS:
        return True  # poll() closed its handle; os.kill(pid, 0) would terminate a process, not probe one
    try:
        os.kill(proc.pid, 0)
    except ProcessLookupError:
        return True
    return False
