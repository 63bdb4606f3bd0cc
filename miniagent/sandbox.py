"""A shell command a model asked for, run in a jail (notebook 14): the task's folder and nothing else
of this machine's files, no network, and bounded time, memory, processes and output.

The isolation is bubblewrap's (`bwrap`, Debian's `bubblewrap`: the tool Flatpak is built on). The
command gets new mount, PID, network, IPC and UTS namespaces; the system's /usr read-only (programs,
not data); the task's folder read-write at /work; an empty /tmp; and no /etc, /home, /root or /proc of
this machine. Its environment is four variables, so no API key reaches it. Run as root (a container,
CI), it runs as a user of its own (a uid no account has, one per Sandbox) with every capability
dropped: the kernel does not count root's processes against a limit, and counts a user's processes
across the machine, so a fork bomb in one sandbox must not take the processes of another. (Not as
root, bwrap makes a user namespace, in which the count starts at zero.) The limits are prlimit's
(address space, processes, file size: which also bounds its output, written to files), a wall-clock
timeout that kills the whole PID namespace, and output read up to `max_output_chars`.

Without bubblewrap, `Sandbox(folder)` refuses, saying how to install it. `Sandbox(folder,
isolation="none")` must be asked for by name: the same limits (the shell's ulimit where prlimit is
missing, as on macOS), and no isolation at all: the command can read your files and reach the
network. Windows has no /bin/sh: there, use WSL.

What it does not protect against: the kernel itself (namespaces share it; a VM or gVisor is the next
step), system calls (no seccomp filter), CPU spent within the time limit, the disk (the limit is per
file, not per folder), and reading what /usr holds (installed software, public).
"""

from __future__ import annotations

import os
import secrets
import shlex
import shutil
import subprocess
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

FIRST_UID = 200_000  # as root, each Sandbox runs its commands as a uid from here up, no account's
# The command's whole environment: no key, ever. No .pyc files: an edit made in the same second as the
# last run, of the same size ("a - b" to "a + b"), would leave Python running the stale bytecode.
_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"}
INSTALL_HINT = ("bubblewrap (bwrap) is not installed: on Debian or Ubuntu `sudo apt-get install bubblewrap`, on "
                "Fedora `sudo dnf install bubblewrap`; macOS and Windows have none (use a Linux VM or container). "
                "Sandbox(folder, isolation='none') runs without any isolation, if you must.")


@dataclass(frozen=True)
class Limits:
    seconds: float = 10.0          # wall clock, then every process of the command is killed
    memory_mb: int = 512           # address space of each process
    processes: int = 64            # processes of the sandbox's user at once (a fork bomb stops here)
    file_mb: int = 16              # largest file it may write, its output included
    max_output_chars: int = 20_000  # of stdout and of stderr, each, that come back


@dataclass
class Ran:
    """What a command did: its exit code (negative: killed by that signal), its output, and why it stopped."""

    command: str
    exit_code: int | None
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False
    truncated: bool = False
    isolation: str = "bwrap"

    def text(self) -> str:
        """The result as a model reads it: output, errors, and the exit code or why it was stopped."""
        parts = [self.stdout.rstrip("\n")] if self.stdout.strip() else []
        if self.stderr.strip():
            parts.append("stderr:\n" + self.stderr.rstrip("\n"))
        if self.timed_out:
            parts.append("[stopped: still running after the time limit; every process it started was killed]")
        elif self.exit_code:
            parts.append(f"[exit code {self.exit_code}]")
        if self.truncated:
            parts.append("[output clipped]")
        return "\n".join(parts) or "(no output)"


