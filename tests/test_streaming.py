"""streaming.py: the SSE parser against the WHATWG rules, and the accumulator against the message it rebuilds.

The property tests build the expected answer independently (events from a description
of them; a message from which events are generated) and check that any split of the
bytes, any fragmenting of the deltas and any pings in between change nothing.
"""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from miniagent.client import (APIError, InternalServerError, MalformedResponseError, OverloadedError,
                              RateLimitError)
from miniagent.streaming import (MessageAccumulator, ServerSentEvent, SSEParser, decode_event, encode_event,
                                 parse)

# --- the parser: fixed cases ----------------------------------------------------------------


def feed_all(*chunks: bytes) -> list[ServerSentEvent]:
    parser = SSEParser()
    events = [event for chunk in chunks for event in parser.feed(chunk)]
    parser.close()
    return events


def test_the_api_framing():
    assert feed_all(b'event: ping\ndata: {"type": "ping"}\n\n') == [ServerSentEvent("ping", '{"type": "ping"}')]


@pytest.mark.parametrize("raw,expected", [
    (b"data: a\ndata: b\n\n", [ServerSentEvent("message", "a\nb")]),  # data lines joined with \n
    (b"data:a\n\n", [ServerSentEvent("message", "a")]),  # the space after the colon is optional
    (b"data:  a\n\n", [ServerSentEvent("message", " a")]),  # only one space is removed
    (b"data\n\n", [ServerSentEvent("message", "")]),  # a field without a colon has an empty value
    (b"data:\ndata:\n\n", [ServerSentEvent("message", "\n")]),
    (b": a comment\ndata: x\n:another\n\n", [ServerSentEvent("message", "x")]),
    (b"event: only a name\n\n", []),  # no data: nothing is dispatched
    (b"\n\n\n", []),
    (b"event: a\n\ndata: x\n\n", [ServerSentEvent("message", "x")]),  # the name went with the empty event
    (b"foo: bar\ndata: x\nevent: e\n\n", [ServerSentEvent("e", "x")]),  # unknown fields are ignored
    (b"data: x:y: z\n\n", [ServerSentEvent("message", "x:y: z")]),  # only the first colon splits
    (b"id: 7\ndata: a\n\ndata: b\n\nid\ndata: c\n\n",  # the id carries over; an empty id resets it
     [ServerSentEvent("message", "a", "7"), ServerSentEvent("message", "b", "7"), ServerSentEvent("message", "c", "")]),
    (b"id: a\x00b\ndata: x\n\n", [ServerSentEvent("message", "x", "")]),  # an id with NUL is ignored
    (b"retry: 1500\ndata: x\n\ndata: y\n\n",
     [ServerSentEvent("message", "x", retry=1500), ServerSentEvent("message", "y")]),
    (b"retry: 15s\ndata: x\n\nretry:\ndata: y\n\n", [ServerSentEvent("message", "x"), ServerSentEvent("message", "y")]),
    (b"retry: \xd9\xa3\ndata: x\n\n", [ServerSentEvent("message", "x")]),  # an Arabic-Indic digit is not ASCII
    (b"data: a\r\ndata: b\rdata: c\n\r\n", [ServerSentEvent("message", "a\nb\nc")]),  # CRLF, CR, LF
    (b"data: a\r\r", [ServerSentEvent("message", "a")]),  # CR CR is two line ends
    (b"data: a\n\r\n", [ServerSentEvent("message", "a")]),
    (b"\xef\xbb\xbfdata: bom\n\n", [ServerSentEvent("message", "bom")]),  # one leading BOM is skipped
    (b"\xef\xbb\xbf\xef\xbb\xbfdata: x\n\n", []),  # a second one is part of the first field's name
    (b"data: \xe4\xb8\xad\xe6\x96\x87 \xf0\x9f\x91\x8d\n\n", [ServerSentEvent("message", "中文 👍")]),
    (b"data: a\xffb\n\n", [ServerSentEvent("message", "a\ufffdb")]),  # invalid UTF-8: a replacement character
    (b"data: never finished\n", []),  # the end of the stream discards an unfinished event
    (b"data: x\n\ndata: y", [ServerSentEvent("message", "x")]),
])
def test_the_rules(raw, expected):
    assert feed_all(raw) == expected
    assert feed_all(*[raw[i:i + 1] for i in range(len(raw))]) == expected  # and byte by byte


