"""The HTTP API of SPEC §10.1 over real HTTP against ``agentmem serve``: the happy paths,
keys and scopes, tenant isolation, usage, docs, and how ``serve`` sets up its key (§13)."""

from __future__ import annotations

import json
import socket
import stat
import subprocess
import uuid
from typing import Any

import requests
from functional_support import AGENTMEM, Server, auth, clean_env, create_account, running_server

ENTRY_FIELDS = {
    "name", "memory", "user_id", "description", "category", "importance", "visibility", "version",
    "updated_by", "created_at", "updated_at", "expires_at", "conversation",
}


def save(
    http: requests.Session, server: Server, memory: str, name: str, body: dict[str, Any], **kwargs: Any
) -> requests.Response:
    return http.put(server.url(f"/v1/memories/{memory}/entries/{name}"), json=body, **kwargs)


def error_of(response: requests.Response) -> dict[str, Any]:
    body = response.json()
    assert set(body) == {"error"}, body
    error: dict[str, Any] = body["error"]
    assert isinstance(error["code"], str) and error["code"]
    assert isinstance(error["message"], str) and error["message"]
    return error


# --- health, docs, openapi ---------------------------------------------------------------------------


def test_health_answers_without_a_key(server: Server) -> None:
    # Given a running server
    # When health is asked for with no Authorization header
    response = requests.get(server.url("/v1/health"), timeout=10)
    # Then it answers 200 with the embedded backend
    assert response.status_code == 200
    assert response.json()["status"] == "ok"
    assert response.json()["backend"] == "embedded"


def test_openapi_document_lists_every_v1_path(server: Server) -> None:
    # Given a running server
    # When the OpenAPI document is fetched (no key needed)
    response = requests.get(server.url("/v1/openapi.json"), timeout=10)
    # Then it is a valid OpenAPI 3 JSON document listing the /v1 resources with their methods
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("application/json")
    document = json.loads(response.text)
    assert document["openapi"].startswith("3.")
    paths = document["paths"]
    expected = {
        "/v1/health": {"get"},
        "/v1/keys": {"get", "post"},
        "/v1/keys/{key_id}": {"delete"},
        "/v1/memories": {"get"},
        "/v1/memories/{memory}": {"get", "put", "delete"},
        "/v1/memories/{memory}/restore": {"post"},
        "/v1/memories/{memory}/entries": {"get"},
        "/v1/memories/{memory}/entries/{name}": {"get", "put", "delete"},
        "/v1/memories/{memory}/entries/{name}/history": {"get"},
        "/v1/memories/{memory}/search": {"get"},
        "/v1/usage": {"get"},
    }
    for path, methods in expected.items():
        assert path in paths, f"{path} missing from the OpenAPI document"
        assert methods <= set(paths[path]), f"{path}: {set(paths[path])}"
    assert all(path.startswith("/v1/") for path in paths)


def test_docs_serve_swagger_ui_html(server: Server) -> None:
    # Given a running server
    # When the docs page is fetched
    response = requests.get(server.url("/v1/docs"), timeout=10)
    # Then it is an HTML page with Swagger UI
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/html")
    assert "<html" in response.text.lower()
    assert "swagger" in response.text.lower()


# --- memories ----------------------------------------------------------------------------------------


def test_put_memory_creates_then_returns_the_existing_one(server: Server, http: requests.Session) -> None:
    # Given a name no memory has
    name = f"mem-{uuid.uuid4().hex[:12]}"
    # When it is PUT twice
    first = http.put(server.url(f"/v1/memories/{name}"))
    second = http.put(server.url(f"/v1/memories/{name}"))
    # Then the first creates it (201) and the second returns the same memory (200)
    assert first.status_code == 201, first.text
    assert second.status_code == 200, second.text
    assert first.json()["name"] == name
    assert first.json()["scope"] == "account"
    assert first.json()["user_id"] is None
    assert first.json()["entry_count"] == 0
    assert first.json()["attached_to"] == []
    assert second.json()["created_at"] == first.json()["created_at"]
    # And GET and the list show it
    got = http.get(server.url(f"/v1/memories/{name}"))
    assert got.status_code == 200 and got.json()["name"] == name
    listed = http.get(server.url("/v1/memories"))
    assert listed.status_code == 200
    assert listed.json()["next_cursor"] is None
    assert name in [m["name"] for m in listed.json()["items"]]


