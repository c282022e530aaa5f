"""The REST API: the API function behind API Gateway (the MCP function on /v1/mcp), an API-key
authorizer, throttling and access logs."""

from __future__ import annotations

import json
from typing import Any

from agentmem.settings import Settings
from aws_cdk.assertions import Match

from infra.config import DeploymentConfig
from infra.constructs.api import BINARY_MEDIA_TYPES, CONSOLE_PATHS, MCP_PATH, PUBLIC_PATHS, ROOT_PATH

MCP = f"/v1/{MCP_PATH}"
# the paths API Gateway routes without the authorizer: the docs, liveness, the console's files and the root
PUBLIC = {*(f"/v1/{p}" for p in PUBLIC_PATHS), *CONSOLE_PATHS, ROOT_PATH}


def _paths(synthesis: Any) -> dict[str, str]:
    """Resource logical id → full path, rebuilt from the resources' parents."""
    resources = synthesis.resources("Stateless", "AWS::ApiGateway::Resource")
    paths: dict[str, str] = {}

    def path_of(logical_id: str) -> str:
        if logical_id not in resources:
            return ""
        props = resources[logical_id]["Properties"]
        parent = props["ParentId"]
        parent_id = parent.get("Ref")
        return f"{path_of(parent_id) if parent_id else ''}/{props['PathPart']}"

    for logical_id in resources:
        paths[logical_id] = path_of(logical_id)
    return paths


def _methods(synthesis: Any) -> dict[str, dict[str, Any]]:
    """Path → method properties (the root is "/")."""
    paths = _paths(synthesis)
    found = {}
    for method in synthesis.resources("Stateless", "AWS::ApiGateway::Method").values():
        resource = method["Properties"]["ResourceId"]
        path = paths.get(resource.get("Ref", ""), "/") if isinstance(resource, dict) and "Ref" in resource else "/"
        found[path] = method["Properties"]
    return found


def test_rest_api_is_regional_and_takes_binary_uploads(stateless: Any) -> None:
    stateless.resource_count_is("AWS::ApiGateway::RestApi", 1)
    stateless.has_resource_properties("AWS::ApiGateway::RestApi", {
        "EndpointConfiguration": {"Types": ["REGIONAL"]},
        "BinaryMediaTypes": BINARY_MEDIA_TYPES,
    })


def test_every_path_but_mcp_goes_to_the_one_api_function_as_a_proxy(synthesis: Any) -> None:
    methods = _methods(synthesis)
    assert set(methods) >= {"/", "/{proxy+}", "/v1", "/v1/{proxy+}", MCP, *PUBLIC}
    targets = set()
    for path, method in methods.items():
        assert method["HttpMethod"] == "ANY", path
        assert method["Integration"]["Type"] == "AWS_PROXY", path
        if path != MCP:
            targets.add(json.dumps(method["Integration"]["Uri"]))
    assert len(targets) == 1 and "ApiFunction" in targets.pop()


def test_the_mcp_path_goes_to_the_mcp_function_as_a_proxy(synthesis: Any) -> None:
    # Given /v1/mcp, Then every method there (POST served; GET and DELETE answered 405 by the app) goes
    # to the MCP function, behind the same authorizer, and only that method does
    methods = _methods(synthesis)
    mcp = methods[MCP]
    assert mcp["HttpMethod"] == "ANY" and mcp["Integration"]["Type"] == "AWS_PROXY"
    uri = json.dumps(mcp["Integration"]["Uri"])
    assert "ApiMcpFunction" in uri and '"ApiFunction' not in uri
    (authorizer_id,) = synthesis.resources("Stateless", "AWS::ApiGateway::Authorizer")
    assert mcp["AuthorizationType"] == "CUSTOM" and mcp["AuthorizerId"] == {"Ref": authorizer_id}
    others = [path for path, method in methods.items() if "ApiMcpFunction" in json.dumps(method["Integration"])]
    assert others == [MCP]