def test_a_cr_and_an_lf_in_different_chunks_are_one_line_break():
    # Read as two line ends, "data: a\r" + "\n" would dispatch after the first chunk's CR and
    # the LF's empty line: one event too early, and "b" would be a second event.
    assert feed_all(b"data: a\r", b"\ndata: b\r\n\r\n") == [ServerSentEvent("message", "a\nb")]
    parser = SSEParser()
    assert parser.feed(b"data: a\r") == []
    assert parser.feed(b"\n") == []  # the second half of the CRLF, not a blank line
    assert parser.feed(b"\r") == [ServerSentEvent("message", "a")]


def test_a_cr_before_an_empty_chunk_still_pairs_with_the_next_lf():
    """Chunks that decode to nothing (empty, or half a character) do not separate a CR from its LF."""
    assert feed_all(b"data: a\r", b"", b"\ndata: b\n\n") == [ServerSentEvent("message", "a\nb")]
    assert feed_all(b"data: a\r", b"\xe4", b"\xb8\xad\n\n") == [ServerSentEvent("message", "a")]  # "中" is a field


def test_a_character_split_across_chunks_is_whole():
    raw = "data: 中文 👍🏽\n\n".encode()
    for cut in range(len(raw)):
        assert feed_all(raw[:cut], raw[cut:]) == [ServerSentEvent("message", "中文 👍🏽")]


def test_close_says_whether_an_event_was_cut_off():
    for raw, cut_off in [(b"data: x\n\n", False), (b"data: x\n", True), (b"data: x", True), (b"event: e\n", False),
                         (b"data: x\n\n\xe4", True)]:
        parser = SSEParser()
        parser.feed(raw)
        parser.close()
        assert parser.unfinished is cut_off, raw
    with pytest.raises(ValueError, match="after close"):
        parser.feed(b"data: x\n\n")


def test_parse_over_chunks_and_the_stream_retry_setting():
    assert [e.data for e in parse([b"data: 1\n", b"\ndata: 2\n\n"])] == ["1", "2"]
    parser = SSEParser()
    parser.feed(b"retry: 300\n\n")
    assert parser.retry == 300


# --- the parser: properties -------------------------------------------------------------------

LINE_TEXT = st.text(st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=12) | \
    st.sampled_from(["中文字符", "👍🏽🎉", "é", " leading", "a:b: c", "", "{\"type\":\"ping\"}", "\ufeffx"])
EVENT = st.fixed_dictionaries({
    "name": st.none() | LINE_TEXT, "data": st.lists(LINE_TEXT, max_size=3),
    "id": st.none() | LINE_TEXT.filter(lambda s: "\0" not in s), "retry": st.none() | st.integers(0, 10**6),
    "comment": st.none() | LINE_TEXT, "unknown": st.booleans(),
})
ENDINGS = st.sampled_from(["\n", "\r\n", "\r"])


def lines_of(event: dict, draw_colon: random.Random) -> list[str]:
    """One event's lines (without line ends), in a shuffled order except for the data lines."""
    fields = []
    if event["name"] is not None:
        fields.append(f"event: {event['name']}")
    if event["id"] is not None:
        fields.append(f"id: {event['id']}")
    if event["retry"] is not None:
        fields.append(f"retry: {event['retry']}")
    if event["comment"] is not None:
        fields.append(f":{event['comment']}")
    if event["unknown"]:
        fields.append("unknown: field")
    draw_colon.shuffle(fields)
    at = 0
    for value in event["data"]:  # "data: v", "data:v" when v has no leading space, "data" when empty
        form = draw_colon.choice(["spaced", "tight", "bare"])
        if form == "bare" and value == "":
            line = "data"
        elif form == "tight" and not value.startswith(" "):
            line = f"data:{value}"
        else:
            line = f"data: {value}"
        at = draw_colon.randint(at, len(fields))  # after the data line before it: their order is the data's
        fields.insert(at, line)
        at += 1
    return fields


