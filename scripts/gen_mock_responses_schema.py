"""Write the request shape of OpenAI's Responses API (miniagent/mock/responses_shapes.json) from the pinned `openai` SDK.

    python scripts/gen_mock_responses_schema.py            # rewrite the data file
    python scripts/gen_mock_responses_schema.py --check    # exit 1 if the data file is not what this would write

Run it after `openai` is bumped in requirements.txt, and read the diff: it is what the
API's `POST /v1/responses` body gained and lost between the two SDK versions (every
parameter, input item, content part, tool and tool_choice type).
tests/test_mock_responses.py fails until it is re-run.

It is scripts/gen_mock_schema.py (the Messages API's generator, whose docstring says how
types are written in the data file) pointed at another root: `ResponseCreateParams`
(its streaming and non-streaming variants, merged) and every TypedDict it reaches,
read with that script's Walker. Two things differ:
- which keys go in the body: every key of the `maybe_transform({...})` literal that
  `Responses.create` posts to /responses (read with `ast`) must be a key of the params,
  and the other way round; the SDK sends nothing of this request as a header;
- RELAXED below: keys the SDK's types mark required that the API is known to take
  without (the SDK's types come from the OpenAPI spec, which says "required" where the
  API has a default). Each is left out of its shape's `required`, with its source, so
  the mock is never stricter than the API.
"""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen_mock_schema as base  # noqa: E402  (the Messages API's generator: its Walker reads any SDK)

ROOT = base.ROOT
TARGET = ROOT / "miniagent" / "mock" / "responses_shapes.json"
PARAMS = ("openai.types.responses.response_create_params", "ResponseCreateParams")
RESOURCE = ("openai.resources.responses.responses", "Responses", "create", "/responses")

# shape: {key: why the API takes it left out}
RELAXED = {
    "FunctionToolParam": {
        "parameters": "OpenAI's function-calling guide defines tools without parameters; the API takes them",
        "strict": "defaults to true on this API (the function-calling guide)",
    },
    "ResponseOutputMessageParam": {
        "id": "an assistant message written by hand (no id) is context, as the conversation-state guide sends it",
        "status": "the same: a message written by hand has no status",
        "type": "an input item without a type is a message (the conversation-state guide's items have none)",
    },
    "ResponseOutputTextParam": {
        "annotations": "an assistant's output_text written by hand has none",
    },
    "ResponseInputImageParam": {
        "detail": "defaults to auto (the images guide sends input_image with image_url only)",
    },
}


def body_keys() -> list[str]:
    """The keys of the dict literal `Responses.create` passes to `maybe_transform` for its POST."""
    module, cls_name, method, path = RESOURCE
    source = Path(importlib.import_module(module).__file__).read_text()
    for cls in ast.parse(source).body:
        if not (isinstance(cls, ast.ClassDef) and cls.name == cls_name):
            continue
        for fn in cls.body:
            if not (isinstance(fn, ast.FunctionDef) and fn.name == method):
                continue
            for node in ast.walk(fn):
                if (isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "_post" and node.args
                        and isinstance(node.args[0], ast.Constant) and node.args[0].value == path):
                    body = next((k.value for k in node.keywords if k.arg == "body"), None)
                    if isinstance(body, ast.Call) and body.args and isinstance(body.args[0], ast.Dict):
                        return [k.value for k in body.args[0].keys if isinstance(k, ast.Constant)]
    raise SystemExit(f"no `self._post({path!r}, body=maybe_transform({{...}}, ...))` in {module}.{cls_name}.{method}; "
                     "the SDK builds its request bodies differently now: teach gen_mock_responses_schema.py")


def build() -> dict:
    walker = base.Walker()
    variants = [a[1] for a in base._alternatives(base._resolve(*PARAMS)) if a[0] == "td"]
    walker.shapes[PARAMS[1]] = None
    described = walker.describe(variants)
    sent = body_keys()
    if set(sent) != set(described["fields"]):
        raise SystemExit(f"Responses.create sends {sorted(set(sent) - set(described['fields']))} beyond the params, "
                         f"and not {sorted(set(described['fields']) - set(sent))}: teach gen_mock_responses_schema.py")
    walker.shapes[PARAMS[1]] = described
    for name, keys in RELAXED.items():
        shape = walker.shapes.get(name)
        if shape is None or not set(keys) <= set(shape["required"]):
            raise SystemExit(f"RELAXED names {name}.{sorted(keys)}, which the SDK no longer requires: drop it")
        shape["required"] = [k for k in shape["required"] if k not in keys]
    version = importlib.metadata.version("openai")
    return {
        "about": f"Generated by scripts/gen_mock_responses_schema.py from openai=={version}: do not edit by hand, "
                 "re-run it. The shape of the request body OpenAI's Responses API accepts (miniagent/mock/"
                 "openai_shapes.py reads it; scripts/gen_mock_schema.py's docstring says how types are written).",
        "sdk_version": version,
        "root": PARAMS[1],
        "relaxed": {name: sorted(keys) for name, keys in RELAXED.items()},
        "shapes": {name: walker.shapes[name] for name in sorted(walker.shapes)},
    }


def render() -> str:
    return json.dumps(build(), indent=1, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    return base.write_or_check(argv, __doc__, TARGET, render, "openai",
                               lambda text: f"{len(json.loads(text)['shapes'])} shapes")



if __name__ == "__main__":
    sys.exit(main())