def test_public_paths_skip_the_authorizer_and_the_rest_require_it(synthesis: Any) -> None:
    (authorizer_id,) = synthesis.resources("Stateless", "AWS::ApiGateway::Authorizer")
    for path, method in _methods(synthesis).items():
        if path in PUBLIC:
            assert method["AuthorizationType"] == "NONE", path
            assert "AuthorizerId" not in method, path
        else:
            assert method["AuthorizationType"] == "CUSTOM", path
            assert method["AuthorizerId"] == {"Ref": authorizer_id}, path


def test_the_root_reaches_the_function_without_a_key_like_the_local_server(synthesis: Any) -> None:
    # Given the root of the API (the stage's address), Then API Gateway asks no key of it: the function answers
    # it with its redirect to the console, as `agentmem serve` does (a 401 before)
    root = _methods(synthesis)["/"]
    assert root["AuthorizationType"] == "NONE" and "AuthorizerId" not in root
    assert not root.get("ApiKeyRequired", False)
    assert "ApiFunction" in json.dumps(root["Integration"]["Uri"])
    # And every other path outside /v1 and /console still needs one
    assert _methods(synthesis)["/{proxy+}"]["AuthorizationType"] == "CUSTOM"


def test_authorizer_reads_the_bearer_header_with_the_authorizer_function_and_caches(stateless: Any) -> None:
    stateless.has_resource_properties("AWS::ApiGateway::Authorizer", {
        "Type": "TOKEN",
        "IdentitySource": "method.request.header.Authorization",
        "AuthorizerResultTtlInSeconds": 300,
        "AuthorizerUri": Match.object_like({"Fn::Join": Match.array_with([
            Match.array_with([{"Fn::GetAtt": [Match.string_like_regexp("ApiAuthorizerFunction"), "Arn"]}])
        ])}),
    })


def test_stage_is_throttled_traced_and_writes_access_logs(synthesis: Any, stateless: Any) -> None:
    stateless.has_resource_properties("AWS::ApiGateway::Stage", {
        "StageName": "prod",
        "TracingEnabled": True,
        "MethodSettings": [Match.object_like({
            "HttpMethod": "*", "ResourcePath": "/*", "ThrottlingRateLimit": 100, "ThrottlingBurstLimit": 200,
            "DataTraceEnabled": False, "LoggingLevel": "ERROR",
        })],
        "AccessLogSetting": Match.object_like({"DestinationArn": Match.any_value()}),
    })
    (stage,) = synthesis.resources("Stateless", "AWS::ApiGateway::Stage").values()
    access_format = json.loads(stage["Properties"]["AccessLogSetting"]["Format"])
    assert access_format["requestId"] == "$context.requestId"
    assert access_format["accountId"] == "$context.authorizer.account_id"
    destination = json.dumps(stage["Properties"]["AccessLogSetting"]["DestinationArn"])
    assert "ApiAccessLogs" in destination


def test_gateway_errors_answer_in_the_api_error_shape(synthesis: Any) -> None:
    responses = {
        r["Properties"]["ResponseType"]: r["Properties"]
        for r in synthesis.resources("Stateless", "AWS::ApiGateway::GatewayResponse").values()
    }
    unauthorized = responses["UNAUTHORIZED"]
    assert unauthorized["StatusCode"] == "401"
    body = json.loads(unauthorized["ResponseTemplates"]["application/json"])
    assert body["error"]["code"] == "unauthorized"
    assert responses["THROTTLED"]["StatusCode"] == "429"
    assert '"code": "rate_limited"' in responses["THROTTLED"]["ResponseTemplates"]["application/json"]
    assert responses["DEFAULT_5XX"]["StatusCode"] == "500"


