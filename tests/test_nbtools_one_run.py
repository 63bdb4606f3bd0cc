"""A notebook's saved outputs are one execution's (scripts/nbtools.py's rule).

A rebuild keeps the saved outputs only when *every* output of the new run is what nbval
would call equal and every figure is byte for byte the same; otherwise every cell takes
the new run's outputs. So a value printed twice is printed the same, and a figure is
drawn from the numbers printed beside it. The first tests check the rule on notebooks
built by hand (fast, in make test); the last builds a notebook twice in a real kernel
(make test-student).
"""

import base64
import importlib.util
import io
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("nbtools", ROOT / "scripts" / "nbtools.py")
nbtools = importlib.util.module_from_spec(spec)
spec.loader.exec_module(nbtools)


def stream(text):
    return nbformat.v4.new_output("stream", name="stdout", text=text)


def image(payload: bytes):
    return nbformat.v4.new_output("display_data", data={"image/png": base64.b64encode(payload).decode(),
                                                        "text/plain": "<Figure size 800x320 with 1 Axes>"})


def notebook(*outputs_per_cell):
    cells = [nbformat.v4.new_markdown_cell("# A run")]
    for i, outputs in enumerate(outputs_per_cell):
        cell = nbformat.v4.new_code_cell(f"cell_{i}()")
        cell.id, cell.outputs = f"cell-{i:02d}", list(outputs)
        cells.append(cell)
    return nbformat.v4.new_notebook(cells=cells)


def texts(nb):
    return ["".join(o.get("text", "") for o in c.outputs) for c in nb.cells if c.cell_type == "code"]


def test_when_only_clocks_differ_every_saved_output_stays():
    saved = notebook([stream("took 1.24 s\n")], [stream("again: 1.24 s\n")], [image(b"png-1")])
    new = notebook([stream("took 1.31 s\n")], [stream("again: 1.31 s\n")], [image(b"png-1")])
    assert nbtools.keep_unchanged(new, saved) is True
    assert texts(new) == ["took 1.24 s\n", "again: 1.24 s\n", ""]


def test_one_real_change_gives_every_cell_the_new_run():
    """The old rule kept cell 0's saved 1.24 s beside cell 1's new 3.9 ms run: two runs on one page."""
    saved = notebook([stream("took 1.24 s\n")], [stream("per conversation: 2.9 ms, 10 of 10 done\n")])
    new = notebook([stream("took 1.31 s\n")], [stream("per conversation: 3.9 ms, 9 of 10 done\n")])
    assert nbtools.keep_unchanged(new, saved) is False
    assert texts(new) == ["took 1.31 s\n", "per conversation: 3.9 ms, 9 of 10 done\n"]


def test_a_figure_drawn_from_other_data_is_a_change():
    """nbval never compares images; the one-run rule does, so a plot is never older than its text."""
    saved = notebook([stream("all of it after 2.25 s\n")], [image(b"plot ending at 2.25")])
    new = notebook([stream("all of it after 1.24 s\n")], [image(b"plot ending at 1.24")])
    assert nbtools.keep_unchanged(new, saved) is False
    assert base64.b64decode(new.cells[2].outputs[0]["data"]["image/png"]) == b"plot ending at 1.24"


def test_a_changed_cell_source_or_a_first_build_takes_the_new_run():
    saved = notebook([stream("took 1.24 s\n")])
    new = notebook([stream("took 1.31 s\n")])
    new.cells[1].source = "cell_0(faster=True)"
    assert nbtools.keep_unchanged(new, saved) is False
    assert nbtools.keep_unchanged(notebook([stream("x\n")]), None) is False
    assert texts(new) == ["took 1.31 s\n"]


def test_markdown_edits_alone_keep_the_saved_outputs():
    """Rewording the prose is not a new run of the code: no diff in the outputs."""
    saved = notebook([stream("took 1.24 s\n")])
    new = notebook([stream("took 1.31 s\n")])
    new.cells[0].source = "# A run, reworded"
    assert nbtools.keep_unchanged(new, saved) is True
    assert texts(new) == ["took 1.24 s\n"]


# The notebook built twice below: a clock that varies (sanitised) printed beside a number
# that varies (not sanitised), the clock printed again alone, and a figure drawn from the
# clock. The old rule (cell by cell, images never compared) saved the second build's first
# cell beside the first build's third and fourth.
SOURCE = '''# %% [markdown]
# # One run
# %%
import random, time
took = 1 + random.random()
print(f"took {took:.2f} s; a number that is not a clock: {random.randrange(10**9)}")
# %%
print("a cell between")
# %%
print(f"again, the same variable: {took:.2f} s")
# %%
import io, matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
from IPython.display import Image, display
fig, ax = plt.subplots(figsize=(2, 1), dpi=50)
ax.plot([0, round(took, 2)], [0, 1])
buffer = io.BytesIO()
fig.savefig(buffer, format="png", metadata={"Software": None})
display(Image(buffer.getvalue()))
'''


def draw(took: float) -> bytes:
    """What the figure cell above draws for `took`, drawn here."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(2, 1), dpi=50)
    ax.plot([0, took], [0, 1])
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", metadata={"Software": None})
    plt.close(fig)
    return buffer.getvalue()


@pytest.mark.harness  # two real kernels: make test-student (CI), not the everyday make test
def test_a_rebuilt_notebook_prints_and_draws_one_run(tmp_path):
    (tmp_path / "src").mkdir()
    source = tmp_path / "src" / "one_run.py"
    source.write_text(SOURCE)
    saved = tmp_path / "one_run.ipynb"
    for build in range(2):  # the second build finds the first one's outputs saved
        assert nbtools.main(["nbtools.py", "build", str(source)]) == 0
        nb = nbformat.read(saved, as_version=4)
        nb.cells = [c for c in nb.cells if c.get("id") not in nbtools.ELSEWHERE]  # the Colab badge and install cell
        first, _, again, figure = texts(nb)[0], None, texts(nb)[2], nb.cells[4].outputs[0]
        took = re.search(r"took (\d\.\d\d) s", first).group(1)
        assert f"again, the same variable: {took} s" in again, f"build {build + 1}: two runs on one page"
        assert base64.b64decode(figure["data"]["image/png"]) == draw(float(took)), \
            f"build {build + 1}: the figure is not drawn from the {took} s printed beside it"
