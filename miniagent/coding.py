"""A coding agent's tools (notebook 14): a file editor in the shape of the API's text-editor tool,
and a shell that runs in the sandbox.

`Workspace(folder)` holds the task's folder. Its editor (`str_replace_based_edit_tool`, as the
API names the text-editor tool) takes a `command`:

- `view`: a file with numbered lines ("12: text"), `view_range` [first, last] (last -1: to the
  end); a folder: its files two levels deep, hidden ones left out;
- `str_replace`: `old_str` must occur exactly once (whitespace included), and becomes `new_str`;
- `create`: a file with `file_text` (folders made as needed);
- `insert`: `new_str` after line `insert_line` (0: at the top).

Every path is the folder's: relative to it, or absolute under it. A path that leads outside
(`..`, another absolute path, a symlink pointing out) is refused, as is a file that is not text.
A mistake is an error the model can act on ("old_str occurs 3 times, at lines 4, 9, 12: add
context"), through the registry's tool boundary.

`bash` runs a command with `Sandbox` (miniagent.sandbox): the same folder at /work, no network;
with `background` it returns at once with a job id, and `bash_job` reads the job's output so far,
its result once ended (waiting up to `wait` seconds for it), or cancels it (notebook 15's
background work).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from miniagent.sandbox import Job, Limits, Sandbox
from miniagent.tools import Tool, ToolRegistry

EDITOR = "str_replace_based_edit_tool"
MAX_VIEW_CHARS = 20_000
MAX_FILE_BYTES = 1_000_000


class Workspace:
    """The task's folder, and the tools that read, edit and run in it."""

    def __init__(self, folder: str | Path, sandbox: Sandbox | None = None, max_view_chars: int = MAX_VIEW_CHARS) -> None:
        self.folder = Path(folder).resolve()
        if not self.folder.is_dir():
            raise ValueError(f"{self.folder} is not a folder")
        self.sandbox = sandbox
        self.max_view_chars = max_view_chars
        self.jobs: dict[str, Job] = {}  # commands started in the background, by id

    # --- paths ----------------------------------------------------------------------

    def resolve(self, path: str) -> Path:
        """The folder's file that `path` names; ValueError when it leads outside the folder."""
        if not isinstance(path, str) or not path.strip() or "\0" in path:
            raise ValueError("path must be a file's path in the task folder, e.g. src/app.py")
        given = Path(path)
        if given.is_absolute() and given.parts[:2] == ("/", "work"):  # the sandbox's name for the folder
            given = Path(*given.parts[2:]) if len(given.parts) > 2 else Path(".")
        target = (self.folder / given).resolve()  # follows symlinks: one pointing out is caught here
        if target != self.folder and self.folder not in target.parents:
            raise ValueError(f"{path} is outside the task folder; give a path inside it, e.g. src/app.py")
        return target

    def _text(self, path: str) -> tuple[Path, str]:
        target = self.resolve(path)
        if not target.is_file():
            raise ValueError(f"{path} is not a file" + (" (it is a folder: view it to list it)" if target.is_dir() else
                                                        ": view the folder to see which files there are"))
        if target.stat().st_size > MAX_FILE_BYTES:
            raise ValueError(f"{path} is over {MAX_FILE_BYTES:,} bytes: view a range of it with view_range")
        try:
            return target, target.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"{path} is not UTF-8 text") from None

    def _clip(self, text: str) -> str:
        if len(text) <= self.max_view_chars:
            return text
        return text[:self.max_view_chars] + f"\n[clipped: {len(text):,} characters; view a smaller view_range]"

    # --- the editor's commands ------------------------------------------------------

    def view(self, path: str, view_range: list[int] | None = None) -> str:
        target = self.resolve(path)
        if target.is_dir():
            found = sorted(p.relative_to(self.folder).as_posix() + ("/" if p.is_dir() else "")
                           for p in target.rglob("*")
                           if len(p.relative_to(target).parts) <= 2
                           and not any(part.startswith(".") for part in p.relative_to(self.folder).parts))
            return self._clip("\n".join(found) or "(an empty folder)")
        _, text = self._text(path)
        lines = text.splitlines()
        first, last = 1, len(lines)
        if view_range is not None:
            if (not isinstance(view_range, list) or len(view_range) != 2
                    or not all(isinstance(n, int) and not isinstance(n, bool) for n in view_range)):
                raise ValueError("view_range is two line numbers, [first, last]; last -1 means to the end")
            first, last = view_range[0], (len(lines) if view_range[1] == -1 else view_range[1])
            if not 1 <= first <= max(last, 1) or last > len(lines):
                raise ValueError(f"view_range {view_range} is outside the file's {len(lines)} lines")
        return self._clip("\n".join(f"{n}: {lines[n - 1]}" for n in range(first, last + 1)) or "(an empty file)")

    def str_replace(self, path: str, old_str: str, new_str: str = "") -> str:
        target, text = self._text(path)
        if not old_str:
            raise ValueError("old_str is empty: give the exact text to replace, with enough lines to be unique")
        count = text.count(old_str)
        if count == 0:
            raise ValueError(f"old_str does not occur in {path}: view the file and copy the text exactly, "
                             "whitespace and indentation included")
        if count > 1:
            at, start = [], 0
            while (i := text.find(old_str, start)) != -1:
                at.append(text.count("\n", 0, i) + 1)
                start = i + 1
            raise ValueError(f"old_str occurs {count} times in {path}, at lines {', '.join(map(str, at))}: "
                             "add the lines around it so that it occurs once")
        target.write_text(text.replace(old_str, new_str, 1), encoding="utf-8")
        line = text.count("\n", 0, text.find(old_str)) + 1
        return f"Replaced 1 occurrence in {path} (line {line})."

    def create(self, path: str, file_text: str) -> str:
        target = self.resolve(path)
        if target.is_dir():
            raise ValueError(f"{path} is a folder")
        existed = target.exists()
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(file_text, encoding="utf-8")
        return f"{'Overwrote' if existed else 'Created'} {path} ({len(file_text.splitlines())} lines)."

    def insert(self, path: str, insert_line: int, new_str: str) -> str:
        target, text = self._text(path)
        lines = text.splitlines(keepends=True)
        if not isinstance(insert_line, int) or not 0 <= insert_line <= len(lines):
            raise ValueError(f"insert_line is from 0 (the top) to {len(lines)} (the end), not {insert_line!r}")
        added = new_str if new_str.endswith("\n") else new_str + "\n"
        if insert_line and not lines[insert_line - 1].endswith("\n"):
            lines[insert_line - 1] += "\n"
        lines.insert(insert_line, added)
        target.write_text("".join(lines), encoding="utf-8")
        return f"Inserted {len(added.splitlines())} line(s) after line {insert_line} of {path}."

    def edit(self, command: str, path: str, **options: Any) -> str:
        """One call of the editor tool: `command` with its own options."""
        actions = {"view": self.view, "str_replace": self.str_replace, "create": self.create, "insert": self.insert}
        if command not in actions:
            raise ValueError(f"command is one of {', '.join(actions)}, not {command!r}")
        try:
            return actions[command](path, **options)
        except TypeError:
            wanted = {"view": "path, view_range (optional)", "str_replace": "path, old_str, new_str",
                      "create": "path, file_text", "insert": "path, insert_line, new_str"}[command]
            raise ValueError(f"{command} takes {wanted}; got {', '.join(['path', *options])}") from None

    # --- the tools ------------------------------------------------------------------

    def editor_tool(self) -> Tool:
        schema = {"type": "object", "properties": {
            "command": {"type": "string", "enum": ["view", "str_replace", "create", "insert"],
                        "description": "what to do"},
            "path": {"type": "string", "description": "a file or folder in the task folder, e.g. src/app.py"},
            "view_range": {"type": "array", "items": {"type": "integer"},
                           "description": "view: [first, last] line (last -1: to the end)"},
            "old_str": {"type": "string", "description": "str_replace: the exact text to replace, occurring once"},
            "new_str": {"type": "string", "description": "str_replace: the new text; insert: the text to insert"},
            "file_text": {"type": "string", "description": "create: the whole file"},
            "insert_line": {"type": "integer", "description": "insert: after this line (0: at the top)"}},
            "required": ["command", "path"], "additionalProperties": False}
        description = ("View, create and edit text files in the task folder. view shows a file with line numbers "
                       "(or lists a folder); str_replace replaces text that occurs exactly once; create writes a "
                       "whole file; insert adds text after a line.")
        return Tool(EDITOR, description, schema, lambda command, path, **options: self.edit(command, path, **options))

    def shell_tool(self, limits: Limits | None = None) -> Tool:
        self.sandbox = sandbox = self.sandbox or Sandbox(self.folder, limits or Limits())
        schema = {"type": "object", "properties": {
            "command": {"type": "string", "description": "a shell command, run in the task folder"},
            "background": {"type": "boolean", "description": "start it and return at once with a job id "
                                                              "(read it later with bash_job)"}},
            "required": ["command"], "additionalProperties": False}
        description = ("Run a shell command in the task folder (/work), without network, for at most "
                       f"{sandbox.limits.seconds:g} s, e.g. to run the tests: python3 -m unittest")

        def bash(command: str, background: bool = False) -> str:
            if not background:
                return sandbox.run(command).text()
            job_id = f"job-{len(self.jobs) + 1}"
            self.jobs[job_id] = sandbox.start(command)
            return f"started {job_id}: ask bash_job for its output, or to cancel it"

        return Tool("bash", description, schema, bash, timeout=sandbox.limits.seconds + 5)

    def job_tool(self) -> Tool:
        schema = {"type": "object", "properties": {
            "job_id": {"type": "string", "description": "the id bash gave, e.g. job-1"},
            "wait": {"type": "number", "description": "seconds to wait for it to end, if it is still running "
                                                      "(0: answer at once, the default)"},
            "cancel": {"type": "boolean", "description": "stop it and everything it started"}},
            "required": ["job_id"], "additionalProperties": False}

        def bash_job(job_id: str, cancel: bool = False, wait: float = 0) -> str:
            job = self.jobs.get(job_id)
            if job is None:
                raise ValueError(f"no job {job_id!r}; the jobs are: {', '.join(self.jobs) or '(none)'}")
            if cancel:
                return job.cancel().text()
            if wait > 0:  # a number: the registry checked the arguments against the schema
                job.wait(timeout=wait)  # at most its own time limit, by which it has ended
            if job.running():
                return f"{job_id} is still running ({time.monotonic() - job.started:.0f} s); its output so far:\n" + \
                    (job.so_far() or "(none yet)")
            return job.wait().text()  # type: ignore[union-attr]

        limit = self.sandbox.limits.seconds + 5 if self.sandbox else None  # a wait is at most the job's limit
        return Tool("bash_job", "The output of a command started with bash(background=true), or cancel it.",
                    schema, bash_job, **({"timeout": limit} if limit else {}))

    def tools(self, shell: bool = True, needs_approval: bool = False) -> ToolRegistry:
        """The editor, and the shell unless `shell` is False; `needs_approval` for Permissions to govern them."""
        chosen = [self.editor_tool()] + ([self.shell_tool(), self.job_tool()] if shell else [])
        for t in chosen:
            t.needs_approval = needs_approval
        return ToolRegistry(chosen)
