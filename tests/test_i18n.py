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
