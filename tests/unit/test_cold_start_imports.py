"""What a cold start imports. The API function's handler imports what every request needs; what only some
requests need comes with the first of them: boto3 and botocore with the first AWS session (and the X-Ray
SDK's botocore patch with it), Powertools' models of an OpenAPI document with ``GET /v1/openapi.json``.
The MCP function speaks MCP without the ``mcp`` SDK (``agentmem.mcp_server.protocol``): neither its import nor
its requests load the SDK or what the SDK brings.

Each check runs in a fresh interpreter with Lambda's environment (tracing on, as on Lambda, the AWS
backend), since what this test process has imported says nothing about a cold start.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "layers" / "core" / "python"

LAMBDA_ENV = {
    "AWS_LAMBDA_FUNCTION_NAME": "agentmem-api", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024",
    "AWS_EXECUTION_ENV": "AWS_Lambda_python3.13", "LAMBDA_TASK_ROOT": str(ROOT / "functions" / "api"),
    "AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
    "POWERTOOLS_SERVICE_NAME": "agentmem", "POWERTOOLS_METRICS_DISABLED": "true",
    "AGENTMEM_BACKEND": "aws", "AGENTMEM_TABLE": "agentmem-cold-start",
    # the trace header Lambda sets for a sampled request; the segments go to the daemon's UDP port on loopback
    "_X_AMZN_TRACE_ID": "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1",
    "AWS_XRAY_DAEMON_ADDRESS": "127.0.0.1:2000",
}

# what importing the API handler leaves out, each made lazy on purpose
NOT_AT_IMPORT = (
    # the AWS clients, made with the first AWS session (Powertools imports botocore's package itself, a few
    # names of its own, to add its user agent to clients when there are some)
    "boto3", "botocore.session", "botocore.client",
    "aws_xray_sdk.ext.botocore",  # X-Ray's patch of botocore, applied with the first AWS session
    "aws_xray_sdk.core.sampling.connector",  # centralised sampling (botocore): Lambda samples, not the SDK
    "requests", "pynamodb", "httpx", "sqlite3",  # what Powertools' auto-patch would have imported to patch
    "aws_lambda_powertools.event_handler.openapi.models",  # only GET /v1/openapi.json builds a document
    "agentmem.api.openapi",  # and only it (or /v1/docs) imports what builds it
    "mcp", "mcp_types",  # the stdio MCP server's SDK: no function imports it
    "pydantic_settings",  # settings.py reads its variables itself
    # the entries service (recall, the screening of what is saved), built with the first entry route's request
    "agentmem.services.entries", "agentmem.services.agent_memory", "agentmem.services.recall",
    # the conversations' records and the tools' definitions, with the first request on their routes
    "agentmem.domain.conversations", "agentmem.domain.tools", "agentmem.domain.tool_formats",
)

# what neither the MCP function's import nor its requests load: the SDK (and its pydantic models of the
# protocol) and what it brings; /v1/mcp speaks the protocol itself
NOT_IN_THE_MCP_FUNCTION = ("mcp", "mcp_types", "starlette", "sse_starlette", "anyio", "httpx", "httpx2", "uvicorn")


def run_in_lambda(body: str, prelude: str = "") -> dict[str, Any]:
    """Run ``prelude`` then ``body`` in a fresh interpreter with Lambda's environment; they set ``out``, printed
    as JSON."""
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "TMPDIR", "LANG")}
    env = {**keep, **LAMBDA_ENV, "PYTHONPATH": os.pathsep.join([str(ROOT), str(CORE)])}
    code = "\n".join(["import json, sys", "out = {}", textwrap.dedent(prelude), textwrap.dedent(body),
                      "print(json.dumps(out))"])
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


FIRST_CALLS = """
    from agentmem.local.events import build_rest_event
    from agentmem.local.server import LocalContext

    def call(method, path, body=None, authorizer=None):
        event = build_rest_event(method, path, "", {"Content-Type": "application/json"},
                                 json.dumps(body).encode() if body is not None else None)
        if authorizer:
            event["requestContext"]["authorizer"] = authorizer
        answer = functions.api.handler.lambda_handler(event, LocalContext())
        return answer["statusCode"], json.loads(answer["body"])
