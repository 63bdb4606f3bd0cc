"""Third-party clients against the mock over loopback HTTP (`make test-clients`).

Each test module here is marked `sdk`, so `make test` (`-m "not sdk ..."`) deselects
it; and each imports its client inside a fixture with `pytest.importorskip`, so that
collecting the modules without requirements-clients.txt installed neither fails nor
costs the seconds those packages take to import.

One mock server per module (per xdist worker), reset before each test so ids and
records start afresh. It requires an API key, so every test also checks that the
client sends the key it was given where the API expects it.
"""

from __future__ import annotations

import pytest

from miniagent.mock import MockAPI, serve_in_thread

KEY = "sk-mock-clients-key-456"


@pytest.fixture(scope="module")
def served():
    server, base_url = serve_in_thread(MockAPI(api_keys={KEY}))
    try:
        yield server, base_url
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def mock(served):
    """The server's MockAPI, reset: script answers, queue faults, read `records`."""
    server, _ = served
    server.mock.reset()
    return server.mock


@pytest.fixture
def base_url(served, mock):
    return served[1]


@pytest.fixture
def api_key():
    """The key the mock server accepts (a fixture: test modules never import a conftest)."""
    return KEY
