"""Build notebooks from their sources, re-execute them offline, save them clean.

    python scripts/nbtools.py build notebooks/src/*.py     # .py (percent format) -> .ipynb, then execute
    FRESH=1 python scripts/nbtools.py build ...            # the same, saving this run even if nothing changed
    python scripts/nbtools.py execute notebooks/0*.ipynb   # re-execute existing notebooks
    python scripts/nbtools.py student student notebooks/0*.ipynb  # the workshop edition, into student/
                                                                  # (a notebook already there is kept)
    python scripts/nbtools.py zh notebooks/0*.ipynb        # the Chinese edition, into notebooks/zh/, run in Chinese
    python scripts/nbtools.py zh-template notebooks/05_agent.ipynb  # start a translation (or see what drifted)

Sources live in notebooks/src/ in the "percent" format: `# %% [markdown]` starts a
markdown cell (its lines are commented with "# "), `# %%` starts a code cell, and
`# %% tags=["raises-exception"]` marks a cell that raises on purpose. Edit the source,
then `make notebooks`; the .ipynb files are what learners open and what nbval checks.

Exercises use three more tags: `exercise` (the cell the learner edits), `check` (the
bare call into `miniagent.exercises` that says where they stand) and `solution` (the
reference solution, whose input is built collapsed: `metadata.jupyter.source_hidden`).
The student edition (`make student`) replaces each solution cell by a one-line note and
clears the outputs of the exercise and check cells; everything else stays as saved.

Each notebook runs top to bottom in its own kernel with MINIAGENT_OFFLINE=1 (so the
saved outputs are exactly what nbval will compare against), in its own folder (notebooks/, or notebooks/zh/ with MINIAGENT_LANG=zh).
Cells tagged `raises-exception` may raise; any other error stops with the cell shown.
Widget state (`metadata.widgets`) is stripped: GitHub will not render a notebook whose
widget state is incomplete, and nbval ignores widget views anyway. Paths of the machine
that ran the notebook (in the tracebacks of cells that raise on purpose) are made
relative to the repository, so saved outputs hold no machine's folders.

A notebook's saved outputs are always one execution's. When every output of the new run
equals the saved one as nbval compares it (clocks and durations sanitised, see
tests/nbval-sanitize.cfg) and every figure is byte for byte the same, the saved notebook
is kept as it was, so rebuilding an unchanged notebook leaves no diff; otherwise every
cell takes the new run's outputs, so a number printed twice, or printed and plotted,
always comes from the same run.
"""

from __future__ import annotations

import configparser
import json
import os
import re
import sys
import time
from pathlib import Path

import nbformat
from nbconvert.preprocessors import CellExecutionError, ExecutePreprocessor
from nbval.plugin import coalesce_streams


# Where the course lives on GitHub, for the "Open in Colab" badge and the install cell every notebook
# starts with: a fork builds with its own (MINIAGENT_REPOSITORY=me/miniagent make notebooks).
REPOSITORY = os.environ.get("MINIAGENT_REPOSITORY", "").strip() or "OWNER/REPO"
ELSEWHERE = ("colab", "install")  # the ids of those two cells, ahead of cell-00


def elsewhere_cells(path: str) -> list:
    """The two cells that let a notebook run outside this repository: a badge that opens it in Colab, and
    a cell that installs the course there when it is missing (here, or wherever it is installed: nothing)."""
    badge = nbformat.v4.new_markdown_cell(
        "[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]"
        f"(https://colab.research.google.com/github/{REPOSITORY}/blob/main/{path})")
    install = nbformat.v4.new_code_cell(
        "# Outside this repository (Colab, another Jupyter): install the course. Where it is installed, nothing happens.\n"
        "import importlib.util, subprocess, sys\n"
        "\n"
        'if importlib.util.find_spec("miniagent") is None:\n'
        f'    course = "miniagent[course] @ git+https://github.com/{REPOSITORY}"\n'
        '    subprocess.run([sys.executable, "-m", "pip", "install", "-q", course], check=True)')
    badge.id, install.id = ELSEWHERE
    return [badge, install]


