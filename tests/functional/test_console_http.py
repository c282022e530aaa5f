"""The console over HTTP: its files served at /console by the API itself, and the header its writes carry,
recorded as ``updated_by: "console"`` (SPEC §2.1)."""

from __future__ import annotations

import uuid
from urllib.parse import urlsplit

import requests
from functional_support import Server, auth


def test_the_console_page_is_served_without_a_key_with_a_strict_policy(server: Server) -> None:
    page = requests.get(server.url("/console"), timeout=10)
    assert page.status_code == 200
    assert page.headers["Content-Type"].startswith("text/html")
    policy = page.headers["Content-Security-Policy"]
    assert "default-src 'self'" in policy and "script-src 'self'" in policy and "unsafe-inline" not in policy
    assert page.headers["X-Content-Type-Options"] == "nosniff"
    assert page.headers["Cache-Control"] == "no-cache"
    assert '<script type="module" src="console/app.js">' in page.text
    assert "<script>" not in page.text  # nothing inline: the policy would refuse it


def test_its_script_and_style_come_with_their_types_and_revalidate_by_etag(server: Server) -> None:
    script = requests.get(server.url("/console/app.js"), timeout=10)
    style = requests.get(server.url("/console/app.css"), timeout=10)
    assert script.status_code == 200 and script.headers["Content-Type"].startswith("text/javascript")
    assert style.status_code == 200 and style.headers["Content-Type"].startswith("text/css")
    again = requests.get(server.url("/console/app.js"), headers={"If-None-Match": script.headers["ETag"]}, timeout=10)
    assert again.status_code == 304 and again.content == b""


def test_anything_else_under_console_is_a_404_not_a_file_of_the_disk(server: Server) -> None:
    for path in ("/console/nope.js", "/console/..%2F__init__.py", "/console/index.html", "/console/static"):
        answer = requests.get(server.url(path), timeout=10)
        assert answer.status_code in (400, 404), path
        assert answer.json()["error"]["code"] in ("not_found", "invalid")


def test_the_root_leads_to_the_console_without_a_key_on_either_backend(target: Server) -> None:
    answer = requests.get(target.url("/"), allow_redirects=False, timeout=10)
    assert answer.status_code == 302 and answer.headers["Location"] == "/console"
    assert requests.get(target.url("/"), timeout=10).url == target.url("/console")


def test_the_page_may_reach_where_its_upload_links_point_on_either_backend(target: Server) -> None:
    # Given an upload link the API makes for a conversation's workspace
    key = auth(target.key)
    agent = f"console-{uuid.uuid4().hex[:8]}"
    made = requests.put(target.url(f"/v1/agents/{agent}"), headers=key, json={"instructions": "Files."}, timeout=10)
    assert made.status_code == 201, made.text
    posted = requests.post(target.url(f"/v1/agents/{agent}/conversations/c1/messages"), headers=key,
                           json={"messages": [{"role": "user", "content": "Here is the file."}]}, timeout=10)
    assert posted.status_code in (200, 201), posted.text
    link = requests.post(target.url(f"/v1/agents/{agent}/conversations/c1/workspace/links"), headers=key,
                         json={"path": "a.txt", "method": "PUT", "size_bytes": 3}, timeout=10)
    assert link.status_code == 201, link.text
    url = urlsplit(link.json()["url"])
    # Then the console's policy lets the page send to that origin: the bucket's endpoint on AWS (moto's here);
    # on the embedded backend the server's own /v1/links, the page's own origin
    policy = requests.get(target.url("/console"), timeout=10).headers["Content-Security-Policy"]
    connect = next(part.strip() for part in policy.split(";") if part.strip().startswith("connect-src"))
    if target.backend == "aws":
        assert connect == f"connect-src 'self' {url.scheme}://{url.netloc}"
    else:
        assert connect == "connect-src 'self'" and url.path.startswith("/v1/links/")


def test_the_console_is_not_part_of_the_api_document(server: Server) -> None:
    paths = requests.get(server.url("/v1/openapi.json"), timeout=10).json()["paths"]
    assert not [p for p in paths if not p.startswith("/v1/")]


def test_a_write_sent_by_the_console_is_recorded_as_the_consoles(server: Server) -> None:
    memory = f"console-{uuid.uuid4().hex[:8]}"
    key = auth(server.key)
    console = {**key, "X-Agentmem-Client": "console"}
    assert requests.put(server.url(f"/v1/memories/{memory}"), headers=key, timeout=10).status_code == 201
    entry = server.url(f"/v1/memories/{memory}/entries/tone")
    saved = requests.put(entry, headers=console, json={"content": "Warm.", "description": "How we write"}, timeout=10)
    assert saved.status_code == 201 and saved.json()["updated_by"] == "console"
    by_api = requests.put(entry, headers=key, json={"content": "Warm and short."}, timeout=10)
    assert by_api.json()["updated_by"] == "api"
    assert requests.delete(entry, headers=console, timeout=10).status_code == 204
    history = requests.get(entry + "/history", headers=key, timeout=10).json()["items"]
    assert [(h["version"], h["operation"], h["updated_by"]) for h in history] == [
        (3, "delete", "console"), (2, "update", "api"), (1, "create", "console"),
    ]


def test_a_client_label_other_than_the_consoles_is_a_400_naming_it_and_stores_nothing(server: Server) -> None:
    # Given an account memory
    memory = f"console-{uuid.uuid4().hex[:8]}"
    key = auth(server.key)
    assert requests.put(server.url(f"/v1/memories/{memory}"), headers=key, timeout=10).status_code == 201
    entry = server.url(f"/v1/memories/{memory}/entries/tone")
    # When a save carries a misspelt label
    refused = requests.put(entry, headers={**key, "X-Agentmem-Client": "consol"},
                           json={"content": "Warm.", "description": "How we write"}, timeout=10)
    # Then it is refused naming the header, and nothing is stored
    assert refused.status_code == 400 and refused.json()["error"]["field"] == "X-Agentmem-Client"
    assert requests.get(entry, headers=key, timeout=10).status_code == 404


def test_the_console_label_grants_nothing_a_key_may_not_do(server: Server) -> None:
    memory = f"console-{uuid.uuid4().hex[:8]}"
    key = auth(server.key)
    assert requests.put(server.url(f"/v1/memories/{memory}"), headers=key, timeout=10).status_code == 201
    user_key = requests.post(server.url("/v1/keys"), headers=key, json={"user": "ana"}, timeout=10).json()["secret"]
    refused = requests.put(server.url(f"/v1/memories/{memory}/entries/tone"),
                           headers={**auth(user_key), "X-Agentmem-Client": "console"},
                           json={"content": "x", "description": "d", "visibility": "shared"}, timeout=10)
    assert refused.status_code == 403