def test_memory_entry_count_follows_saves(server: Server, http: requests.Session, memory: str) -> None:
    # Given a memory with two entries
    for name in ("one", "two"):
        assert save(http, server, memory, name, {"content": "c", "description": "d"}).status_code == 201
    # When the memory is read
    got = http.get(server.url(f"/v1/memories/{memory}"))
    # Then it counts them
    assert got.json()["entry_count"] == 2


def test_memory_goes_to_the_trash_and_comes_back(server: Server, http: requests.Session, memory: str) -> None:
    # Given a memory with an entry
    assert save(http, server, memory, "kept", {"content": "still here", "description": "d"}).status_code == 201
    # When it is deleted
    deleted = http.delete(server.url(f"/v1/memories/{memory}"))
    # Then it is in the trash: gone from reads and the list, present in the trash list
    assert deleted.status_code == 200, deleted.text
    assert deleted.json()["deleted_at"] is not None
    assert deleted.json()["purge_after"] > deleted.json()["deleted_at"]
    assert http.get(server.url(f"/v1/memories/{memory}")).status_code == 404
    assert http.get(server.url(f"/v1/memories/{memory}/entries/kept")).status_code == 404
    assert memory not in [m["name"] for m in http.get(server.url("/v1/memories")).json()["items"]]
    trash = http.get(server.url("/v1/memories"), params={"trash": "true"}).json()["items"]
    assert memory in [m["name"] for m in trash]
    # And its name cannot be taken while it is there
    assert error_of(http.put(server.url(f"/v1/memories/{memory}")))["code"] == "conflict"
    # When it is restored
    restored = http.post(server.url(f"/v1/memories/{memory}/restore"))
    # Then it and its entries are back
    assert restored.status_code == 200, restored.text
    assert restored.json()["deleted_at"] is None
    assert http.get(server.url(f"/v1/memories/{memory}")).status_code == 200
    assert http.get(server.url(f"/v1/memories/{memory}/entries/kept")).json()["content"] == "still here"
    # And restoring again is a conflict (it is not in the trash)
    assert http.post(server.url(f"/v1/memories/{memory}/restore")).status_code == 409


# --- entries -----------------------------------------------------------------------------------------


def test_save_creates_with_201_then_replaces_with_200(server: Server, http: requests.Session, memory: str) -> None:
    # Given an empty memory
    # When an entry is saved
    created = save(http, server, memory, "pref", {"content": "likes tea", "description": "drinks", "importance": 0.8})
    # Then 201, ETag "1", the stored entry without content
    assert created.status_code == 201, created.text
    assert created.headers["ETag"] == '"1"'
    body = created.json()
    assert set(body) >= ENTRY_FIELDS
    assert "content" not in body
    assert body["version"] == 1
    assert body["visibility"] == "shared"
    assert body["category"] == "note"
    assert body["importance"] == 0.8
    assert body["updated_by"] == "api"
    assert body["memory"] == memory and body["user_id"] is None
    # When it is saved again without a description
    replaced = save(http, server, memory, "pref", {"content": "likes coffee"})
    # Then 200, ETag "2", and the description is kept
    assert replaced.status_code == 200, replaced.text
    assert replaced.headers["ETag"] == '"2"'
    assert replaced.json()["version"] == 2
    assert replaced.json()["description"] == "drinks"
    # And a read returns the content and the ETag of the new version
    read = http.get(server.url(f"/v1/memories/{memory}/entries/pref"))
    assert read.status_code == 200
    assert read.headers["ETag"] == '"2"'
    assert read.json()["content"] == "likes coffee"
    assert read.json()["content_hash"].startswith("sha256:")
    assert read.json()["created_at"] == body["created_at"]


def test_if_none_match_star_creates_only_once(server: Server, http: requests.Session, memory: str) -> None:
    # Given no entry "once"
    # When it is saved with If-None-Match: *
    first = save(http, server, memory, "once", {"content": "first", "description": "d"},
                 headers={"If-None-Match": "*"})
    # Then it is created
    assert first.status_code == 201, first.text
    # When it is saved again with If-None-Match: *
    second = save(http, server, memory, "once", {"content": "second"}, headers={"If-None-Match": "*"})
    # Then 412 with the current version, and the content is unchanged
    assert second.status_code == 412, second.text
    error = error_of(second)
    assert error["code"] == "precondition_failed"
    assert error["current_version"] == 1
    assert http.get(server.url(f"/v1/memories/{memory}/entries/once")).json()["content"] == "first"


