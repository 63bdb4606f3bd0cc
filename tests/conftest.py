"""Shared test settings.

Property tests (hypothesis) run 50 examples each in the everyday `make test` (it must stay
under a minute on a 2-core machine), and 1,000 each in `make test-props`, which CI runs:
`--hypothesis-profile=thorough` selects that profile, and `-m hypothesis` picks every
property test (hypothesis marks them). No test sets its own `max_examples`, so the profile
decides for all of them.
"""

import functools
import gc
import itertools
import os
import re
from pathlib import Path
from typing import Any

import pytest
from drivers import driver  # noqa: F401  the fixture of `@both` tests: Client or AsyncClient (drivers.py)
from hypothesis import settings

# No deadline: a property test asserts what holds, not how fast (a loaded 2-core machine made the
# default 200 ms deadline fail at random); speed is measured in benchmarks/.
settings.register_profile("everyday", max_examples=50, deadline=None)
settings.register_profile("thorough", max_examples=1000, deadline=None)
settings.load_profile("everyday")  # --hypothesis-profile=thorough (make test-props) overrides it

# MINIAGENT_START_METHOD=spawn (or forkserver): every process the tests start through multiprocessing
# starts that way, as on macOS and Windows (spawn) and on Linux from Python 3.14 (forkserver).
if os.environ.get("MINIAGENT_START_METHOD"):
    import multiprocessing

    multiprocessing.set_start_method(os.environ["MINIAGENT_START_METHOD"], force=True)


# --- what the everyday run never needs to import -------------------------------------------------
# A module marked as a whole (a line `pytestmark = pytest.mark.sdk`) whose every test the -m
# expression deselects is not imported at all: importing it would cost each xdist worker what its
# imports cost (the official SDKs, about a second per worker) for tests that never run. A module
# is left out only when no markers its tests could have besides the module's own would let the
# expression select one; anything less plain (several pytestmark lines, a list, keyword arguments
# in the expression) is collected as usual.
MODULE_MARK = re.compile(r"^pytestmark = pytest\.mark\.(\w+)\s*(?:#.*)?$", re.MULTILINE)
MARK_NAMES = re.compile(r"[\w:+\-.\[\]\\/]+")  # the identifiers of pytest's -m grammar
MAX_FREE_MARKS = 12  # 2**12 evaluations at most per module; past that, the module is collected


@functools.cache
def _mark_expression(text: str) -> tuple[Any, tuple[str, ...]] | None:
    """The compiled -m expression and the marker names it mentions, or None when it is not plain."""
    if not text or "=" in text:
        return None
    try:
        from _pytest.mark.expression import Expression  # pytest's own parser of -m (private, stable since 6)
        compiled = Expression.compile(text)
    except (ImportError, AttributeError, SyntaxError):
        return None
    names = tuple(sorted(set(MARK_NAMES.findall(text)) - {"and", "or", "not"}))
    return compiled, names


def _never_selected(module_mark: str, expression: Any, names: tuple[str, ...]) -> bool:
    """True if the expression is false for a test with `module_mark`, whatever other markers it has."""
    free = [name for name in names if name != module_mark]
    if len(free) > MAX_FREE_MARKS:
        return False
    for present in itertools.product((False, True), repeat=len(free)):
        marks = {module_mark} | {name for name, on in zip(free, present) if on}
        if expression.evaluate(lambda name, **_: name in marks):
            return False
    return True


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if collection_path.suffix != ".py" or not collection_path.name.startswith("test_"):
        return None
    parsed = _mark_expression(config.option.markexpr)
    if parsed is None:
        return None
    source = collection_path.read_text(encoding="utf-8")
    marks = MODULE_MARK.findall(source)
    if len(marks) != 1 or len(re.findall(r"^pytestmark\b", source, re.MULTILINE)) != 1:
        return None  # no mark for the whole module, or one that a later line could change
    return True if _never_selected(marks[0], *parsed) else None


# --- a quick exit ------------------------------------------------------------------------------
@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """Leave the session's objects to the operating system rather than to Python's shutdown.

    At exit, Python clears every module and runs its cyclic garbage collector over what the session
    made (some 600,000 objects and 5,900 modules in an xdist worker of `make test`): 2 to 3 s of CPU
    in each process, after the last test, while the controller waits for its workers. Frozen
    objects are never collected, so the process ends as soon as its exit handlers have run (the
    tests are over: what a test must close, it closes itself).
    """
    gc.freeze()


# --- the coding agent's task (notebooks 14 and 15) ------------------------------------------------
@pytest.fixture
def failing_repo(tmp_path: Path) -> Path:
    """A repository whose one test fails: calc.add subtracts."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n", encoding="utf-8")
    (repo / "test_calc.py").write_text("import unittest\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n"
                                       "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n",
                                       encoding="utf-8")
    return repo
