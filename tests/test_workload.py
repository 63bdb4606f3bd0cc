"""miniagent.workload counts every input token of a call, a prompt cache's part included.

A server that caches the prompt (llama.cpp, or the API with caching on) reports most of a
long conversation as cache_read_input_tokens and only the new part as input_tokens;
counting input_tokens alone made notebook 04's growing calls read [1, 15, 16, 16].
"""

from __future__ import annotations

import miniagent
from miniagent import workload


class CachingServer:
    """The mock's answers, their usage reported as a server with a prompt cache does: all but the
    newest 10 input tokens of each call come as read from the cache."""

    def __init__(self):
        self.client = miniagent.connect(offline=True, quiet=True)
        self.usage, self.max_tokens = self.client.usage, self.client.max_tokens

    def create(self, *args, **kwargs):
        response = self.client.create(*args, **kwargs)
        full = response["usage"]["input_tokens"]
        response["usage"] = {**response["usage"], "input_tokens": min(10, full),
                             "cache_read_input_tokens": max(0, full - 10)}
        return response


def test_a_prompt_caches_part_is_counted_in_each_call():
    plain = workload.run_session(miniagent.connect(offline=True, quiet=True), turns=6)
    cached = workload.run_session(CachingServer(), turns=6)
    assert cached.per_call == plain.per_call  # the same session, the same sizes, however the server splits them
    assert cached.per_call == sorted(cached.per_call) and cached.per_call[-1] > 2 * cached.per_call[0]  # it grows
    assert cached.input_tokens == sum(cached.per_call)