def test_if_match_and_body_version(server: Server, http: requests.Session, memory: str) -> None:
    # Given an entry at version 1
    assert save(http, server, memory, "doc", {"content": "v1", "description": "d"}).status_code == 201
    # When it is saved with If-Match: "1"
    ok = save(http, server, memory, "doc", {"content": "v2"}, headers={"If-Match": '"1"'})
    # Then it lands as version 2
    assert ok.status_code == 200, ok.text
    assert ok.headers["ETag"] == '"2"'
    # When a stale If-Match is sent
    stale = save(http, server, memory, "doc", {"content": "lost"}, headers={"If-Match": '"1"'})
    # Then 412 with current_version 2
    assert stale.status_code == 412
    assert error_of(stale)["current_version"] == 2
    # When a stale body version is sent
    stale_body = save(http, server, memory, "doc", {"content": "lost", "version": 1})
    # Then 409 conflict with current_version 2
    assert stale_body.status_code == 409
    assert error_of(stale_body) | {"message": ""} == {"code": "conflict", "current_version": 2, "message": ""}
    # And the body version that matches lands
    assert save(http, server, memory, "doc", {"content": "v3", "version": 2}).status_code == 200
    # And nothing of the refused saves is stored
    read = http.get(server.url(f"/v1/memories/{memory}/entries/doc"))
    assert read.json()["content"] == "v3" and read.json()["version"] == 3
    # When deleting with a stale If-Match
    refused = http.delete(server.url(f"/v1/memories/{memory}/entries/doc"), headers={"If-Match": '"2"'})
    # Then 412, and with the current one 204
    assert refused.status_code == 412 and error_of(refused)["current_version"] == 3
    assert http.delete(server.url(f"/v1/memories/{memory}/entries/doc"), headers={"If-Match": '"3"'}).status_code == 204
    assert http.get(server.url(f"/v1/memories/{memory}/entries/doc")).status_code == 404


def test_an_etag_kept_from_before_a_delete_never_matches_the_entry_created_again(
    server: Server, http: requests.Session, memory: str
) -> None:
    # Given a client that read "doc" with ETag "1", then the entry was deleted and created again
    url = server.url(f"/v1/memories/{memory}/entries/doc")
    assert save(http, server, memory, "doc", {"content": "v1", "description": "d"}).status_code == 201
    kept = http.get(url).headers["ETag"]
    assert http.delete(url).status_code == 204
    again = save(http, server, memory, "doc", {"content": "new", "description": "d"}, headers={"If-None-Match": "*"})
    # Then the new entry continues after the delete (version 2): ETag "3"
    assert (again.status_code, again.headers["ETag"]) == (201, '"3"')
    # When the client saves and deletes with the ETag it kept
    stale_save = save(http, server, memory, "doc", {"content": "lost"}, headers={"If-Match": kept})
    stale_delete = http.delete(url, headers={"If-Match": kept})
    # Then both are 412 with the new entry's version, which is untouched
    assert [(r.status_code, error_of(r)["current_version"]) for r in (stale_save, stale_delete)] == [(412, 3)] * 2
    assert http.get(url).json()["content"] == "new"
    # And ?version= reaches the first entry's version 1 and the new entry's 3
    assert http.get(url, params={"version": 1}).json()["content"] == "v1"
    assert http.get(url, params={"version": 3}).json()["content"] == "new"


def test_body_version_zero_means_must_not_exist(server: Server, http: requests.Session, memory: str) -> None:
    # Given no entry "fresh"
    # When saved with version 0 twice
    first = save(http, server, memory, "fresh", {"content": "a", "description": "d", "version": 0})
    second = save(http, server, memory, "fresh", {"content": "b", "version": 0})
    # Then the first creates it, the second is a 409 carrying current_version 1
    assert first.status_code == 201
    assert second.status_code == 409 and error_of(second)["current_version"] == 1