def expected_events(events: list[dict]) -> list[ServerSentEvent]:
    """What the spec says these events dispatch: the id carries over, no data means no event."""
    out, last_id = [], ""
    for event in events:
        if event["id"] is not None:
            last_id = event["id"]
        if event["data"]:
            out.append(ServerSentEvent(event["name"] or "message", "\n".join(event["data"]), last_id, event["retry"]))
    return out


def serialise(events: list[dict], rng: random.Random, bom: bool) -> bytes:
    """The events as a stream, each line ended by a random CR, LF or CRLF.

    A CR followed by an empty line ended by LF would read as one CRLF (the blank line
    lost), so that one case gets a CRLF instead: the same ambiguity a real writer avoids.
    """
    text, previous = "\ufeff" if bom else "", ""
    for event in events:
        for line in lines_of(event, rng) + [""]:
            ending = rng.choice(["\n", "\r\n", "\r"])
            if previous == "\r" and line == "" and ending == "\n":
                ending = "\r\n"
            text += line + ending
            previous = ending
    return text.encode("utf-8")


def splits(raw: bytes, rng: random.Random) -> list[bytes]:
    """`raw` cut at random points, always including some right after a CR (between CR and LF)."""
    points = {rng.randint(0, len(raw)) for _ in range(rng.randint(0, 12))}
    points |= {i + 1 for i, b in enumerate(raw) if b == 13 and rng.random() < 0.5}
    points |= {i for i, b in enumerate(raw) if 0x80 <= b < 0xC0 and rng.random() < 0.2}  # inside a character
    cuts = [0, *sorted(points), len(raw)]
    return [raw[a:b] for a, b in zip(cuts, cuts[1:])]


@settings(deadline=None)
@given(events=st.lists(EVENT, max_size=6), rng=st.randoms(use_true_random=False), bom=st.booleans())
def test_any_split_of_any_stream_gives_the_events_the_spec_says(events, rng, bom):
    raw = serialise(events, rng, bom)
    expected = expected_events(events)
    assert feed_all(raw) == expected
    assert feed_all(*splits(raw, rng)) == expected


@settings(deadline=None)
@given(events=st.lists(EVENT, min_size=1, max_size=3), rng=st.randoms(use_true_random=False))
def test_byte_by_byte_equals_all_at_once(events, rng):
    raw = serialise(events, rng, bom=False)
    assert feed_all(*[raw[i:i + 1] for i in range(len(raw))]) == feed_all(raw)


# --- decode_event -----------------------------------------------------------------------------


def test_decode_event_reads_the_data_and_checks_the_name():
    assert decode_event(ServerSentEvent("ping", '{"type":"ping"}')) == {"type": "ping"}
    assert decode_event(ServerSentEvent("message", '{"type":"ping"}')) == {"type": "ping"}  # no name: by type
    for sse, why in [(ServerSentEvent("ping", "[DONE]"), "not JSON"),
                     (ServerSentEvent("ping", '["ping"]'), "string 'type'"),
                     (ServerSentEvent("ping", '{"type": 1}'), "string 'type'"),
                     (ServerSentEvent("message_stop", '{"type":"ping"}'), "should be the same")]:
        with pytest.raises(MalformedResponseError, match=why):
            decode_event(sse)


# --- the accumulator: a message, its events, and back -------------------------------------------

JSON_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers(-10**12, 10**12) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=10)
TEXT = st.text(max_size=60) | st.sampled_from(["中文的回答。", "emoji 👍🏽🎉 end", "line\nbreaks\r\nand \"quotes\""])
BLOCK = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, TEXT),
    st.builds(lambda i, n, args: {"type": "tool_use", "id": f"toolu_{i}", "name": n, "input": args},
              st.integers(0, 10**6), st.sampled_from(["get_weather", "calculator", "search_docs"]),
              st.dictionaries(st.text(max_size=8), JSON_VALUE, max_size=4)),
    st.builds(lambda t, s: {"type": "thinking", "thinking": t, "signature": s},
              TEXT, st.text("abcdef0123", max_size=20)),
)
MESSAGE = st.builds(
    lambda blocks, stop, seq, usage: {
        "id": "msg_0123", "type": "message", "role": "assistant", "model": "claude-test", "content": blocks,
        "stop_reason": stop, "stop_sequence": seq if stop == "stop_sequence" else None, "usage": usage},
    st.lists(BLOCK, max_size=5),
    st.sampled_from(["end_turn", "tool_use", "max_tokens", "stop_sequence", "pause_turn", "refusal"]),
    st.text(min_size=1, max_size=5),
    st.builds(lambda i, o, c: {"input_tokens": i, "cache_creation_input_tokens": c, "cache_read_input_tokens": 0,
                               "output_tokens": o},
              st.integers(0, 10**6), st.integers(1, 10**5), st.integers(0, 100)),
)