def build(source: Path) -> Path:
    """Turn a percent-format .py file into notebooks/NAME.ipynb (outputs empty)."""
    cells, kind, tags, lines = [], None, [], []

    def flush() -> None:
        text = "\n".join(lines).strip("\n")
        if kind == "markdown":
            text = "\n".join(l[2:] if l.startswith("# ") else l.lstrip("#") for l in text.splitlines())
            cells.append(nbformat.v4.new_markdown_cell(text))
        elif kind == "code" and text:
            cell = nbformat.v4.new_code_cell(text)
            if tags:
                cell.metadata["tags"] = tags
            if "solution" in tags:  # JupyterLab shows a collapsed input: try the exercise before reading it
                cell.metadata["jupyter"] = {"source_hidden": True}
            cells.append(cell)

    for line in source.read_text().splitlines():
        if line.startswith("# %%"):
            flush()
            kind = "markdown" if "[markdown]" in line else "code"
            tags = json.loads(line.split("tags=", 1)[1]) if "tags=" in line else []
            lines = []
        elif kind is not None:
            lines.append(line)
    flush()
    for i, cell in enumerate(cells):
        cell.id = f"cell-{i:02d}"  # stable ids: a rebuild changes only what really changed
    nb = nbformat.v4.new_notebook(cells=[*elsewhere_cells(f"notebooks/{source.stem}.ipynb"), *cells])
    target = source.parent.parent / (source.stem + ".ipynb")
    nbformat.write(nb, target)
    return target


ROOT = Path(__file__).resolve().parent.parent
# Longest first: the venv lives inside the repository, Python's own files elsewhere.
_PLACES = sorted({(str(ROOT) + os.sep, ""), (sys.prefix + os.sep, "<venv>/"), (sys.base_prefix + os.sep, "<python>/")},
                 key=lambda place: -len(place[0]))


def without_machine_paths(text: str) -> str:
    """`text` with this machine's folders replaced: the repository's by nothing (paths become relative)."""
    for place, name in _PLACES:
        text = text.replace(place, name)
    return text


def _strip_paths(nb: nbformat.NotebookNode) -> None:
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.output_type == "error":
                out.traceback = [without_machine_paths(line) for line in out.traceback]
            elif out.output_type == "stream":
                out.text = without_machine_paths(out.text)


SANITIZE = ROOT / "tests" / "nbval-sanitize.cfg"
# What nbval compares: streams, errors, and these data kinds (images and widgets it skips).
COMPARED = ("text/plain", "text/html", "text/markdown", "application/json")


def _rules() -> list[tuple[re.Pattern, str]]:
    config = configparser.ConfigParser()
    config.read(SANITIZE)
    return [(re.compile(config[name]["regex"]), config[name]["replace"]) for name in config.sections()]


def _as_compared(outputs: list, rules: list[tuple[re.Pattern, str]], images: bool = False) -> str:
    """Outputs as nbval sees them: streams merged, only compared parts, varying parts sanitised.

    With `images`, each figure's bytes too (nbval skips them; the one-run rule does not).
    """
    seen = []
    for out in coalesce_streams([nbformat.from_dict(json.loads(json.dumps(o))) for o in outputs]):
        if out.output_type == "stream":
            seen.append([out.name, out.text])
        elif out.output_type == "error":  # the traceback too: it quotes the package's code, which may change
            seen.append([out.ename, out.evalue, out.traceback])
        else:
            seen.append([out.get("data", {}).get(kind) for kind in COMPARED])
    text = json.dumps(seen, ensure_ascii=False)
    for pattern, replace in rules:
        text = pattern.sub(replace, text)
    if images:  # after sanitising: base64 may hold a run of digits that looks like "12s"
        text += json.dumps([out.get("data", {}).get("image/png") for out in outputs])
    return text