def test_each_account_is_throttled_by_the_usage_plan_keyed_by_the_authorizer(synthesis: Any, stateless: Any) -> None:
    # Given the stack, Then API keys come from the authorizer, never from a client's header
    (api,) = synthesis.resources("Stateless", "AWS::ApiGateway::RestApi").values()
    assert api["Properties"]["ApiKeySourceType"] == "AUTHORIZER"
    # And every method behind the authorizer requires one (so the usage plan applies), the public ones none
    for path, method in _methods(synthesis).items():
        assert method.get("ApiKeyRequired", False) is (path not in PUBLIC), path
    # And one usage plan throttles each key (each account's) on the API's stage, below the stage's own limit
    config = DeploymentConfig()
    (plan,) = synthesis.resources("Stateless", "AWS::ApiGateway::UsagePlan").values()
    props = plan["Properties"]
    assert props["Throttle"] == {"RateLimit": config.account_throttle_rate, "BurstLimit": config.account_throttle_burst}
    assert config.account_throttle_rate < config.throttle_rate
    (stage_id,) = synthesis.resources("Stateless", "AWS::ApiGateway::Stage")
    (api_id,) = synthesis.resources("Stateless", "AWS::ApiGateway::RestApi")
    (on_stage,) = props["ApiStages"]
    assert (on_stage["ApiId"], on_stage["Stage"]) == ({"Ref": api_id}, {"Ref": stage_id})
    assert not on_stage.get("Throttle")  # the plan's limit holds for every method alike
    # And the authorizer finds it by the name in its settings (AGENTMEM_USAGE_PLAN), and may add keys to it
    authorizer = next(f for f in synthesis.resources("Stateless", "AWS::Lambda::Function").values()
                      if f["Properties"].get("Description", "").startswith("agentmem: API-key authorizer"))
    assert authorizer["Properties"]["Environment"]["Variables"]["AGENTMEM_USAGE_PLAN"] == props["UsagePlanName"]
    assert "usage_plan" in Settings.model_fields
    assert _apigateway_grants(synthesis, "ApiAuthorizerRole") == {
        ("apigateway:POST", "/apikeys"), ("apigateway:POST", "/usageplans/*/keys"),
        ("apigateway:GET", "/apikeys"), ("apigateway:GET", "/usageplans"),
    }
    assert _apigateway_grants(synthesis, "ApiRole") == set()


def _apigateway_grants(synthesis: Any, role_prefix: str) -> set[tuple[str, str]]:
    """(action, path after the region's ARN) of the role's API Gateway permissions."""
    found = set()
    for policy in synthesis.resources("Stateless", "AWS::IAM::Policy").values():
        if not any(role["Ref"].startswith(role_prefix) for role in policy["Properties"]["Roles"]):
            continue
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
            for action in (a for a in actions if a.startswith("apigateway:")):
                for resource in resources:  # {"Fn::Join": ["", ["arn:", partition, ":apigateway:", region, "::/x"]]}
                    found.add((action, resource["Fn::Join"][1][-1].removeprefix("::")))
    return found


def test_a_throttled_request_is_a_429_in_the_error_shape_with_retry_after(synthesis: Any) -> None:
    responses = {
        r["Properties"]["ResponseType"]: r["Properties"]
        for r in synthesis.resources("Stateless", "AWS::ApiGateway::GatewayResponse").values()
    }
    for kind in ("THROTTLED", "QUOTA_EXCEEDED"):
        response = responses[kind]
        assert response["StatusCode"] == "429"
        assert response["ResponseParameters"]["gatewayresponse.header.Retry-After"] == "'1'"
        body = json.loads(response["ResponseTemplates"]["application/json"].replace(
            "$context.error.messageString", '"the message"'))
        assert body["error"]["code"] == "rate_limited" and body["error"]["message"]


def test_api_gateway_may_invoke_the_function_and_the_authorizer(synthesis: Any) -> None:
    permissions = synthesis.resources("Stateless", "AWS::Lambda::Permission").values()
    invoked = {json.dumps(p["Properties"]["FunctionName"]) for p in permissions
               if p["Properties"]["Principal"] == "apigateway.amazonaws.com"}
    assert any("ApiFunction" in f for f in invoked)
    assert any("ApiAuthorizerFunction" in f for f in invoked)
    assert any("ApiMcpFunction" in f for f in invoked)


def test_api_gateway_may_invoke_the_mcp_function_on_its_path_only(synthesis: Any) -> None:
    permissions = [p["Properties"] for p in synthesis.resources("Stateless", "AWS::Lambda::Permission").values()
                   if "ApiMcpFunction" in json.dumps(p["Properties"]["FunctionName"])]
    assert permissions
    for permission in permissions:
        assert permission["Principal"] == "apigateway.amazonaws.com"
        assert json.dumps(permission["SourceArn"]).endswith(f'/*{MCP}"]]}}'), permission["SourceArn"]