def fragments(text: str, rng: random.Random) -> list[str]:
    """`text` in pieces of random sizes (one to a dozen characters, sometimes an empty one)."""
    pieces, i = [], 0
    while i < len(text):
        size = rng.randint(0, 12)
        pieces.append(text[i:i + size])
        i += size
    return pieces


def events_of(message: dict, rng: random.Random, pings: float = 0.2) -> list[dict]:
    """The events the API would stream for `message` (wire-format §1.7), deltas in random pieces."""
    start = {**message, "content": [], "stop_reason": None, "stop_sequence": None,
             "usage": {**message["usage"], "output_tokens": 1}}
    events: list[dict] = [{"type": "message_start", "message": start}]
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            events.append({"type": "content_block_start", "index": index,
                           "content_block": {"type": "text", "text": ""}})
            events += [{"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}}
                       for piece in fragments(block["text"], rng)]
        elif block["type"] == "tool_use":
            events.append({"type": "content_block_start", "index": index,
                           "content_block": {**block, "input": {}}})
            pieces = [""] + fragments(json.dumps(block["input"], ensure_ascii=rng.random() < 0.5), rng)
            events += [{"type": "content_block_delta", "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": piece}} for piece in pieces]
        else:
            events.append({"type": "content_block_start", "index": index,
                           "content_block": {"type": "thinking", "thinking": "", "signature": ""}})
            events += [{"type": "content_block_delta", "index": index,
                        "delta": {"type": "thinking_delta", "thinking": piece}}
                       for piece in fragments(block["thinking"], rng)]
            events.append({"type": "content_block_delta", "index": index,
                           "delta": {"type": "signature_delta", "signature": block["signature"]}})
        events.append({"type": "content_block_stop", "index": index})
    events.append({"type": "message_delta", "delta": {"stop_reason": message["stop_reason"],
                                                      "stop_sequence": message["stop_sequence"]},
                   "usage": {"output_tokens": message["usage"]["output_tokens"]}})
    events.append({"type": "message_stop"})
    for _ in range(sum(rng.random() < pings for _ in events)):  # pings anywhere after the start
        events.insert(rng.randint(1, len(events)), {"type": "ping"})
    return events


def accumulate(events) -> MessageAccumulator:
    acc = MessageAccumulator()
    for event in events:
        acc.add(event)
    return acc


@settings(deadline=None)
@given(message=MESSAGE, rng=st.randoms(use_true_random=False))
def test_the_events_of_any_message_add_up_to_exactly_that_message(message, rng):
    events = events_of(message, rng)
    acc = accumulate(events)
    assert acc.done and acc.message == message
    assert json.dumps(acc.message) == json.dumps(message)  # the same key order, all the way down
    assert acc.incomplete == [] and acc.events == len(events)


@settings(deadline=None)
@given(message=MESSAGE, rng=st.randoms(use_true_random=False))
def test_encode_then_parse_then_accumulate_round_trips(message, rng):
    raw = b"".join(encode_event(event) for event in events_of(message, rng))
    parser = SSEParser()
    acc = MessageAccumulator()
    for chunk in splits(raw, rng):
        for sse in parser.feed(chunk):
            acc.add(decode_event(sse))
    assert json.dumps(acc.message) == json.dumps(message)


def test_the_events_it_was_given_are_not_changed():
    message = {"id": "m", "type": "message", "role": "assistant", "model": "x",
               "content": [{"type": "text", "text": "hello"}], "stop_reason": "end_turn", "stop_sequence": None,
               "usage": {"input_tokens": 1, "output_tokens": 2}}
    events = events_of(message, random.Random(1), pings=0)
    before = json.dumps(events)
    accumulate(events)
    assert json.dumps(events) == before


