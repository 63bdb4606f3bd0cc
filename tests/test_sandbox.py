"""The sandbox as an attacker meets it (make test-sandbox, which CI runs; needs bubblewrap).

Each test is one attack from inside a command the model could send, and asserts it was refused
or contained, and that this machine was left as it was.
"""

from __future__ import annotations

import http.server
import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

from miniagent.sandbox import Limits, Sandbox, bwrap

pytestmark = [pytest.mark.sandbox,
              pytest.mark.skipif(bwrap() is None, reason="bubblewrap is not installed (apt-get install bubblewrap)")]


@pytest.fixture
def box(tmp_path):
    (tmp_path / "task").mkdir()
    (tmp_path / "task" / "notes.txt").write_text("the task's own file\n", encoding="utf-8")
    return Sandbox(tmp_path / "task", Limits(seconds=5))


def test_the_task_folder_is_the_working_directory_and_writable(box):
    ran = box.run("pwd; cat notes.txt; echo made > new.txt; cat new.txt")
    assert ran.exit_code == 0 and ran.stdout.split() == ["/work", "the", "task's", "own", "file", "made"]
    assert (box.folder / "new.txt").read_text(encoding="utf-8") == "made\n"


@pytest.mark.parametrize("path", ["/etc/passwd", "/etc/shadow", "/root/.bashrc", "/home", str(Path.home()),
                                  str(Path(__file__).resolve())])
def test_reading_outside_the_folder_finds_nothing(box, path):
    ran = box.run(f"cat {path} || ls {path}")
    assert ran.exit_code != 0 and "root:" not in ran.stdout


