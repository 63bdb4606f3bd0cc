"""The mock's model catalog (miniagent/mock/models.py): the 404 for a model it does not serve,
the per-model max_tokens cap, GET /v1/models and its pagination, MockAPI(models=...)."""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
from pathlib import Path

import httpx2
import pytest

import miniagent
from miniagent.mock import MockAPI
from miniagent.mock import models as catalog_module
from miniagent.mock.__main__ import build_mock, build_parser
from miniagent.mock.models import DEFAULT_CATALOG, MODELS, RETIRED, Catalog

ROOT = Path(__file__).resolve().parent.parent
KEY = "sk-mock-models"
HEADERS = {"x-api-key": KEY, "anthropic-version": "2023-06-01"}
HELLO = [{"role": "user", "content": "Hello"}]


@pytest.fixture
def client():
    with httpx2.Client(transport=MockAPI().transport(), base_url="http://mock") as c:
        yield c


def ask(client, model, path="/v1/messages", **extra):
    body = {"model": model, "messages": HELLO, **extra}
    if path == "/v1/messages":
        body.setdefault("max_tokens", 100)
    return client.post(path, json=body, headers=HEADERS)


def error_of(response) -> tuple[int, str, str]:
    data = response.json()
    return response.status_code, data["error"]["type"], data["error"]["message"]


def get(client, path, headers=HEADERS):
    return client.get(path, headers=headers)


# --- the catalog -----------------------------------------------------------------------------------


def test_the_default_model_is_served_and_current():
    assert miniagent.DEFAULT_MODEL in DEFAULT_CATALOG
    assert DEFAULT_CATALOG.get(miniagent.DEFAULT_MODEL).lifecycle == "active"