# --- the accumulator: details -------------------------------------------------------------------

START = {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
                                              "content": [], "stop_reason": None, "stop_sequence": None,
                                              "usage": {"input_tokens": 5, "output_tokens": 1}}}


def block_start(index, block):
    return {"type": "content_block_start", "index": index, "content_block": block}


def delta(index, **d):
    return {"type": "content_block_delta", "index": index, "delta": d}


def stop(index):
    return {"type": "content_block_stop", "index": index}


def message_delta(stop_reason="end_turn", **usage):
    return {"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": usage or {"output_tokens": 9}}


END = {"type": "message_stop"}
TEXT0 = [block_start(0, {"type": "text", "text": ""}), delta(0, type="text_delta", text="Hi"), stop(0)]
TOOL1 = block_start(1, {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}})


def test_usage_in_message_delta_replaces_and_is_cumulative():
    acc = accumulate([START, *TEXT0, message_delta(output_tokens=4),
                      message_delta(output_tokens=9, input_tokens=7, cache_read_input_tokens=None), END])
    assert acc.message["usage"] == {"input_tokens": 7, "output_tokens": 9}  # replaced, not 13; None ignored


def test_later_fields_of_message_delta_land_after_the_known_keys():
    details = {"type": "refusal", "category": "x"}
    event = {"type": "message_delta", "delta": {"stop_reason": "refusal", "stop_sequence": None,
                                                "stop_details": details}, "usage": {"output_tokens": 2}}
    acc = accumulate([START, event, END])
    assert list(acc.message) == ["id", "type", "role", "model", "content", "stop_reason", "stop_sequence", "usage",
                                 "stop_details"]
    assert acc.message["stop_details"] == details


def test_an_empty_tool_input_and_an_input_with_no_fragments_are_empty_objects():
    for deltas in ([delta(1, type="input_json_delta", partial_json="")], []):
        acc = accumulate([START, *TEXT0, TOOL1, *deltas, stop(1), message_delta("tool_use"), END])
        assert acc.message["content"][1]["input"] == {}


def test_citations_and_signature_deltas():
    citation = {"type": "char_location", "cited_text": "x", "document_index": 0}
    acc = accumulate([START, block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
                      delta(0, type="thinking_delta", thinking="hmm"),
                      delta(0, type="signature_delta", signature="sig"),
                      stop(0), block_start(1, {"type": "text", "text": "", "citations": None}),
                      delta(1, type="citations_delta", citation=citation), delta(1, type="text_delta", text="x"),
                      stop(1), message_delta(), END])
    assert acc.message["content"] == [{"type": "thinking", "thinking": "hmm", "signature": "sig"},
                                      {"type": "text", "text": "x", "citations": [citation]}]


def test_pings_and_unknown_types_are_ignored_anywhere():
    acc = accumulate([{"type": "ping"}, START, {"type": "ping"}, {"type": "future_event", "x": 1},
                      block_start(0, {"type": "text", "text": ""}), delta(0, type="future_delta", y=2),
                      delta(0, type="text_delta", text="ok"), stop(0), message_delta(), END, {"type": "ping"}])
    assert acc.message["content"] == [{"type": "text", "text": "ok"}] and acc.events == 11


def test_a_tool_call_cut_off_by_max_tokens_is_empty_and_listed():
    acc = accumulate([START, *TEXT0, TOOL1, delta(1, type="input_json_delta", partial_json='{"city": "Pa'),
                      stop(1), message_delta("max_tokens"), END])
    assert acc.message["stop_reason"] == "max_tokens"
    assert acc.message["content"][1] == {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}
    assert acc.incomplete == [{"index": 1, "id": "toolu_1", "name": "get_weather", "partial_json": '{"city": "Pa'}]


def test_a_block_never_stopped_is_closed_by_message_stop():
    acc = accumulate([START, block_start(0, {"type": "text", "text": ""}), delta(0, type="text_delta", text="cut"),
                      TOOL1 | {"index": 1}, delta(1, type="input_json_delta", partial_json='{"ci'),
                      message_delta("max_tokens"), END])
    assert acc.message["content"][0]["text"] == "cut" and acc.incomplete[0]["partial_json"] == '{"ci'


