"""How the API serves the console: the page's policy lets it reach the API and where the backend's upload links
point, and nothing else; the root leads to the console, behind API Gateway's stage too."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from agentmem.api.app import lambda_handler
from agentmem.bootstrap import build_container, set_container
from agentmem.console import security_headers
from agentmem.local.events import build_rest_event
from agentmem.local.server import LocalContext
from agentmem.settings import Settings


def _connect_src(settings: Settings) -> str:
    policy = security_headers(settings)["Content-Security-Policy"]
    (connect,) = [part.strip() for part in policy.split(";") if part.strip().startswith("connect-src ")]
    assert "default-src 'self'" in policy and "script-src 'self';" in policy and "unsafe-inline" not in policy
    return connect


@pytest.fixture
def no_endpoint_override(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"):
        monkeypatch.delenv(name, raising=False)


def test_on_the_embedded_backend_the_page_may_reach_only_its_own_origin(tmp_path: Path) -> None:
    # uploads go to the server that serves the page (its own /v1 links)
    assert _connect_src(Settings(backend="embedded", data_dir=tmp_path)) == "connect-src 'self'"


@pytest.mark.usefixtures("no_endpoint_override")
@pytest.mark.parametrize(("region", "origin"), [
    ("eu-west-1", "https://agentmem-workspace-x1.s3.eu-west-1.amazonaws.com"),
    ("us-east-1", "https://agentmem-workspace-x1.s3.amazonaws.com"),
    ("cn-north-1", "https://agentmem-workspace-x1.s3.cn-north-1.amazonaws.com.cn"),
])
def test_on_aws_the_page_may_put_a_file_to_the_workspace_buckets_origin(region: str, origin: str) -> None:
    # Given the deployed API's settings (the stack names the bucket; Lambda the region)
    settings = Settings(backend="aws", workspace_bucket="agentmem-workspace-x1", region=region)
    # Then the page may also reach the bucket's own origin, where its upload links point (nothing wider)
    assert _connect_src(settings) == f"connect-src 'self' {origin}"


def test_on_aws_against_an_emulator_the_page_may_reach_the_emulators_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    # agentmem serve --backend aws with S3 elsewhere (its links address the bucket in the path)
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:45123")
    settings = Settings(backend="aws", workspace_bucket="workspace-emulated", region="us-east-1")
    assert _connect_src(settings) == "connect-src 'self' http://127.0.0.1:45123"


@pytest.fixture
def container(tmp_path: Path) -> Iterator[None]:
    set_container(build_container(Settings(backend="embedded", data_dir=tmp_path)))
    yield
    set_container(None)


@pytest.mark.usefixtures("container")
@pytest.mark.parametrize(("visited", "location"), [
    ("/", "/console"),  # agentmem serve, or a custom domain without a base path
    ("/prod/", "/prod/console"),  # API Gateway's stage address, as the stack prints it
    ("/prod", "/prod/console"),  # the same without its slash: a relative "console" would drop the stage
    ("//elsewhere.example/", "/console"),  # never a redirect to another host
])
def test_the_root_leads_to_the_console_under_the_stage_it_was_reached_by(visited: str, location: str) -> None:
    # Given a request for the root with no key, as API Gateway hands it over (the stage in requestContext.path)
    event = build_rest_event("GET", "/")
    event["resource"] = event["requestContext"]["resourcePath"] = "/"
    event["requestContext"]["path"] = visited
    answer = lambda_handler(event, LocalContext())
    # Then it is a redirect to the console, not a 401
    assert answer["statusCode"] == 302
    headers = {k.lower(): v for k, v in (answer.get("headers") or {}).items()}
    headers.update({k.lower(): v[0] for k, v in (answer.get("multiValueHeaders") or {}).items()})
    assert headers["location"] == location
