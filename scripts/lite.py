"""Build the browser edition: a JupyterLite site in which the notebooks run with nothing installed.

    python scripts/lite.py [OUTPUT]        (or: make lite; OUTPUT defaults to build/lite)

Everything the site loads is in it, so it works from any static web server, offline:

- Pyodide's runtime (Python 3.14 compiled to WebAssembly) from npm's `pyodide` package,
  pinned with its hash below; the kernel of jupyterlite-pyodide-kernel is built for it.
- The wheels the notebooks and the kernel need (lite/requirements.txt, pinned with hashes,
  resolved for Pyodide: `httpx2` sends through the browser's fetch there) from PyPI, and
  miniagent's own wheel, built from this checkout. They are listed in Pyodide's lock file
  and loaded when the kernel starts, so `import miniagent` works in the first cell and the
  notebooks' install cell finds it installed. PyPI is never asked from the browser.
- The notebooks: 00-06 in both editions (the ones the browser test runs).

What Pyodide cannot give, and what the notebooks do about it: no threads (the tool
registry runs a round's calls one after another there, and a tool's timeout cannot
abandon it), no subprocess, no server socket, and no numpy or matplotlib: Pyodide builds
those itself and publishes them with its full distribution (GitHub, or a CDN), not on npm
or PyPI, which are the registries this build may use. The cells that need one of these
say so when run in the browser and do nothing else (see `miniagent.platform`).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LITE = ROOT / "lite"
CACHE = ROOT / "build" / "lite-cache"
NOTEBOOKS = [f"{n:02d}" for n in range(7)]  # 00-06
# The Pyodide the kernel (jupyterlite-pyodide-kernel 0.8.6) was built for, from npm.
PYODIDE_VERSION = "314.0.6"
PYODIDE_URL = f"https://registry.npmjs.org/pyodide/-/pyodide-{PYODIDE_VERSION}.tgz"
PYODIDE_SHA256 = "d78ac549b28a2a58600cd06f44e017024151775f8c6b2d73fab1475400d38ea2"
PYODIDE_FILES = ["pyodide.asm.mjs", "pyodide.asm.wasm", "pyodide.mjs", "pyodide.js", "python_stdlib.zip", "package.json"]
# Pyodide's own packages the kernel asks for by name (loadPackage): their wheels are on PyPI too.
PYODIDE_PACKAGES = {"micropip": "0.11.1", "packaging": "26.1"}
# The kernel's own wheels (shipped inside jupyterlite-pyodide-kernel), loaded with the rest at start.
KERNEL_WHEELS = ["piplite", "pyodide_kernel", "ipykernel"]


def say(text: str) -> None:
    print(text, flush=True)


def fetch(url: str, sha256: str | None, dest: Path) -> Path:
    """url into dest (kept in the cache), checked against sha256 when one is given."""
    if not dest.exists():
        dest.parent.mkdir(parents=True, exist_ok=True)
        say(f"  downloading {url}")
        with urllib.request.urlopen(url, timeout=120) as response:
            data = response.read()
        dest.write_bytes(data)
    digest = hashlib.sha256(dest.read_bytes()).hexdigest()
    if sha256 and digest != sha256:
        dest.unlink()
        sys.exit(f"{dest.name}: sha256 {digest}, expected {sha256}; deleted, run again")
    return dest


def pip_download(args: list[str], dest: Path) -> None:
    """Wheels for Pyodide (pure Python: none-any), whatever this machine is."""
    subprocess.run([sys.executable, "-m", "pip", "download", "-qq", "--disable-pip-version-check",
                    "--only-binary=:all:", "--no-deps", "--python-version", "3.14",
                    "--platform", "pyemscripten_2026_0_wasm32", "-d", str(dest), *args], check=True)


def wheel_entry(path: Path) -> tuple[str, dict]:
    """A pyodide-lock.json entry for a pure-Python wheel (name, version, file, sha256, import names)."""
    with zipfile.ZipFile(path) as wheel:
        names = wheel.namelist()
        meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
        fields = dict(line.split(": ", 1) for line in wheel.read(meta).decode().splitlines()
                      if ": " in line and line[:1].isalpha())
        tops = sorted({n.split("/")[0] if "/" in n else n.removesuffix(".py") for n in names
                       if not n.split("/")[0].endswith((".dist-info", ".data")) and ("/" in n or n.endswith(".py"))})
    name = fields["Name"].lower().replace("_", "-")
    return name, {"name": name, "version": fields["Version"], "file_name": path.name, "install_dir": "site",
                  "sha256": hashlib.sha256(path.read_bytes()).hexdigest(), "package_type": "package",
                  "imports": tops, "depends": [], "unvendored_tests": False}


def pyodide_dir(work: Path) -> Path:
    """Pyodide's runtime from npm and a lock file listing exactly the wheels this site holds."""
    archive = fetch(PYODIDE_URL, PYODIDE_SHA256, CACHE / f"pyodide-{PYODIDE_VERSION}.tgz")
    out = work / "pyodide"
    out.mkdir(parents=True)
    with tarfile.open(archive) as tar:
        upstream_lock = json.load(tar.extractfile("package/pyodide-lock.json"))
        for name in PYODIDE_FILES:
            (out / name).write_bytes(tar.extractfile(f"package/{name}").read())
    wheels = CACHE / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    pip_download(["--require-hashes", "-r", str(LITE / "requirements.txt")], wheels)
    pip_download([f"{name}=={version}" for name, version in PYODIDE_PACKAGES.items()], wheels)
    wanted = {line.split("==")[0].lower() for line in (LITE / "requirements.txt").read_text(encoding="utf-8").splitlines()
              if "==" in line and not line.startswith((" ", "#"))} | set(PYODIDE_PACKAGES)
    chosen = [w for w in sorted(wheels.glob("*.whl")) if w.name.split("-")[0].lower().replace("_", "-") in wanted]
    # The kernel's own wheels, as jupyterlite-pyodide-kernel ships them.
    import jupyterlite_pyodide_kernel  # noqa: F401 - installed by requirements-lite.txt
    shipped = Path(sys.prefix) / "share/jupyter/labextensions/@jupyterlite/pyodide-kernel-extension/static/pypi"
    chosen += [w for w in sorted(shipped.glob("*.whl")) if w.name.split("-")[0] in KERNEL_WHEELS]
    # miniagent itself, from this checkout.
    uv = shutil.which("uv", path=str(Path(sys.executable).parent))  # course.py installs it; else pip builds it
    build = [uv, "build", "-q", "--wheel", "--out-dir"] if uv else [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w"]
    subprocess.run([*build, str(work / "own"), str(ROOT)], check=True, cwd=work)
    chosen += sorted((work / "own").glob("miniagent-*.whl"))
    packages = {}
    for wheel in chosen:
        name, entry = wheel_entry(wheel)
        packages[name] = entry
        shutil.copy2(wheel, out / wheel.name)
    lock = {"info": upstream_lock["info"], "packages": dict(sorted(packages.items()))}
    (out / "pyodide-lock.json").write_text(json.dumps(lock, indent=1), encoding="utf-8")
    return out


# Why a cell is not run in the browser (lite/not-in-browser.json names the cells).
REASONS = {
    "server": ("it starts an HTTP server, in a thread: a browser tab can do neither",
               "它在一个线程里启动 HTTP 服务器：浏览器标签页里这两样都做不到"),
    "subprocess": ("it starts another Python process: a browser tab cannot",
                   "它启动另一个 Python 进程：浏览器标签页里做不到"),
    "matplotlib": ("it draws with matplotlib, which needs numpy: Pyodide builds both itself and publishes them "
                   "with its own distribution, not on PyPI or npm, so this site does not hold them",
                   "它用 matplotlib 画图，而 matplotlib 需要 numpy：这两个包由 Pyodide 自己编译、随它自己的发行版发布，"
                   "不在 PyPI 或 npm 上，所以这个站点里没有"),
    "timeout": ("it shows a tool that hangs being abandoned when its timeout passes: the registry waits for it from "
                "another thread, and without one the hung tool would hang this page",
                "它演示一个卡住的工具在超时后被放弃：注册表要在另一个线程里等它；没有线程，卡住的工具会让整个页面卡住"),
    "widgets": ("the chat widget answers in a worker thread, so that clicks keep arriving: a browser tab cannot start one",
                "聊天控件在工作线程里回答，好让点击继续送达：浏览器标签页里启动不了线程"),
}
SHOWN = ("**Not run in the browser**: {why}. Here are its code and what it printed when run in JupyterLab "
         "(`make lab`, or Colab):",
         "**浏览器里不运行**：{why}。下面是它的代码，以及在 JupyterLab（`make lab`，或 Colab）里运行时的输出：")
# The browser edition's first cell, in place of the install cell: what is different here.
FIRST_CELL = (
    "# In the browser (JupyterLite): miniagent is installed already, and Python runs inside this page.\n"
    "# A browser tab cannot start threads: tool calls run one after another here, ThreadPoolExecutor's\n"
    "# too, so \"parallel\" takes as long as \"serial\" (notebook 03 measures about 1.0x here).\n"
    "# Run All stops at a cell that raises on purpose: click the next cell, then Run > Run Selected Cell and All Below.\n"
    "import miniagent.browser\n\nminiagent.browser.serial_thread_pool()",
    "# 在浏览器里（JupyterLite）：miniagent 已经装好，Python 就运行在这个网页里。\n"
    "# 浏览器标签页启动不了线程：这里的工具调用一个接一个地执行，ThreadPoolExecutor 里的也一样，\n"
    "# 所以“并行”和“串行”一样久（notebook 03 在这里测出来约 1.0x）。\n"
    "# Run All 会停在故意抛异常的单元格：点一下它的下一个单元格，再选 Run > Run Selected Cell and All Below。\n"
    "# 这个页面没有 make lab-zh 设置的环境变量，所以在这里让 miniagent 说中文。\n"
    "import os\n\nimport miniagent.browser\n\nos.environ[\"MINIAGENT_LANG\"] = \"zh\"\nminiagent.browser.serial_thread_pool()",
)

def shown_not_run(cell: dict, reason: str, zh: bool) -> dict:
    """A markdown cell holding a code cell that cannot run here, and what it printed in JupyterLab."""
    lines = [SHOWN[zh].format(why=REASONS[reason][zh]), "", "```python", "".join(cell["source"]), "```"]
    attachments = {}
    for n, output in enumerate(cell.get("outputs", [])):
        data = output.get("data", {})
        if "image/png" in data:
            name = f"output-{n}.png"
            attachments[name] = {"image/png": data["image/png"]}
            lines += ["", f"![the figure it drew](attachment:{name})"]
        elif output.get("output_type") == "stream" or "text/plain" in data:
            text = "".join(output.get("text") or data["text/plain"])
            lines += ["", "```text", text.rstrip("\n"), "```"]
    markdown = {"cell_type": "markdown", "id": cell["id"], "metadata": {}, "source": "\n".join(lines)}
    if attachments:
        markdown["attachments"] = attachments
    return markdown


def not_in_browser() -> dict:
    """lite/not-in-browser.json: notebook -> {cell id: why it is shown, not run}."""
    return json.loads((LITE / "not-in-browser.json").read_text(encoding="utf-8"))


def for_the_browser(notebook: dict, name: str, zh: bool, listed: dict | None = None) -> dict:
    """A notebook as the browser edition has it: no Colab badge, the first cell says what differs, and each cell
    listed in lite/not-in-browser.json (`listed`, read when not given) shows what it printed in JupyterLab
    instead of running."""
    skipped = (not_in_browser() if listed is None else listed).get(name, {})
    missing = set(skipped) - {c.get("id") for c in notebook["cells"]}
    if missing:
        sys.exit(f"lite/not-in-browser.json names cells that {name} does not have: {sorted(missing)}")
    cells = []
    for cell in notebook["cells"]:
        if cell.get("id") == "colab":  # the Open in Colab badge: the reader is in a browser's Python already
            continue
        if cell.get("id") == "install":
            cell = {**cell, "source": FIRST_CELL[zh], "outputs": [], "execution_count": None}
        elif cell.get("id") in skipped:
            cell = shown_not_run(cell, skipped[cell["id"]], zh)
        cells.append(cell)
    # Pyodide's kernel is named "python"; the notebooks name ipykernel's "python3".
    kernelspec = {"name": "python", "display_name": "Python (Pyodide)", "language": "python"}
    return {**notebook, "cells": cells, "metadata": {**notebook["metadata"], "kernelspec": kernelspec}}


def notebooks(work: Path) -> Path:
    """The notebooks the site serves: 00-06, English at the top, the Chinese edition in zh/."""
    contents = work / "contents"
    (contents / "zh").mkdir(parents=True)
    listed = not_in_browser()
    for number in NOTEBOOKS:
        for source, dest, zh in ((ROOT / "notebooks", contents, False),
                                 (ROOT / "notebooks" / "zh", contents / "zh", True)):
            for path in source.glob(f"{number}_*.ipynb"):
                notebook = for_the_browser(json.loads(path.read_text(encoding="utf-8")), path.stem, zh, listed)
                (dest / path.name).write_text(json.dumps(notebook, ensure_ascii=False, indent=1), encoding="utf-8")
    return contents


def build(output: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="miniagent-lite-") as tmp:
        work = Path(tmp)
        say("Pyodide and the wheels...")
        runtime = pyodide_dir(work)
        distribution = work / "pyodide.tar.bz2"  # the form --pyodide takes: a tarball with pyodide/ at the top
        with tarfile.open(distribution, "w:bz2") as tar:
            tar.add(runtime, arcname="pyodide")
        contents = notebooks(work)
        config = json.loads((LITE / "jupyter-lite.json").read_text(encoding="utf-8"))
        packages = sorted(json.loads((runtime / "pyodide-lock.json").read_text(encoding="utf-8"))["packages"])
        settings = config["jupyter-config-data"]["litePluginSettings"]["@jupyterlite/pyodide-kernel-extension:kernel"]
        settings["loadPyodideOptions"] = {"packages": packages}
        lite_dir = work / "lite"  # holding only the configuration: jupyter lite reads what it finds there
        lite_dir.mkdir()
        (lite_dir / "jupyter-lite.json").write_text(json.dumps(config, indent=1), encoding="utf-8")
        # Every cell drawn, not only those in view: a reader scrolling a long notebook, and the browser test, see all.
        shutil.copy2(LITE / "overrides.json", lite_dir / "overrides.json")
        if output.exists():
            shutil.rmtree(output)
        say("jupyter lite build...")
        subprocess.run([sys.executable, "-m", "jupyterlite_core", "build", "--lite-dir", str(lite_dir),
                        "--contents", str(contents), "--pyodide", str(distribution), "--output-dir", str(output.resolve())],
                       check=True, cwd=lite_dir, stdout=subprocess.DEVNULL)
    size = sum(p.stat().st_size for p in output.rglob("*") if p.is_file())
    say(f"The browser edition is in {output} ({size / 1e6:.0f} MB, {len(packages)} wheels). Serve it with\n"
        f"  python -m http.server -d {output}\nand open http://localhost:8000/lab/index.html")


if __name__ == "__main__":
    build(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "build" / "lite")
