"""Python in a browser tab: what the browser edition (JupyterLite, Pyodide) lacks, said plainly.

Pyodide runs CPython compiled to WebAssembly inside the page. It has no threads, no
processes and no listening sockets, so:

- the tool registry runs a round's calls one after another on the kernel's thread, and a
  tool's timeout cannot abandon it (`miniagent.tools.THREADS`);
- `serial_thread_pool()` makes `concurrent.futures.ThreadPoolExecutor` (which notebook 03's
  own loop uses for parallel calls) run each task as it is submitted: "parallel" calls then
  take the sum of their times, and the timings printed say so;
- a cell that starts a server or a subprocess is shown in the browser edition with what
  it printed when run in JupyterLab, and is not run (scripts/lite.py builds that edition).

The browser edition's first cell calls `serial_thread_pool()`; nothing here changes
anything in a normal Python.
"""

from __future__ import annotations

import concurrent.futures
import sys
from typing import Any, Callable

IN_BROWSER = sys.platform == "emscripten"
# Whether this Python can start a thread (not in a browser tab, nor under WASI). The package reads it
# here; tiny.py, which stands alone, says the same in its own line.
THREADS = sys.platform not in ("emscripten", "wasi")


class SerialExecutor(concurrent.futures.Executor):
    """An executor that runs each task when it is submitted, on the caller's thread."""

    def __init__(self, max_workers: int | None = None, *args: Any, **kwargs: Any) -> None:
        self._shutdown = False

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future:
        if self._shutdown:
            raise RuntimeError("cannot schedule new futures after shutdown")
        future: concurrent.futures.Future = concurrent.futures.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as exc:  # noqa: BLE001 - a task's failure belongs to its future, as in a real pool
            future.set_exception(exc)
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._shutdown = True


def serial_thread_pool() -> bool:
    """In a browser tab, make ThreadPoolExecutor a SerialExecutor (True); elsewhere change nothing (False)."""
    if not IN_BROWSER:
        return False
    concurrent.futures.ThreadPoolExecutor = SerialExecutor  # type: ignore[misc, assignment]
    return True