def test_history_lists_changes_and_old_versions_stay_readable(
    server: Server, http: requests.Session, memory: str
) -> None:
    # Given an entry saved three times
    for i, content in enumerate(("first", "second", "third")):
        body: dict[str, Any] = {"content": content, "description": f"desc {i}"}
        assert save(http, server, memory, "diary", body).status_code in (200, 201)
    # When its history is listed
    history = http.get(server.url(f"/v1/memories/{memory}/entries/diary/history"))
    # Then it has every version, newest first, with operation, hash, who and the content
    assert history.status_code == 200, history.text
    items = history.json()["items"]
    assert [h["version"] for h in items] == [3, 2, 1]
    assert [h["operation"] for h in items] == ["update", "update", "create"]
    assert [h["content"] for h in items] == ["third", "second", "first"]
    assert all(h["updated_by"] == "api" and h["content_hash"].startswith("sha256:") for h in items)
    assert all(h["kept_until"] > h["changed_at"] for h in items)
    assert history.json()["next_cursor"] is None
    # When an old version is read
    old = http.get(server.url(f"/v1/memories/{memory}/entries/diary"), params={"version": 1})
    # Then it is that version's content, description and ETag
    assert old.status_code == 200, old.text
    assert old.json()["content"] == "first"
    assert old.json()["description"] == "desc 0"
    assert old.json()["version"] == 1
    assert old.headers["ETag"] == '"1"'
    # When the entry is deleted
    assert http.delete(server.url(f"/v1/memories/{memory}/entries/diary")).status_code == 204
    # Then the delete is in the history and old versions are still readable
    after = http.get(server.url(f"/v1/memories/{memory}/entries/diary/history")).json()["items"]
    assert after[0]["operation"] == "delete" and after[0]["version"] == 4
    assert http.get(server.url(f"/v1/memories/{memory}/entries/diary")).status_code == 404
    kept = http.get(server.url(f"/v1/memories/{memory}/entries/diary"), params={"version": 2})
    assert kept.status_code == 200 and kept.json()["content"] == "second"


def test_list_pages_with_a_cursor_newest_first(server: Server, http: requests.Session, memory: str) -> None:
    # Given seven entries saved one after another
    names = [f"item-{i}" for i in range(7)]
    for name in names:
        body = {"content": f"content of {name}", "description": name}
        assert save(http, server, memory, name, body).status_code == 201
    # When the layer is listed three at a time, following next_cursor
    pages: list[list[dict[str, Any]]] = []
    cursor: str | None = None
    while True:
        params: dict[str, Any] = {"limit": 3}
        if cursor:
            params["cursor"] = cursor
        response = http.get(server.url(f"/v1/memories/{memory}/entries"), params=params)
        assert response.status_code == 200, response.text
        pages.append(response.json()["items"])
        cursor = response.json()["next_cursor"]
        if cursor is None:
            break
        assert len(pages) < 10, "the cursor never ends"
    # Then the pages are 3, 3, 1, with every entry once, newest first, without content
    assert [len(p) for p in pages] == [3, 3, 1]
    listed = [e for page in pages for e in page]
    assert [e["name"] for e in listed] == list(reversed(names))
    assert all("content" not in e for e in listed)
    stamps = [e["updated_at"] for e in listed]
    assert stamps == sorted(stamps, reverse=True)


def test_search_finds_words_and_prefixes_with_mode(server: Server, http: requests.Session, memory: str) -> None:
    # Given entries about refunds and one unrelated
    assert save(http, server, memory, "refund-policy", {"content": "Refunds take 14 days.",
                                                        "description": "refund rules"}).status_code == 201
    assert save(http, server, memory, "shipping", {"content": "We ship refunds by mail too.",
                                                   "description": "shipping"}).status_code == 201
    assert save(http, server, memory, "weather", {"content": "It rains.", "description": "weather"}).status_code == 201
    # When "refund" is searched by the word rules
    response = http.get(server.url(f"/v1/memories/{memory}/search"), params={"q": "refund", "mode": "keyword"})
    # Then both refund entries come back (prefix match), the name/description hit first, with content
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["mode"] == "keyword"
    assert body["next_cursor"] is None
    assert [e["name"] for e in body["items"]] == ["refund-policy", "shipping"]
    first = body["items"][0]
    assert first["content"] == "Refunds take 14 days."
    assert first["memory"] == memory and first["user_id"] is None
    assert isinstance(first["score"], (int, float))
    assert body["items"][0]["score"] > body["items"][1]["score"]
    # And limit caps the results
    capped = http.get(server.url(f"/v1/memories/{memory}/search"), params={"q": "refund", "limit": 1,
                                                                           "mode": "keyword"})
    assert [e["name"] for e in capped.json()["items"]] == ["refund-policy"]


