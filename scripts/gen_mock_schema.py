"""Write the request shapes the mock accepts (miniagent/mock/request_shapes.json) from the pinned official SDK.

    python scripts/gen_mock_schema.py            # rewrite the data file
    python scripts/gen_mock_schema.py --check    # exit 1 if the data file is not what this would write

Run it after `anthropic` is bumped in requirements.txt, and read the diff: it is what the
API's request schema gained and lost between the two SDK versions (every parameter,
block type, tool type and beta name). tests/test_mock_accepts.py fails until it is re-run.

What it reads, importing the SDK (this script is for development; the package never
imports the SDK, it only reads the data file):
- the request bodies: `MessageCreateParams` and `MessageCountTokensParams`, GA
  (`anthropic.types`) and beta (`anthropic.types.beta`), and every TypedDict they reach;
- which of their keys go in the body: the SDK sends a few parameters as headers (`betas`
  as `anthropic-beta`, `user_profile_id`, `workspace_id`). The keys of the `body={...}`
  literal in the resource's `create` / `count_tokens` method (read with `ast`) say which;
- the beta names: the literals of `AnthropicBetaParam`.
Annotations are read from the SDK's source text, so literals and union members keep the
SDK's order (the order the API's errors list them in). Beyond the pinned SDK, LEGACY below
adds the body fields older SDKs send that the API still takes, each with its source.

How a type is written (miniagent/mock/schema.py reads it):
    "string" "integer" "number" "boolean" "null" "any"
    "TextBlockParam"                           a shape (a TypedDict), under "shapes"
    {"enum": [...]}                            Literal[...]
    {"list": T}                                Iterable / List / Sequence
    {"dict": T}                                Dict[str, T]
    {"tagged": "type", "by": {tag: shape}, "default": tag}
                                               a union of shapes told apart by one literal key
                                               ("default": the shape whose key may be left out)
    {"anyOf": [T, ...]}                        any other union
A shape is {"fields": {key: T}, "required": [key, ...]}, plus "extra": "allow" when the
SDK lets it carry keys of its own; fields are in the SDK's order.

What the SDK's Python types say that the wire does not, and how it is written instead:
- pydantic models in a union (the SDK lets a response's blocks be sent back as they are)
  are left out: each has the keys of the param TypedDict with the same tag, which is in;
- `Base64FileInput` (a file the SDK reads and encodes) is a string on the wire;
- `str` with string literals (`ModelParam`) is a string; `Literal[True]` with
  `Literal[False]` (`stream`, from the streaming and non-streaming variants) a boolean;
- `Dict[str, object]` beside a TypedDict (`InputSchema`: a JSON schema) makes the TypedDict
  open: its keys are checked, and other keys are allowed. (The GA `InputSchemaTyped` also says
  so with pydantic's `extra="allow"`; the beta one does not, though the API takes the same.)
A type this script does not know stops it with a message, rather than guessing.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.metadata
import importlib.util
import json
import sys
import typing
from pathlib import Path
from typing import Any

import typing_extensions as te

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "miniagent" / "mock" / "request_shapes.json"

# name in the data file: (module of the params, its name there, resource module, method, path)
ROOTS = {
    "messages": ("anthropic.types.message_create_params", "MessageCreateParams",
                 "anthropic.resources.messages.messages", "create", "/v1/messages"),
    "count_tokens": ("anthropic.types.message_count_tokens_params", "MessageCountTokensParams",
                     "anthropic.resources.messages.messages", "count_tokens", "/v1/messages/count_tokens"),
    "beta_messages": ("anthropic.types.beta.message_create_params", "MessageCreateParams",
                      "anthropic.resources.beta.messages.messages", "create", "/v1/messages"),
    "beta_count_tokens": ("anthropic.types.beta.message_count_tokens_params", "MessageCountTokensParams",
                          "anthropic.resources.beta.messages.messages", "count_tokens", "/v1/messages/count_tokens"),
}
BETAS = ("anthropic.types.anthropic_beta_param", "AnthropicBetaParam")

# Body fields that older SDKs send and the pinned one no longer does, which the API still takes:
# root: {field: (module, type)}, each optional and nullable.
LEGACY = {
    # Structured outputs' first form, "will continue working for a transition period" (docs;
    # wire-format §5.C): anthropic 0.121's beta create and count_tokens send it; 2.x folds it
    # into output_config.format.
    "beta_messages": {"output_format": ("anthropic.types.beta.beta_json_output_format_param",
                                        "BetaJSONOutputFormatParam")},
    "beta_count_tokens": {"output_format": ("anthropic.types.beta.beta_json_output_format_param",
                                            "BetaJSONOutputFormatParam")},
}

# --- reading the SDK's annotations ------------------------------------------------------
# The annotations are read from the SDK's source text (its modules use `from __future__ import
# annotations`, so they are strings), not through typing.get_type_hints: typing caches
# `Literal[...]` and `Union[...]` by their set of members, so an annotation evaluated after an
# equal one written in another order comes back in that other order, and the order would depend
# on what was imported first. Read from the text, literals and union members keep the SDK's order
# (the order the API's error messages list them in).
#
# A type is read into a small tree: ("null",) ("prim", name) ("lit", values) ("union", members)
# ("list", item) ("dict", value) ("td", TypedDict) ("model", pydantic model) ("req", t) ("notreq", t).

_PRIMS = {"str": "string", "int": "integer", "float": "number", "bool": "boolean", "object": "any", "Any": "any",
          "bytes": "string", "IO": "string", "PathLike": "string"}  # IO, PathLike: Base64FileInput, sent as text
_LISTS = {"Iterable", "List", "list", "Sequence", "SequenceNotStr", "Set", "set"}
_DICTS = {"Dict", "dict", "Mapping"}
_modules: dict[str, tuple[Any, dict]] = {}
_aliases: dict[tuple[str, str], tuple] = {}


def _module(name: str) -> tuple[Any, dict]:
    """A module, and its top-level names' definitions (assignments and imports, first one wins)."""
    if name not in _modules:
        module = importlib.import_module(name)
        defs: dict[str, ast.AST] = {}
        statements = list(ast.parse(Path(module.__file__).read_text()).body)
        while statements:
            node = statements.pop(0)
            if isinstance(node, ast.If):  # `if TYPE_CHECKING: ... else: ...`: the first branch wins
                statements[:0] = node.body + node.orelse
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Name):
                        defs.setdefault(target.id, node.value)
            elif isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    defs.setdefault(alias.asname or alias.name, node)
        _modules[name] = (module, defs)
    return _modules[name]