def test_proc_shows_only_the_sandboxs_own_processes(box, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret-do-not-leak")
    ran = box.run("ls /proc | grep -c '^[0-9]'; cat /proc/1/environ /proc/1/cmdline")
    assert int(ran.stdout.split()[0]) <= 4  # bwrap's init, the shell, ls, grep: not this machine's hundreds
    assert "sk-ant" not in ran.stdout + ran.stderr


def test_dot_dot_stays_inside(box):
    ran = box.run("cd ../../../..; pwd; ls; cat etc/passwd")
    assert ran.stdout.split()[0] == "/" and "passwd" not in ran.stdout.split()[1:] and ran.exit_code != 0


def test_a_symlink_planted_in_the_folder_points_at_nothing(box):
    os.symlink("/etc/passwd", box.folder / "passwd")
    os.symlink(str(Path(__file__).resolve().parents[1]), box.folder / "repo")
    ran = box.run("cat passwd; ls repo/")
    assert ran.exit_code != 0 and "root:" not in ran.stdout and "README" not in ran.stdout


def test_a_symlink_made_inside_cannot_reach_out(box):
    ran = box.run("ln -s /etc/hostname h && cat h; ln -s / root && ls root/")
    assert "sandbox" not in ran.stdout and not (Path("/etc") / "x").exists()
    assert sorted(ran.stdout.split()) == sorted(set(ran.stdout.split()))  # the jail's /: usr, work, tmp...
    assert "home" not in ran.stdout.split() and "etc" in ran.stdout.split()  # only /etc/alternatives


def test_writing_ssh_keys_lands_in_the_folder_not_the_home(box):
    before = (Path.home() / ".ssh" / "authorized_keys").read_bytes() if (Path.home() / ".ssh" / "authorized_keys").exists() else None
    ran = box.run("mkdir -p ~/.ssh && echo ssh-ed25519 AAAA attacker >> ~/.ssh/authorized_keys; "
                  f"echo x >> {Path.home()}/.ssh/authorized_keys")
    after = (Path.home() / ".ssh" / "authorized_keys").read_bytes() if (Path.home() / ".ssh" / "authorized_keys").exists() else None
    assert before == after
    assert (box.folder / ".ssh" / "authorized_keys").exists()  # HOME is /work: the folder, which we see
    assert ran.exit_code != 0


def test_system_files_are_read_only(box):
    ran = box.run("touch /usr/bin/evil; echo x > /usr/lib/evil; rm -f /usr/bin/true")
    assert ran.exit_code != 0 and not Path("/usr/bin/evil").exists() and Path("/usr/bin/true").exists()


def test_no_network_not_even_this_machines_loopback(box):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = server.server_address[1]
        ran = box.run(f"python3 -c \"import urllib.request as u; u.urlopen('http://127.0.0.1:{port}/', timeout=2)\"; "
                      "python3 -c \"import socket; socket.create_connection(('1.1.1.1', 53), timeout=2)\"")
    finally:
        server.shutdown()
    assert ran.exit_code != 0 and ran.stderr.count("Error") >= 2 and ran.stdout == ""


def test_no_key_reaches_the_command(box, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret-do-not-leak")
    ran = box.run("env; cat /proc/self/environ")
    assert "sk-ant" not in ran.stdout + ran.stderr and "PATH=/usr/bin:/bin" in ran.stdout


def test_a_fork_bomb_is_contained(box):
    started = time.monotonic()
    ran = box.run("bomb() { bomb | bomb & }; bomb; sleep 2", seconds=3)
    assert time.monotonic() - started < 10
    assert "Cannot fork" in ran.stderr or "Resource temporarily unavailable" in ran.stderr or ran.timed_out
    time.sleep(0.2)
    assert _left_running("bomb") == 0 and _left_running("sh -c bomb") == 0


def test_a_fork_bomb_in_one_sandbox_leaves_another_its_processes(box, tmp_path):
    (tmp_path / "other").mkdir()
    other = Sandbox(tmp_path / "other", Limits(seconds=5))
    bomb = box.start("bomb() { bomb | bomb & }; bomb 2>/dev/null; sleep 2; echo bomb done")
    try:
        time.sleep(0.5)  # the bomb has used up its own 64 processes by now
        ran = other.run("for i in 1 2 3 4 5 6 7 8; do sh -c true; done; echo still works")
        assert ran.exit_code == 0 and ran.stdout.strip() == "still works", ran.text()
    finally:
        bomb.cancel()


def test_a_command_that_never_ends_is_killed_with_its_children(box):
    started = time.monotonic()
    ran = box.run("sleep 1001 & sleep 1002 & (sleep 1003; echo) & wait", seconds=1)
    assert ran.timed_out and ran.exit_code is None and time.monotonic() - started < 5
    time.sleep(0.2)  # the kernel tears the namespace down as its first process dies
    assert _left_running("sleep 100") == 0
    assert "time limit" in ran.text()


def test_huge_output_is_clipped_and_bounded(box):
    ran = box.run("yes hello", seconds=2)
    assert ran.truncated and len(ran.stdout) == box.limits.max_output_chars
    assert ran.seconds < 5  # killed by the file-size limit (SIGXFSZ) or the clock, whichever came first


def test_memory_is_bounded(box):
    ran = box.run("python3 -c \"b = bytearray(2 * 1024**3); print('allocated')\"")
    assert "allocated" not in ran.stdout and "MemoryError" in ran.stderr


def test_a_big_file_is_refused(box):
    ran = box.run("head -c 64M /dev/zero > big.bin")
    assert ran.exit_code != 0 and (box.folder / "big.bin").stat().st_size <= box.limits.file_mb * 2**20


def test_hostile_command_strings_get_a_clear_error(box):
    with pytest.raises(ValueError, match="NUL"):
        box.run("echo a\0b")
    with pytest.raises(ValueError, match="empty"):
        box.run("   ")
    ran = box.run("printf '\\033[2J\\x07\\x00'; echo 日本語")
    assert ran.exit_code == 0 and "日本語" in ran.stdout


def test_without_bubblewrap_it_refuses_unless_asked_by_name(tmp_path, monkeypatch):
    import miniagent.sandbox as sandbox
    monkeypatch.setattr(sandbox, "bwrap", lambda: None)
    with pytest.raises(RuntimeError, match="apt-get install bubblewrap"):
        Sandbox(tmp_path)
    bare = Sandbox(tmp_path, isolation="none")
    assert bare.run("echo unisolated").stdout == "unisolated\n" and bare.run("true").isolation == "none"


def _left_running(pattern: str) -> int:
    listed = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout.splitlines()
    return sum(1 for line in listed if line.startswith(pattern) or line.startswith(f"sh -c {pattern}"))


def _use(tools, name, **input):
    return tools.run({"type": "tool_use", "id": "t", "name": name, "input": input})


def test_the_coding_tools_fix_a_failing_test_in_the_jail(failing_repo):
    """The real task's steps without a model: run the tests (red), edit with the editor tool, run them (green)."""
    from miniagent.coding import EDITOR, Workspace

    repo = failing_repo
    tools = Workspace(repo, Sandbox(repo, Limits(seconds=20))).tools()
    red = _use(tools, "bash", command="python3 -m unittest -q 2>&1")
    assert "FAILED (failures=1)" in red["content"] and "[exit code 1]" in red["content"]
    fixed = _use(tools, EDITOR, command="str_replace", path="calc.py", old_str="return a - b", new_str="return a + b")
    assert not fixed.get("is_error")
    green = _use(tools, "bash", command="python3 -m unittest -q 2>&1")
    assert "OK" in green["content"] and "exit code" not in green["content"]


def test_a_background_command_is_polled_collected_and_cancelled(box):
    job = box.start("echo started; sleep 1; echo finished")
    assert job.running() and box.run("echo meanwhile").stdout == "meanwhile\n"  # the conversation goes on
    ran = job.wait(timeout=10)
    assert ran.exit_code == 0 and ran.stdout == "started\nfinished\n" and not job.running()
    long = box.start("echo begun; sleep 1004")
    time.sleep(0.3)
    assert long.running() and long.so_far() == "begun\n"
    cancelled = long.cancel()
    assert "[cancelled]" in cancelled.stderr and cancelled.exit_code is None
    time.sleep(0.2)
    assert _left_running("sleep 1004") == 0
    endless = box.start("sleep 1005", seconds=0.5)
    time.sleep(0.8)
    assert not endless.running() and endless.wait().timed_out


def test_a_job_started_in_a_thread_that_ends_keeps_running(box):
    started = []
    worker = threading.Thread(target=lambda: started.append(box.start("sleep 0.6; echo survived")))
    worker.start()
    worker.join()  # a tool's worker thread ends as the call returns: the jail must not die with it
    time.sleep(0.3)
    assert started[0].running() and started[0].wait().stdout == "survived\n"


def test_background_jobs_through_the_tools(tmp_path):
    from miniagent.coding import Workspace

    (tmp_path / "w").mkdir()
    tools = Workspace(tmp_path / "w", Sandbox(tmp_path / "w", Limits(seconds=5))).tools()

    def use(name, **input):
        return _use(tools, name, **input)["content"]

    assert use("bash", command="sleep 0.5; echo slow done", background=True).startswith("started job-1")
    assert "job-1 is still running" in use("bash_job", job_id="job-1")
    time.sleep(0.8)
    assert use("bash_job", job_id="job-1") == "slow done"
    use("bash", command="sleep 1006", background=True)
    assert "[cancelled]" in use("bash_job", job_id="job-2", cancel=True)
    assert "no job 'job-9'; the jobs are: job-1, job-2" in use("bash_job", job_id="job-9")


def _coding_agent(repo, rules):
    import miniagent
    from miniagent.coding import Workspace
    from miniagent.mock import coding

    llm = miniagent.connect(offline=True, quiet=True)
    llm.mock.script(coding.model(), repeat=True)
    tools = Workspace(repo, Sandbox(repo, Limits(seconds=20))).tools(needs_approval=True)
    return miniagent.Agent(llm, tools, approve=rules.approver()), llm


def test_the_scripted_coding_model_fixes_the_failing_test_within_the_rules(failing_repo):
    from miniagent.permissions import Permissions

    repo = failing_repo
    rules = Permissions(allow=["bash(python3 -m unittest*)", "str_replace_based_edit_tool(view *)",
                               "str_replace_based_edit_tool(str_replace *.py)"], deny=["bash(rm *)"])
    agent, llm = _coding_agent(repo, rules)
    result = agent.run("The tests fail. Make them pass.")
    assert result.stop == "end_turn" and result.text.startswith("All tests pass.")
    assert "return a + b" in (repo / "calc.py").read_text(encoding="utf-8")
    assert [d.effect for d in rules.decisions] == ["allow"] * 5  # run, view test, view module, edit, run
    assert llm.usage.calls == 6 and rules.stopped() == []


def test_a_rule_that_denies_the_edit_stops_the_task_and_says_so(failing_repo):
    from miniagent.permissions import Permissions

    repo = failing_repo
    rules = Permissions(allow=["bash(python3 -m unittest*)", "str_replace_based_edit_tool(view *)"],
                        deny=["str_replace_based_edit_tool(str_replace *)"])
    agent, _ = _coding_agent(repo, rules)
    result = agent.run("The tests fail. Make them pass.")
    assert "was refused" in result.text and "deny" in result.text
    assert "return a - b" in (repo / "calc.py").read_text(encoding="utf-8") and len(rules.stopped()) == 1