def test_search_says_its_stages_and_takes_deep(server: Server, http: requests.Session, memory: str) -> None:
    # Given two entries about refunds
    for name, content in (("refund-policy", "Refunds take 14 days."), ("shipping", "We ship refunds by mail.")):
        assert save(http, server, memory, name, {"content": content, "description": name}).status_code == 201
    url = server.url(f"/v1/memories/{memory}/search")
    # When searched by words, the answer says only the keyword side ran
    keyword = http.get(url, params={"q": "refund", "mode": "keyword"}).json()
    assert keyword["stages"] == ["keyword"]
    # And deep answers the same entries, saying whether the re-ranking stage ran, or why it did not
    deep = http.get(url, params={"q": "refund", "mode": "deep"})
    assert deep.status_code == 200, deep.text
    body = deep.json()
    assert {e["name"] for e in body["items"]} == {"refund-policy", "shipping"}
    assert body["stages"][0] == "keyword"
    if "rerank" in body["stages"]:
        assert body["mode"] == "deep" and body["stages"][-1] == "rerank"
    else:
        assert body["fallback"] in ("rerank_not_configured", "rerank_unavailable", "rerank_timeout",
                                    "not_configured", "timeout", "index_unavailable"), body
    # And a mode that does not exist is a 400 naming the field and the four modes
    wrong = http.get(url, params={"q": "refund", "mode": "deeper"})
    assert wrong.status_code == 400
    assert "hybrid, keyword, semantic, deep" in wrong.json()["error"]["message"]


def test_user_layers_are_separate_and_search_sees_both(server: Server, http: requests.Session, memory: str) -> None:
    # Given an account entry and alice's entry in the same memory
    assert save(http, server, memory, "greeting", {"content": "hello team", "description": "d"}).status_code == 201
    mine = save(http, server, memory, "secret-hobby", {"content": "hello knitting", "description": "d"},
                params={"user": "alice"})
    assert mine.status_code == 201, mine.text
    assert mine.json()["user_id"] == "alice" and mine.json()["visibility"] == "private"
    # When each layer is listed
    account_layer = http.get(server.url(f"/v1/memories/{memory}/entries")).json()["items"]
    alice_layer = http.get(server.url(f"/v1/memories/{memory}/entries"), params={"user": "alice"}).json()["items"]
    bob_layer = http.get(server.url(f"/v1/memories/{memory}/entries"), params={"user": "bob"}).json()["items"]
    # Then each holds only its own entries
    assert [e["name"] for e in account_layer] == ["greeting"]
    assert [e["name"] for e in alice_layer] == ["secret-hobby"]
    assert bob_layer == []
    # And alice's search sees both layers, bob's only the account's
    alice = http.get(server.url(f"/v1/memories/{memory}/search"), params={"q": "hello", "user": "alice"}).json()
    assert {(e["name"], e["user_id"]) for e in alice["items"]} == {("greeting", None), ("secret-hobby", "alice")}
    bob = http.get(server.url(f"/v1/memories/{memory}/search"), params={"q": "hello", "user": "bob"}).json()
    assert [e["name"] for e in bob["items"]] == ["greeting"]


# --- keys and scopes ---------------------------------------------------------------------------------


def test_key_secret_is_shown_once_and_revoked_keys_fail(server: Server, http: requests.Session) -> None:
    # Given the account key
    # When a new account key is created
    created = http.post(server.url("/v1/keys"))
    # Then the secret is returned once, with its id, kind and last 4 characters
    assert created.status_code == 201, created.text
    key = created.json()
    secret = key["secret"]
    assert key["kind"] == "account" and key["user"] is None
    assert key["last4"] == secret[-4:]
    # And the list shows the key without any secret
    listed = http.get(server.url("/v1/keys"))
    assert listed.status_code == 200
    assert secret not in listed.text
    rows = {k["id"]: k for k in listed.json()["items"]}
    assert key["id"] in rows
    assert set(rows[key["id"]]) == {"id", "kind", "user", "created_at", "last4"}
    # And the new key works
    assert requests.get(server.url("/v1/memories"), headers=auth(secret), timeout=10).status_code == 200
    # When it is revoked
    assert http.delete(server.url(f"/v1/keys/{key['id']}")).status_code == 204
    # Then it answers 401, it is gone from the list, and revoking again is 404
    refused = requests.get(server.url("/v1/memories"), headers=auth(secret), timeout=10)
    assert refused.status_code == 401 and error_of(refused)["code"] == "unauthorized"
    assert key["id"] not in [k["id"] for k in http.get(server.url("/v1/keys")).json()["items"]]
    assert http.delete(server.url(f"/v1/keys/{key['id']}")).status_code == 404


