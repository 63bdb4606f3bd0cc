"""The checks of notebooks 14 and 15: the reference passes, plausible wrong answers fail with their hint."""

from __future__ import annotations

import copy
import fnmatch
import posixpath
import re
import shlex
from pathlib import Path

import pytest

from miniagent import exercises
from miniagent.exercises import DONE, NOT_YET, WRONG_KIND


def done(verdict):
    assert verdict.kind == DONE, verdict


def not_yet(verdict, *hints):
    assert verdict.kind == NOT_YET, verdict
    for hint in hints:
        assert hint in verdict.hint, verdict


def wrong_kind(verdict, *hints):
    assert verdict.kind == WRONG_KIND, verdict
    for hint in hints:
        assert hint in verdict.hint, verdict


# --- 14-1 ---------------------------------------------------------------------------------------


def replace_once(text, old, new):
    if not old:
        raise ValueError("old is empty")
    count = text.count(old)
    if count != 1:
        raise ValueError(f"old occurs {count} times")
    return text.replace(old, new, 1)


def test_14_1_reference_and_wrong_answers():
    done(exercises.check_14_1(replace_once))
    not_yet(exercises.check_14_1(lambda t, o, n: t.replace(o, n)), "occurs twice")
    not_yet(exercises.check_14_1(lambda t, o, n: t.replace(o, n, 1)), "occurs twice")

    def no_count(text, old, new):
        if text.count(old) != 1:
            raise ValueError("ambiguous")
        return text.replace(old, new)
    not_yet(exercises.check_14_1(no_count), "say how many times")
    not_yet(exercises.check_14_1(lambda t, o, n: t.replace(o, n, 1) if t.count(o) == 1 else 1 / 0), "ZeroDivisionError")

    def empty_ok(text, old, new):
        if old and text.count(old) != 1:
            raise ValueError(f"occurs {text.count(old)} times")
        return text.replace(old, new, 1)
    not_yet(exercises.check_14_1(empty_ok), "empty old")
    wrong_kind(exercises.check_14_1(lambda t, o, n: None), "a str")
    not_yet(exercises.check_14_1(None), "still None")


# --- 14-2 ---------------------------------------------------------------------------------------


def inside(folder, path):
    folder = Path(folder).resolve()
    target = (folder / path).resolve()
    return target == folder or folder in target.parents


def test_14_2_reference_and_wrong_answers():
    done(exercises.check_14_2(inside))
    not_yet(exercises.check_14_2(lambda f, p: ".." not in str(p)), ".. that comes back in")
    not_yet(exercises.check_14_2(lambda f, p: str((Path(f) / p).resolve()).startswith(str(Path(f).resolve()))),
            "startswith")

    def no_symlinks(folder, path):  # normalises .. but does not follow symlinks
        folder = str(Path(folder).resolve())
        target = posixpath.normpath(posixpath.join(folder, str(path)))
        return target == folder or target.startswith(folder + "/")
    not_yet(exercises.check_14_2(no_symlinks), "symlink pointing out", "resolve() follows symlinks")
    wrong_kind(exercises.check_14_2(lambda f, p: "yes"), "True or False")
    not_yet(exercises.check_14_2(lambda f, p: inside(f, p) if isinstance(f, str) else False), "str or a Path")


# --- 14-3 ---------------------------------------------------------------------------------------


def decide(rules, command):
    parts = [p.strip() for p in re.split(r"\|\||&&|[;|\n]", command) if p.strip()] or [command]

    def matched(effect, part):
        return any(e == effect and fnmatch.fnmatchcase(part, pattern) for e, pattern in rules)

    for effect in ("deny", "ask"):
        if any(matched(effect, part) for part in parts):
            return effect
    if "$(" in command or "`" in command:
        return "ask"
    return "allow" if all(matched("allow", part) for part in parts) else "ask"


def test_14_3_reference_and_wrong_answers():
    done(exercises.check_14_3(decide))

    def first_match(rules, command):
        for effect, pattern in rules:
            if fnmatch.fnmatchcase(command, pattern):
                return effect
        return "ask"
    not_yet(exercises.check_14_3(first_match), "cat calc.py; rm -rf ~", "split the command")

    def trusts_hidden(rules, command):
        return "allow" if decide(rules, command) == "ask" and "$(" in command else decide(rules, command)
    not_yet(exercises.check_14_3(trusts_hidden), "no rule saw it")

    def allow_wins(rules, command):
        parts = [p.strip() for p in re.split(r"\|\||&&|[;|\n]", command) if p.strip()]
        for effect in ("allow", "deny", "ask"):
            if any(fnmatch.fnmatchcase(p, pat) for p in parts for e, pat in rules if e == effect):
                return effect
        return "ask"
    not_yet(exercises.check_14_3(allow_wins), "was allowed")
    wrong_kind(exercises.check_14_3(lambda r, c: True), "'allow', 'ask' or 'deny'")


# --- 15-1 ---------------------------------------------------------------------------------------


def front_matter_of(text):
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise ValueError("no front matter")
    ends = [i for i in range(1, len(lines)) if lines[i].strip() == "---"]
    if not ends:
        raise ValueError("not closed")
    fields = {}
    for line in lines[1:ends[0]]:
        if line.strip():
            key, _, value = line.partition(":")
            fields[key.strip()] = value.strip().strip("\"'")
    return {"name": fields.get("name"), "description": fields.get("description"),
            "body": "\n".join(lines[ends[0] + 1:]).lstrip("\n")}