def test_the_catalog_is_what_the_generator_writes_from_the_pinned_sdk():
    spec = importlib.util.spec_from_file_location("gen_mock_models", ROOT / "scripts" / "gen_mock_models.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    text = (ROOT / "miniagent" / "mock" / "models.py").read_text()
    assert gen.replace_block(text, gen.render(gen.current_date(text))) == text, \
        "models.py is stale: run scripts/gen_mock_models.py"


def test_retired_and_deprecated_follow_the_sdk_end_of_life_dates():
    generated = dt.date.fromisoformat(catalog_module.GENERATED_ON)
    for entry in RETIRED:
        assert entry["lifecycle"] == "retired" and dt.date.fromisoformat(entry["retires_at"][:10]) <= generated
    for entry in MODELS:
        if entry["retires_at"]:
            assert entry["lifecycle"] == "deprecated" and dt.date.fromisoformat(entry["retires_at"][:10]) > generated
    assert DEFAULT_CATALOG.get("claude-sonnet-4-5").id == "claude-sonnet-4-5-20250929"  # an alias
    assert "claude-sonnet-4-5" not in DEFAULT_CATALOG and "claude-haiku-4-5" in DEFAULT_CATALOG


def test_models_are_listed_newest_first_with_derived_display_names():
    dates = [m.created_at for m in DEFAULT_CATALOG.models]
    assert dates == sorted(dates, reverse=True)
    assert DEFAULT_CATALOG.get("claude-sonnet-5-5").display_name == "Claude Sonnet 5.5"
    assert DEFAULT_CATALOG.get("claude-haiku-4-5-20251001").display_name == "Claude Haiku 4.5"
    assert catalog_module.display_name("claude-mythos-preview") == "Claude Mythos Preview"


# --- POST /v1/messages and count_tokens: the API's 404 ------------------------------------------------


@pytest.mark.parametrize("path", ["/v1/messages", "/v1/messages/count_tokens"])
def test_an_unknown_model_is_the_apis_404(client, path):
    r = ask(client, "claude-sonet-5-5", path)
    assert error_of(r) == (404, "not_found_error", "model: claude-sonet-5-5")
    assert r.headers["x-should-retry"] == "false"


@pytest.mark.parametrize("name", ["claude-sonnet-4-5", "claude-sonnet-4-5-20250929", "claude-mythos-preview"])
def test_a_retired_model_fails_offline_as_it_would_live(client, name):
    status, kind, message = error_of(ask(client, name))
    assert (status, kind) == (404, "not_found_error")
    assert message.startswith(f"model: {name} (retired on 20")


def test_a_deprecated_model_and_an_alias_still_answer(client):
    for name in ("claude-opus-4-5", "claude-opus-4-5-20251101", "claude-haiku-4-5"):
        r = ask(client, name)
        assert r.status_code == 200 and r.json()["model"] == name


def test_the_model_is_checked_after_the_schema_and_before_the_rules(client):
    assert error_of(client.post("/v1/messages", json={"model": "nope", "messages": HELLO}, headers=HEADERS))[2] == \
        "max_tokens: Field required"  # the schema first
    tools = [{"name": "t", "input_schema": {"type": "object"}}] * 2
    assert error_of(ask(client, "nope", tools=tools))[0] == 404  # then the model, before "Tool names must be unique"
    assert error_of(ask(client, miniagent.DEFAULT_MODEL, tools=tools))[0] == 400


def test_max_tokens_is_capped_at_the_models_limit(client):
    assert ask(client, "claude-haiku-4-5", max_tokens=64_000).status_code == 200
    assert error_of(ask(client, "claude-haiku-4-5", max_tokens=64_001))[2] == (
        "max_tokens: 64001 > 64000, which is the maximum allowed number of output tokens for claude-haiku-4-5")
    assert ask(client, "claude-sonnet-5-5", max_tokens=128_000).status_code == 200
    assert error_of(ask(client, "claude-sonnet-5-5", max_tokens=128_001))[0] == 400


def test_a_long_unknown_name_is_quoted_shortened(client):
    message = error_of(ask(client, "x" * 5000))[2]
    assert message.startswith("model: xxx") and message.endswith("...") and len(message) < 300


# --- GET /v1/models ----------------------------------------------------------------------------------


def test_the_first_page_is_the_newest_twenty(client):
    r = get(client, "/v1/models")
    page = r.json()
    assert r.status_code == 200 and set(page) == {"data", "has_more", "first_id", "last_id"}
    served = [m["id"] for m in MODELS]
    assert [m["id"] for m in page["data"]] == served[:20] and page["has_more"] == (len(served) > 20)
    assert page["first_id"] == served[0] and page["last_id"] == page["data"][-1]["id"]
    info = page["data"][0]
    assert {"type": "model", "id": info["id"], "display_name": info["display_name"]}.items() <= info.items()
    assert dt.datetime.fromisoformat(info["created_at"].replace("Z", "+00:00"))


def test_paging_forward_and_back_visits_every_model_once(client):
    ids, page = [], get(client, "/v1/models?limit=4").json()
    while True:
        ids += [m["id"] for m in page["data"]]
        if not page["has_more"]:
            break
        page = get(client, f"/v1/models?limit=4&after_id={page['last_id']}").json()
    assert ids == [m["id"] for m in MODELS]
    back = get(client, f"/v1/models?limit=4&before_id={ids[-1]}").json()
    assert [m["id"] for m in back["data"]] == ids[-5:-1] and back["has_more"] is True
    first = get(client, f"/v1/models?limit=4&before_id={ids[2]}").json()
    assert [m["id"] for m in first["data"]] == ids[:2] and first["has_more"] is False


def test_retired_models_are_listed_only_when_asked_for(client):
    retired = get(client, "/v1/models?lifecycle[]=retired").json()["data"]
    assert [m["id"] for m in retired] == [m["id"] for m in RETIRED]
    everything = get(client, "/v1/models?limit=1000&lifecycle[]=active&lifecycle[]=deprecated&lifecycle[]=retired")
    assert len(everything.json()["data"]) == len(MODELS) + len(RETIRED)
    deprecated = get(client, "/v1/models?lifecycle=deprecated").json()["data"]
    assert deprecated and all(m["lifecycle"] == "deprecated" and m["retires_at"] for m in deprecated)


@pytest.mark.parametrize("query, message", [
    ("limit=0", "limit: Input should be greater than or equal to 1"),
    ("limit=1001", "limit: Input should be less than or equal to 1000"),
    ("limit=ten", "limit: Input should be a valid integer, unable to parse string as an integer"),
    ("lifecycle[]=gone", "lifecycle.0: Input should be 'active', 'deprecated' or 'retired'"),
    ("after_id=claude-nothing", "after_id: no model 'claude-nothing' in this list"),
    ("after_id=a&before_id=b", "after_id and before_id cannot both be given"),
])
def test_bad_list_parameters_are_400(client, query, message):
    status, kind, text = error_of(get(client, f"/v1/models?{query}"))
    assert (status, kind) == (400, "invalid_request_error") and text.startswith(message)


def test_one_model_by_id_or_alias(client):
    info = get(client, "/v1/models/claude-haiku-4-5").json()
    assert info["id"] == "claude-haiku-4-5-20251001" and info["max_tokens"] == 64_000
    assert get(client, "/v1/models/claude-sonnet-4-5").json()["lifecycle"] == "retired"
    assert error_of(get(client, "/v1/models/claude-nothing")) == (404, "not_found_error", "model: claude-nothing")


def test_the_models_endpoints_pass_the_same_gates(client):
    assert error_of(get(client, "/v1/models", headers={"anthropic-version": "2023-06-01"}))[0] == 401
    assert error_of(get(client, "/v1/models", headers={"x-api-key": KEY}))[2] == "anthropic-version: header is required"
    assert error_of(client.post("/v1/models", headers=HEADERS))[0] == 404


def test_models_requests_are_recorded_without_a_body():
    mock = MockAPI()
    mock.handle("GET", "/v1/models?limit=1", HEADERS, b"")
    (record,) = mock.records
    assert (record["method"], record["path"], record["body"], record["status"]) == ("GET", "/v1/models", None, 200)


# --- another catalog ---------------------------------------------------------------------------------


def test_a_workshop_may_serve_a_name_of_its_own():
    mock = MockAPI(models=["workshop-model"])
    with httpx2.Client(transport=mock.transport(), base_url="http://mock") as c:
        assert ask(c, "workshop-model").status_code == 200
        assert error_of(ask(c, miniagent.DEFAULT_MODEL))[0] == 404
        (info,) = get(c, "/v1/models").json()["data"]
    assert info == {"type": "model", "id": "workshop-model", "display_name": "Workshop Model",
                    "created_at": "1970-01-01T00:00:00Z", "lifecycle": "active", "retires_at": None,
                    "max_input_tokens": None, "max_tokens": None}


def test_added_models_keep_the_catalog_and_their_own_limits():
    mock = MockAPI(models=[*MODELS, {"id": "tiny", "max_tokens": 10, "display_name": "Tiny"}])
    with httpx2.Client(transport=mock.transport(), base_url="http://mock") as c:
        assert ask(c, miniagent.DEFAULT_MODEL).status_code == 200
        assert error_of(ask(c, "tiny", max_tokens=11))[2].startswith("max_tokens: 11 > 10")


def test_real_model_info_objects_are_accepted_as_entries():
    listed = {"type": "model", "id": "claude-x-1", "display_name": "X", "created_at": "2026-01-01T00:00:00Z",
              "capabilities": {}, "deprecated_at": None, "line": None, "lifecycle": "active"}
    assert "claude-x-1" in Catalog([listed])


@pytest.mark.parametrize("entries, words", [
    ("claude-sonnet-5-5", "a list of model names"),
    ([3], "a name or a dict"),
    ([{"name": "x"}], "unknown keys"),
    (["a", "a"], "appears twice"),
    ([{"id": "a", "lifecycle": "gone"}], "lifecycle"),
    ([{"id": "a", "max_tokens": 0}], "max_tokens"),
    ([""], "non-empty"),
])
def test_a_bad_catalog_says_what_is_wrong(entries, words):
    with pytest.raises(ValueError, match=words):
        MockAPI(models=entries)


def test_the_server_command_adds_models():
    parser = build_parser()
    mock = build_mock(parser.parse_args(["--model", "workshop-model", "--model", "claude-haiku-4-5"]), parser)
    assert "workshop-model" in mock.models and miniagent.DEFAULT_MODEL in mock.models
    assert "claude-sonnet-4-5" not in mock.models  # still retired
    assert build_mock(parser.parse_args([]), parser).models is DEFAULT_CATALOG


@pytest.mark.sdk
def test_the_official_sdk_pages_through_the_models():
    anthropic = pytest.importorskip("anthropic")
    from miniagent.mock import serve_in_thread
    server, url = serve_in_thread(MockAPI())
    try:
        client = anthropic.Anthropic(base_url=url, api_key=KEY, max_retries=0)
        ids = [m.id for m in client.models.list(limit=5)]  # the SDK follows has_more / after_id itself
        assert ids == [m["id"] for m in MODELS]
        assert client.models.retrieve("claude-haiku-4-5").id == "claude-haiku-4-5-20251001"
        with pytest.raises(anthropic.NotFoundError) as caught, pytest.warns(DeprecationWarning):
            client.messages.create(model="claude-sonnet-4-5", max_tokens=10, messages=HELLO)  # the SDK warns, too
        assert caught.value.body["error"]["message"].startswith("model: claude-sonnet-4-5")
        assert json.loads(client.models.with_raw_response.list().http_response.text)["has_more"] is False
    finally:
        server.shutdown()