def test_user_key_acts_only_for_its_user(server: Server, http: requests.Session, memory: str) -> None:
    # Given an account entry and a user key for carol
    assert save(http, server, memory, "shared-note", {"content": "for all", "description": "d"}).status_code == 201
    created = http.post(server.url("/v1/keys"), json={"user": "carol"})
    assert created.status_code == 201, created.text
    assert created.json()["kind"] == "user" and created.json()["user"] == "carol"
    carol = requests.Session()
    carol.headers.update(auth(created.json()["secret"]))
    # When carol saves without user=
    saved = carol.put(server.url(f"/v1/memories/{memory}/entries/todo"),
                      json={"content": "buy milk", "description": "d"})
    # Then it lands in carol's layer
    assert saved.status_code == 201, saved.text
    assert saved.json()["user_id"] == "carol" and saved.json()["visibility"] == "private"
    assert http.get(server.url(f"/v1/memories/{memory}/entries/todo"), params={"user": "carol"}).status_code == 200
    assert http.get(server.url(f"/v1/memories/{memory}/entries/todo")).status_code == 404
    # When carol asks for another user
    for method, path in (
        ("GET", f"/v1/memories/{memory}/entries"),
        ("GET", f"/v1/memories/{memory}/entries/todo"),
        ("GET", f"/v1/memories/{memory}/entries/todo/history"),
        ("GET", f"/v1/memories/{memory}/search?q=milk"),
        ("DELETE", f"/v1/memories/{memory}/entries/todo"),
        ("GET", "/v1/memories"),
    ):
        response = carol.request(method, server.url(path), params={"user": "dave"})
        # Then 403
        assert response.status_code == 403, (method, path, response.text)
        assert error_of(response)["code"] == "forbidden"
    other = carol.put(server.url(f"/v1/memories/{memory}/entries/todo"), params={"user": "dave"},
                      json={"content": "x", "description": "d"})
    assert other.status_code == 403
    # When carol tries to write the account layer
    for visibility in ("shared", "read_only"):
        shared = carol.put(server.url(f"/v1/memories/{memory}/entries/shared-note"),
                           json={"content": "hijacked", "description": "d", "visibility": visibility})
        # Then 403, and the account entry is unchanged
        assert shared.status_code == 403, shared.text
    account_entry = http.get(server.url(f"/v1/memories/{memory}/entries/shared-note")).json()
    assert account_entry["content"] == "for all" and account_entry["version"] == 1
    # And she cannot delete the account's memory, manage keys, or read usage
    assert carol.delete(server.url(f"/v1/memories/{memory}")).status_code == 403
    assert carol.get(server.url("/v1/keys")).status_code == 403
    assert carol.post(server.url("/v1/keys")).status_code == 403
    assert carol.get(server.url("/v1/usage")).status_code == 403
    # And her search sees the account's entry and her own
    found = carol.get(server.url(f"/v1/memories/{memory}/search"), params={"q": "milk note"}).json()["items"]
    assert {(e["name"], e["user_id"]) for e in found} == {("todo", "carol"), ("shared-note", None)}
    carol.close()


