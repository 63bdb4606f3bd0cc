"""`POST /v1/embeddings`: deterministic vectors, so retrieval code runs offline (wire-format.md §5.J).

A real embedding model maps texts of similar meaning to nearby vectors. The mock
cannot know meaning, but it can know words: a text's vector is a hashed bag of its
features, projected into `dimensions` numbers and scaled to length 1, so

- the same text always gets the same vector (in every run, on every machine: the
  hash is BLAKE2b, not Python's salted `hash`);
- texts that share words point the same way (a higher cosine similarity) and
  unrelated ones are nearly orthogonal: good enough to show retrieval working, and
  honestly not a model (synonyms share nothing).

The features: each word (lower-cased, a plural "s" dropped, a few stop words left out),
the word's character trigrams at a lower weight (so "weather" is close to "weathers"
and a typo still overlaps), and for Chinese, Japanese and Korean text, where words
are not separated by spaces, every character and every pair of neighbouring characters.
Token arrays (the API also takes lists of token ids) are bags of their ids.

Request: `{input: str | [str] | [int] | [[int]], model, dimensions?, encoding_format?:
"float" | "base64", user?}`; response: `{object: "list", data: [{object: "embedding",
index, embedding}], model, usage: {prompt_tokens, total_tokens}}`. With "base64" each
embedding is the base64 of little-endian float32s, which the `openai` SDK asks for by
default and decodes itself. Usage counts tokens with `miniagent.tokens`.

Dimensions: `text-embedding-3-small` and `-ada-002` answer 1536 numbers by default,
`text-embedding-3-large` 3072, as the real ones do (so a table declared for them fits);
any other model DEFAULT_DIMENSIONS. Bounds [recalled, the API's]: 2048 inputs, 8192
tokens each, 300,000 tokens in all.
"""

from __future__ import annotations

import base64
import hashlib
import math
import re
import struct
from collections import Counter
from functools import lru_cache
from typing import Any

from miniagent.mock.openai_wire import invalid_type, invalid_value, out_of_range, refuse, too_long
from miniagent.tokens import estimate_text

DEFAULT_DIMENSIONS = 256
MAX_DIMENSIONS = 4096  # ours, for models the mock does not know
MODEL_DIMENSIONS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072, "text-embedding-ada-002": 1536}
FIXED_DIMENSIONS = ("text-embedding-ada-002",)  # [recalled] "This model does not support specifying dimensions."
MAX_INPUTS = 2048
MAX_INPUT_TOKENS = 8192
MAX_REQUEST_TOKENS = 300_000
ENCODINGS = ("float", "base64")
# [recalled] The API's words for an input it cannot take (an empty string, an empty list, a wrong type).
BAD_INPUT = "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference."
INPUT_TOO_LONG = ("This model's maximum context length is {cap} tokens, however you requested {n} tokens ({n} in "
                  "your prompt; 0 for the completion). Please reduce your prompt; or completion length.")  # [recalled]
REQUEST_TOO_BIG = "Requested {n} tokens, max {cap} tokens per request"  # [recalled]

WORD_WEIGHT, TRIGRAM_WEIGHT, CJK_CHAR_WEIGHT, CJK_PAIR_WEIGHT = 1.0, 0.25, 0.5, 1.0
STOP_WORDS = frozenset("a an and are as at be by do does for from how i in is it of on or please the this to "
                       "was what when where which who why with you your".split()) | frozenset("的了是吗呢在和")
_CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
_WORD = re.compile(r"[^\W_]+")


def create(body: Any) -> dict:
    """The response to a valid request; `Refuse` with the API's error otherwise."""
    if not isinstance(body, dict):
        raise refuse("The request body must be a JSON object, e.g. "
                     '{"model": "text-embedding-3-small", "input": "text"}')  # ours
    model = body.get("model")
    if model is None or model == "":
        raise refuse("you must provide a model parameter")
    if not isinstance(model, str):
        raise invalid_type("model", "a string", model)
    inputs = _inputs(body)
    dims = _dimensions(body, model)
    encoding = body.get("encoding_format") or "float"
    if encoding not in ENCODINGS:
        raise invalid_value("encoding_format", encoding, ENCODINGS)
    if body.get("user") is not None and not isinstance(body["user"], str):
        raise invalid_type("user", "a string", body["user"])
    counts = [len(item) if isinstance(item, list) else estimate_text(item) for item in inputs]
    for n in counts:
        if n > MAX_INPUT_TOKENS:
            raise refuse(INPUT_TOO_LONG.format(cap=MAX_INPUT_TOKENS, n=n))
    if sum(counts) > MAX_REQUEST_TOKENS:
        raise refuse(REQUEST_TOO_BIG.format(n=sum(counts), cap=MAX_REQUEST_TOKENS), code="max_tokens_per_request")
    data = []
    for index, item in enumerate(inputs):
        numbers = vector(item, dims)
        embedding: list[float] | str = encode_base64(numbers) if encoding == "base64" else numbers
        data.append({"object": "embedding", "index": index, "embedding": embedding})
    return {"object": "list", "data": data, "model": model,
            "usage": {"prompt_tokens": sum(counts), "total_tokens": sum(counts)}}