def _signature(nb: nbformat.NotebookNode | None, rules: list[tuple[re.Pattern, str]]) -> list:
    """What must be equal for two runs of a notebook to count as the same run."""
    return [(c.get("id"), c.source, _as_compared(c.outputs, rules, images=True))
            for c in (nb.cells if nb else []) if c.cell_type == "code"]


def keep_unchanged(nb: nbformat.NotebookNode, previous: nbformat.NotebookNode | None) -> bool:
    """Give the saved outputs back to every cell if the new run changed nothing nbval compares.

    All or nothing: a clock or a duration differs on every run, and where that is all that
    differs (in every cell, figures byte for byte the same) the saved bytes stay, so a rebuild
    leaves no diff. If anything else differs, no cell keeps its old outputs: a notebook never
    shows one run's number beside another run's (nor a figure drawn from other data than the
    text beside it). Returns whether the saved outputs were kept.
    """
    rules = _rules()
    if previous is None or _signature(nb, rules) != _signature(previous, rules):
        return False
    saved = [c for c in previous.cells if c.cell_type == "code"]
    for cell, before in zip([c for c in nb.cells if c.cell_type == "code"], saved):
        cell.outputs = before.outputs
        cell.execution_count = before.get("execution_count")
    return True


# The time the built-in tools read while a notebook is saved or tested (the Makefile's NOTEBOOK_CLOCK):
# a Saturday, 14:23 in Shanghai, the clock the unit tests fix too.
CLOCK = "2026-05-09T06:23:11Z"