def _resolve(module_name: str, name: str) -> tuple:
    if name in _PRIMS:
        return ("prim", _PRIMS[name])
    if name == "None":
        return ("null",)
    key = (module_name, name)
    if key not in _aliases:
        module, defs = _module(module_name)
        node = defs.get(name)
        if isinstance(node, ast.ImportFrom):
            base = importlib.util.resolve_name("." * node.level + (node.module or ""), module.__package__)
            original = next(a.name for a in node.names if (a.asname or a.name) == name)
            try:
                _module(f"{base}.{original}")  # `from . import x`: x is a module, not a type
                raise SystemExit(f"{module_name}: {name} is a module, not a type")
            except ModuleNotFoundError:
                pass
            _aliases[key] = _resolve(base, original)
        elif node is not None and not te.is_typeddict(getattr(module, name, None)) \
                and not _is_model(getattr(module, name, None)):
            _aliases[key] = ("alias", name)  # taken, for a (never seen) alias that leads back to itself
            _aliases[key] = _read(node, module_name)
        else:
            value = getattr(module, name)
            if te.is_typeddict(value):
                _aliases[key] = ("td", value)
            elif _is_model(value):
                _aliases[key] = ("model", value)
            else:
                raise SystemExit(f"gen_mock_schema.py cannot read {module_name}.{name} ({value!r}) as a type")
    return _aliases[key]


