"""The floor plan, held by a test: each module holds one notebook's code and imports only earlier ones.

A learner reads the package in the order of the notebooks. So a module of notebook N may
import modules of notebooks up to N, and nothing later, with a few named exceptions: the
hooks through which a later notebook's feature reaches the core (a stream's callbacks, an
approval, a span). Each hook is a pair (importer, imported) and the names the importer may
use from it, nothing more, so a hook stays as small as it needs to be. The mock (the
offline backend) takes from the package only the wire format it shares, and any module may
reach the mock only inside a function (offline mode), never when it is imported.

    python tests/test_layers.py            # the floor plan: each notebook's modules, lines, reading time
"""

from __future__ import annotations

import ast
import functools
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "miniagent"

# module (a dotted name under miniagent; a folder covers its modules) -> the notebook whose code it holds
NOTEBOOK = {
    "i18n": 0,
    "browser": 0,  # the browser edition's first cell, in every notebook (scripts/lite.py)
    "messages": 1, "tokens": 1, "errors": 1, "wire": 1, "deadline": 1, "clientcore": 1, "client": 1,
    "tools": 2, "builtin_tools": 2,
    "loop": 3,
    "context": 4, "workload": 4,
    "tiny": 5, "agent": 5, "events": 5, "widgets": 5,
    "streaming": 6,
    "aclient": 7, "aloop": 7, "serve": 7,
    "providers": 8,
    "memory": 9, "retrieval": 9,
    "approval": 10, "team": 10, "planning": 10,
    "tracing": 11, "otel": 11, "prices": 11,
    "mcp": 12,
    "evals": 13,
    "__main__": 13,  # the command line: it reaches every feature
    "sandbox": 14, "permissions": 14, "coding": 14,  # the coding agent (notebook 14)
    "skills": 15, "hooks": 15, "session": 15,  # the long-running harness (notebook 15)
}
NOTEBOOK.update({f"exercises.n{n:02d}": n for n in range(16)})  # a notebook's checks import what it taught

# (importer, imported) -> the names the importer may use: a later notebook's hook into an earlier module
HOOKS = {
    ("client", "streaming"): {"MessageStream"},  # 06: the stream client.stream() returns, when one starts
    ("clientcore", "streaming"): {"decode_event"},  # 06: the Messages API's stream events, read as they come
    ("clientcore", "providers"): {"preset"},  # 08: a provider's preset, in connect()
    ("loop", "streaming"): {"StreamWatcher"},  # 06: on_text and on_tool_use, with stream=True
    ("loop", "tracing"): {"model_span", "end_model"},  # 11: a `chat` span per model call
    ("tools", "tracing"): {"tool_spans", "activate", "end_tool"},  # 11: an `execute_tool` span per call
    ("tools", "approval"): {"refusals"},  # 10: a person approves a call first
    ("tools", "aloop"): {"arun_all"},  # 07: the same round from asyncio
    ("agent", "tracing"): {"agent_span", "end_agent", "Tracer"},  # 11: an `invoke_agent` span per run
    ("team", "tracing"): {"agent_span", "end_agent"},  # 11: a span per agent of a hand-off
    ("serve", "approval"): {"NotAsked"},  # 10: POST /chat cannot ask a person (the page's stream can)
    ("aloop", "approval"): {"arefusals"},  # 10: approval, awaited
    ("aloop", "tracing"): {"model_span", "end_model", "activate", "end_tool", "agent_span", "end_agent"},  # 11
    ("serve.store", "memory.pg"): {"_psycopg", "create_schema", "describe"},  # 09: conversations in PostgreSQL
    ("workload", "memory"): {"StructuredMemory"},  # 09 compares its structured memory on 04's workload
}

# What the mock takes from the package: the wire format it shares with the client, and the learner's
# language (i18n.language: a question with no words in it, "144 ÷ 12", is answered in it)
MOCK_USES = {"messages": None, "tokens": None, "streaming": {"encode_event"}, "i18n": {"language"}}  # None: any name
OUTSIDE_THE_LAYERS = ("mock", "exercises")  # the mock and the checks' own machinery (exercises._core)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def notebook_of(module: str) -> int | None:
    """The notebook whose code `module` holds (its own entry, else its folder's), or None."""
    parts = module.split(".")
    for i in range(len(parts), 0, -1):
        if ".".join(parts[:i]) in NOTEBOOK:
            return NOTEBOOK[".".join(parts[:i])]
    return None