def execute(path: Path, previous: nbformat.NotebookNode | None = None, language: str = "en") -> float:
    """Run the notebook at `path` in a fresh kernel (MINIAGENT_LANG=`language`), in its own folder,
    and save it, with what the mock answered in its metadata (`mock_calls`, see `mock_calls`)."""
    import tempfile

    nb = nbformat.read(path, as_version=4)
    os.environ["MINIAGENT_OFFLINE"] = "1"
    os.environ.setdefault("MINIAGENT_CLOCK", CLOCK)  # what the clock tool reads: the same day on every rebuild
    os.environ.setdefault("MPLBACKEND", "Agg")
    started = time.perf_counter()
    quiet = ["--IPKernelApp.log_level=ERROR"]  # no "kernel over TCP" warning per notebook
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "calls.jsonl"
        saved = {name: os.environ.get(name) for name in ("MINIAGENT_LANG", "MINIAGENT_CALL_LOG")}
        os.environ.update(MINIAGENT_LANG=language, MINIAGENT_CALL_LOG=str(log))  # the kernel inherits both
        try:
            ExecutePreprocessor(timeout=300, kernel_name="python3", extra_arguments=quiet).preprocess(
                nb, {"metadata": {"path": str(path.parent)}})
        finally:
            for name, value in saved.items():
                os.environ.pop(name) if value is None else os.environ.__setitem__(name, value)
        calls = mock_calls(log)
    nb.metadata.setdefault("miniagent", {})["mock_calls"] = calls
    nb.metadata.pop("widgets", None)
    _strip_paths(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = coalesce_streams(cell.outputs)  # one stream per name: how a cell flushes is noise
    kept = keep_unchanged(nb, previous)
    for cell in nb.cells:
        cell.metadata.pop("execution", None)  # per-run timings: noise in every diff
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nbformat.write(nb, path)
    print(f"{path}: {'unchanged (the saved run kept)' if kept else 'the outputs of this run saved'}")
    return time.perf_counter() - started


def mock_calls(log: Path) -> list[str]:
    """What the mock answered during a run (MINIAGENT_CALL_LOG, written by miniagent.mock.api), one
    line per answer: the tools it called with the numbers in their arguments, and whether each tool
    result it was sent was an error. Sorted, so concurrent calls compare equal whatever their order;
    the two editions of a notebook must show the same list (tests/test_zh_edition.py)."""
    if not log.exists():
        return []
    return sorted(line for line in log.read_text(encoding="utf-8").splitlines() if line.strip())


STUDENT_NOTE = ("*The reference solution is in the instructor's edition of this notebook "
                "(`notebooks/` in the repository).*")
STUDENT_NOTE_ZH = "*参考答案在这个 notebook 的讲师版里（仓库中的 `notebooks/zh/`）。*"
CLEARED = {"exercise", "check"}  # tags of the cells whose outputs the student edition clears


def student_edition(path: Path, folder: Path) -> Path:
    """Write the workshop edition of the notebook at `path` into `folder`, under the same name.

    Solution cells become a one-line markdown note; the exercise and check cells lose
    their outputs (a learner should see "not yet" from their own run, not a saved
    one); every other cell keeps its saved outputs, so the notebook reads as before.
    """
    nb = nbformat.read(path, as_version=4)
    cells = []
    for cell in nb.cells:
        tags = set(cell.get("metadata", {}).get("tags", []))
        if "solution" in tags:
            chinese = nb.metadata.get("miniagent", {}).get("edition") == "zh"
            note = nbformat.v4.new_markdown_cell(STUDENT_NOTE_ZH if chinese else STUDENT_NOTE)
            note.id = cell.get("id") or note.id
            cells.append(note)
            continue
        if cell.cell_type == "code" and tags & CLEARED:
            cell.outputs, cell.execution_count = [], None
        cells.append(cell)
    nb.cells = cells
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / path.name
    nbformat.write(nb, target)
    return target


# --- the Chinese edition --------------------------------------------------------------------
#
# One source, two languages. The code is written once (notebooks/src/NN_name.py); the Chinese
# text of each Markdown cell lives in notebooks/src/zh/NN_name.md, in the notebook's order,
# each block headed by the hash of the English cell it translates:
#
#     <!-- en:3f2a9c1b12ab -->
#     ## 为什么要循环
#     ...
#
# The demos speak Chinese too: a code cell's string literals that a Chinese learner should read
# in Chinese (the questions asked of the agent, a user's name, a city) are declared in the same
# file, in a block headed by the code cell's id, one `English literal → Chinese literal` a line:
#
#     <!-- code:cell-07 -->
#     "What's the weather in Paris?" → "巴黎天气怎么样？"
#
# `zh` writes notebooks/zh/NN_name.ipynb: the English notebook's cells, each Markdown cell
# replaced by its Chinese block and each declared literal by its Chinese one (it must be a whole
# string token of that cell, exactly once), then RUNS it, as the English one is run, with
# MINIAGENT_LANG=zh, in notebooks/zh/: its outputs are its own run's, in Chinese, and
# `make test-zh` compares them with nbval. A block whose hash is not the English cell's hash
# (the English changed after it was translated), or a literal the English cell no longer has,
# stops the build and fails the drift test (tests/test_zh_edition.py), naming the cell. Both
# editions' runs record what the mock answered (`mock_calls` in the notebook's metadata): the
# drift test also checks that the Chinese questions take the mock down the same path.

ZH_SOURCES = ROOT / "notebooks" / "src" / "zh"
ZH_FOLDER = ROOT / "notebooks" / "zh"
_BLOCK = re.compile(r"^<!-- en:([0-9a-f]{12}) -->$", re.MULTILINE)
# A code cell's translated string literals: `<!-- code:cell-07 -->`, then one `"old" → "new"` per line.
_ANY_BLOCK = re.compile(r"^<!-- (en:[0-9a-f]{12}|code:[A-Za-z0-9_-]+) -->$", re.MULTILINE)
ARROW = " → "


def cell_hash(text: str) -> str:
    """The hash that ties a translation to the English text it was made from."""
    import hashlib

    return hashlib.sha256(text.strip().encode()).hexdigest()[:12]


def _blocks(path: Path) -> list[tuple[str, str]]:
    """[("en:HASH" or "code:CELL-ID", body)], in order."""
    parts = _ANY_BLOCK.split(path.read_text(encoding="utf-8"))
    if parts[0].strip():
        raise ValueError(f"{path}: text before the first <!-- en:... --> line")
    return [(parts[i], parts[i + 1].strip("\n")) for i in range(1, len(parts), 2)]


def read_translation(path: Path) -> list[tuple[str, str]]:
    """[(hash of the English cell, Chinese text)], in order (the code blocks left out)."""
    return [(head[3:], body) for head, body in _blocks(path) if head.startswith("en:")]


def read_literals(path: Path) -> dict[str, list[tuple[str, str]]]:
    """{code cell id: [(English string literal, Chinese string literal)]}, as written in the source.

    Each line of a `<!-- code:ID -->` block is `OLD → NEW`, both Python string literals; a line
    that is not raises ValueError, naming it."""
    import ast

    literals: dict[str, list[tuple[str, str]]] = {}
    for head, body in _blocks(path):
        if not head.startswith("code:"):
            continue
        pairs = literals.setdefault(head[5:], [])
        for line in body.splitlines():
            if not line.strip() or line.startswith("#"):
                continue
            for k in [m.start() for m in re.finditer(ARROW, line)]:
                old, new = line[:k].strip(), line[k + len(ARROW):].strip()
                try:
                    if all(isinstance(ast.parse(side, mode="eval").body, (ast.Constant, ast.JoinedStr))
                           and (not isinstance(ast.parse(side, mode="eval").body, ast.Constant)
                                or isinstance(ast.parse(side, mode="eval").body.value, str)) for side in (old, new)):
                        pairs.append((old, new))  # a string or an f-string on both sides
                        break
                except SyntaxError:
                    continue
            else:
                raise ValueError(f"{path}: in <!-- {head} -->, not `\"old\" → \"new\"` (two string literals): {line!r}")
    return literals


def _string_tokens(source: str) -> list[tuple[int, int, str]]:
    """(start offset, end offset, text) of every string literal token in a code cell.

    IPython's line magics (`%matplotlib inline`) are not Python: they are blanked first."""
    import io
    import tokenize

    python = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.split("\n"))
    starts = [0]  # offsets in the cell as written (a blanked magic line is shorter, but holds no string)
    for line in source.split("\n"):
        starts.append(starts[-1] + len(line) + 1)
    found, fstring = [], []  # fstring: where each f-string still open began (they nest)
    fstring_start = getattr(tokenize, "FSTRING_START", None)  # Python 3.12+ tokenizes an f-string in parts
    for tok in tokenize.generate_tokens(io.StringIO(python).readline):
        begin = starts[tok.start[0] - 1] + tok.start[1]
        end = starts[tok.end[0] - 1] + tok.end[1]
        if tok.type == tokenize.STRING and not fstring:
            found.append((begin, end, tok.string))
        elif fstring_start is not None and tok.type == fstring_start:
            fstring.append(begin)
        elif fstring_start is not None and tok.type == tokenize.FSTRING_END:
            begin = fstring.pop()
            if not fstring:  # a whole f-string, as 3.11 gives it: one token
                found.append((begin, end, source[begin:end]))
    return found


