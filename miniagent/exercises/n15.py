"""Checks for notebook 15 · A long-running harness."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from miniagent.exercises._core import (_check_callable, _exercise, _kind, _returned_or_raised, _run, _show, not_yet,
                                       wrong_kind)

# --- exercise 1: a SKILL.md's front matter ----------------------------------------------------

FILES = [  # (what, text, expected or None for ValueError, zh)
    ("a plain skill", "---\nname: csv-reports\ndescription: Summarise a CSV file.\n---\n# Steps\n1. Look.\n",
     {"name": "csv-reports", "description": "Summarise a CSV file.", "body": "# Steps\n1. Look.\n"}, "普通的技能文件"),
    ("a description with ': ' in it", "---\nname: python-tests\ndescription: Fix a failing test. Use when: a test "
     "fails.\n---\nRun the tests.", {"name": "python-tests", "description": "Fix a failing test. Use when: a test fails.",
                                     "body": "Run the tests."}, "description 里带有 ': '"),
    ("quoted values", "---\nname: \"commit-messages\"\ndescription: 'Write a commit message.'\n---\nBody.",
     {"name": "commit-messages", "description": "Write a commit message.", "body": "Body."}, "值带引号"),
    ("a colon without a space after it", "---\nname:deploy\ndescription:Ship it.\n---\nSteps.",
     {"name": "deploy", "description": "Ship it.", "body": "Steps."}, "冒号后面没有空格"),
    ("blank lines before the body, and a blank line in the block",
     "---\nname: a\n\ndescription: b\n---\n\n\nThe body.\n\nMore.", {"name": "a", "description": "b",
                                                                     "body": "The body.\n\nMore."},
     "正文前有空行、front matter 里也有空行"),
    ("a body that holds --- itself", "---\nname: a\ndescription: b\n---\nAbove.\n---\nBelow.",
     {"name": "a", "description": "b", "body": "Above.\n---\nBelow."}, "正文里自己也有 ---"),
    ("Windows line endings", "---\r\nname: a\r\ndescription: b\r\n---\r\nBody.", {"name": "a", "description": "b",
                                                                              "body": "Body."}, "Windows 换行符"),
    ("no front matter at all", "# Just a heading\nname: a\n", None, "根本没有 front matter"),
    ("a block that never closes", "---\nname: a\ndescription: b\nThe body.", None, "front matter 没有结束的 ---"),
]


def _same_body(got: Any, want: str) -> bool:
    return isinstance(got, str) and got.rstrip("\n") == want.rstrip("\n")


@_exercise("15", 1)
def check_15_1(front_matter_of: Any) -> None:
    """`front_matter_of(text)`: {"name", "description", "body"}; ValueError without a block."""
    _check_callable(front_matter_of, "front_matter_of", 'front_matter_of(text) returns {"name", "description", "body"}',
                    zh='front_matter_of(text) 返回 {"name", "description", "body"}')
    for what, text, want, zh in FILES:
        kind, got = _run(_returned_or_raised, front_matter_of, text, name="front_matter_of", case=f"for {what}",
                         case_zh=f"对于{zh}")
        if want is None:
            if kind != "raised":
                not_yet(f"for {what}, front_matter_of returned {_show(got)}: raise ValueError, so that a broken "
                        "SKILL.md is found when the skills are loaded, not when the model needs one",
                        zh=f"对于{zh}，front_matter_of 返回了 {_show(got)}：要抛出 ValueError，这样坏掉的 SKILL.md "
                           "在加载技能时就会被发现，而不是等到模型需要它的时候")
            continue
        if kind == "raised":
            not_yet(f"for {what}, front_matter_of raised ValueError: {_show(got)}; this file is valid",
                    zh=f"对于{zh}，front_matter_of 抛出了 ValueError：{_show(got)}；这个文件是合法的")
        if not isinstance(got, Mapping):
            wrong_kind(f"front_matter_of returned {_kind(got)} for {what}: return a dict with name, description and body",
                       zh=f"对于{zh}，front_matter_of 返回的是{_kind(got)}：要返回一个包含 name、description 和 body 的 dict")
        for key in ("name", "description"):
            if got.get(key) != want[key]:
                not_yet(f"for {what}, {key} is {_show(got.get(key))}, expected {want[key]!r}",
                        zh=f"对于{zh}，{key} 是 {_show(got.get(key))}，应该是 {want[key]!r}")
        if not _same_body(got.get("body"), want["body"]):
            not_yet(f"for {what}, body is {_show(got.get('body'))}, expected {want['body']!r} (everything after the "
                    "block's closing ---, without the blank lines that start it)",
                    zh=f"对于{zh}，body 是 {_show(got.get('body'))}，应该是 {want['body']!r}（front matter 结束的 --- "
                       "之后的全部内容，去掉开头的空行）")


# --- exercise 2: clear the old tool results ---------------------------------------------------


def _session(n: int) -> list[dict]:
    """A session of n tool calls, one per turn, the third an error, with text between."""
    messages: list[dict] = [{"role": "user", "content": "Read the logs."}]
    for i in range(1, n + 1):
        messages.append({"role": "assistant", "content": [
            {"type": "text", "text": f"Reading log {i}."},
            {"type": "tool_use", "id": f"toolu_{i:02d}", "name": "view", "input": {"path": f"log-{i}.txt"}}]})
        result = {"type": "tool_result", "tool_use_id": f"toolu_{i:02d}", "content": f"log {i}: " + "ok " * 50}
        if i == 3:
            result["is_error"] = True
        messages.append({"role": "user", "content": [result]})
    messages.append({"role": "assistant", "content": [{"type": "text", "text": "All read."}]})
    return messages


def _results(messages: Any) -> list[dict]:
    return [b for m in messages if isinstance(m, dict) and isinstance(m.get("content"), list)
            for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]


@_exercise("15", 2)
def check_15_2(clear_old_results: Any) -> None:
    """`clear_old_results(messages, keep)`: all but the last `keep` tool results' content "[cleared]"."""
    from miniagent.messages import conversation_error

    _check_callable(clear_old_results, "clear_old_results", "clear_old_results(messages, keep) returns new messages",
                    zh="clear_old_results(messages, keep) 返回新的消息列表")
    for n, keep in ((6, 2), (4, 0), (3, 5), (5, 1)):
        original = _session(n)
        given = copy.deepcopy(original)
        got = _run(clear_old_results, given, keep, name="clear_old_results", case=f"with {n} results and keep={keep}",
                   case_zh=f"有 {n} 个结果、keep={keep} 时")
        if not isinstance(got, list):
            wrong_kind(f"clear_old_results returned {_kind(got)}: return the list of messages",
                       zh=f"clear_old_results 返回的是{_kind(got)}：要返回消息列表")
        if given != original:
            not_yet("clear_old_results changed the messages it was given: work on a copy (copy.deepcopy), since "
                    "the given list is the session's record",
                    zh="clear_old_results 改动了传进来的消息：要在副本上改（copy.deepcopy），传进来的列表是会话的记录")
        if len(got) != len(original):
            not_yet(f"with {n} results, the list has {len(got)} messages, expected {len(original)}: clear the results' "
                    "content, but keep every message (a tool_use without its tool_result is refused by the API)",
                    zh=f"有 {n} 个结果时，列表里有 {len(got)} 条消息，应该是 {len(original)} 条：清掉结果的内容，"
                       "但每条消息都要保留（缺了 tool_result 的 tool_use 会被 API 拒绝）")
        problem = conversation_error(got)
        if problem:
            not_yet(f"the API would refuse the result: {problem}", zh=f"API 会拒绝这个结果：{problem}")
        results, before = _results(got), _results(original)
        cleared = max(0, n - keep)
        for i, (block, was) in enumerate(zip(results, before)):
            want = "[cleared]" if i < cleared else was["content"]
            if block.get("tool_use_id") != was["tool_use_id"]:
                not_yet(f"result {i + 1}'s tool_use_id changed: keep every id as it was",
                        zh=f"第 {i + 1} 个结果的 tool_use_id 变了：每个 id 都要保持原样")
            if block.get("content") != want:
                which = "one of the oldest" if i < cleared else f"one of the last {keep}"
                which_zh = "最旧的那些之一" if i < cleared else f"最后 {keep} 个之一"
                not_yet(f"with {n} results and keep={keep}, result {i + 1} ({which}) has {_show(block.get('content'))}, "
                        f"expected {_show(want)}",
                        zh=f"有 {n} 个结果、keep={keep} 时，第 {i + 1} 个结果（{which_zh}）是 {_show(block.get('content'))}，"
                           f"应该是 {_show(want)}")
            if block.get("is_error") != was.get("is_error"):
                not_yet(f"result {i + 1}'s is_error changed: keep it, the model should still know that call failed",
                        zh=f"第 {i + 1} 个结果的 is_error 变了：要保留它，模型仍然需要知道那次调用失败了")
        others = [b for m in got for b in (m["content"] if isinstance(m["content"], list) else [m["content"]])
                  if not (isinstance(b, dict) and b.get("type") == "tool_result")]
        expected_others = [b for m in original for b in (m["content"] if isinstance(m["content"], list) else [m["content"]])
                           if not (isinstance(b, dict) and b.get("type") == "tool_result")]
        if others != expected_others:
            not_yet("something other than a tool_result's content changed: the text and the tool_use blocks stay "
                    "as they were", zh="除了 tool_result 的内容，还有别的东西变了：文本块和 tool_use 块都要保持原样")


