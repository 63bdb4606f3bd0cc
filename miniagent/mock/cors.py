"""Browsers: CORS, as the real API answers a web page that calls it directly.

A page served from one origin that `fetch`es the API at another is a cross-origin
request: the browser adds an `Origin` header, first asks with an `OPTIONS` preflight
whether the request may be sent (it has custom headers such as `x-api-key`), and lets
the page read the answer only if the answer carries `access-control-allow-origin`.

The real API serves browsers only when told the key in the page is meant to be there,
with the header `anthropic-dangerous-direct-browser-access: true` (the official
TypeScript SDK sends it when `dangerouslyAllowBrowser` is on). What the mock does:

- The API's (wire-format.md §5.G, from live responses): with that header, every answer
  carries `access-control-allow-origin: *` and `access-control-expose-headers: *`; a
  browser request (one with an `Origin`) without it is a 401 `authentication_error`,
  "CORS requests must set 'anthropic-dangerous-direct-browser-access' header", with no
  `access-control-allow-origin`, so the page cannot even read why.
- Ours (the real preflight answer is not documented): any `OPTIONS` request is answered
  204, with no body, no authentication and no record, allowing any origin (`*`), the
  methods `GET, POST, DELETE, OPTIONS`, the headers a browser client sends (the list
  below, plus whatever the preflight asks for in `access-control-request-headers`, since
  `*` would not cover `authorization`), and `access-control-max-age: 86400` (browsers
  cap it: Chromium at 2 hours).

The same rules apply to the mock's control endpoints (`/_mock/*`), so a page can script
the mock as it calls the API. A key in a web page is readable by anyone who opens it:
that is the danger the header's name owns up to. Serve such pages only to yourself.
"""

from __future__ import annotations

import re
from typing import Mapping

BROWSER_HEADER = "anthropic-dangerous-direct-browser-access"
REFUSED = "CORS requests must set 'anthropic-dangerous-direct-browser-access' header"
EXPOSED = {"access-control-allow-origin": "*", "access-control-expose-headers": "*"}
ALLOW_METHODS = "GET, POST, DELETE, OPTIONS"
ALLOW_HEADERS = ("content-type", "accept", "x-api-key", "authorization", "anthropic-version", "anthropic-beta",
                 BROWSER_HEADER, "x-stainless-retry-count", "x-stainless-timeout")
MAX_AGE = "86400"
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9a-z-]{1,64}")  # an HTTP header name (RFC 9110 token), lower-cased
MAX_ASKED = 50                                         # header names taken from one preflight


def allowed(headers: Mapping[str, str]) -> bool:
    """The request says a browser may read the answer (headers lower-cased)."""
    return headers.get(BROWSER_HEADER, "").strip().lower() == "true"


def refused(headers: Mapping[str, str]) -> bool:
    """A browser's request (it has an Origin) that does not say it may: the API's 401."""
    return "origin" in headers and not allowed(headers)


def answer_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The CORS headers every answer to this request carries (none unless allowed)."""
    return dict(EXPOSED) if allowed(headers) else {}


def preflight_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The headers of the 204 that answers a preflight (ours: the real one is undocumented)."""
    asked = [name.strip().lower() for name in headers.get("access-control-request-headers", "").split(",")]
    names = list(ALLOW_HEADERS)
    for name in asked[:MAX_ASKED]:
        if _TOKEN.fullmatch(name) and name not in names:
            names.append(name)
    return {"access-control-allow-origin": "*", "access-control-allow-methods": ALLOW_METHODS,
            "access-control-allow-headers": ", ".join(names), "access-control-max-age": MAX_AGE,
            "vary": "access-control-request-headers"}
