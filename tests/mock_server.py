"""The mock API in a process of its own, as the official SDKs' tests meet it (one per test module)."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Iterator

from miniagent.mock import serve_in_subprocess

ROOT = Path(__file__).resolve().parents[1]


@contextlib.contextmanager
def mock_server(key: str, **options) -> Iterator[str]:
    """`python -m miniagent.mock --api-key KEY` on a free port: its base URL, the process stopped after."""
    proc, base_url = serve_in_subprocess("--api-key", key, cwd=ROOT, **options)
    try:
        yield base_url
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()


def server_fixture(key: str):
    """A module's `server` fixture: one mock server process for the module's tests (`server = server_fixture(KEY)`)."""
    import pytest

    @pytest.fixture(scope="module")
    def server() -> Iterator[str]:
        with mock_server(key) as base_url:
            yield base_url
    return server