# --- exercise 3: a hook that keeps .env out of reach ------------------------------------------

EDITOR = "str_replace_based_edit_tool"
HOOK_CASES = [  # (name, arguments, blocked, what, zh)
    (EDITOR, {"command": "view", "path": ".env"}, True, "viewing .env", "查看 .env"),
    (EDITOR, {"command": "view", "path": "config/.env"}, True, "viewing config/.env", "查看 config/.env"),
    (EDITOR, {"command": "view", "path": "./.env"}, True, "viewing ./.env", "查看 ./.env"),
    (EDITOR, {"command": "view", "path": "/work/.env"}, True, "viewing /work/.env", "查看 /work/.env"),
    (EDITOR, {"command": "str_replace", "path": "sub/../.env", "old_str": "a", "new_str": "b"}, True,
     "editing sub/../.env", "编辑 sub/../.env"),
    (EDITOR, {"command": "view", "path": ".env.example"}, False, "viewing .env.example", "查看 .env.example"),
    (EDITOR, {"command": "view", "path": ".envrc"}, False, "viewing .envrc", "查看 .envrc"),
    (EDITOR, {"command": "view", "path": "calc.py"}, False, "viewing calc.py", "查看 calc.py"),
    (EDITOR, {"command": "create", "path": "notes.md", "file_text": "see .env for the keys"}, False,
     "creating a file whose text mentions .env", "新建一个正文里提到 .env 的文件"),
    ("bash", {"command": "cat .env"}, True, "cat .env", "cat .env"),
    ("bash", {"command": "cp config/.env /tmp/x"}, True, "cp config/.env /tmp/x", "cp config/.env /tmp/x"),
    ("bash", {"command": "ls; cat .env"}, True, "ls; cat .env", "ls; cat .env"),
    ("bash", {"command": "cat .env.example"}, False, "cat .env.example", "cat .env.example"),
    ("bash", {"command": "python3 -m unittest"}, False, "running the tests", "运行测试"),
]


