"""Trace files under hostile content: writing never fails, and reading either gives a
trace every method can use or a ValueError naming the file and the line."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from miniagent.events import Trace

GOOD = '{"type": "request", "t": "2026-05-09T06:23:11.000+00:00", "elapsed": 0.0, "iteration": 1}'


def usable(trace: Trace) -> None:
    """What a reader does with a trace; none of it may raise."""
    trace.summary()
    trace.rows()
    trace.table()
    trace.record({"type": "stop", "stop": "end_turn", "reason": "done"})


BAD_LINES = {
    "not UTF-8": b'{"type": "question", "text": "caf\xe9"}',
    "a lone surrogate encoded raw": '{"type": "question", "text": "\ud800"}'.encode("utf-8", "surrogatepass"),
    "not JSON": b"{not json",
    "a JSON array": b"[1, 2]",
    "a JSON string": b'"request"',
    "a JSON number": b"42",
    "null": b"null",
    "no type": b'{"t": "x", "elapsed": 0}',
    "type not a string": b'{"type": 3, "t": "x", "elapsed": 0}',
    "type null": b'{"type": null, "t": "x", "elapsed": 0}',
    "elapsed a string": b'{"type": "stop", "t": "x", "elapsed": "1.5"}',
    "elapsed NaN": b'{"type": "stop", "t": "x", "elapsed": NaN}',
    "elapsed Infinity": b'{"type": "stop", "t": "x", "elapsed": Infinity}',
    "elapsed a boolean": b'{"type": "stop", "t": "x", "elapsed": true}',
    "elapsed a list": b'{"type": "stop", "t": "x", "elapsed": [1]}',
    "t a number": b'{"type": "stop", "t": 5, "elapsed": 0}',
    "t an object": b'{"type": "stop", "t": {}, "elapsed": 0}',
    "input_tokens negative": b'{"type": "usage", "t": "x", "elapsed": 0, "input_tokens": -1}',
    "input_tokens a float": b'{"type": "usage", "t": "x", "elapsed": 0, "input_tokens": 1.5}',
    "input_tokens a string": b'{"type": "usage", "t": "x", "elapsed": 0, "input_tokens": "10"}',
    "output_tokens a boolean": b'{"type": "usage", "t": "x", "elapsed": 0, "output_tokens": true}',
    "output_tokens null": b'{"type": "usage", "t": "x", "elapsed": 0, "output_tokens": null}',
    "a tool_call id that is a list": b'{"type": "tool_call", "t": "x", "elapsed": 0, "id": [1], "name": "f"}',
    "a tool_result id that is an object": b'{"type": "tool_result", "t": "x", "elapsed": 0, "id": {}, "name": "f"}',
    "an int too long to read": b'{"type": "stop", "t": "x", "elapsed": 0, "n": ' + b"9" * 5000 + b"}",
    "nested too deep": b'{"type": "stop", "t": "x", "elapsed": 0, "n": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
}


def test_files_it_cannot_use_are_rejected_naming_file_and_line(tmp_path, subtests):
    for label, line in BAD_LINES.items():
        with subtests.test(line=label):
            path = tmp_path / "bad.jsonl"
            path.write_bytes(GOOD.encode() + b"\n\n" + line + b"\n" + GOOD.encode() + b"\n")
            with pytest.raises(ValueError, match=rf"^{path}, line 3: "):
                Trace.from_jsonl(path)


def test_a_missing_file_or_a_folder_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match=rf"^{tmp_path / 'nope.jsonl'}: no such trace file"):
        Trace.from_jsonl(tmp_path / "nope.jsonl")
    with pytest.raises(ValueError, match=rf"^{tmp_path} is a folder, not a trace file"):
        Trace.from_jsonl(tmp_path)


def test_lines_are_split_on_newlines_only(tmp_path):
    """JSON written with ensure_ascii=False keeps U+2028, U+2029 and U+0085 raw; they are not line ends."""
    trace = Trace()
    content = "one\u2028two\u2029three\x85four\x1cfive"
    trace.record({"type": "tool_result", "id": "a", "name": "f", "content": content})
    loaded = Trace.from_jsonl(trace.to_jsonl(tmp_path / "t.jsonl"))
    assert loaded.events == trace.events


class Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no")

    def __repr__(self) -> str:
        raise RuntimeError("no")


def test_writing_never_fails_and_reads_back(tmp_path):
    circular: list = [1]
    circular.append(circular)
    trace = Trace()
    for content in ["lone \ud800 surrogate", {"k\udcff": ["\udfff"]}, "\ud83d\ude00", circular, Unprintable(),
                    {(1, 2): "tuple key"}, [math.nan, -math.inf], 10 ** 5000, b"\xff bytes", {1, 2}]:
        trace.record({"type": "tool_result", "id": "a", "name": "f", "content": content})
    path = trace.to_jsonl(tmp_path / "t.jsonl")
    for line in path.read_text(encoding="utf-8").splitlines():
        json.loads(line, parse_constant=lambda name: pytest.fail(f"{name} is not standard JSON"))
    loaded = Trace.from_jsonl(path)
    assert len(loaded) == len(trace)
    assert loaded[0]["content"] == "lone \ud800 surrogate"  # escaped as \ud800, read back exactly
    assert loaded[2]["content"] == "\U0001f600"
    usable(loaded)


_text = st.text(st.characters() | st.integers(0xD800, 0xDFFF).map(chr))  # lone surrogates too
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8)
_events = st.fixed_dictionaries(
    {"type": st.sampled_from(["question", "request", "response", "usage", "tool_call", "tool_result", "error",
                              "stop", "custom"])},
    optional={"t": _json, "elapsed": _json, "input_tokens": _json, "output_tokens": _json, "id": _json,
              "content": _json, "input": _json, "text": _json, "iteration": _json, "stop": _json,
              "is_error": _json, "seconds": _json, "name": _json})


@settings(deadline=None)
@given(events=st.lists(_events | _json, max_size=5))
def test_any_file_loads_into_a_usable_trace_or_is_rejected(tmp_path_factory, events):
    path = tmp_path_factory.mktemp("traces") / "t.jsonl"
    lines = [json.dumps(e, ensure_ascii=False) for e in events]
    path.write_bytes("\n".join(lines).encode("utf-8", "surrogatepass"))
    try:
        trace = Trace.from_jsonl(path)
    except ValueError as exc:
        assert str(exc).startswith(f"{path}, line ")
        return
    usable(trace)


@settings(deadline=None)
@given(events=st.lists(_events, max_size=5))
def test_what_to_jsonl_writes_from_jsonl_reads_back(tmp_path_factory, events):
    trace = Trace()
    for event in events:
        try:
            trace.record(event)
        except ValueError:
            continue  # record refuses what a trace could not use, so it is never written
    path = trace.to_jsonl(tmp_path_factory.mktemp("traces") / "t.jsonl")
    loaded = Trace.from_jsonl(path)
    assert len(loaded) == len(trace)
    usable(loaded)


def test_rows_show_every_event_whatever_its_type():
    trace = Trace()
    for kind in ("question", "_end", "tool_call", "tool_result", "", "stop"):
        trace.record({"type": kind, "id": "a"})
    assert [kind for _, _, kind, _ in trace.rows()] == ["question", "_end", "tool_call", "tool_result", "", "stop"]
