"""Unknown query parameters (SPEC §10): a 400 naming the parameter, on every operation, and nothing stored.

A typo of ``user=`` (``usr=user_42``) on a save must never land in the account layer, where every user's
conversations read it; a typo of ``limit=`` must never answer a whole layer. The rule is the resolver's (each
route's declared parameters, api/validation.py), so it is proven here over every operation the API document
lists, through ``agentmem serve``; and the document lists exactly what each operation takes, with the rules
of a user id on ``user=`` (an empty one is refused by the server, so the document says so too)."""

from __future__ import annotations

import re
import uuid

import pytest
import requests
from functional_support import Server

# a valid value for each path parameter: the request is refused before any resource is looked up
PATH_VALUES = {"memory": "mem-x", "name": "note", "agent": "helper", "key": "c1", "user_id": "user_42",
               "key_id": "k1", "tool": "memory__search", "tool_call_id": "call-1", "path": "notes.txt"}


def operations(document: dict) -> list[tuple[str, str, set[str]]]:
    found = []
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            if method not in ("get", "put", "post", "delete", "patch"):
                continue
            query = {p["name"] for p in operation.get("parameters", []) if p["in"] == "query"}
            found.append((method.upper(), path, query))
    return found


def filled(path: str) -> str:
    return re.sub(r"\{([^}]+)\}", lambda m: PATH_VALUES.get(m.group(1), "x"), path)


@pytest.fixture(scope="module")
def document(server: Server) -> dict:
    response = requests.get(server.url("/v1/openapi.json"), timeout=10)
    assert response.status_code == 200
    return response.json()


def test_every_operation_refuses_an_unknown_query_parameter_by_name(server: Server, http: requests.Session,
                                                                     document: dict) -> None:
    # Given every operation of the API (the download links excepted: they are signed, not routed)
    api_operations = [op for op in operations(document) if op[1].startswith("/v1/") and "/links/" not in op[1]]
    assert len(api_operations) > 40
    failures = []
    for method, path, _ in api_operations:
        # When it is called with a parameter it does not take
        response = http.request(method, server.url(filled(path)), params={"usr": "user_42"}, json={}, timeout=10)
        # Then it answers 400 naming that parameter
        if path == "/v1/health":
            continue  # no parameters, no key, nothing stored: liveness answers whatever the query
        error = response.json().get("error", {}) if response.headers.get("Content-Type", "").startswith(
            "application/json") else {}
        if response.status_code != 400 or error.get("field") != "usr" or "usr" not in error.get("message", ""):
            failures.append((method, path, response.status_code, response.text[:200]))
    assert failures == []


def test_a_mistyped_user_never_saves_into_the_account_layer(server: Server, http: requests.Session,
                                                            memory: str) -> None:
    # Given an account memory
    before = server.snapshot()
    # When a save for user_42 misspells user=
    response = http.put(server.url(f"/v1/memories/{memory}/entries/ana-diet"), params={"usr": "user_42"},
                        json={"content": "Ana is vegetarian.", "description": "Her diet"}, timeout=10)
    # Then it is refused with a 400 naming the parameter and listing what the operation takes
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid" and error["field"] == "usr"
    assert "user" in error["message"]
    # And nothing is stored: neither layer has the entry
    assert server.snapshot() == before
    assert http.get(server.url(f"/v1/memories/{memory}/entries/ana-diet")).status_code == 404
    assert http.get(server.url(f"/v1/memories/{memory}/entries/ana-diet"),
                    params={"user": "user_42"}).status_code == 404


def test_a_mistyped_limit_is_refused_not_ignored(server: Server, http: requests.Session, memory: str) -> None:
    # Given a layer of three entries
    for name in ("a", "b", "c"):
        assert http.put(server.url(f"/v1/memories/{memory}/entries/{name}"),
                        json={"content": f"note {name}", "description": name}).status_code == 201
    # When the list is asked with limt=2
    response = http.get(server.url(f"/v1/memories/{memory}/entries"), params={"limt": "2"})
    # Then it is a 400 naming limt, not the whole layer
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "limt"
    # And the parameter it meant still works
    assert len(http.get(server.url(f"/v1/memories/{memory}/entries"), params={"limit": "2"}).json()["items"]) == 2


def test_known_parameters_still_pass_and_a_repeated_one_is_refused(server: Server, http: requests.Session,
                                                                   memory: str) -> None:
    # Given an entry in a user's layer
    user = f"u-{uuid.uuid4().hex[:6]}"
    assert http.put(server.url(f"/v1/memories/{memory}/entries/plan"), params={"user": user},
                    json={"content": "Team plan", "description": "plan"}).status_code == 201
    # When it is read with the parameter it takes, then with that parameter twice
    single = http.get(server.url(f"/v1/memories/{memory}/entries/plan"), params={"user": user})
    twice = http.get(server.url(f"/v1/memories/{memory}/entries/plan?user={user}&user=other"))
    # Then the first answers the user's entry and the second is refused (one value, not a guess between two)
    assert single.status_code == 200 and single.json()["user_id"] == user
    assert twice.status_code == 400 and twice.json()["error"]["field"] == "user"


def test_the_document_lists_what_each_operation_takes_with_the_user_rules(server: Server, http: requests.Session,
                                                                          document: dict) -> None:
    # Given the API document's query parameters
    for method, path, _ in operations(document):
        operation = document["paths"][path][method.lower()]
        for parameter in operation.get("parameters", []):
            if parameter["in"] == "query" and parameter["name"] in ("user", "conversation"):
                # Then a user id (or a conversation key) may not be empty there, as the server refuses it
                schema = parameter["schema"]
                assert schema.get("minLength") == 1 and "pattern" in schema and "anyOf" not in schema, (path, schema)
    # And an empty user= is refused by the server, as the document says
    response = http.get(server.url("/v1/memories"), params={"user": ""})
    assert response.status_code == 400