def translate_code(source: str, pairs: list[tuple[str, str]], where: str = "") -> str:
    """`source` with each declared English string literal replaced by its Chinese one.

    Each must be a whole string token of the cell, exactly once: anything else (the English
    cell changed, or the literal is a part of a longer string) raises ValueError, naming it."""
    tokens = _string_tokens(source)
    edits = []
    for old, new in pairs:
        hits = [(b, e) for b, e, text in tokens if text == old]
        if len(hits) != 1:
            raise ValueError(f"{where}: the literal {old} is {'not a string' if not hits else 'more than one string'} "
                             f"of the English code cell ({len(hits)} found): redo its translation")
        edits.append((*hits[0], new))
    for begin, end, new in sorted(edits, reverse=True):
        source = source[:begin] + new + source[end:]
    return source


def masked(source: str, pairs: list[tuple[str, str]], chinese: bool) -> str:
    """The code with the declared literals (English or Chinese side) replaced by one placeholder:
    the two editions' cells must be equal in that form."""
    declared = {new if chinese else old for old, new in pairs}
    out, last = [], 0
    for begin, end, text in _string_tokens(source):
        if text in declared:
            out.append(source[last:begin] + "'<translated>'")
            last = end
    return "".join(out) + source[last:]


def drift(nb: nbformat.NotebookNode, blocks: list[tuple[str, str]]) -> list[str]:
    """What keeps the translation from matching the notebook: one line per problem (none: in step)."""
    english = [c for c in nb.cells if c.cell_type == "markdown" and c.get("id") not in ELSEWHERE]
    problems = []
    if len(english) != len(blocks):
        problems.append(f"{len(english)} Markdown cells in English, {len(blocks)} blocks in Chinese")
    for i, (cell, (digest, chinese)) in enumerate(zip(english, blocks)):
        if cell_hash(cell.source) != digest:
            first = cell.source.strip().splitlines()[0][:70] if cell.source.strip() else ""
            problems.append(f"Markdown cell {i + 1} ({first!r}) changed since it was translated "
                            f"(en:{digest} is now en:{cell_hash(cell.source)})")
        elif not chinese.strip():
            problems.append(f"Markdown cell {i + 1} has no Chinese text")
    return problems