"""


def test_the_api_handler_imports_none_of_what_only_some_requests_need() -> None:
    out = run_in_lambda(f"""
        import functions.api.handler
        from agentmem.observability import tracer

        out["tracing_on"] = not tracer.disabled
        out["loaded"] = [name for name in {NOT_AT_IMPORT!r} if name in sys.modules]
    """)
    assert out["tracing_on"] is True  # the Lambda path of the tracer, not the one that turns it off
    assert out["loaded"] == []


def test_the_first_requests_import_what_their_routes_need() -> None:
    out = run_in_lambda(prelude=FIRST_CALLS, body="""
        import functions.api.handler
        from aws_xray_sdk.core import patcher

        out["health"] = call("GET", "/v1/health")
        out["after_health"] = {name: name in sys.modules for name in ("boto3", "botocore.client")}
        out["patched"] = sorted(patcher._PATCHED_MODULES)
        models = "aws_lambda_powertools.event_handler.openapi.models"
        out["models_before_document"] = models in sys.modules
        status, document = call("GET", "/v1/openapi.json")
        out["document"] = [status, document.get("openapi"), sorted(document.get("paths", {}))]
        out["models_after_document"] = models in sys.modules
        # a body route's request model, on its first use: refused by the validation, before any storage call
        caller = {"account_id": "acct_cold", "key_id": "key_cold", "kind": "account"}
        out["invalid_save"] = call("PUT", "/v1/memories/notes/entries/first", {"content": 7}, authorizer=caller)
    """)
    assert out["health"] == [200, {"status": "ok", "version": out["health"][1]["version"], "backend": "aws"}]
    assert out["after_health"] == {"boto3": True, "botocore.client": True}  # the container's AWS session
    assert set(out["patched"]) >= {"botocore", "httplib"}  # traced from the first AWS session on
    assert out["models_before_document"] is False
    status, version, paths = out["document"]
    assert status == 200 and version.startswith("3.") and "/v1/memories/{memory}/entries/{name}" in paths
    assert out["models_after_document"] is True
    status, body = out["invalid_save"]
    assert status == 400 and body["error"]["code"] == "invalid" and body["error"]["field"] == "content", body


def test_the_mcp_function_serves_mcp_without_the_sdk_or_what_it_brings() -> None:
    out = run_in_lambda(prelude=FIRST_CALLS, body="""
        import functions.mcp.handler as mcp_handler
        out["after_import"] = [name for name in NOT_IN_THE_MCP_FUNCTION if name in sys.modules]

        # the agent's tools, without storage: the tool service answers from the catalog
        from types import SimpleNamespace
        from agentmem.bootstrap import get_container
        from agentmem.domain.tools import catalog

        class Service:
            def definitions(self, principal, agent, *, user=None, surface=None):
                return catalog("noclick")

            def execute(self, principal, agent, tool, arguments, *, user=None, surface=None):
                return SimpleNamespace(text="found nothing", result={"items": []})

        get_container().__dict__["tools"] = Service()
        caller = {"account_id": "acct_cold", "key_id": "key_cold", "kind": "account"}
        answers = []
        for message in (
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
             "params": {"name": "memory__search", "arguments": {"query": "q"}}},
        ):
            event = build_rest_event("POST", "/v1/mcp", "agent=support",
                                     {"Content-Type": "application/json", "Accept": "application/json"},
                                     json.dumps(message).encode())
            event["requestContext"]["authorizer"] = caller
            answer = mcp_handler.lambda_handler(event, LocalContext())
            answers.append([answer["statusCode"], json.loads(answer["body"])])
        out["answers"] = answers
        out["after_requests"] = [name for name in NOT_IN_THE_MCP_FUNCTION if name in sys.modules]
    """.replace("NOT_IN_THE_MCP_FUNCTION", repr(NOT_IN_THE_MCP_FUNCTION)))
    # Given the MCP function as Lambda imports it, Then none of the SDK is loaded
    assert out["after_import"] == []
    # When a client initializes, lists and calls a tool through it, Then it is answered in MCP's shapes
    (init_status, init), (list_status, listed), (call_status, called) = out["answers"]
    assert (init_status, init["result"]["protocolVersion"], init["result"]["serverInfo"]["name"]) == (
        200, "2025-11-25", "agentmem")
    assert list_status == 200 and [tool["name"] for tool in listed["result"]["tools"]] == [
        "memory__search", "memory__read", "memory__save", "memory__delete"]
    assert call_status == 200 and called["result"]["structuredContent"] == {"items": []}
    # And still none of the SDK is loaded
    assert out["after_requests"] == []