def _read(node: ast.AST, module_name: str) -> tuple:
    """An annotation's tree, from its source (a string, or a node of a module's source)."""
    if isinstance(node, str):
        return _read(ast.parse(node, mode="eval").body, module_name)
    if isinstance(node, ast.Constant):
        return ("null",) if node.value is None else _read(node.value, module_name)
    if isinstance(node, ast.Name):
        return _resolve(module_name, node.id)
    if isinstance(node, ast.Attribute):  # typing.Union, os.PathLike...
        return _resolve(module_name, node.attr)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return ("union", (_read(node.left, module_name), _read(node.right, module_name)))
    if isinstance(node, ast.Subscript):
        head = node.value.id if isinstance(node.value, ast.Name) else getattr(node.value, "attr", "")
        args = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if head == "Literal":
            return ("lit", tuple(a.value for a in args))
        if head in ("Required", "NotRequired"):
            return ("req" if head == "Required" else "notreq", _read(args[0], module_name))
        if head == "Annotated":
            return _read(args[0], module_name)
        if head == "Union":
            return ("union", tuple(_read(a, module_name) for a in args))
        if head == "Optional":
            return ("union", (_read(args[0], module_name), ("null",)))
        if head in _LISTS:
            return ("list", _read(args[0], module_name))
        if head in _DICTS:
            return ("dict", _read(args[-1], module_name))
        if head in ("IO", "PathLike"):
            return ("prim", "string")
    raise SystemExit(f"gen_mock_schema.py does not know how {ast.unparse(node)} (in {module_name}) goes on "
                     "the wire; teach it")


def _from_runtime(hint: Any) -> tuple:
    """The tree of an annotation that is already a typing object: the functional TypedDict syntax
    (`TypedDict("X", {"from": Required[...]})`, for keys that are Python keywords) evaluates its
    annotations at once. typing's caches may have reordered these ones' literals; they are few."""
    origin, args = te.get_origin(hint), te.get_args(hint)
    if hint is type(None):
        return ("null",)
    if te.is_typeddict(hint):
        return ("td", hint)
    if _is_model(hint):
        return ("model", hint)
    if isinstance(hint, type) and hint.__name__ in _PRIMS:
        return ("prim", _PRIMS[hint.__name__])
    if origin in (te.Required, te.NotRequired):
        return ("req" if origin is te.Required else "notreq", _from_runtime(args[0]))
    if origin is typing.Annotated:
        return _from_runtime(args[0])
    if origin is te.Literal:
        return ("lit", args)
    if origin is typing.Union:
        return ("union", tuple(_from_runtime(a) for a in args))
    name = getattr(origin, "__name__", "")
    if name in _LISTS or origin in (list, set):
        return ("list", _from_runtime(args[0]))
    if name in _DICTS or origin is dict:
        return ("dict", _from_runtime(args[-1]))
    raise SystemExit(f"gen_mock_schema.py does not know how {hint!r} goes on the wire; teach it")


def _unwrap(t: tuple) -> tuple:
    while t[0] in ("req", "notreq"):
        t = t[1]
    return t


def _alternatives(t: tuple) -> list[tuple]:
    """The members of a union (Optional included), flattened; a single type alone."""
    t = _unwrap(t)
    return [a for member in t[1] for a in _alternatives(member)] if t[0] == "union" else [t]


def _is_model(value: Any) -> bool:
    return isinstance(value, type) and hasattr(value, "model_fields")


def _literal_values(t: tuple) -> list | None:
    """The values of a type made only of literals (None allowed too), else None."""
    values = []
    for a in _alternatives(t):
        if a[0] == "null":
            continue
        if a[0] != "lit":
            return None
        values += a[1]
    return values


def _fields(td: type) -> dict[str, tuple[tuple, bool]]:
    """A TypedDict's keys, in the SDK's order: (type, required). A key without Required/NotRequired
    takes the totality of the class that declares it."""
    declared: dict[str, type] = {}

    def walk(cls: type) -> None:
        for base in getattr(cls, "__orig_bases__", ()):
            if te.is_typeddict(base):
                walk(base)
        for key in cls.__annotations__:
            declared.setdefault(key, cls)
    walk(td)
    out = {}
    for key in td.__annotations__:
        owner = declared[key]
        raw = owner.__annotations__[key]
        source = raw.__forward_arg__ if isinstance(raw, typing.ForwardRef) else raw
        t = _read(source, owner.__module__) if isinstance(source, str) else _from_runtime(source)
        required = True if t[0] == "req" else False if t[0] == "notreq" else bool(owner.__total__)
        out[key] = (t, required)
    return out