def test_progress_says_how_far_it_got():
    acc = accumulate([START, *TEXT0, TOOL1, delta(1, type="input_json_delta", partial_json='{"city": "Pa')])
    assert acc.message is None and not acc.done
    assert acc.text == "Hi"
    assert acc.forming == [{"index": 1, "id": "toolu_1", "name": "get_weather", "partial_json": '{"city": "Pa'}]
    assert acc.progress() == ("after 6 events (2 characters of text; tool call 'get_weather' (toolu_1) was forming, "
                              "its arguments so far: '{\"city\": \"Pa')")
    snapshot = acc.snapshot()
    assert snapshot["content"] == [{"type": "text", "text": "Hi"}, {"type": "tool_use", "id": "toolu_1",
                                                                    "name": "get_weather", "input": {}}]
    acc2 = accumulate([START, block_start(0, {"type": "text", "text": ""}), delta(0, type="text_delta", text="hal")])
    assert acc2.text == "hal" and acc2.snapshot()["content"] == [{"type": "text", "text": "hal"}]
    assert MessageAccumulator().snapshot() is None and MessageAccumulator().text == ""


OUT_OF_ORDER = {
    "a delta before message_start": ([delta(0, type="text_delta", text="x")], "content_block_delta before message_start"),
    "a block second, before message_start": ([{"type": "ping"}, TEXT0[0]], "content_block_start before message_start"),
    "message_delta before message_start": ([message_delta()], "message_delta before message_start"),
    "a second message_start": ([START, START], "a second message_start"),
    "a delta before its start": ([START, delta(0, type="text_delta", text="x")],
                                 "content_block_delta for block 0: before that block's content_block_start"),
    "an index that skips": ([START, block_start(1, {"type": "text", "text": ""})],
                            "content_block_start for block 1 where block 0 was expected"),
    "an index restarted": ([START, *TEXT0, block_start(0, {"type": "text", "text": ""})],
                           "content_block_start for block 0 where block 1 was expected"),
    "a delta after its stop": ([START, *TEXT0, delta(0, type="text_delta", text="x")],
                               "after that block's content_block_stop"),
    "a stop twice": ([START, *TEXT0, stop(0)], "content_block_stop for block 0: after that block's content_block_stop"),
    "a block after message_delta": ([START, message_delta(), TEXT0[0]], "content_block_start after message_delta"),
    "message_stop without message_delta": ([START, *TEXT0, END], "message_stop before any message_delta"),
    "anything after message_stop": ([START, message_delta(), END, message_delta()], "message_delta after message_stop"),
}

WRONG_SHAPE = {
    "an event that is not an object": ([START, ["x"]], "an event should be an object"),
    "a type that is not a string": ([START, {"type": 5}], "string 'type'"),
    "message_start without a message": ([{"type": "message_start"}], "message_start: its message is not a message"),
    "message_start without usage": ([{"type": "message_start", "message": {**START["message"], "usage": None}}],
                                    "'usage' should be an object"),
    "an index that is a boolean": ([START, block_start(True, {"type": "text", "text": ""})], "block true"),
    "an index that is a string": ([START, *TEXT0[:1], delta("0", type="text_delta", text="x")],
                                  "'index' should be a whole number"),
    "a block without a type": ([START, block_start(0, {"text": ""})], "a block should be an object with a string"),
    "a tool_use without an id": ([START, block_start(0, {"type": "tool_use", "name": "f", "input": {}})], "'id'"),
    "a delta that is not an object": ([START, *TEXT0[:1], {"type": "content_block_delta", "index": 0, "delta": "x"}],
                                      "'delta' should be an object"),
    "text that is not a string": ([START, *TEXT0[:1], delta(0, type="text_delta", text=5)],
                                  "a text_delta's 'text' should be a string"),
    "a text_delta to a tool call": ([START, *TEXT0, TOOL1, delta(1, type="text_delta", text="x")],
                                    "a text_delta for block 1, which is a tool_use block"),
    "JSON to a text block": ([START, *TEXT0[:1], delta(0, type="input_json_delta", partial_json="{")],
                             "an input_json_delta for block 0, which is a text block"),
    "a signature for a text block": ([START, *TEXT0[:1], delta(0, type="signature_delta", signature="s")],
                                     "a signature_delta for block 0, which is a text block"),
    "arguments that are not an object": ([START, *TEXT0, TOOL1, delta(1, type="input_json_delta", partial_json="[1]"),
                                          stop(1)], "its arguments should be a JSON object"),
    "cut JSON yet stop_reason tool_use": ([START, *TEXT0, TOOL1, delta(1, type="input_json_delta", partial_json="{"),
                                           stop(1), message_delta("tool_use"), END],
                                          "not complete JSON .* yet the stop reason is 'tool_use'"),
    "usage turned negative": ([START, message_delta(output_tokens=-1)], "usage.output_tokens should be"),
    "a stop_reason that is a number": ([START, {"type": "message_delta", "delta": {"stop_reason": 3}}],
                                       "'stop_reason' should be a string"),
}