def _inputs(body: dict) -> list[str | list[int]]:
    """The inputs as a list: strings, or lists of token ids. Anything else is the API's BAD_INPUT."""
    given = body.get("input")
    if given is None:
        raise refuse("Missing required parameter: 'input'.", "input", "missing_required_parameter")
    if isinstance(given, str) or (isinstance(given, list) and given and all(_token(t) for t in given)):
        given = [given]
    if not isinstance(given, list) or not given:
        raise refuse(BAD_INPUT)
    if len(given) > MAX_INPUTS:
        raise too_long("input", MAX_INPUTS, len(given), "array")
    for item in given:
        if isinstance(item, str) and item:
            continue
        if isinstance(item, list) and item and all(_token(t) for t in item):
            continue
        raise refuse(BAD_INPUT)
    return given


def _token(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _dimensions(body: dict, model: str) -> int:
    dims = body.get("dimensions")
    cap = MODEL_DIMENSIONS.get(model, MAX_DIMENSIONS)
    if dims is None:
        return MODEL_DIMENSIONS.get(model, DEFAULT_DIMENSIONS)
    if isinstance(dims, bool) or not isinstance(dims, int):
        raise invalid_type("dimensions", "an integer", dims)
    if model in FIXED_DIMENSIONS:
        raise refuse("This model does not support specifying dimensions.", "dimensions")
    if not 1 <= dims <= cap:
        raise out_of_range("dimensions", dims, low=1, high=cap)
    return dims


# --- the vectors ------------------------------------------------------------------------------------


def features(text: str) -> Counter:
    """The weighted features of a text (see the module docstring)."""
    bag: Counter = Counter()
    lowered = text.lower()
    for run in _CJK_RUN.findall(lowered):
        for i, char in enumerate(run):
            if char not in STOP_WORDS:
                bag["c:" + char] += CJK_CHAR_WEIGHT
            if i + 1 < len(run):
                bag["p:" + run[i:i + 2]] += CJK_PAIR_WEIGHT
    for word in _WORD.findall(_CJK_RUN.sub(" ", lowered)):
        if word in STOP_WORDS:
            continue
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        bag["w:" + word] += WORD_WEIGHT
        padded = f"#{word}#"
        for i in range(len(padded) - 2):
            bag["t:" + padded[i:i + 3]] += TRIGRAM_WEIGHT
    return bag


def vector(item: str | list[int], dims: int) -> list[float]:
    """The unit vector of a text (or of token ids) in `dims` numbers, rounded to 8 significant digits.
    Only the slots its features land in are non-zero, so the cost is its features', not `dims`'."""
    bag = Counter(f"id:{t}" for t in item) if isinstance(item, list) else features(item)
    if not bag:  # only punctuation or stop words: the whole text is the one feature
        bag = Counter({"x:" + str(item): 1.0})
    slots: dict[int, float] = {}
    for feature, weight in bag.items():
        slot, sign = _slot(feature, dims)
        slots[slot] = slots.get(slot, 0.0) + sign * (1 + math.log(weight) if weight >= 1 else weight)
    norm = math.sqrt(sum(v * v for v in slots.values())) or 1.0
    out = [0.0] * dims
    for slot, value in slots.items():
        out[slot] = float(f"{value / norm:.8g}") + 0.0  # + 0.0: never a "-0.0"
    return out


@lru_cache(maxsize=65_536)
def _slot(feature: str, dims: int) -> tuple[int, int]:
    """Where a feature lands, and with which sign (a signed hash keeps collisions unbiased)."""
    digest = hashlib.blake2b(feature.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    number = int.from_bytes(digest, "little")
    return number % dims, 1 if number >> 63 else -1


def encode_base64(numbers: list[float]) -> str:
    """The API's base64 form: little-endian float32s."""
    return base64.b64encode(struct.pack(f"<{len(numbers)}f", *numbers)).decode("ascii")


def cosine(a: list[float], b: list[float]) -> float:
    """The cosine similarity of two vectors (the mock's are unit vectors, so this is their dot product)."""
    dot = sum(x * y for x, y in zip(a, b))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0