@_exercise("15", 3)
def check_15_3(no_secrets: Any) -> None:
    """`no_secrets(name, arguments)`: a reason when the call touches a file named .env, else None."""
    _check_callable(no_secrets, "no_secrets", "no_secrets(name, arguments) returns a reason or None",
                    zh="no_secrets(name, arguments) 返回一个理由或 None")
    for name, arguments, blocked, what, zh in HOOK_CASES:
        got = _run(no_secrets, name, dict(arguments), name="no_secrets", case=f"for {what}", case_zh=f"对于{zh}")
        if got is not None and not isinstance(got, str) and got is not False:
            wrong_kind(f"for {what}, no_secrets returned {_kind(got)}: return a reason (a str) to block, None to allow",
                       zh=f"对于{zh}，no_secrets 返回的是{_kind(got)}：要拦下就返回理由（一个 str），放行就返回 None")
        said_block = isinstance(got, str) or got is False
        if blocked and not said_block:
            not_yet(f"{what} was let through: normalise the path (posixpath.normpath) and compare its last part "
                    "with .env; for a shell command, look at each word",
                    zh=f"{zh}：被放行了。要先规范化路径（posixpath.normpath），再拿最后一部分和 .env 比较；"
                       "对 shell 命令，要逐个单词检查")
        if said_block and not blocked:
            not_yet(f"{what} was blocked ({_show(got)}): only a file named exactly .env is a secret here; "
                    "'.env' in the text is not enough",
                    zh=f"{zh}：被拦下了（{_show(got)}）：这里只有名字恰好是 .env 的文件才算机密；"
                       "文本里出现 '.env' 不能说明什么")
        if blocked and got is False:
            not_yet(f"for {what}, no_secrets returned False: return the reason as a string, so that the model "
                    "(and whoever reads the log) knows why", zh=f"对于{zh}，no_secrets 返回了 False：要以字符串返回理由，"
                                                               "模型（还有看日志的人）才知道为什么")