def imports(module: str, source: str, known: set[str]) -> list[tuple[str, bool, set[str] | None, int]]:
    """(imported module, at module level?, names used from it or None for all, line) for each import
    of a package module in `source`. Read once per (module, source, known): each test plants one
    change in the whole package, and parsing every module again made them seconds each."""
    return [(name, top, None if names is None else set(names), line)
            for name, top, names, line in _imports(module, source, frozenset(known))]


@functools.lru_cache(maxsize=None)
def _imports(module: str, source: str, known: frozenset[str]) -> tuple[tuple[str, bool, frozenset[str] | None, int], ...]:
    tree = ast.parse(source)
    package = module.split(".") if (PACKAGE / module.replace(".", "/")).is_dir() else module.split(".")[:-1]
    found, aliases = [], {}

    def resolve(node: ast.ImportFrom) -> str:
        if not node.level:
            return node.module or ""
        base = package[: len(package) - (node.level - 1)]
        return ".".join(["miniagent", *base, *([node.module] if node.module else [])])

    def visit(node: ast.AST, top: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                for alias in child.names:
                    if alias.name.startswith("miniagent."):
                        name = alias.name.removeprefix("miniagent.")
                        found.append((name, top, None, child.lineno))
            elif isinstance(child, ast.ImportFrom):
                base = resolve(child)
                if base != "miniagent" and not base.startswith("miniagent."):
                    continue
                base = base.removeprefix("miniagent").removeprefix(".")
                for alias in child.names:
                    sub = f"{base}.{alias.name}".strip(".")
                    if sub in known:  # `from miniagent import tracing`: the module; its names are its uses
                        aliases[alias.asname or alias.name] = len(found)
                        found.append((sub, top, set(), child.lineno))
                    else:
                        found.append((base, top, {alias.name}, child.lineno))
            visit(child, top and not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(tree, True)
    for node in ast.walk(tree):  # tracing.model_span: a name used from a module imported whole
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            found[aliases[node.value.id]][2].add(node.attr)
    merged: dict[tuple[str, bool, int], set[str] | None] = {}  # one entry per module imported on a line
    for name, top, names, line in found:
        key = (name, top, line)
        if key not in merged:
            merged[key] = names
        elif merged[key] is not None:
            merged[key] = None if names is None else merged[key] | names
    return tuple((name, top, None if names is None else frozenset(names), line)
                 for (name, top, line), names in merged.items())


def package_sources() -> dict[str, str]:
    return {module_name(p): p.read_text(encoding="utf-8") for p in sorted(PACKAGE.rglob("*.py"))}


def violations(sources: dict[str, str]) -> list[str]:
    """Every import that breaks the floor plan, as a sentence naming the file's module, line and rule."""
    known = set(sources)
    problems = []
    for module, source in sources.items():
        here = notebook_of(module)
        for imported, top, names, line in imports(module, source, known):
            target = notebook_of(imported)
            where = f"miniagent/{module.replace('.', '/')} line {line}: imports {imported}"
            if imported == "mock" or imported.startswith("mock."):
                if top and not module.startswith(OUTSIDE_THE_LAYERS):
                    problems.append(f"{where} when it is imported; reach the mock only inside a function")
                continue
            if module.startswith("mock"):
                allowed = MOCK_USES.get(imported, set())
                if imported not in MOCK_USES or (allowed is not None and not (names or set()) <= allowed):
                    problems.append(f"{where} {sorted(names or [])}: the mock takes from the package only "
                                    f"{sorted(MOCK_USES)} ({MOCK_USES['streaming']} of streaming)")
                continue
            if here is None or target is None or target <= here:  # an unowned module is named below
                continue
            hook = next((v for (a, b), v in HOOKS.items() if module in (a,) and imported.startswith(b)), None)
            if hook is None:
                problems.append(f"{where} (notebook {target:02d}) from notebook {here:02d}'s module: a module imports "
                                "only earlier notebooks' modules, or a hook named in HOOKS")
            elif names is None or not names <= hook:
                problems.append(f"{where}: uses {sorted(names or ['the whole module'])}, the hook allows "
                                f"{sorted(hook)} only")
    for module in sources:
        if notebook_of(module) is None and not module.startswith(OUTSIDE_THE_LAYERS) and module:
            problems.append(f"miniagent/{module.replace('.', '/')}: no notebook owns it; add it to NOTEBOOK")
    return problems


def test_the_package_keeps_its_floor_plan():
    assert violations(package_sources()) == []


@pytest.mark.parametrize("module, planted, says", [
    ("client", "from miniagent import team\n", "client line"),                     # 01 imports 10
    ("loop", "def later():\n    from miniagent.memory import Memory\n", "memory"),    # lazily: still upward
    ("loop", "def later():\n    from miniagent import tracing\n    tracing.Tracer()\n", "the hook allows"),
    ("tools", "from miniagent.mock import MockAPI\n", "only inside a function"),
    ("mock.brain", "from miniagent.tools import ToolRegistry\n", "the mock takes from the package only"),
    ("mock.stream", "from miniagent.streaming import MessageAccumulator\n", "the mock takes"),
    ("context", "from . import planning\n", "context line"),                      # a relative upward import
])
def test_a_planted_upward_import_is_named(module, planted, says):
    sources = package_sources()
    sources[module] += "\n" + planted
    found = violations(sources)
    assert found and all(says in p or module.replace(".", "/") in p for p in found), found
    assert any(says in p for p in found), found


def test_a_new_module_must_say_which_notebook_it_belongs_to():
    sources = {**package_sources(), "orphan": "x = 1\n"}
    assert any("orphan: no notebook owns it" in p for p in violations(sources))


def test_every_hook_is_in_use():
    """A hook nobody calls any more is a hole in the rule: take it out."""
    sources = package_sources()
    known = set(sources)
    used = {(module, imported) for module, source in sources.items()
            for imported, _, _, _ in imports(module, source, known)}
    unused = [pair for pair in HOOKS if not any(m == pair[0] and i.startswith(pair[1]) for m, i in used)]
    assert unused == []


# --- the floor plan, printed: what a learner reads behind each notebook --------------------------------

LINES_A_MINUTE = 15  # code read with care, docstrings and comments included (blank lines not counted)


def lines_of(source: str) -> int:
    return sum(1 for line in source.splitlines() if line.strip())


def floor_plan(sources: dict[str, str], through_hooks: bool = False) -> list[tuple[int, list[str], int, int]]:
    """(notebook, its modules, their lines, the lines of all they import from the package): what a learner
    reads behind a notebook. A hook into a later notebook is not followed (its no-op path is in sight)."""
    known = set(sources)

    def followed(module: str, imported: str) -> bool:
        mine, theirs = notebook_of(module), notebook_of(imported)
        return through_hooks or mine is None or theirs is None or theirs <= mine

    deps = {m: {i for i, _, _, _ in imports(m, s, known) if i in known and not i.startswith(OUTSIDE_THE_LAYERS)
                and followed(m, i)} for m, s in sources.items()}
    rows = []
    for n in range(16):
        own = sorted(m for m in sources if notebook_of(m) == n and not m.startswith("exercises"))
        closure, todo = set(own), list(own)
        while todo:
            for d in deps.get(todo.pop(), ()):
                if d not in closure:
                    closure.add(d)
                    todo.append(d)
        rows.append((n, own, sum(lines_of(sources[m]) for m in own), sum(lines_of(sources[m]) for m in closure)))
    return rows


if __name__ == "__main__":
    print(f"{'nb':>3}  {'own lines':>9}  {'min':>4}  {'with imports':>12}  {'min':>4}  modules")
    for n, own, lines, reach in floor_plan(package_sources()):
        print(f"{n:>3}  {lines:>9}  {lines / LINES_A_MINUTE:>4.0f}  {reach:>12}  {reach / LINES_A_MINUTE:>4.0f}  "
              f"{', '.join(own)}")
    problems = violations(package_sources())
    print("\n".join(problems) if problems else "the floor plan holds")
    sys.exit(1 if problems else 0)
