"""Errors and retries: what a failed call means, and whether trying again can help.

Every failure of a Messages API call is an `APIError` with the API's own message, its
`type`, the request id and a hint of what to do. There is one class per HTTP status
that means something different to the caller (400 fix the request, 401 fix the key,
429 slow down, 529 try later, ...), plus the failures that have no status: a lost
connection, a timeout, a broken stream, a malformed answer, a bad key.

`is_retryable` and `retry_after_seconds` are the retry rules the client follows:
retry what may succeed next time (overload, rate limits, server faults, lost
connections), never what would fail the same way (400, 401, 403, 404), and wait as
long as the server asks, within reason.
"""

from __future__ import annotations

import email.utils
import math
import time
from datetime import timezone
from typing import Any, Callable

import httpx2

MAX_RETRY_AFTER = 24 * 3600.0  # a longer retry-after is absurd; it is read as a day


class APIError(Exception):
    """A failed call. `str(err)` says what happened and what to do; never the key."""

    status: int | None = None
    hint = "See the message above."
    partial: dict | None = None  # for an error in the middle of a stream: the message so far

    def __init__(self, message: str, *, type: str = "", request_id: str | None = None,
                 status: int | None = None, hint: str | None = None, retry_after: float | None = None):
        super().__init__(message)
        self.message = message
        self.type = type
        self.request_id = request_id
        self.retry_after = retry_after
        if status is not None:
            self.status = status
        if hint is not None:
            self.hint = hint

    def __str__(self) -> str:
        head = f"{self.status} {self.type}: " if self.status else (f"{self.type}: " if self.type else "")
        rid = f" (request {self.request_id})" if self.request_id else ""
        return f"{head}{self.message}{rid}\nHint: {self.hint}"


class BadRequestError(APIError):
    status = 400
    hint = "The request itself is wrong; the message names the field. Retrying sends the same bytes, so it is not retried."


class AuthenticationError(APIError):
    status = 401
    hint = "Check ANTHROPIC_API_KEY (set, complete, not revoked), or run offline with MINIAGENT_OFFLINE=1."


class PermissionDeniedError(APIError):
    status = 403
    hint = "Your key may not use this model or feature; check its workspace and permissions."


class NotFoundError(APIError):
    status = 404
    hint = "Check the model name (MINIAGENT_MODEL) and ANTHROPIC_BASE_URL (it must not end in /v1)."


class RequestTooLargeError(APIError):
    status = 413
    hint = "The request is over 32 MB; shorten the conversation or the tool output."


class RateLimitError(APIError):
    status = 429
    hint = "Too many requests or tokens per minute. The client waits as `retry-after` says; lower concurrency if it persists."


class InternalServerError(APIError):
    status = 500
    hint = "A server-side failure. Retried with backoff; if it persists, try again later."


class OverloadedError(APIError):
    status = 529
    hint = "The API is overloaded right now. Retried with backoff; if it persists, try again later."


class APIConnectionError(APIError):
    hint = "Could not reach the API. Check your network and ANTHROPIC_BASE_URL."


class APITimeoutError(APIConnectionError):
    hint = "No answer within the timeout. Retried; raise `timeout=` for long answers."


class StreamError(APIConnectionError):
    """A stream that broke after it began: cut, stalled, too slow, or ended before `message_stop`.

    Not retried: the caller has already seen its first events, and a second attempt
    would send them again (text shown twice). `partial` is the message so far,
    `events` how many events had arrived; the message says how far it got.
    """

    hint = ("The stream broke after it had begun, so it was not retried (a retry would repeat what already "
            "arrived). `err.partial` holds the message so far; call again to start over.")

    def __init__(self, message: str, *, events: int = 0, **kwargs: Any):
        super().__init__(message, **kwargs)
        self.events = events


class MalformedResponseError(APIError):
    hint = ("The server answered with something that is not a Messages API response. "
            "Is ANTHROPIC_BASE_URL right? A proxy in between may be rewriting answers.")


class ResponseTooLargeError(MalformedResponseError):
    hint = ("No real answer is this large; the server or a proxy is misbehaving. "
            "Raise max_response_bytes= only if you know the answer is meant to be this big.")


class RequestEncodingError(APIError):
    hint = ("Everything in a request must be JSON: strings of valid Unicode, finite numbers, "
            "lists and dicts with string keys. The message names the first value that is not.")


class APIKeyError(APIError):
    """The key is missing or cannot be a key. Raised before any request; never shows the key."""

    hint = ("Set ANTHROPIC_API_KEY (export ANTHROPIC_API_KEY=sk-ant-... before `make lab`, or "
            "os.environ['ANTHROPIC_API_KEY'] = ... in a cell), or work offline with MINIAGENT_OFFLINE=1.")


class MissingAPIKeyError(APIKeyError):
    pass


class InvalidAPIKeyError(APIKeyError):
    hint = ("Copy the key again from the console as one line (no spaces or line breaks inside), "
            "or work offline with MINIAGENT_OFFLINE=1.")


_BY_STATUS = {400: BadRequestError, 401: AuthenticationError, 403: PermissionDeniedError,
              404: NotFoundError, 413: RequestTooLargeError, 429: RateLimitError, 529: OverloadedError}


# The API's error types (wire-format §1.6) and the status each comes with: an `error` event in
# the middle of a stream has a type but no status of its own (the stream's status was 200).
STATUS_OF_TYPE = {"invalid_request_error": 400, "authentication_error": 401, "billing_error": 402,
                  "permission_error": 403, "not_found_error": 404, "request_too_large": 413,
                  "rate_limit_error": 429, "api_error": 500, "timeout_error": 504, "overloaded_error": 529}


def error_class(status: int) -> type[APIError]:
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    return InternalServerError if status >= 500 else APIError


def error_for_type(kind: str) -> Callable[..., APIError]:
    """A constructor of the typed error for an API error type ("overloaded_error" -> OverloadedError, status 529)."""
    status = STATUS_OF_TYPE.get(kind)
    if status is None:
        return APIError
    cls = error_class(status)
    return lambda message, **kwargs: cls(message, status=status, **kwargs)


def is_retryable(err: APIError, response: httpx2.Response | None = None) -> bool:
    """Retry what may succeed next time: overload, rate limits, server faults, lost connections."""
    if response is not None and response.headers.get("x-should-retry") in ("true", "false"):
        return response.headers["x-should-retry"] == "true"
    if isinstance(err, APIConnectionError):
        return True
    return err.status in (408, 409, 429) or (err.status or 0) >= 500


def retry_after_seconds(headers: httpx2.Headers) -> float | None:
    """The wait the server asked for, in seconds, or None if it asked for none we can read.

    `retry-after-ms` first, then `retry-after` (seconds, or an HTTP date). Whatever the
    header holds, this never raises: garbage, NaN and infinity are unreadable (None),
    a negative wait or a date in the past is 0, and anything over a day is a day.
    """
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        seconds = None if value is None else _wait_from(value.strip(), scale)
        if seconds is not None:
            return min(max(seconds, 0.0), MAX_RETRY_AFTER)
    return None


def _wait_from(text: str, scale: float) -> float | None:
    try:
        number = float(text)
    except ValueError:
        number = None
    if number is not None:
        return number / scale if math.isfinite(number) else None
    if scale != 1.0:
        return None
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.timestamp() - time.time()
