"""The language of what the package prints for a learner: English, or Chinese for the 中文版.

`MINIAGENT_LANG=zh` (set by `make lab-zh`, so every kernel of the Chinese edition inherits it)
makes the mode banner and the exercise checks' verdicts speak Chinese. Anything else, or
nothing, is English. Only what a learner reads is translated; errors raised to programs,
logs and traces stay English, so code that matches them works in both editions.

    from miniagent.i18n import say
    print(say("offline", model="claude-…", why=""))
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    import argparse

MESSAGES = {
    "offline": {"en": "offline (mock API){label} · model {model}{why}",
                "zh": "离线（mock API）{label} · 模型 {model}{why}"},
    "offline_why": {"en": " (no {key_env} set; set one to go live)",
                    "zh": "（没有设置 {key_env}；设置后即可连接真实模型）"},
    "live": {"en": "live{where}{label} · model {model}", "zh": "在线{where}{label} · 模型 {model}"},
    "live_where": {"en": " at {base_url}", "zh": "，地址 {base_url}"},
    "done": {"en": "exercise {n}: done!", "zh": "练习 {n}：完成！"},
    "not_yet": {"en": "exercise {n}: not yet: {hint}", "zh": "练习 {n}：还没好：{hint}"},
    "wrong_kind": {"en": "exercise {n}: that's not the right kind of answer: {hint}",
                   "zh": "练习 {n}：答案的类型不对：{hint}"},
    # the verbose printer (agent.RoundPrinter), as the article prints a run: --- 第 1 轮 ---, 调用工具, 最终答案
    "round": {"en": "\n--- round {n} ---", "zh": "\n--- 第 {n} 轮 ---"},
    "model_says": {"en": "model: ", "zh": "模型："},
    "tool_call": {"en": "tool call: {call}", "zh": "调用工具：{call}"},
    "tool_result": {"en": "  result: {text}", "zh": "  结果：{text}"},
    "tool_error": {"en": "  error: {text}", "zh": "  出错：{text}"},
    "final_answer": {"en": "Final answer:\n{text}", "zh": "最终答案：\n{text}"},
    "stopped": {"en": "Stopped ({stop}): {reason}", "zh": "已停止（{stop}）：{reason}"},
    "last_text": {"en": "Last text from the model:\n{text}", "zh": "模型最后写的内容：\n{text}"},
    # a trace's table (events.Trace.table) and its one-line descriptions (events.describe), padded for CJK
    "trace_head": {"en": "  #    elapsed  type         what", "zh": "  #       耗时  类型         内容"},
    "trace_request": {"en": "round {n}: {sent} of {messages} messages sent", "zh": "第 {n} 轮：{messages} 条消息发出了 {sent} 条"},
    "trace_usage": {"en": "{input} in{cached}, {output} out", "zh": "输入 {input}{cached}，输出 {output}"},
    "trace_cached": {"en": " ({read} from the cache)", "zh": "（其中 {read} 来自缓存）"},
    "trace_error": {"en": "error ", "zh": "出错 "},
    "trace_calls": {"en": ", {n} tool_use", "zh": "，{n} 个 tool_use"},
    "trace_text": {"en": ": {text}", "zh": "：{text}"},
    "trace_view_head": {"en": "<th>#</th><th>elapsed</th><th>type</th><th style='text-align:left'>what</th>",
                        "zh": "<th>#</th><th>耗时</th><th>类型</th><th style='text-align:left'>内容</th>"},
    # a tracer's tree (tracing.Tracer.tree): what each span did
    "span_model": {"en": "{input} in, {output} out, {reasons}", "zh": "输入 {input}，输出 {output}，{reasons}"},
    "span_tool": {"en": "{input} chars in, {output} out", "zh": "输入 {input} 字符，输出 {output}"},
    "span_agent": {"en": "{input} in, {output} out", "zh": "输入 {input}，输出 {output}"},
    "span_error": {"en": ": {error}", "zh": "：{error}"},
    "span_stop": {"en": ", {stop}", "zh": "，{stop}"},
    "timeline_x": {"en": "milliseconds since the tracer began", "zh": "自 tracer 开始计时的毫秒数"},
    "timeline_title": {"en": "{n} spans", "zh": "{n} 个 span"},
    # a ChatView as text (widgets.ChatView.__repr__, what a saved notebook shows)
    "chat_head": {"en": "ChatView · {n} question(s) · {tokens}", "zh": "ChatView · {n} 个问题 · {tokens}"},
    "chat_tokens": {"en": "tokens: {input} in · {output} out · {calls} model calls",
                    "zh": "token：输入 {input} · 输出 {output} · 调用模型 {calls} 次"},
    "chat_you": {"en": "you: ", "zh": "你："},
    "chat_tool": {"en": "  tool ", "zh": "  工具 "},
    "chat_agent": {"en": "agent: ", "zh": "Agent："},
    "chat_stopped": {"en": "[stopped: {reason}]", "zh": "［已停止：{reason}］"},
    "chat_no_result": {"en": "(no result)", "zh": "（没有结果）"},
    "chat_thinking": {"en": "thinking…", "zh": "思考中…"},
    # notebook 04's comparison of context policies (workload.compare, format_table, checkpoints)
    "wl_yes": {"en": "yes", "zh": "是"},
    "wl_at_turn": {"en": "{what} at turn {turn}", "zh": "第 {turn} 轮 {what}"},
    "wl_name_pref": {"en": "name + pref", "zh": "名字 + 偏好"},
    "wl_name": {"en": "name", "zh": "名字"},
    "wl_pref": {"en": "pref", "zh": "偏好"},
    "wl_neither": {"en": "neither", "zh": "都不记得"},
    "wl_of_call": {"en": "input tokens of call", "zh": "这次调用的输入 token"},
    "wl_so_far": {"en": "input tokens so far", "zh": "累计的输入 token"},
    "wl_parabola": {"en": "parabola", "zh": "抛物线"},
    # why an evaluated task failed (evals.grade)
    "ev_unfinished": {"en": "did not finish: stopped by {stop}", "zh": "没跑完：因 {stop} 停止"},
    "ev_missing_call": {"en": "missing call: {call}", "zh": "少了调用：{call}"},
    "ev_wrong_argument": {"en": "wrong argument: {name} wanted {wanted}, got {got}",
                          "zh": "参数不对：{name} 应为 {wanted}，实际是 {got}"},
    "ev_unexpected_call": {"en": "unexpected call: {names}", "zh": "不该有的调用：{names}"},
    "ev_missing_fact": {"en": "missing fact: {fact}", "zh": "少了事实：{fact}"},
    "ev_over_tokens": {"en": "over budget: {n} tokens > {limit}", "zh": "超出预算：{n} token > {limit}"},
    "ev_over_calls": {"en": "over budget: {n} model calls > {limit}", "zh": "超出预算：调用模型 {n} 次 > {limit}"},
    # why a run stopped (LoopResult.reason: what the verbose printer, the trace and the chat show; the
    # machine-readable part is LoopResult.stop, which never changes with the language)
    "why_done": {"en": "the model finished its answer", "zh": "模型答完了"},
    "why_cut": {"en": "the answer was cut off by max_tokens", "zh": "回答被 max_tokens 截断了"},
    "why_refusal": {"en": "the model declined to answer", "zh": "模型拒绝回答"},
    "why_unknown": {"en": "unexpected stop_reason {value}", "zh": "意料之外的 stop_reason {value}"},
    "why_max_iterations": {"en": "stopped after {n} model calls (max_iterations={limit})",
                           "zh": "调用模型 {n} 次后停止（max_iterations={limit}）"},
    "why_budget": {"en": "stopped: {why}", "zh": "已停止：{why}"},
    "why_spent": {"en": "{spent} tokens used, budget {limit}", "zh": "已用 {spent} token，预算 {limit}"},
    "why_held": {"en": "{spent} tokens used and {held} held by calls still running, budget {limit}",
                 "zh": "已用 {spent} token，还在运行的调用预留了 {held}，预算 {limit}"},
    "why_no_room": {"en": ": no room for a call that may cost up to {n}", "zh": "：容不下一次最多可能花 {n} 的调用"},
    "why_parent": {"en": "the delegating run's budget: {why}", "zh": "委派方那次运行的预算：{why}"},
    "why_not_run": {"en": "; {n} tool call(s) were not executed", "zh": "；{n} 个工具调用没有执行"},
    "why_not_run_cut": {"en": "; {n} incomplete tool call(s) were not executed", "zh": "；{n} 个不完整的工具调用没有执行"},
    "why_no_block": {"en": "stop_reason was tool_use but the response holds no tool_use block",
                     "zh": "stop_reason 是 tool_use，回复里却没有 tool_use 块"},
    "why_repeated": {"en": "the model asked for {name} with the same arguments {n} times; stopped instead of looping",
                     "zh": "模型用相同的参数调用 {name} {n} 次了；停下来，不再兜圈子"},
    "why_handoff": {"en": "handed off with {name}", "zh": "通过 {name} 移交给了另一个 Agent"},
    "why_api": {"en": "the API call failed: {error}", "zh": "API 调用失败：{error}"},
    "why_policy_api": {"en": "the context policy's API call failed: {error}", "zh": "上下文策略的 API 调用失败：{error}"},
    "why_broken_calls": {"en": "; {n} tool call(s) of the broken response were not executed ({done} of them complete)",
                         "zh": "；中断的回复里有 {n} 个工具调用没有执行（其中 {done} 个是完整的）"},
}


def language() -> str:
    """"zh" when MINIAGENT_LANG says Chinese (zh, zh_CN, zh-Hans...), else "en"."""
    return "zh" if os.environ.get("MINIAGENT_LANG", "").strip().lower().startswith("zh") else "en"


def say(key: str, lang: str | None = None, **values: object) -> str:
    """The message `key` in the current language (or in `lang`: "en" for what a model reads), filled with `values`."""
    return MESSAGES[key][lang or language()].format(**values)


def width(text: str) -> int:
    """The columns `text` takes in a terminal: 2 for each wide character (CJK), 1 for the others."""
    if text.isascii():
        return len(text)
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def pad(text: str, columns: int, align: str = "<") -> str:
    """`text` padded with spaces to `columns` display columns (`<` left, `>` right), as f"{text:<n}" pads ASCII."""
    fill = " " * max(columns - width(text), 0)
    return fill + text if align == ">" else text + fill


def clip(text: str, columns: int) -> str:
    """`text`, cut to at most `columns` display columns (as text[:columns] cuts ASCII)."""
    if text.isascii():
        return text[:columns]
    while width(text) > columns:
        text = text[:-1]
    return text


_CHINESE_FONTS = ("Noto Sans CJK SC", "Source Han Sans SC", "Noto Sans SC", "WenQuanYi Micro Hei", "WenQuanYi Zen Hei",
                  "Microsoft YaHei", "SimHei", "PingFang SC", "Heiti SC", "Hiragino Sans GB", "Sarasa Gothic SC")


def chinese_font() -> str:
    """Under MINIAGENT_LANG=zh, a font matplotlib has that draws Chinese, else "": a chart then labels in English
    (matplotlib's default font has no Chinese; its labels would be empty boxes)."""
    if language() != "zh":
        return ""
    from matplotlib import font_manager  # only when a chart is drawn

    have = {font.name for font in font_manager.fontManager.ttflist}
    return next((name for name in _CHINESE_FONTS if name in have), "")


def t(english: str, chinese: str | None) -> str:
    """One text in two languages, for the places with no catalogue entry (hints, the CLI, the chat widget).

    `chinese` None: there is no Chinese for it, so English."""
    return chinese if chinese is not None and language() == "zh" else english


# argparse's own messages (it writes them in English), as the command lines' users read them in Chinese.
_ARGPARSE_ZH = [
    (r"the following arguments are required: (.+)", r"缺少这些参数：\1"),
    (r"unrecognized arguments: (.+)", r"不认识这些参数：\1"),
    (r"argument (\S+): not allowed with argument (\S+)", r"参数 \1 不能和 \2 一起用"),
    (r"argument (\S+): expected one argument", r"参数 \1 后面要跟一个值"),
    (r"argument (\S+): invalid int value: (.+)", r"参数 \1：\2 不是整数"),
    (r"argument (\S+): invalid float value: (.+)", r"参数 \1：\2 不是数字"),
    (r"argument (\S+): invalid choice: (.+?) \(choose from (.+)\)", r"参数 \1：没有 \2 这个选项（可选：\3）"),
    (r"argument (\S+): (.+)", r"参数 \1：\2"),  # a type function's own message, already in the learner's language
]


def argument_parser(**options: Any) -> "argparse.ArgumentParser":
    """An argparse parser that speaks the learner's language: the usage line, the section titles,
    -h, the error line and argparse's own messages (the command lines' help texts are given with t()).
    argparse is imported here, by the command lines only: `import miniagent` does not load it."""
    import argparse
    import re
    import sys

    class Formatter(argparse.RawDescriptionHelpFormatter):
        def add_usage(self, usage, actions, groups, prefix=None):  # type: ignore[no-untyped-def]
            return super().add_usage(usage, actions, groups, t("usage: ", "用法：") if prefix is None else prefix)

    class Parser(argparse.ArgumentParser):
        def error(self, message: str) -> NoReturn:
            self.print_usage(sys.stderr)
            if language() == "zh":
                for pattern, chinese in _ARGPARSE_ZH:
                    if re.fullmatch(pattern, message, re.S):
                        message = re.sub(pattern, chinese, message, count=1, flags=re.S)
                        break
            self.exit(2, t(f"{self.prog}: error: {message}\n", f"{self.prog}：错误：{message}\n"))

    parser = Parser(formatter_class=Formatter, add_help=False, **options)
    parser._positionals.title = t("positional arguments", "位置参数")
    parser._optionals.title = t("options", "选项")
    parser.add_argument("-h", "--help", action="help", help=t("show this help message and exit", "显示这段帮助并退出"))
    return parser


def add_connection_options(parser: "argparse.ArgumentParser") -> None:
    """--offline, --live and --model, as both command lines (python -m miniagent, and its serve) take them:
    one wording in each language."""
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--offline", action="store_true", help=t("use the bundled mock API, even if a key is set",
                                                               "使用内置的 mock API，即使设置了 key"))
    mode.add_argument("--live", action="store_true", help=t("use the real API (needs ANTHROPIC_API_KEY)",
                                                            "使用真实的 API（需要 ANTHROPIC_API_KEY）"))
    parser.add_argument("--model", help=t("model name (default: $MINIAGENT_MODEL or the package default)",
                                          "模型名（默认：$MINIAGENT_MODEL，或包的默认模型）"))