_STARTS_BLOCK = re.compile(r"^\s*([-*+]\s|\d+\.\s|#|\||>|```|<!--|$)")


def _wide(char: str) -> bool:
    """A Chinese character or full-width punctuation: a line break next to one must not become a space."""
    return "\u2e80" <= char <= "\u9fff" or "\uff00" <= char <= "\uffef" or char in "“”‘’…—、。，："


def unwrap_cjk(text: str) -> str:
    """The Markdown with its soft line breaks removed where Chinese meets Chinese (a break next to a
    Latin word stays: it shows as the space that belongs there anyway).

    The translations are wrapped for reading in an editor; a browser shows a line break inside a
    paragraph as a space, which in Chinese is a visible gap. Code blocks, tables, headings and
    list items keep their lines; only a line that continues a paragraph is joined to the one before.
    """
    out: list[str] = []
    in_code = False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            in_code = not in_code
            out.append(line)
            continue
        previous = out[-1] if out else ""
        if (not in_code and previous.strip() and line.strip() and not _STARTS_BLOCK.match(line)
                and not previous.lstrip().startswith(("#", "|", "<!--", "```"))
                and _wide(previous.rstrip()[-1]) and _wide(line.lstrip()[0])):  # else the break is the space
            out[-1] = previous.rstrip() + line.lstrip()
        else:
            out.append(line)
    return "\n".join(out)


def zh_edition(path: Path) -> Path:
    """notebooks/zh/NAME.ipynb from the English notebook and its translation; ValueError on drift."""
    nb = nbformat.read(path, as_version=4)
    source = ZH_SOURCES / (path.stem + ".md")
    blocks = read_translation(source)
    problems = drift(nb, blocks)
    if problems:
        raise ValueError(f"{source} is out of step with {path.name}:\n  " + "\n  ".join(problems))
    literals = read_literals(source)
    ids = {c.get("id") for c in nb.cells if c.cell_type == "code"}
    if set(literals) - ids:
        raise ValueError(f"{source}: <!-- code:... --> blocks for cells {sorted(set(literals) - ids)}, "
                         f"which are not code cells of {path.name}")
    chinese = iter(unwrap_cjk(text) for _, text in blocks)
    badge = elsewhere_cells(f"notebooks/zh/{path.name}")[0]
    for cell in nb.cells:
        if cell.get("id") == badge.id:  # opens the Chinese edition
            cell.source = badge.source
        elif cell.cell_type == "markdown":
            cell.source = next(chinese)
        elif cell.get("id") in literals:
            cell.source = translate_code(cell.source, literals[cell.id], f"{source} <!-- code:{cell.id} -->")
    nb.metadata["miniagent"] = {**nb.metadata.get("miniagent", {}), "edition": "zh", "translates": path.name}
    ZH_FOLDER.mkdir(exist_ok=True)
    target = ZH_FOLDER / path.name
    nbformat.write(nb, target)
    return target


