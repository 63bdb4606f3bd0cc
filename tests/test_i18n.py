"""What the package prints for a learner follows MINIAGENT_LANG (the Chinese edition sets zh)."""

from __future__ import annotations

import pytest

from miniagent import exercises
from miniagent.client import connect
from miniagent.i18n import MESSAGES, language


@pytest.mark.parametrize("value, lang", [("zh", "zh"), ("zh_CN", "zh"), ("ZH-Hans", "zh"), ("", "en"), ("en", "en"),
                                         ("fr", "en")])
def test_the_language_comes_from_miniagent_lang(monkeypatch, value, lang):
    monkeypatch.setenv("MINIAGENT_LANG", value)
    assert language() == lang


def test_every_message_has_both_languages_with_the_same_fields():
    import string

    for key, texts in MESSAGES.items():
        assert set(texts) == {"en", "zh"}, key
        fields = [{f for _, f, _, _ in string.Formatter().parse(t) if f} for t in texts.values()]
        assert fields[0] == fields[1], key


def test_the_banner_and_the_verdicts_in_chinese_and_in_english(monkeypatch, capsys):
    monkeypatch.setenv("MINIAGENT_OFFLINE", "1")
    monkeypatch.setenv("MINIAGENT_LANG", "zh")
    connect()
    assert capsys.readouterr().out.startswith("离线（mock API） · 模型 ")
    assert repr(exercises.check_00_1(None, None)).startswith("练习 1：")
    monkeypatch.setenv("MINIAGENT_LANG", "en")
    connect()
    assert capsys.readouterr().out.startswith("offline (mock API) · model ")
    assert repr(exercises.check_00_1(None, None)).startswith("exercise 1: ")


def _calls_without_chinese(path):
    """(line, what) of each hint in an exercise module that has no Chinese text."""
    import ast

    missing = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
            continue
        keywords = {k.arg for k in node.keywords}
        if node.func.id in ("not_yet", "wrong_kind", "_check_callable") and "zh" not in keywords:
            missing.append((node.lineno, node.func.id))
        if node.func.id == "_run" and "case" in keywords and "case_zh" not in keywords:
            missing.append((node.lineno, "_run case"))
    return missing


def test_every_hint_of_every_check_has_its_chinese():
    from pathlib import Path

    import miniagent.exercises as package

    folder = Path(package.__file__).parent
    missing = {p.name: _calls_without_chinese(p) for p in sorted(folder.glob("n[0-9][0-9].py"))}
    assert {name: lines for name, lines in missing.items() if lines} == {}


def test_a_hint_in_chinese(monkeypatch):
    monkeypatch.setenv("MINIAGENT_LANG", "zh")
    verdict = exercises.check_13_1(lambda before, after: None)
    assert repr(verdict).startswith("练习 1：还没好：") and any("\u4e00" <= c <= "\u9fff" for c in verdict.hint)


def test_the_command_line_speaks_the_learners_language(monkeypatch, capsys):
    from miniagent.__main__ import main

    monkeypatch.setenv("MINIAGENT_LANG", "zh")
    with pytest.raises(SystemExit):
        main(["--help"])
    shown = capsys.readouterr().out
    assert shown.startswith("用法：python -m miniagent") and "选项" in shown and "显示这段帮助并退出" in shown
    with pytest.raises(SystemExit) as exit_info:
        main([""])
    assert exit_info.value.code == 2 and "错误：问题是空的" in capsys.readouterr().err
    monkeypatch.setenv("MINIAGENT_LANG", "en")
    with pytest.raises(SystemExit):
        main(["--help"])
    assert capsys.readouterr().out.startswith("usage: python -m miniagent")


@pytest.mark.parametrize("argv, english, chinese", [
    (["--max-iterations", "x", "q"], "argument --max-iterations: expected a whole number, got 'x'",
     "参数 --max-iterations：要一个整数，收到的是 'x'"),
    (["--max-iterations", "0", "q"], "argument --max-iterations: must be at least 1, got 0",
     "参数 --max-iterations：至少是 1，收到的是 0"),
    (["--offline", "--live", "q"], "argument --live: not allowed with argument --offline",
     "参数 --live 不能和 --offline 一起用"),
    (["--bogus", "q"], "unrecognized arguments: --bogus", "不认识这些参数：--bogus"),
    ([], "the following arguments are required: question", "缺少这些参数：question"),
    (["q", "--model"], "argument --model: expected one argument", "参数 --model 后面要跟一个值"),
])
def test_argparses_own_errors_in_the_learners_language(monkeypatch, capsys, argv, english, chinese):
    """A learner's typing mistake reads in one language, argparse's own words included."""
    from miniagent.__main__ import main

    for lang, expected in (("zh", f"python -m miniagent：错误：{chinese}"), ("en", f"python -m miniagent: error: {english}")):
        monkeypatch.setenv("MINIAGENT_LANG", lang)
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        err = capsys.readouterr().err
        assert exit_info.value.code == 2 and err.splitlines()[-1] == expected, err
        assert err.startswith("用法：" if lang == "zh" else "usage: ")


