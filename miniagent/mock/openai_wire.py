"""What every OpenAI surface of the mock shares: who is an OpenAI client, its error shape and words.

The mock also speaks OpenAI's API (Chat Completions in openai_chat.py, the Responses API in
openai_responses.py, embeddings in embeddings.py, the model list in models.py), so that
code written with the `openai` SDK, or against any OpenAI-compatible provider, runs
offline against the same brain. An OpenAI client is told apart by where it goes
(`/v1/chat/completions`, `/v1/responses`, `/v1/embeddings`) or, on the paths both APIs
have (`GET /v1/models`), by what it sends: `Authorization: Bearer` and no
`anthropic-version` header.

Every OpenAI error has the body `{"error": {"message", "type", "param", "code"}}`, all
four keys present (null when empty), and the request id in `x-request-id`
(wire-format.md §2.6, §2.7). The SDK picks its exception class from the status alone
(400 BadRequestError, 401 AuthenticationError, 404 NotFoundError, 429 RateLimitError,
>= 500 InternalServerError), so the statuses are the API's; the words follow its
validation messages, which come in a few fixed patterns (the helpers below).

Where the texts come from: marked [OBS] were seen in real responses (wire-format.md
§2.3, §5.J); [recalled] are the API's patterns as widely quoted in public issues but
not checked against a live response here (treat them as likely, not certain); "ours"
are the mock's own, in the same style, where nothing real is known.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

CHAT_PATH = "/v1/chat/completions"
EMBEDDINGS_PATH = "/v1/embeddings"
OPENAI_PATHS = (CHAT_PATH, EMBEDDINGS_PATH)
# Paths only an OpenAI client asks for, so a wrong one still gets OpenAI's 404 (a base_url without /v1, say).
_OPENAI_PREFIXES = ("/v1/chat/", "/v1/embeddings", "/v1/completions", "/v1/responses", "/chat/", "/embeddings")
MAX_ECHO = 64  # characters of a client's value quoted back in an error

API_KEYS_URL = "https://platform.openai.com/account/api-keys"
# [recalled] The API's words when no key came at all.
NO_KEY = ("You didn't provide an API key. You need to provide your API key in an Authorization header using "
          "Bearer auth (i.e. Authorization: Bearer YOUR_KEY). You can obtain an API key from " + API_KEYS_URL + ".")
# [OBS] The real text quotes the key masked ("Incorrect API key provided: sk-abc***...xyz."); the mock
# quotes none of it: an error about a key never shows the key (DESIGN.md, hardening rules).
BAD_KEY = f"Incorrect API key provided. You can find your API key at {API_KEYS_URL}."
# [recalled] The API's text for a body that is not JSON.
NOT_JSON = ("We could not parse the JSON body of your request. (HINT: This likely means you aren't using your "
            "HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)")

# What injected faults and flaky calls say on this surface. [recalled] the 500's and the overload's
# words; the 429's is ours, in the style of the API's "Rate limit reached for ... Please try again in 20s."
FAULT_MESSAGES = {
    429: "Rate limit reached on requests per min (RPM): fault injected by the mock. Please try again in {retry}s.",
    500: "The server had an error while processing your request. Sorry about that!",
    503: "The server is overloaded or not ready yet.",
    529: "The server is overloaded or not ready yet.",
}
FLAKY_MESSAGES = {
    429: "Rate limit reached on requests per min (RPM): the mock's flaky mode. Please try again in {retry}s.",
    503: "The server is overloaded or not ready yet.",
}
# OpenAI has no 529: the mock's "overloaded" is the API's 503 on this surface (flaky mode,
# and `error_after` on a request that is not streamed). A fault that names 529 keeps it.
OVERLOADED_STATUS = 503

# A scripted error is written once, in the Messages API's terms; on this surface its type reads as OpenAI's.
_TYPES_FROM_ANTHROPIC = {
    "invalid_request_error": "invalid_request_error", "authentication_error": "invalid_request_error",
    "permission_error": "invalid_request_error", "not_found_error": "invalid_request_error",
    "request_too_large": "invalid_request_error", "rate_limit_error": "requests", "api_error": "server_error",
    "overloaded_error": "server_error", "timeout_error": "server_error", "billing_error": "insufficient_quota",
}


@dataclass(frozen=True)
class OpenAIError:
    """An error as the OpenAI API answers it: HTTP status and the four fields of `error`."""

    status: int
    message: str
    type: str = "invalid_request_error"
    param: str | None = None
    code: str | None = None

    def body(self) -> dict:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


class Refuse(Exception):
    """Raised deep inside a check to stop at the first problem, as the API does."""

    def __init__(self, error: OpenAIError) -> None:
        super().__init__(error.message)
        self.error = error


# --- who is asking ----------------------------------------------------------------------------


def speaks_openai(path: str, headers: Mapping[str, str]) -> bool:
    """Whether to answer this request as the OpenAI API does (headers lower-cased): on its own paths
    always, on the Messages API's and the mock's control paths never, elsewhere by the headers."""
    if path.startswith(_OPENAI_PREFIXES):
        return True
    if path.startswith(("/v1/messages", "/_mock/")):
        return False
    return ("anthropic-version" not in headers and "x-api-key" not in headers
            and headers.get("authorization", "").strip()[:7].lower() == "bearer ")


def check_auth(headers: Mapping[str, str], keys: set[str] | None) -> OpenAIError | None:
    """`Authorization: Bearer KEY` (an `x-api-key` is taken too: the mock is lenient where it costs
    nothing). Keys never appear in messages."""
    key = api_key(headers)
    if not key:
        return OpenAIError(401, NO_KEY)
    if keys is not None and key not in keys:
        return OpenAIError(401, BAD_KEY, code="invalid_api_key")
    return None


def api_key(headers: Mapping[str, str]) -> str:
    """The key a request sent: `x-api-key`, else `Authorization: Bearer KEY` ("" if none)."""
    key = headers.get("x-api-key", "").strip()
    if not key:
        scheme, _, token = headers.get("authorization", "").strip().partition(" ")
        key = token.strip() if scheme.lower() == "bearer" else ""
    return key


def not_found(method: str, path: str, served: str) -> OpenAIError:
    """[recalled] "Invalid URL (POST /v1/foo)"; the mock adds what it serves, and the usual cause."""
    hint = "; the base_url must end in /v1" if path.startswith(("/chat/", "/embeddings")) else ""
    return OpenAIError(404, f"Invalid URL ({method[:20]} {path[:200]}){hint}; the mock serves {served}")


# --- errors made on purpose: faults and scripts ---------------------------------------------------


def status_error(status: int, *, message: str | None = None, type_: str | None = None,
                 retry_after: float = 0.0, flaky: bool = False) -> OpenAIError:
    """An injected fault's or a scripted error's body on this surface: type and code from the status
    as the API types them (429 `requests`/`rate_limit_exceeded`, >= 500 `server_error`), unless given."""
    if not message:
        table = FLAKY_MESSAGES if flaky else FAULT_MESSAGES
        message = table.get(status, f"Mock fault: HTTP {status}").format(retry=f"{retry_after:g}")
    default_type = "requests" if status == 429 else "server_error" if status >= 500 else "invalid_request_error"
    kind = _TYPES_FROM_ANTHROPIC.get(type_ or "", type_) or default_type
    code = {429: "rate_limit_exceeded", 401: "invalid_api_key"}.get(status)
    if kind == "insufficient_quota":
        code = "insufficient_quota"
    return OpenAIError(status, message, kind, None, code)


# --- the API's validation messages, by pattern --------------------------------------------------


def echo(value: Any) -> str:
    """A client's value as an error quotes it: short, on one line."""
    text = value if isinstance(value, str) else repr(value)
    text = " ".join(text.split())
    return text if len(text) <= MAX_ECHO else text[:MAX_ECHO] + "..."