class Walker:
    """Turns the SDK's TypedDicts into the data file's shapes, naming each once."""

    def __init__(self) -> None:
        self.shapes: dict[str, dict | None] = {}
        self.names: dict[type, str] = {}

    def shape(self, td: type) -> str:
        if td in self.names:
            return self.names[td]
        name = td.__name__
        if name in self.shapes:  # two TypedDicts of one name (InputSchemaTyped, GA and beta)
            name = f"{td.__module__.removeprefix('anthropic.types.')}.{td.__name__}"
        self.names[td] = name
        self.shapes[name] = None  # taken, while its fields (which may lead back to it) are described
        self.shapes[name] = self.describe([td])
        return name

    def describe(self, tds: list[type]) -> dict:
        """One shape from one TypedDict, or from variants of one (the streaming and non-streaming
        params): a key is required only if every variant requires it."""
        types: dict[str, list] = {}
        required: dict[str, bool] = {}
        for td in tds:
            for key, (t, needed) in _fields(td).items():
                types.setdefault(key, []).append(t)
                required[key] = required.get(key, True) and needed
        for key in types:
            if len(types[key]) < len(tds):
                required[key] = False
        fields = {key: self.type_of(*ts) for key, ts in types.items()}
        described: dict[str, Any] = {"fields": fields, "required": [k for k in fields if required[k]]}
        if any(getattr(td, "__pydantic_config__", {}).get("extra") == "allow" for td in tds):
            described["extra"] = "allow"
        return described

    def type_of(self, *types: tuple) -> Any:
        """The data file's type for a tree, or for the union of several."""
        items: list = []
        shapes: list[type] = []
        for a in (a for t in types for a in _alternatives(t)):
            if a[0] == "model":
                continue
            if a[0] == "td":
                if a[1] not in shapes:
                    shapes.append(a[1])
                if "shapes" not in items:
                    items.append("shapes")  # where the shapes go, in the order met
                continue
            item = self.simple(a)
            if item not in items:
                items.append(item)
        is_enum = [isinstance(i, dict) and "enum" in i for i in items]
        if any(is_enum):  # the literals, merged where the first of them was
            at = is_enum.index(True)
            values = list(dict.fromkeys((type(v), v) for i, e in zip(items, is_enum) if e for v in i["enum"]))
            items = [i for i, e in zip(items, is_enum) if not e]
            if "string" in items and all(t is str for t, _ in values):
                pass  # ModelParam: any string, the literals only suggest some
            elif {(bool, True), (bool, False)} == set(values):
                items.insert(at, "boolean")
            else:
                items.insert(at, {"enum": [v for _, v in values]})
        open_shapes = bool(shapes) and {"dict": "any"} in items
        if open_shapes:
            items.remove({"dict": "any"})
        if "shapes" in items:
            at = items.index("shapes")
            items[at:at + 1] = self.union_of_shapes(shapes)
        if open_shapes:  # the dict says they may carry other keys (a JSON schema's other keywords)
            for td in shapes:
                self.shapes[self.shape(td)]["extra"] = "allow"
        if not items:
            raise SystemExit(f"no wire type for {types!r}")
        return items[0] if len(items) == 1 else {"anyOf": items}

    def simple(self, a: tuple) -> Any:
        kind = a[0]
        if kind == "null":
            return "null"
        if kind == "prim":
            return a[1]
        if kind == "lit":
            return {"enum": list(a[1])}
        if kind == "list":
            return {"list": self.type_of(a[1])}
        if kind == "dict":
            return {"dict": self.type_of(a[1])}
        raise SystemExit(f"no wire type for {a!r}")

    def union_of_shapes(self, tds: list[type]) -> list:
        if len(tds) == 1:
            return [self.shape(tds[0])]
        key = _discriminator(tds)
        if key is None:
            return [self.shape(td) for td in tds]
        by: dict[str, str] = {}
        default = None
        for td in tds:
            t, needed = _fields(td)[key]
            values = _literal_values(t)
            for value in values:
                by[value] = self.shape(td)
            if not needed or ("null",) in _alternatives(t):
                default = values[0]
        tagged = {"tagged": key, "by": by}
        if default is not None:
            tagged["default"] = default
        return [tagged]


def _discriminator(tds: list[type]) -> str | None:
    """The key that tells these TypedDicts apart: one every one of them has, typed by string
    literals, no value shared, at most one of them letting it out. `type` if it qualifies (blocks,
    tools), else the first that does (`role`, for messages)."""
    fields = [_fields(td) for td in tds]
    for key in ["type"] + [k for k in fields[0] if k != "type"]:
        if not all(key in f for f in fields):
            continue
        sets = [_literal_values(f[key][0]) for f in fields]
        if any(not s or not all(isinstance(v, str) for v in s) for s in sets):
            continue
        flat = [v for s in sets for v in s]
        optional = [f for f in fields if not f[key][1] or ("null",) in _alternatives(f[key][0])]
        if len(flat) == len(set(flat)) and len(optional) <= 1:
            return key
    return None


