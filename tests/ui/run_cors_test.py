"""Browser test: a web page calls the mock API directly, as a page may call the real one.

    .venv/bin/python tests/ui/run_cors_test.py     (make test-ui runs it)

It starts the mock server on one port and a tiny page server on another, so the page
and the API are different origins, as they are live. In headless Chromium the page
`fetch`es the mock four ways and the test reads what the page could see:

- with `anthropic-dangerous-direct-browser-access: true`: the browser's preflight passes
  and the page reads the answer (a message from the mock) and a response header;
- the same, streamed: the page reads the events as they come;
- the catalog, `GET /v1/models`: the page reads the list;
- without the header: the mock answers 401 without `access-control-allow-origin`, so the
  browser hides the answer and `fetch` fails, as it does against the real API.

Same needs as run_ui_test.py (Debian's Chromium, the playwright package). A few seconds.
Exit status: 0 on success, 1 with a message saying what the page saw.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from run_ui_test import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

from miniagent import DEFAULT_MODEL  # noqa: E402
from miniagent.mock import MockAPI, serve_in_thread  # noqa: E402

KEY = "sk-cors-test-key"
PAGE = """<!doctype html><meta charset="utf-8"><title>miniagent: a page that calls the API</title>
<pre id="out">running</pre>
<script>
const API = "%(api)s", KEY = "%(key)s", MODEL = "%(model)s";
const headers = (browser) => Object.assign({"content-type": "application/json", "x-api-key": KEY,
  "anthropic-version": "2023-06-01"}, browser ? {"anthropic-dangerous-direct-browser-access": "true"} : {});
const body = (extra) => JSON.stringify(Object.assign({model: MODEL, max_tokens: 200,
  messages: [{role: "user", content: "Hello from a web page"}]}, extra));
async function run() {
  const seen = {};
  const r = await fetch(API + "/v1/messages", {method: "POST", headers: headers(true), body: body({})});
  const message = await r.json();
  seen.allowed = {status: r.status, text: message.content[0].text, requestId: r.headers.get("request-id")};
  const s = await fetch(API + "/v1/messages", {method: "POST", headers: headers(true), body: body({stream: true})});
  const reader = s.body.getReader(), decoder = new TextDecoder();
  let events = "", chunks = 0;
  for (;;) { const {done, value} = await reader.read(); if (done) break; chunks++; events += decoder.decode(value); }
  seen.stream = {status: s.status, chunks, stops: events.includes("event: message_stop")};
  const m = await fetch(API + "/v1/models?limit=3", {headers: headers(true)});
  seen.models = (await m.json()).data.map(x => x.id);
  try {
    const refused = await fetch(API + "/v1/messages", {method: "POST", headers: headers(false), body: body({})});
    seen.refused = "the page could read a " + refused.status;
  } catch (e) {
    seen.refused = "fetch failed: " + e.name;
  }
  document.getElementById("out").textContent = JSON.stringify(seen);
}
run().catch(e => { document.getElementById("out").textContent = "ERROR " + e; });
</script>"""


def page_server(html: str) -> tuple[ThreadingHTTPServer, str]:
    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            data = html.encode()
            self.send_response(200)
            self.send_header("content-type", "text/html; charset=utf-8")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def main() -> int:
    if not Path(CHROMIUM).exists():
        print(f"cors test: no Chromium at {CHROMIUM} (apt-get install -y chromium)", file=sys.stderr)
        return 1
    from playwright.sync_api import sync_playwright

    started = time.monotonic()
    mock = MockAPI(api_keys={KEY}, pacing={"first": 0.05, "rate": 200})  # paced: the stream arrives in pieces
    api, api_url = serve_in_thread(mock)
    pages, page_url = page_server(PAGE % {"api": api_url, "key": KEY, "model": DEFAULT_MODEL})
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            try:
                page = browser.new_page()
                page.goto(page_url + "/")
                page.wait_for_function("document.getElementById('out').textContent !== 'running'", timeout=20_000)
                text = page.inner_text("#out")
            finally:
                browser.close()
    finally:
        api.shutdown()
        pages.shutdown()
    try:
        seen = json.loads(text)
    except ValueError:
        print(f"cors test FAILED: the page says {text[:300]!r}", file=sys.stderr)
        return 1
    problems = []
    if seen["allowed"]["status"] != 200 or "(mock)" not in seen["allowed"]["text"]:
        problems.append(f"the allowed call: {seen['allowed']}")
    if not seen["allowed"]["requestId"]:
        problems.append("the page could not read the request-id header (access-control-expose-headers)")
    if seen["stream"]["status"] != 200 or not seen["stream"]["stops"] or seen["stream"]["chunks"] < 2:
        problems.append(f"the stream: {seen['stream']}")
    if seen["models"] != [m["id"] for m in mock.models.listing("limit=3")["data"]]:
        problems.append(f"the models: {seen['models']}")
    if seen["refused"] != "fetch failed: TypeError":
        problems.append(f"without the header: {seen['refused']} (expected the browser to hide the 401)")
    refused = [r for r in mock.records if r["status"] == 401]
    if refused:
        problems.append("the refused call was recorded")
    if problems:
        print("cors test FAILED:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 1
    print(f"cors test passed in {time.monotonic() - started:.1f} s: a page at {page_url} read the mock's answers "
          f"at {api_url} (plain, streamed in {seen['stream']['chunks']} pieces, the models), and could not read "
          "one without the browser-access header")
    return 0


if __name__ == "__main__":
    sys.exit(main())
