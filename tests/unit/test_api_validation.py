"""Request validation (api/validation.py) through the real API handler, in process: every route planned
once from its signature, each value checked by it with the 400 naming the field, and the answer encoded
without a second validation."""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any

import pytest
from agentmem.api import validation
from agentmem.api.app import answer_body, app, lambda_handler
from agentmem.api.resolver import ApiResolver
from agentmem.bootstrap import build_container, ensure_default_account, set_container
from agentmem.local.events import build_rest_event
from agentmem.local.server import LocalContext
from agentmem.settings import Settings
from aws_lambda_powertools.event_handler import APIGatewayRestResolver
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.params import Header, Query
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEvent


@pytest.fixture(autouse=True)
def quiet_metrics(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")


@pytest.fixture
def key(tmp_path: Path) -> Iterator[str]:
    container = build_container(Settings(data_dir=tmp_path))
    secret = ensure_default_account(container)
    set_container(container)
    yield secret
    set_container(None)


def call(key: str, method: str, path: str, query: str = "", body: Any = None,
         content_type: str = "application/json") -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {key}"}
    raw = None
    if body is not None:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        headers["Content-Type"] = content_type
    result = lambda_handler(build_rest_event(method, path, query, headers, raw), LocalContext())
    text = result.get("body") or ""
    return int(result["statusCode"]), json.loads(text) if text else None


def field_of(answer: tuple[int, Any]) -> str:
    status, body = answer
    assert status == 400, answer
    assert set(body) == {"error"} and body["error"]["code"] == "invalid", body
    return str(body["error"]["field"])


def test_every_route_has_a_plan() -> None:
    # Given every route the API serves
    routes = app._static_routes + app._dynamic_routes
    assert len(routes) > 40
    # When each is planned
    plans = [validation.plan(route) for route in routes]
    # Then none takes a kind of parameter the plan cannot serve, and the plans name what the signatures do
    read = next(p for r, p in zip(routes, plans, strict=True) if r.func.__name__ == "read_entry")
    assert [(p.where, p.alias) for p in read.parameters] == [
        ("path", "memory"), ("path", "name"), ("query", "user"), ("query", "version")]
    assert read.body is None
    save = next(p for r, p in zip(routes, plans, strict=True) if r.func.__name__ == "save_entry")
    assert save.body is not None and save.body.required


def test_a_route_is_planned_on_its_first_request_only(key: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a memory, and a count of the plans made
    assert call(key, "PUT", "/v1/memories/notes")[0] in (200, 201)
    made: list[str] = []
    real = validation.plan

    def counted(route: Any) -> validation.Plan:
        made.append(route.func.__name__)
        return real(route)

    monkeypatch.setattr(validation, "plan", counted)
    monkeypatch.setattr(validation, "_plans", type(validation._plans)())
    # When the same route serves three requests, valid and not
    for query in ("", "limit=5", "limit=lots"):
        call(key, "GET", "/v1/memories/notes/entries", query)
    # Then its signature was read into a plan once
    assert made == ["list_entries"]


def test_query_values_are_checked_against_their_types(key: str) -> None:
    assert call(key, "PUT", "/v1/memories/notes")[0] in (200, 201)
    # A value of the wrong type, the same parameter twice, a required one missing: each a 400 naming it
    assert field_of(call(key, "GET", "/v1/memories/notes/entries", "limit=lots")) == "limit"
    assert field_of(call(key, "GET", "/v1/memories/notes/entries", "limit=1&limit=2")) == "limit"
    status, body = call(key, "GET", "/v1/memories/notes/search")
    assert status == 400 and body["error"]["field"] == "q" and body["error"]["message"] == "q is required"
    # and a valid one reaches the route as its type
    status, body = call(key, "GET", "/v1/memories/notes/entries", "limit=1")
    assert status == 200 and body["items"] == []


def test_bodies_are_checked_against_their_models(key: str) -> None:
    assert call(key, "PUT", "/v1/memories/notes")[0] in (200, 201)
    path = "/v1/memories/notes/entries/plan"
    assert field_of(call(key, "PUT", path, body={"content": 5})) == "content"
    status, body = call(key, "PUT", path, body={"content": "x", "description": "d", "colour": "red"})
    assert (status, body["error"]["message"]) == (400, "unknown field 'colour'")
    status, body = call(key, "PUT", path)
    assert (status, body["error"]["message"]) == (400, "a JSON body is required")
    status, body = call(key, "PUT", path, body=b'{"content": "x"}', content_type="text/plain")
    assert status == 400 and body["error"]["field"] == "body"
    # and nothing of these was stored
    assert call(key, "GET", path)[0] == 404
    status, body = call(key, "PUT", path, body={"content": "The plan.", "description": "plan", "importance": 1})
    assert status == 201 and body["version"] == 1
    status, body = call(key, "GET", path)
    assert status == 200 and body["importance"] == 1.0 and body["content"] == "The plan."


def test_an_answer_holding_other_than_json_values_is_encoded_as_powertools_would() -> None:
    # A Decimal (as DynamoDB gives numbers) is a JSON number; a set a list
    assert json.loads(answer_body({"n": Decimal("2"), "f": Decimal("0.5"), "s": {3}})) == {"n": 2, "f": 0.5, "s": [3]}
    # and bytes (a file typed JSON by its name) stay the bytes they are
    assert answer_body(b'[{"a": 1}]') == b'[{"a": 1}]'
    assert app._serializer is answer_body


def test_header_and_many_valued_query_parameters_are_read_as_sent() -> None:
    # Given a route taking a header and a query parameter of many values (none of the API's routes do yet)
    resolver = APIGatewayRestResolver()

    @resolver.get("/things/<thing>")
    def things(thing: str, tag: Annotated[list[str], Query()],
               trace: Annotated[int | None, Header(alias="X-Trace")] = None) -> dict[str, Any]:
        return {}

    route = resolver._dynamic_routes[0]
    planned = validation.plan(route)

    def values(query: str, headers: dict[str, str]) -> dict[str, Any]:
        event = APIGatewayProxyEvent(build_rest_event("GET", "/things/t1", query, headers))
        return planned.values(event, {"thing": "t1"})

    # When requests send them (the header in any case), then each reaches the route as its type
    assert values("tag=a&tag=b", {"x-trace": "7"}) == {"thing": "t1", "tag": ["a", "b"], "trace": 7}
    assert values("tag=a", {}) == {"thing": "t1", "tag": ["a"], "trace": None}
    # and a header of the wrong type is refused, naming it
    with pytest.raises(RequestValidationError) as refused:
        values("tag=a", {"X-Trace": "soon"})
    assert refused.value.errors()[0]["loc"] == ("header", "x-trace")


def test_the_resolver_calls_a_route_with_its_validated_values_with_or_without_a_middleware_chain() -> None:
    # Given the API's resolver with a route taking a path segment and an integer query parameter
    resolver = ApiResolver()
    seen: list[tuple[str, int]] = []

    @resolver.get("/things/<thing>")
    def things(thing: str, limit: Annotated[int, Query()] = 3) -> dict[str, Any]:
        seen.append((thing, limit))
        return {"thing": thing, "limit": limit}

    def ask(query: str) -> dict[str, Any]:
        return resolver.resolve(build_rest_event("GET", "/things/t1", query), LocalContext())

    # When it is asked with a value of the parameter's type, and without one
    # Then the route gets the values as their types (the default where none was sent)
    assert json.loads(ask("limit=7")["body"]) == {"thing": "t1", "limit": 7}
    assert json.loads(ask("")["body"]) == {"thing": "t1", "limit": 3}
    # And a value that is not an integer never reaches the route: the validation's complaint is answered
    refused = ask("limit=lots")
    assert refused["statusCode"] == 422 and json.loads(refused["body"])["detail"][0]["loc"] == ["query", "limit"]
    assert seen == [("t1", 7), ("t1", 3)]
    # When a middleware is added, Then it runs around the route, after the same validation (a refusal never
    # reaches it)
    ran: list[str] = []

    def noting(app: Any, next_middleware: Any) -> Any:
        ran.append(app.current_event.path)
        return next_middleware(app)

    resolver.use([noting])
    assert json.loads(ask("limit=8")["body"]) == {"thing": "t1", "limit": 8}
    assert ask("limit=lots")["statusCode"] == 422
    assert seen[-1] == ("t1", 8) and len(seen) == 3 and ran == ["/things/t1"]


def test_an_answer_is_compressed_only_where_the_route_asks_and_the_client_takes_gzip() -> None:
    resolver = ApiResolver()

    @resolver.get("/packed", compress=True)
    def packed() -> dict[str, Any]:
        return {"words": "many " * 50}

    @resolver.get("/plain")
    def plain() -> dict[str, Any]:
        return {"words": "many " * 50}

    def ask(path: str, encoding: str | None) -> dict[str, Any]:
        headers = {"Accept-Encoding": encoding} if encoding else {}
        return resolver.resolve(build_rest_event("GET", path, "", headers), LocalContext())

    zipped = ask("/packed", "gzip, br")
    assert zipped["isBase64Encoded"] and zipped["multiValueHeaders"]["Content-Encoding"] == ["gzip"]
    assert json.loads(gzip.decompress(base64.b64decode(zipped["body"]))) == {"words": "many " * 50}
    for answer in (ask("/packed", None), ask("/plain", "gzip")):
        assert not answer["isBase64Encoded"] and "Content-Encoding" not in answer["multiValueHeaders"]
        assert json.loads(answer["body"]) == {"words": "many " * 50}


def test_a_middleware_of_an_included_router_runs_after_the_validation() -> None:
    # Given the API's resolver including a router that brings a middleware of its own
    from aws_lambda_powertools.event_handler.api_gateway import Router

    resolver, router = ApiResolver(), Router()
    ran: list[int] = []

    def noting(app: Any, next_middleware: Any) -> Any:
        ran.append(app.context["_route_args"]["limit"])
        return next_middleware(app)

    router.use([noting])

    @router.get("/things")
    def things(limit: Annotated[int, Query()] = 3) -> dict[str, Any]:
        return {"limit": limit}

    resolver.include_router(router)
    # When a request is valid and one is not, Then the middleware sees the validated value, and no refusal
    ok = resolver.resolve(build_rest_event("GET", "/things", "limit=4"), LocalContext())
    refused = resolver.resolve(build_rest_event("GET", "/things", "limit=lots"), LocalContext())
    assert json.loads(ok["body"]) == {"limit": 4} and refused["statusCode"] == 422 and ran == [4]


def test_the_resolver_answers_a_path_with_the_route_powertools_would_pick() -> None:
    # Given the same routes on the API's resolver and on Powertools' own: a rule whose second segment is a
    # parameter (a candidate for any path), one whose dot its expression reads as any character, and two rules
    # a path can match both of, in the order they were declared
    def build(resolver: Any) -> Any:
        @resolver.get("/v1/<first>/<second>/deep")
        def by_parameter(first: str, second: str) -> dict[str, Any]:
            return {"route": "by_parameter"}

        @resolver.get("/v1/file.json")
        def dotted() -> dict[str, Any]:
            return {"route": "dotted"}

        @resolver.get("/v1/things/<thing>")
        def thing(thing: str) -> dict[str, Any]:
            return {"route": "thing"}

        @resolver.get("/v1/things/<thing>/deep")
        def deep_thing(thing: str) -> dict[str, Any]:
            return {"route": "deep_thing"}

        @resolver.get("/v1/things/shared")
        def shared() -> dict[str, Any]:
            return {"route": "shared"}

        @resolver.get("/<anything>")
        def anything(anything: str) -> dict[str, Any]:
            return {"route": "anything"}

        return resolver

    ours, theirs = build(ApiResolver()), build(APIGatewayRestResolver(enable_validation=True))
    # When each is asked the same paths
    paths = ["/v1/things/shared", "/v1/things/t1", "/v1/things/t1/", "/v1/file.json", "/v1/fileXjson",
             "/v1/things/t1/deep", "/v1/other/t1/deep", "/v1", "/v2", "//v1/things/t1", "/v1/things",
             "/v1/thingsX/t1", "/"]

    def answer(resolver: Any, path: str) -> tuple[int, str]:
        result = resolver.resolve(build_rest_event("GET", path, ""), LocalContext())
        return result["statusCode"], result["body"]

    # Then every path gets the same answer from both: the same route, or the same 404
    assert [answer(ours, p) for p in paths] == [answer(theirs, p) for p in paths]
    assert json.loads(answer(ours, "/v1/fileXjson")[1]) == {"route": "dotted"}
    assert json.loads(answer(ours, "/v1/things/shared")[1]) == {"route": "shared"}  # a static rule first
    assert json.loads(answer(ours, "/v1/things/t1/deep")[1]) == {"route": "by_parameter"}  # declared first


def test_a_query_parameter_the_route_does_not_take_is_refused_with_or_without_a_middleware_chain() -> None:
    # Given the API's resolver with a route taking `user`, and no route for DELETE
    resolver = ApiResolver()
    seen: list[str | None] = []

    @resolver.get("/things")
    def things(user: Annotated[str | None, Query()] = None) -> dict[str, Any]:
        seen.append(user)
        return {"user": user}

    def ask(method: str, query: str) -> dict[str, Any]:
        return resolver.resolve(build_rest_event(method, "/things", query), LocalContext())

    for chain in (False, True):
        if chain:
            resolver.use([lambda app, next_middleware: next_middleware(app)])
        # When the route is asked with a misspelled parameter
        refused = ask("GET", "usr=user_42")
        # Then the route never runs: the complaint names the parameter and what the route takes
        assert refused["statusCode"] == 422
        detail = json.loads(refused["body"])["detail"][0]
        assert detail["loc"] == ["query", "usr"] and detail["type"] == "unknown_query_parameter"
        # And the parameter it takes still reaches it
        assert json.loads(ask("GET", "user=user_42")["body"]) == {"user": "user_42"}
        # And a method no route serves is answered as not found, whatever the query holds
        assert ask("DELETE", "usr=user_42")["statusCode"] == 404
    assert seen == ["user_42", "user_42"]


def test_the_api_names_an_unknown_query_parameter_and_what_the_operation_takes(key: str) -> None:
    # Given the real API, When a save misspells user=
    status, body = call(key, "PUT", "/v1/memories/kb/entries/ana-diet", "usr=user_42",
                        {"content": "Ana is vegetarian.", "description": "Her diet"})
    # Then it is a 400 naming `usr`, saying the operation takes `user`
    assert status == 400 and body["error"]["field"] == "usr"
    assert "'usr'" in body["error"]["message"] and "user" in body["error"]["message"].split(":", 1)[1]


@pytest.mark.parametrize("name", ["Authorization", "If-Match", "If-None-Match", "Content-Length"])
def test_on_lambda_a_header_that_may_come_once_sent_twice_is_a_400_naming_it(key: str, name: str) -> None:
    # Given an API Gateway event whose request sent the header twice (API Gateway puts the last in headers)
    event = build_rest_event("GET", "/v1/memories", "", {"Authorization": f"Bearer {key}"})
    event["multiValueHeaders"][name] = ["Bearer not-the-key" if name == "Authorization" else "1"]
    event["multiValueHeaders"][name.lower()] = ["1"]
    # When the handler is given it
    result = lambda_handler(event, LocalContext())
    # Then it is refused, naming the header, whichever copy was the key
    assert result["statusCode"] == 400
    assert json.loads(result["body"])["error"] == {
        "code": "invalid", "message": f"the request has 2 {name} headers: send it once", "field": name}
    # And the same request with the header once is served
    event["multiValueHeaders"].pop(name.lower())
    if name == "Authorization":
        event["multiValueHeaders"][name] = [f"Bearer {key}"]
    assert lambda_handler(event, LocalContext())["statusCode"] == 200
