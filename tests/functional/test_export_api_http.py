"""What an export reads through the API, on both backends: ``GET /v1/memories/{memory}/layers`` (the layers that
hold entries, with their counts, as the key may see them) and ``GET .../entries?content=true`` (a layer's pages
with each entry's content and content hash)."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator

import pytest
import requests
from functional_support import Server, auth


@pytest.fixture
def memory(target: Server) -> Iterator[tuple[Server, requests.Session, str]]:
    """A new account memory holding the account layer (3 entries) and the layers of users ana (2) and bo (1)."""
    with requests.Session() as http:
        http.headers.update(auth(target.key))
        name = f"m-{uuid.uuid4().hex[:10]}"
        assert http.put(target.url(f"/v1/memories/{name}")).status_code == 201
        for layer, names in ((None, ["tone", "refunds", "hours"]), ("ana", ["tea", "city"]), ("bo", ["dog"])):
            for entry in names:
                saved = http.put(target.url(f"/v1/memories/{name}/entries/{entry}"), params={"user": layer},
                                 json={"content": f"{entry} — ü ✓ {layer}", "description": f"about {entry}"})
                assert saved.status_code == 201, saved.text
        yield target, http, name


def test_the_layers_of_a_memory_are_listed_with_their_counts(memory: tuple[Server, requests.Session, str]) -> None:
    server, http, name = memory
    # When the account key lists the memory's layers
    answer = http.get(server.url(f"/v1/memories/{name}/layers"))
    # Then every layer holding entries is there, the account's first
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"items": [{"user": None, "entry_count": 3}, {"user": "ana", "entry_count": 2},
                                       {"user": "bo", "entry_count": 1}], "next_cursor": None}
    # and with user= only the account layer and that user's
    assert http.get(server.url(f"/v1/memories/{name}/layers"), params={"user": "ana"}).json()["items"] == [
        {"user": None, "entry_count": 3}, {"user": "ana", "entry_count": 2}]
    # When bo's only entry is deleted, bo's layer is no longer listed
    assert http.delete(server.url(f"/v1/memories/{name}/entries/dog"), params={"user": "bo"}).status_code == 204
    assert [layer["user"] for layer in http.get(server.url(f"/v1/memories/{name}/layers")).json()["items"]] == [
        None, "ana"]


def test_a_user_key_sees_only_the_account_layer_and_its_own(memory: tuple[Server, requests.Session, str]) -> None:
    server, http, name = memory
    created = http.post(server.url("/v1/keys"), json={"user": "bo"})
    assert created.status_code == 201, created.text
    as_bo = {"Authorization": f"Bearer {created.json()['secret']}"}
    answer = requests.get(server.url(f"/v1/memories/{name}/layers"), headers=as_bo, timeout=10)
    assert answer.status_code == 200, answer.text
    assert answer.json()["items"] == [{"user": None, "entry_count": 3}, {"user": "bo", "entry_count": 1}]
    # and another user's layers are not its to ask for
    refused = requests.get(server.url(f"/v1/memories/{name}/layers"), params={"user": "ana"}, headers=as_bo,
                           timeout=10)
    assert refused.status_code == 403, refused.text


def test_an_unknown_memory_has_no_layers_to_list(target: Server) -> None:
    answer = requests.get(target.url("/v1/memories/no-such-memory-here/layers"), headers=auth(target.key), timeout=10)
    assert answer.status_code == 404, answer.text
    assert answer.json()["error"]["code"] == "not_found"


def test_a_layer_is_paged_with_content_and_hash(memory: tuple[Server, requests.Session, str]) -> None:
    server, http, name = memory
    # When the account layer is read two entries a page, with content
    path = server.url(f"/v1/memories/{name}/entries")
    first = http.get(path, params={"content": "true", "limit": 2})
    assert first.status_code == 200, first.text
    second = http.get(path, params={"content": "true", "limit": 2, "cursor": first.json()["next_cursor"]})
    items = first.json()["items"] + second.json()["items"]
    # Then the pages hold every entry, newest first, each with its content word for word and that content's hash
    assert second.json()["next_cursor"] is None
    assert [item["name"] for item in items] == ["hours", "refunds", "tone"]
    for item in items:
        assert item["content"] == f"{item['name']} — ü ✓ None"
        assert item["content_hash"] == "sha256:" + hashlib.sha256(item["content"].encode()).hexdigest()
    # and without content=true a listing stays without content
    plain = http.get(path, params={"limit": 2}).json()["items"]
    assert all("content" not in item and "content_hash" not in item for item in plain)


def test_a_bad_content_flag_is_refused(memory: tuple[Server, requests.Session, str]) -> None:
    server, http, name = memory
    answer = http.get(server.url(f"/v1/memories/{name}/entries"), params={"content": "maybe"})
    assert answer.status_code == 400, answer.text
    assert "content" in answer.text


def test_the_answers_are_the_shapes_the_api_document_names(memory: tuple[Server, requests.Session, str]) -> None:
    from jsonschema import Draft202012Validator

    server, http, name = memory
    document = http.get(server.url("/v1/openapi.json")).json()
    for path, params in ((f"/v1/memories/{name}/layers", {}), (f"/v1/memories/{name}/entries", {"content": "true"})):
        operation = document["paths"][path.replace(name, "{memory}")]["get"]
        schema = operation["responses"]["200"]["content"]["application/json"]["schema"]
        Draft202012Validator({**schema, "components": document["components"]}).validate(
            http.get(server.url(path), params=params).json())