def test_another_account_gets_404_never_403(server: Server, http: requests.Session, memory: str) -> None:
    # Given an entry of the default account, and a second account made by the operator command
    assert save(http, server, memory, "private-plan", {"content": "the plan", "description": "d"}).status_code == 201
    keys_before = {k["id"] for k in http.get(server.url("/v1/keys")).json()["items"]}
    other = create_account(server.data_dir, f"other-{uuid.uuid4().hex[:8]}")
    assert other["account"].startswith("acct_") and other["key"]
    stranger = requests.Session()
    stranger.headers.update(auth(other["key"]))
    # When the second account touches the first one's memory in every way
    attempts = [
        ("GET", f"/v1/memories/{memory}", None),
        ("DELETE", f"/v1/memories/{memory}", None),
        ("POST", f"/v1/memories/{memory}/restore", None),
        ("GET", f"/v1/memories/{memory}/entries", None),
        ("GET", f"/v1/memories/{memory}/entries/private-plan", None),
        ("PUT", f"/v1/memories/{memory}/entries/private-plan", {"content": "x", "description": "d"}),
        ("DELETE", f"/v1/memories/{memory}/entries/private-plan", None),
        ("GET", f"/v1/memories/{memory}/entries/private-plan/history", None),
        ("GET", f"/v1/memories/{memory}/search?q=plan", None),
        ("DELETE", f"/v1/keys/{sorted(keys_before)[0]}", None),
    ]
    for method, path, body in attempts:
        response = stranger.request(method, server.url(path), json=body)
        # Then every answer is 404, never 403
        assert response.status_code == 404, (method, path, response.status_code, response.text)
        assert error_of(response)["code"] == "not_found"
    # And its lists show nothing of the first account
    assert memory not in stranger.get(server.url("/v1/memories")).text
    assert not {k["id"] for k in stranger.get(server.url("/v1/keys")).json()["items"]} & keys_before
    # And a memory of the same name in the second account is its own, leaving the first one's alone
    assert stranger.put(server.url(f"/v1/memories/{memory}")).status_code == 201
    assert stranger.get(server.url(f"/v1/memories/{memory}/entries")).json()["items"] == []
    mine = http.get(server.url(f"/v1/memories/{memory}/entries/private-plan"))
    assert mine.json()["content"] == "the plan" and mine.json()["version"] == 1
    assert {k["id"] for k in http.get(server.url("/v1/keys")).json()["items"]} == keys_before
    stranger.close()


# --- usage -------------------------------------------------------------------------------------------


def _count(http: requests.Session, server: Server, operation: str) -> int:
    response = http.get(server.url("/v1/usage"))
    assert response.status_code == 200, response.text
    return sum(c["count"] for c in response.json()["items"] if c["operation"] == operation)


def test_usage_counts_operations(server: Server, http: requests.Session, memory: str) -> None:
    # Given an entry and the current counts
    assert save(http, server, memory, "counted", {"content": "c", "description": "d"}).status_code == 201
    reads_before = _count(http, server, "entries.read")
    usage_reads_before = _count(http, server, "usage.read")
    # When the entry is read three times
    for _ in range(3):
        assert http.get(server.url(f"/v1/memories/{memory}/entries/counted")).status_code == 200
    # Then usage shows three more reads (and the usage reads themselves), by day with billable
    assert _count(http, server, "entries.read") == reads_before + 3
    assert _count(http, server, "usage.read") == usage_reads_before + 2
    items = http.get(server.url("/v1/usage"), params={"since": "2000-01-01"}).json()["items"]
    row = next(c for c in items if c["operation"] == "entries.read")
    assert set(row) == {"day", "operation", "billable", "count"}
    assert row["billable"] is True
    # And a since in the future shows nothing
    assert http.get(server.url("/v1/usage"), params={"since": "2999-01-01"}).json()["items"] == []


def test_refused_requests_are_not_counted(server: Server, http: requests.Session, memory: str) -> None:
    # Given the current count of entry reads
    before = _count(http, server, "entries.read")
    # When reads fail: an entry that does not exist, and a limit out of range on a list
    assert http.get(server.url(f"/v1/memories/{memory}/entries/absent")).status_code == 404
    assert http.get(server.url(f"/v1/memories/{memory}/entries"), params={"limit": 0}).status_code == 400
    # Then usage counts no read
    assert _count(http, server, "entries.read") == before


def test_a_wrong_method_is_405_with_allow(server: Server, http: requests.Session, memory: str) -> None:
    # When a memory is PATCHed (not an operation of the API)
    response = http.patch(server.url(f"/v1/memories/{memory}"), json={})
    # Then the answer is 405 naming the methods that are served there
    assert response.status_code == 405
    assert response.headers["Allow"] == "DELETE, GET, HEAD, PUT"
    assert response.json()["error"]["code"] == "method_not_allowed"


def test_head_of_an_entry_gives_its_etag_without_a_body(server: Server, http: requests.Session, memory: str) -> None:
    # Given an entry at version 1
    assert save(http, server, memory, "headed", {"content": "c", "description": "d"}).status_code == 201
    # When it is asked for with HEAD
    response = http.head(server.url(f"/v1/memories/{memory}/entries/headed"))
    # Then the answer has the ETag and no body
    assert (response.status_code, response.headers["ETag"], response.content) == (200, '"1"', b"")


