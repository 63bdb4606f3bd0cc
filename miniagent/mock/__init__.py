"""The strict offline mock of the Anthropic Messages API (and, with the same brain, OpenAI's
Chat Completions, embeddings and model list: openai_chat.py, embeddings.py).

`MockAPI` holds the behaviour (validation, brain, scripts, faults, pacing, records;
every answer plain or streamed) and is used in-process through `mock.transport()`;
`serve_in_thread` and `python -m miniagent.mock` put the same object behind a real
HTTP server.
"""

from miniagent.mock.api import MockAPI, MockReply
from miniagent.mock.pacing import Pacing
from miniagent.mock.server import serve_in_subprocess, serve_in_thread
from miniagent.mock.validate import ApiError, validate_request

__all__ = ["MockAPI", "MockReply", "Pacing", "serve_in_subprocess", "serve_in_thread", "validate_request", "ApiError"]