def zh_template(path: Path) -> Path:
    """Start (or refresh) a translation: every English cell as a block to translate.

    Blocks already translated and still in step are kept; the others get the English text
    to replace, so `git diff` shows the translator exactly what to do.
    """
    nb = nbformat.read(path, as_version=4)
    source = ZH_SOURCES / (path.stem + ".md")
    old = read_translation(source) if source.exists() else []
    done = dict(old)
    parts = []
    for i, cell in enumerate(c for c in nb.cells if c.cell_type == "markdown" and c.get("id") not in ELSEWHERE):
        digest = cell_hash(cell.source)
        if digest in done:
            parts.append(f"<!-- en:{digest} -->\n{done[digest]}\n")
            continue
        was = f"\n<!-- the translation before the English changed:\n{old[i][1]}\n-->" if i < len(old) else ""
        parts.append(f"<!-- en:{digest} -->\n{cell.source.strip()}{was}\n")
    if source.exists():  # the code cells' literals are kept as they are (the build checks them)
        parts += [f"<!-- {head} -->\n{body}\n" for head, body in _blocks(source) if head.startswith("code:")]
    ZH_SOURCES.mkdir(exist_ok=True)
    source.write_text("\n".join(parts), encoding="utf-8")
    return source


def main(argv: list[str]) -> int:
    if len(argv) >= 3 and argv[1] in ("zh", "zh-template"):
        status = 0
        for name in argv[2:]:
            path = Path(name)
            if argv[1] == "zh-template":
                print(f"wrote {zh_template(path)}")
            elif (ZH_SOURCES / (path.stem + ".md")).exists():
                saved = ZH_FOLDER / path.name
                fresh = os.environ.get("FRESH", "") not in ("", "0")
                previous = nbformat.read(saved, as_version=4) if saved.exists() and not fresh else None
                try:
                    target = zh_edition(path)
                    print(f"wrote {target}")
                    seconds = execute(target, previous, language="zh")  # its own run, in Chinese
                    print(f"executed {target} in {seconds:.1f} s")
                except ValueError as exc:  # the others are still built
                    print(f"FAILED {exc}", file=sys.stderr)
                    status = 1
                except CellExecutionError as exc:
                    print(f"FAILED {target}:\n{exc}", file=sys.stderr)
                    status = 1
        return status
    if len(argv) >= 4 and argv[1] == "student":
        folder = Path(argv[2])
        for name in argv[3:]:
            if (folder / Path(name).name).exists():  # a learner's work: never overwritten
                print(f"kept {folder / Path(name).name} (it may hold your work; delete it for a fresh copy)")
            else:
                print(f"wrote {student_edition(Path(name), folder)}")
        return 0
    if len(argv) < 3 or argv[1] not in ("build", "execute"):
        print(__doc__)
        return 2
    fresh = os.environ.get("FRESH", "") not in ("", "0")  # FRESH=1: ignore the saved outputs, save this run
    for name in argv[2:]:
        saved = Path(name).parent.parent / (Path(name).stem + ".ipynb") if argv[1] == "build" else Path(name)
        previous = nbformat.read(saved, as_version=4) if saved.exists() and not fresh else None
        path = build(Path(name)) if argv[1] == "build" else Path(name)
        try:
            seconds = execute(path, previous)
        except CellExecutionError as exc:
            print(f"FAILED {path}:\n{exc}", file=sys.stderr)
            return 1
        print(f"executed {path} in {seconds:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