def test_openapi_lists_the_codes_each_operation_answers(server: Server) -> None:
    # When the OpenAPI document is read
    spec = requests.get(server.url("/v1/openapi.json"), timeout=10).json()
    save_op = spec["paths"]["/v1/memories/{memory}/entries/{name}"]["put"]
    # Then a save documents 201, 409, 412 and 422 and the error shape for 400, not a 422 validation answer
    assert {"200", "201", "400", "409", "412", "413", "422"} <= set(save_op["responses"])
    assert save_op["responses"]["400"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Error"
    }
    assert {p["name"] for p in save_op["parameters"]} >= {"If-Match", "If-None-Match"}
    assert "HTTPValidationError" not in spec["components"]["schemas"]
    delete_op = spec["paths"]["/v1/keys/{key_id}"]["delete"]
    assert "204" in delete_op["responses"] and "200" not in delete_op["responses"]
    # and every operation behind a key documents the 429 and the 503 (AWS storage busy), each with Retry-After
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            if not isinstance(operation, dict) or operation.get("security") == []:
                continue  # (the health check and the signed links ask for no key)
            for code in ("429", "503"):
                assert "Retry-After" in operation["responses"][code].get("headers", {}), (method, path, code)


# --- serve's key (§13) -------------------------------------------------------------------------------


def test_dev_key_is_written_on_first_start_only(tmp_path: Any) -> None:
    # Given a new data dir
    data_dir = tmp_path / "first"
    # When the server starts on it
    with running_server(data_dir) as (base_url, _proc, log):
        key_file = data_dir / "dev-key"
        # Then dev-key holds a working account key, readable by the owner only
        assert key_file.exists()
        key = key_file.read_text().strip()
        assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
        assert requests.get(base_url + "/v1/keys", headers=auth(key), timeout=10).status_code == 200
        assert key in log.read_text()
    before = (key_file.read_bytes(), key_file.stat().st_mtime_ns)
    # When it starts a second time on the same data dir
    with running_server(data_dir) as (base_url, _proc, log):
        # Then dev-key is untouched, the key still works, and no new secret is printed
        assert (key_file.read_bytes(), key_file.stat().st_mtime_ns) == before
        assert requests.get(base_url + "/v1/memories", headers=auth(key), timeout=10).status_code == 200
        keys = requests.get(base_url + "/v1/keys", headers=auth(key), timeout=10).json()["items"]
        assert len(keys) == 1
        assert key not in log.read_text()


def test_a_port_in_use_is_a_clear_error_and_the_next_start_still_prints_the_key(tmp_path: Any) -> None:
    # Given a port something else listens on, and a new data dir
    data_dir = tmp_path / "busy"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        # When agentmem serve is started on that port
        done = subprocess.run([str(AGENTMEM), "serve", "--port", str(port), "--data-dir", str(data_dir)],
                              capture_output=True, text=True, env=clean_env(), timeout=60, check=False)
    # Then it says so in one line and exits 1, with no key made yet
    assert done.returncode == 1, done.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr and "--port" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (data_dir / "dev-key").exists()
    # And a start on a free port makes the account and writes its key
    with running_server(data_dir) as (base_url, _proc, _log):
        key = (data_dir / "dev-key").read_text().strip()
        assert requests.get(base_url + "/v1/keys", headers=auth(key), timeout=10).status_code == 200


def test_agentmem_api_key_becomes_the_default_key(tmp_path: Any) -> None:
    # Given a new data dir and AGENTMEM_API_KEY set
    data_dir = tmp_path / "env-key"
    chosen = f"am_test_{uuid.uuid4().hex}"
    # When the server starts
    with running_server(data_dir, AGENTMEM_API_KEY=chosen) as (base_url, _proc, _log):
        # Then that value is the default account's key, and no other key was made
        assert requests.get(base_url + "/v1/memories", headers=auth(chosen), timeout=10).status_code == 200
        keys = requests.get(base_url + "/v1/keys", headers=auth(chosen), timeout=10).json()["items"]
        assert [(k["kind"], k["last4"]) for k in keys] == [("account", chosen[-4:])]
        wrong = requests.get(base_url + "/v1/memories", headers=auth(chosen + "x"), timeout=10)
        assert wrong.status_code == 401