def bwrap() -> str | None:
    """The path of bwrap when it is installed and can make namespaces here, else None."""
    found = shutil.which("bwrap")
    if not found:
        return None
    try:  # installed is not enough: a container or Ubuntu's AppArmor may forbid the namespaces it needs
        probe = subprocess.run([found, *_system(), "--unshare-net", "--", "/usr/bin/true"], capture_output=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return found if probe.returncode == 0 else None


def _system() -> list[str]:
    """bwrap's options for the system's programs, read-only: /usr, and Debian's merged /bin -> usr/bin links."""
    options = ["--ro-bind", "/usr", "/usr"]
    for link in ("bin", "sbin", "lib", "lib64", "lib32"):
        if Path(f"/{link}").is_symlink():
            options += ["--symlink", os.readlink(f"/{link}"), f"/{link}"]
    return options


class Sandbox:
    """Runs shell commands with `folder` as their world (mounted at /work), within `limits`."""

    def __init__(self, folder: str | Path, limits: Limits = Limits(), isolation: str = "bwrap") -> None:
        if isolation not in ("bwrap", "none"):
            raise ValueError(f"isolation is 'bwrap' or 'none', not {isolation!r}")
        if os.name != "posix":
            raise RuntimeError("the sandbox runs commands with /bin/sh, which Windows lacks: use WSL (Linux on Windows)")
        self.folder = Path(folder).resolve()
        if not self.folder.is_dir():
            raise ValueError(f"{self.folder} is not a folder")
        self.limits, self.isolation = limits, isolation
        self._bwrap = bwrap() if isolation == "bwrap" else None
        if isolation == "bwrap" and self._bwrap is None:
            raise RuntimeError(INSTALL_HINT)
        self.uid = None  # as root: the uid of its own its commands run as, which must be able to write the folder
        if isolation == "bwrap" and os.geteuid() == 0:
            self.uid = FIRST_UID + secrets.randbelow(1_000_000_000)
            for path in [self.folder, *self.folder.rglob("*")]:
                os.lchown(path, self.uid, self.uid)

    def argv(self, command: str) -> list[str]:
        """The command line that runs `command` in the jail (shown in notebook 14)."""
        limits = self.limits
        limited = ["prlimit", f"--as={limits.memory_mb * 2**20}", f"--nproc={limits.processes}",
                   f"--fsize={limits.file_mb * 2**20}", "--", "/bin/sh", "-c", command]
        if self.isolation == "none":
            return limited if shutil.which("prlimit") else _ulimited(command, limits)
        as_its_user = (["setpriv", f"--reuid={self.uid}", f"--regid={self.uid}", "--clear-groups",
                        "--inh-caps=-all", "--bounding-set=-all", "--"] if self.uid is not None else [])
        jail = [self._bwrap, *_system(),
                "--ro-bind-try", "/etc/alternatives", "/etc/alternatives",  # where some of /usr/bin's links point
                "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--bind", str(self.folder), "/work",
                "--chdir", "/work", "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
                "--unshare-cgroup-try", "--hostname", "sandbox", "--die-with-parent", "--new-session",
                "--clearenv"]
        for name, value in (_ENV | {"HOME": "/work"}).items():
            jail += ["--setenv", name, value]
        return jail + ["--"] + as_its_user + limited

    def start(self, command: str, seconds: float | None = None) -> Job:
        """Start `command` in the background and return at once (the conversation goes on meanwhile)."""
        _check(command)
        return Job(self, command, self.limits.seconds if seconds is None else seconds)

    def run(self, command: str, seconds: float | None = None) -> Ran:
        """Run `command` with /bin/sh in the jail and return what it did; never raises for what it does."""
        return self.start(command, seconds).wait()  # type: ignore[return-value] - without a timeout it always ends


class Job:
    """A command started in the background (`Sandbox.start`): poll it, read what it has written so far,
    wait for it, or cancel it; its time limit holds as for `run`, counted from its start."""

    def __init__(self, sandbox: "Sandbox", command: str, seconds: float) -> None:
        self.command, self.seconds, self._sandbox = command, seconds, sandbox
        self._out, self._err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
        self.started = time.monotonic()
        self._process = _popen(sandbox.argv(command), stdin=subprocess.DEVNULL, stdout=self._out,
                               stderr=self._err, cwd=sandbox.folder, env=_ENV | {"HOME": str(sandbox.folder)},
                               start_new_session=True)
        self._ran: Ran | None = None
        self.cancelled = False

    def running(self) -> bool:
        """True while the command runs; past its time limit it is killed here, and counts as timed out."""
        if self._ran is None and self._process.poll() is None and time.monotonic() - self.started > self.seconds:
            self._finish(timed_out=True)
        return self._ran is None and self._process.poll() is None

    def so_far(self) -> str:
        """What it has written to stdout so far (clipped like a result)."""
        return _read(self._out, self._sandbox.limits.max_output_chars)[0]

    def wait(self, timeout: float | None = None) -> Ran | None:
        """Its result once it has ended (within `timeout` seconds, or its own limit), else None."""
        if self._ran is None:
            left = self.seconds - (time.monotonic() - self.started)
            try:
                self._process.wait(timeout=max(0.0, left if timeout is None else min(timeout, left)))
            except subprocess.TimeoutExpired:
                if timeout is not None and time.monotonic() - self.started < self.seconds:
                    return None  # still running, within its limit
            self._finish(timed_out=self._process.poll() is None)
        return self._ran

    def cancel(self) -> Ran:
        """Stop it now, with everything it started; its result says so."""
        if self._ran is None:
            self.cancelled = True
            self._finish(timed_out=False)
        return self._ran  # type: ignore[return-value]

    def _finish(self, timed_out: bool) -> None:
        _kill(self._process)
        stdout, cut_out = _read(self._out, self._sandbox.limits.max_output_chars)
        stderr, cut_err = _read(self._err, self._sandbox.limits.max_output_chars)
        if self.cancelled:
            stderr += "[cancelled]\n"
        code = None if timed_out or self.cancelled else self._process.returncode
        self._ran = Ran(self.command, code, stdout, stderr, round(time.monotonic() - self.started, 3), timed_out,
                        cut_out or cut_err, self._sandbox.isolation)
        self._out.close()
        self._err.close()


def _ulimited(command: str, limits: Limits) -> list[str]:
    """The limits without prlimit (macOS): the shell's own ulimit, then the command. A limit the system
    will not set (macOS and -v) is skipped; -f counts 512-byte blocks in sh, 1,024 in bash (twice the size)."""
    settings = [f"-f {limits.file_mb * 2048}", f"-u {limits.processes} 2>/dev/null || ulimit -p {limits.processes}",
                f"-v {limits.memory_mb * 1024}"]  # processes: -u in bash and zsh, -p in dash
    prefix = "; ".join(f"ulimit {setting} 2>/dev/null" for setting in settings)
    return ["/bin/sh", "-c", f"{prefix}; exec /bin/sh -c {shlex.quote(command)}"]


_launcher: ThreadPoolExecutor | None = None
_launcher_lock = threading.Lock()


def _popen(argv: list[str], **options) -> subprocess.Popen:
    """subprocess.Popen, from the main thread or from one thread that lives as long as the process.

    bwrap's --die-with-parent kills the jail when the *thread* that started it ends (Linux's parent-death
    signal follows the thread), and a tool runs in a worker thread that ends with the call: a job
    started in the background from a tool would die as the tool returned."""
    global _launcher
    if threading.current_thread() is threading.main_thread():
        return subprocess.Popen(argv, **options)
    with _launcher_lock:
        if _launcher is None:
            _launcher = ThreadPoolExecutor(1, thread_name_prefix="sandbox-launcher")
    return _launcher.submit(subprocess.Popen, argv, **options).result()


def _kill(process: subprocess.Popen) -> None:
    """Kill the command and everything it started: its process group, and with bwrap its PID namespace
    (bwrap's child dies with it, and the kernel kills every process of a namespace whose first one died)."""
    if process.poll() is None:
        try:
            os.killpg(process.pid, 9)
        except (ProcessLookupError, PermissionError):
            pass
    process.wait()


def _check(command: str) -> None:
    if not isinstance(command, str) or not command.strip():
        raise ValueError("the command is empty: give a shell command as a string")
    if "\0" in command:
        raise ValueError("the command contains a NUL character, which no shell command can hold")


def _read(file, limit: int) -> tuple[str, bool]:
    file.seek(0)
    data = file.read(limit * 4 + 4)  # UTF-8 is at most 4 bytes a character
    text = data.decode("utf-8", errors="replace")
    clipped = len(text) > limit or len(data) == limit * 4 + 4
    return text[:limit], clipped