def test_the_serve_command_line_speaks_the_learners_language(monkeypatch, capsys):
    from miniagent.serve import main

    monkeypatch.setenv("MINIAGENT_LANG", "zh")
    with pytest.raises(SystemExit):
        main(["--help"])
    shown = capsys.readouterr().out
    assert shown.startswith("用法：python -m miniagent serve") and "监听的地址" in shown and "对话存在哪里" in shown
    with pytest.raises(SystemExit) as exit_info:
        main(["--workers", "2"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "错误：用了 --workers，每个 worker 都得看到所有对话" in err
    with pytest.raises(SystemExit):
        main(["--port", "eighty"])
    assert "参数 --port：'eighty' 不是整数" in capsys.readouterr().err
    monkeypatch.setenv("MINIAGENT_LANG", "en")
    with pytest.raises(SystemExit):
        main(["--port", "eighty"])
    assert "error: argument --port: invalid int value: 'eighty'" in capsys.readouterr().err


def test_the_serve_page_is_in_the_learners_language(monkeypatch):
    """The server writes the language into <html lang>; chat.js has every text in both languages."""
    import asyncio
    import re

    from httpx2 import ASGITransport, AsyncClient

    from miniagent.serve import create_app

    async def fetch(app):
        async with AsyncClient(transport=ASGITransport(app=app), base_url="http://127.0.0.1") as client:
            return (await client.get("/")).text, (await client.get("/chat.js")).text

    def page(lang):
        monkeypatch.setenv("MINIAGENT_LANG", lang)
        return asyncio.run(fetch(create_app(agent_factory=lambda: None)))

    html, script = page("zh")
    assert '<html lang="zh-CN">' in html
    html_en, script_en = page("en")
    assert '<html lang="en">' in html_en and script == script_en
    en, zh = (script[script.index(f"  {lang}: {{\n") + 8:] for lang in ("en", "zh"))
    keys = lambda block: re.findall(r"(?:^ {4}|, )(\w+): ", block[: block.index("\n  },")], re.M)
    assert keys(en) == keys(zh) and len(keys(en)) > 20  # the same texts, in the same order
    assert set(re.findall(r'data-say(?:-placeholder)?="(\w+)"', html)) <= set(keys(en))
    assert '"发送"' in zh and '"批准"' in zh and '"拒绝"' in zh


def _printed(monkeypatch, language: str, question: str) -> list[str]:
    import miniagent
    from miniagent.agent import RoundPrinter
    from miniagent.builtin_tools import default_tools

    monkeypatch.setenv("MINIAGENT_LANG", language)
    lines: list[str] = []
    agent = miniagent.Agent(miniagent.connect(offline=True, quiet=True), default_tools())
    printer = RoundPrinter(lines.append)
    printer.finish(agent.run(question, on_step=printer))
    return lines


def test_the_verbose_printer_speaks_chinese_as_the_article_prints_a_run(monkeypatch):
    lines = _printed(monkeypatch, "zh", "北京天气怎么样？")
    assert lines[0] == "\n--- 第 1 轮 ---" and lines[1].startswith("模型：")
    assert lines[2] == '调用工具：get_weather({"city": "北京"})' and lines[3].startswith("  结果：北京：")
    assert lines[4] == "\n--- 第 2 轮 ---" and lines[5].startswith("最终答案：\n")


def test_the_verbose_printer_is_unchanged_in_english(monkeypatch):
    lines = _printed(monkeypatch, "en", "What's the weather in Paris?")
    assert lines[0] == "\n--- round 1 ---" and lines[1].startswith("model: ")
    assert lines[2] == 'tool call: get_weather({"city": "Paris"})' and lines[3].startswith("  result: Paris")
    assert lines[4] == "\n--- round 2 ---" and lines[5].startswith("Final answer:\n")


def test_a_trace_table_reads_in_chinese_with_its_columns_aligned(monkeypatch):
    import unicodedata

    import miniagent
    from miniagent.builtin_tools import default_tools

    def width(text: str) -> int:
        return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)

    monkeypatch.setenv("MINIAGENT_LANG", "zh")
    agent = miniagent.Agent(miniagent.connect(offline=True, quiet=True), default_tools())
    agent.run("北京天气怎么样？")
    lines = agent.trace.table().splitlines()
    assert lines[0].split() == ["#", "耗时", "类型", "内容"] and "第 1 轮：1 条消息发出了 1 条" in lines[2]
    assert width(lines[0].split("内容")[0]) == lines[1].index("北京")  # 内容 stands over the text it heads
    assert any("输入 " in line and "，输出 " in line for line in lines)
    monkeypatch.setenv("MINIAGENT_LANG", "en")
    assert agent.trace.table().splitlines()[0] == "  #    elapsed  type         what"


def test_a_tracer_tree_says_what_each_span_did_in_chinese_with_its_columns_aligned(monkeypatch):
    import miniagent
    from miniagent.builtin_tools import default_tools
    from miniagent.i18n import width
    from miniagent.tracing import Tracer

    tracer = Tracer()
    agent = miniagent.Agent(miniagent.connect(offline=True, quiet=True), default_tools(), tracer=tracer)
    agent.run("北京天气怎么样？")
    monkeypatch.setenv("MINIAGENT_LANG", "zh")
    lines = tracer.tree().splitlines()
    assert lines[0].startswith("invoke_agent ") and "输入 " in lines[0] and "，输出 " in lines[0]
    assert any(line.lstrip().startswith("execute_tool get_weather") and " 字符，输出 " in line for line in lines)
    tracer.spans[-1].name = "execute_tool 查天气"  # a tool named in Chinese: 2 columns a character
    ends = {width(line.split(" ms")[0]) for line in tracer.tree().splitlines()}
    assert len(ends) == 1 and "查天气" in tracer.tree()  # every duration ends in the same column
    monkeypatch.setenv("MINIAGENT_LANG", "en")
    english = tracer.tree().splitlines()
    assert " in, " in english[0] and " out" in english[0] and "输入" not in "\n".join(english)
    assert any(" chars in, " in line for line in english)


def test_why_a_run_stopped_reads_in_the_learners_language_and_its_code_does_not_change(monkeypatch):
    """LoopResult.reason is what the printer, the trace and the chat show; LoopResult.stop is for programs."""
    import miniagent
    from miniagent.builtin_tools import default_tools
    from miniagent.mock import scripts

    def run(lang, **options):
        monkeypatch.setenv("MINIAGENT_LANG", lang)
        llm = connect(offline=True, quiet=True)
        if options.pop("runaway", False):
            llm.mock.script(scripts.runaway("get_weather", {"city": "北京"}), repeat=True)
        result = miniagent.Agent(llm, default_tools(), **options).run("北京天气怎么样？")
        return result.stop, result.reason

    assert run("zh") == ("end_turn", "模型答完了")
    assert run("en") == ("end_turn", "the model finished its answer")
    assert run("zh", max_iterations=1) == ("max_iterations", "调用模型 1 次后停止（max_iterations=1）")
    assert run("zh", runaway=True) == ("repeated_call", "模型用相同的参数调用 get_weather 3 次了；停下来，不再兜圈子")
    assert run("en", runaway=True)[1] == "the model asked for get_weather with the same arguments 3 times; stopped instead of looping"
    stop, reason = run("zh", token_budget=10)
    assert stop == "token_budget" and reason.startswith("已停止：已用 ") and reason.endswith("，预算 10")


def test_what_the_model_is_told_stays_english_when_the_learner_reads_chinese(monkeypatch):
    """A call cut by max_tokens is answered, never run: that answer goes to the model, in English as every
    tool result the package writes; the reason the learner reads is Chinese."""
    import miniagent
    from miniagent.builtin_tools import default_tools
    from miniagent.mock import scripts

    monkeypatch.setenv("MINIAGENT_LANG", "zh")
    llm = connect(offline=True, quiet=True)
    llm.mock.script(scripts.truncated_tool_call("calculate", {"expression": "(10"}))
    result = miniagent.Agent(llm, default_tools()).run("算一下 (10 + 2) * 3")
    told = result.messages[-1]["content"][0]["content"]
    assert result.stop == "max_tokens" and result.reason == "回答被 max_tokens 截断了；1 个不完整的工具调用没有执行"
    assert told == "Error: not executed: the answer was cut off by max_tokens; the call was incomplete"