def body_keys(resource: str, method: str, path: str, cls_name: str = "Messages") -> list[str]:
    """The keys of the dict literal the SDK's `<cls_name>.<method>` posts to `path`: `body={...}`, or
    `body=maybe_transform({...}, ...)` (the openai SDK's form)."""
    source = Path(importlib.import_module(resource).__file__).read_text()
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
                    if isinstance(body, ast.Call) and body.args:
                        body = body.args[0]
                    if isinstance(body, ast.Dict):
                        return [k.value for k in body.keys if isinstance(k, ast.Constant)]
    raise SystemExit(f"no `self._post({path!r}, body={{...}})` found in {resource}.{cls_name}.{method}; "
                     "the SDK builds its request bodies differently now: teach scripts/gen_mock_schema.py")


def build() -> dict:
    walker = Walker()
    roots, headers = {}, {}
    for root, (module, attr, resource, method, path) in ROOTS.items():
        variants = [a[1] for a in _alternatives(_resolve(module, attr)) if a[0] == "td"]
        name = ("Beta" if root.startswith("beta_") else "") + attr
        if name in walker.shapes:
            raise SystemExit(f"two roots named {name}")
        walker.shapes[name] = None
        described = walker.describe(variants)
        sent = body_keys(resource, method, path)
        unknown = [k for k in sent if k not in described["fields"]]
        if unknown:
            raise SystemExit(f"{resource}.Messages.{method} sends {unknown}, which {module}.{attr} does not have")
        headers[root] = [k for k in described["fields"] if k not in sent]
        described["fields"] = {k: t for k, t in described["fields"].items() if k in sent}
        described["required"] = [k for k in described["required"] if k in sent]
        for field, (where, type_name) in LEGACY.get(root, {}).items():
            if field in described["fields"]:
                raise SystemExit(f"{field} is in {name} again: drop it from LEGACY")
            described["fields"][field] = walker.type_of(("union", (_resolve(where, type_name), ("null",))))
        walker.shapes[name] = described
        roots[root] = name
    betas = [v for a in _alternatives(_resolve(*BETAS)) if a[0] == "lit" for v in a[1]]
    version = importlib.metadata.version("anthropic")
    return {
        "about": f"Generated by scripts/gen_mock_schema.py from anthropic=={version}: do not edit by hand, "
                 "re-run it. The shapes of the request bodies the Messages API accepts (miniagent/mock/schema.py "
                 "reads them; the script's docstring says how types are written).",
        "sdk_version": version,
        "roots": roots,
        "sent_as_headers": headers,
        "betas": betas,
        "shapes": {name: walker.shapes[name] for name in sorted(walker.shapes)},
    }


def render() -> str:
    return json.dumps(build(), indent=1, ensure_ascii=False) + "\n"


def write_or_check(argv: list[str] | None, doc: str, target: Path, render: Any, sdk: str, summary: Any) -> int:
    """A generator's command line (its module docstring `doc`): write `target` from `render()`, or with
    --check exit 1 if it differs. `summary(text)` says what was written."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    script = f"scripts/{Path(sys.argv[0]).name}" if sys.argv and sys.argv[0].endswith(".py") else "the script"
    parser.add_argument("--check", action="store_true", help="exit 1 if the data file is not what this would write")
    args = parser.parse_args(argv)
    new = render()
    where = target.relative_to(ROOT)
    version = importlib.metadata.version(sdk)
    if args.check:
        if not target.exists() or target.read_text() != new:
            print(f"{where} is not what {script} writes from the installed SDK ({sdk}=={version}): re-run the script",
                  file=sys.stderr)
            return 1
        print(f"{where} matches the installed SDK")
        return 0
    target.write_text(new)
    print(f"wrote {where}: {summary(new)}, from {sdk}=={version}")
    return 0


def main(argv: list[str] | None = None) -> int:
    def summary(text: str) -> str:
        data = json.loads(text)
        return f"{len(data['shapes'])} shapes, {len(data['betas'])} beta names"
    return write_or_check(argv, __doc__, TARGET, render, "anthropic", summary)



if __name__ == "__main__":
    sys.exit(main())