def test_15_1_reference_and_wrong_answers():
    done(exercises.check_15_1(front_matter_of))

    def naive(text):  # the notebook's inline version
        lines = text.splitlines()
        end = lines.index("---", 1)
        fields = dict(line.split(": ", 1) for line in lines[1:end])
        return {"name": fields["name"], "description": fields["description"], "body": "\n".join(lines[end + 1:])}
    not_yet(exercises.check_15_1(naive), "quoted values")

    def split_all(text):
        result = front_matter_of(text)
        head = text.split("---")[1]
        result["description"] = [line.split(":")[1].strip() for line in head.splitlines() if line.startswith("description")][0]
        return result
    not_yet(exercises.check_15_1(split_all), "': ' in it")

    def last_block(text):
        lines = text.splitlines()
        if lines[0] != "---":
            raise ValueError("no block")
        end = max(i for i, line in enumerate(lines) if line == "---" and i)
        result = front_matter_of(text)
        result["body"] = "\n".join(lines[end + 1:]).lstrip("\n")
        return result
    not_yet(exercises.check_15_1(last_block), "holds --- itself")

    def never_raises(text):
        try:
            return front_matter_of(text)
        except ValueError:
            return {"name": None, "description": None, "body": text}
    not_yet(exercises.check_15_1(never_raises), "raise ValueError")

    def keeps_blank_lines(text):
        result = front_matter_of(text)
        lines = text.splitlines()
        end = [i for i in range(1, len(lines)) if lines[i].strip() == "---"][0]
        result["body"] = "\n".join(lines[end + 1:])
        return result
    not_yet(exercises.check_15_1(keeps_blank_lines), "without the blank lines")
    wrong_kind(exercises.check_15_1(lambda text: ["a", "b", "c"]), "a dict")


# --- 15-2 ---------------------------------------------------------------------------------------


def clear_old_results(messages, keep):
    cleared = copy.deepcopy(messages)
    results = [b for m in cleared if isinstance(m["content"], list) for b in m["content"] if b.get("type") == "tool_result"]
    for block in results[:max(0, len(results) - keep)]:
        block["content"] = "[cleared]"
    return cleared


def test_15_2_reference_and_wrong_answers():
    done(exercises.check_15_2(clear_old_results))

    def in_place(messages, keep):
        results = [b for m in messages if isinstance(m["content"], list) for b in m["content"]
                   if b.get("type") == "tool_result"]
        for block in results[:max(0, len(results) - keep)]:
            block["content"] = "[cleared]"
        return messages
    not_yet(exercises.check_15_2(in_place), "work on a copy")

    def drops(messages, keep):
        return [m for m in messages if not (isinstance(m["content"], list)
                                            and any(b.get("type") == "tool_result" for b in m["content"]))]
    not_yet(exercises.check_15_2(drops), "keep every message")

    def negative_slice(messages, keep):  # results[:-keep] clears everything when keep is 0... and nothing
        cleared = copy.deepcopy(messages)
        results = [b for m in cleared if isinstance(m["content"], list) for b in m["content"]
                   if b.get("type") == "tool_result"]
        for block in results[:-keep]:
            block["content"] = "[cleared]"
        return cleared
    not_yet(exercises.check_15_2(negative_slice), "keep=0")

    def newest_cleared(messages, keep):
        cleared = copy.deepcopy(messages)
        results = [b for m in cleared if isinstance(m["content"], list) for b in m["content"]
                   if b.get("type") == "tool_result"]
        for block in results[keep:]:
            block["content"] = "[cleared]"
        return cleared
    not_yet(exercises.check_15_2(newest_cleared), "result 1")

    def rebuilt(messages, keep):  # loses is_error
        cleared = clear_old_results(messages, keep)
        for m in cleared:
            if isinstance(m["content"], list):
                m["content"] = [{k: v for k, v in b.items() if k != "is_error"} for b in m["content"]]
        return cleared
    not_yet(exercises.check_15_2(rebuilt), "is_error")
    wrong_kind(exercises.check_15_2(lambda m, k: "done"), "list of messages")


# --- 15-3 ---------------------------------------------------------------------------------------


def no_secrets(name, arguments):
    paths = [arguments["path"]] if isinstance(arguments.get("path"), str) else []
    if name == "bash" and isinstance(arguments.get("command"), str):
        paths += shlex.split(arguments["command"])
    for path in paths:
        if posixpath.basename(posixpath.normpath(path.strip(";|&<>"))) == ".env":
            return "a secrets file"
    return None


def test_15_3_reference_and_wrong_answers():
    done(exercises.check_15_3(no_secrets))
    not_yet(exercises.check_15_3(lambda n, a: "no" if a.get("path") == ".env" else None), "config/.env was let through")
    not_yet(exercises.check_15_3(lambda n, a: "no" if ".env" in str(a) else None), ".env.example was blocked")
    not_yet(exercises.check_15_3(lambda n, a: "no" if posixpath.basename(str(a.get("path", ""))) == ".env" else None),
            "cat .env was let through", "each word")
    not_yet(exercises.check_15_3(lambda n, a: False if no_secrets(n, a) else None), "return the reason as a string")
    wrong_kind(exercises.check_15_3(lambda n, a: 1), "a reason (a str)")


@pytest.mark.parametrize("key", ["14-1", "14-2", "14-3", "15-1", "15-2", "15-3"])
def test_an_answer_that_raises_is_not_yet_never_an_exception(key):
    def broken(*args):
        raise KeyError("oops")
    verdict = exercises.CHECKS[key](broken)
    assert verdict.kind == NOT_YET and "KeyError" in verdict.hint