def kind_of(value: Any) -> str:
    """A JSON value's kind as the API's messages name it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a decimal"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def missing(param: str) -> Refuse:
    """[OBS] `Missing required parameter: 'messages'.`"""
    return Refuse(OpenAIError(400, f"Missing required parameter: '{param}'.", param=param,
                              code="missing_required_parameter"))


def invalid_type(param: str, expected: str, value: Any) -> Refuse:
    """[recalled] `Invalid type for 'max_tokens': expected an integer, but got a string instead.`"""
    return Refuse(OpenAIError(400, f"Invalid type for '{param}': expected {expected}, but got {kind_of(value)} "
                                   "instead.", param=param, code="invalid_type"))


def invalid_value(param: str, value: Any, supported: tuple[str, ...]) -> Refuse:
    """[recalled] `Invalid value: 'bot'. Supported values are: 'system', 'user', and 'tool'.`"""
    names = [f"'{s}'" for s in supported]
    listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])}{',' if len(names) > 2 else ''} and {names[-1]}"
    return Refuse(OpenAIError(400, f"Invalid value: '{echo(value)}'. Supported values are: {listed}.",
                              param=param, code="invalid_value"))


def out_of_range(param: str, value: int | float, *, low: float | None = None, high: float | None = None,
                 number: str = "integer") -> Refuse:
    """[recalled] `Invalid 'temperature': decimal above maximum value. Expected a value <= 2, but got 5 instead.`
    `number`: what the parameter is, "integer" or "decimal" (whatever the value sent)."""
    if low is not None and value < low:
        side, rule, code = "below minimum", f">= {low:g}", f"{number}_below_min_value"
    else:
        side, rule, code = "above maximum", f"<= {high:g}", f"{number}_above_max_value"
    return Refuse(OpenAIError(400, f"Invalid '{param}': {number} {side} value. Expected a value {rule}, but got "
                                   f"{echo(value)} instead.", param=param, code=code))


def too_long(param: str, limit: int, length: int, what: str = "string") -> Refuse:
    """[OBS] `Invalid 'tools[6].function.description': string too long. Expected a string with maximum
    length 1024, but got a string with length 2780 instead.` (an array's says `array too long`)"""
    article = "an" if what == "array" else "a"
    return Refuse(OpenAIError(400, f"Invalid '{param}': {what} too long. Expected {article} {what} with maximum "
                                   f"length {limit}, but got {article} {what} with length {length} instead.",
                              param=param, code=f"{what}_above_max_length"))


def empty_array(param: str) -> Refuse:
    """[OBS] `Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.`"""
    return Refuse(OpenAIError(400, f"Invalid '{param}': empty array. Expected an array with minimum length 1, "
                                   "but got an empty array instead.", param=param, code="empty_array"))


def bad_pattern(param: str, pattern: str) -> Refuse:
    """[OBS] `Invalid 'tools[0].function.name': string does not match pattern. Expected a string that
    matches the pattern '^[a-zA-Z0-9_-]+$'.`"""
    return Refuse(OpenAIError(400, f"Invalid '{param}': string does not match pattern. Expected a string that "
                                   f"matches the pattern '{pattern}'.", param=param, code="invalid_value"))


def refuse(message: str, param: str | None = None, code: str | None = None, status: int = 400) -> Refuse:
    return Refuse(OpenAIError(status, message, param=param, code=code))