@pytest.mark.parametrize("name", [*OUT_OF_ORDER, *WRONG_SHAPE])
def test_events_out_of_order_or_of_the_wrong_shape_are_malformed(name):
    events, why = {**OUT_OF_ORDER, **WRONG_SHAPE}[name]
    acc = MessageAccumulator()
    with pytest.raises(MalformedResponseError, match=why) as info:
        for event in events:
            acc.add(event)
    assert "not a valid Messages API stream" in str(info.value) and f"after {len(events)} event" in str(info.value)
    assert info.value.partial == acc.snapshot()


@pytest.mark.parametrize("kind,cls,status", [("overloaded_error", OverloadedError, 529),
                                             ("rate_limit_error", RateLimitError, 429),
                                             ("api_error", InternalServerError, 500),
                                             ("something_new", APIError, None)])
def test_an_error_event_is_the_typed_error_a_plain_call_would_raise(kind, cls, status):
    acc = accumulate([START, *TEXT0])
    with pytest.raises(cls) as info:
        acc.add({"type": "error", "error": {"type": kind, "message": "Overloaded"}})
    err = info.value
    assert type(err) is cls and err.status == status and err.type == kind
    assert err.message.startswith("Overloaded (an error event in the middle of the stream, after 5 events "
                                  "(2 characters of text)")
    assert err.partial["content"] == [{"type": "text", "text": "Hi"}]


def test_an_error_event_of_any_shape_is_still_an_api_error():
    for event in ({"type": "error"}, {"type": "error", "error": "boom"}, {"type": "error", "error": {"type": ["x"]}}):
        with pytest.raises(APIError):
            MessageAccumulator().add(event)


# --- the package's accumulator against the mock's own streams ---------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_WORDS = ["weather", "in", "Paris", "北京", "and", "calculate", "(2 + 3) * 4", "time", "hello", "😀", "Tokyo",
          "what", "is", "my", "name", "summarise", "上海", "天气", "?", "please"]


@settings(deadline=None)
@given(words=st.lists(st.sampled_from(_WORDS), min_size=1, max_size=12), with_tools=st.booleans(),
       max_tokens=st.sampled_from([5, 40, 1024]))
def test_streamed_through_the_client_equals_the_plain_answer_for_any_question(words, with_tools, max_tokens):
    """Acceptance: for random requests to the mock, create(stream=True) (the package's parser and
    accumulator over the mock's event stream) returns exactly what create() returns."""
    from miniagent import connect
    from miniagent.builtin_tools import default_tools

    question = [{"role": "user", "content": " ".join(words)}]
    kwargs = {"tools": default_tools().schemas()} if with_tools else {}
    plain_client, streamed_client = connect(offline=True, quiet=True), connect(offline=True, quiet=True)
    plain = plain_client.create(question, max_tokens=max_tokens, **kwargs)
    streamed = streamed_client.create(question, max_tokens=max_tokens, stream=True, **kwargs)
    assert streamed == plain  # two fresh mocks: the same ids too
    assert list(streamed) == list(plain)  # and the same key order, so printed JSON reads the same
