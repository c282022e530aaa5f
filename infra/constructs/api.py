"""The REST API: one Lambda (the "Lambdalith") behind API Gateway, with an API-key Lambda authorizer.

Every path goes to the API function except ``/v1/mcp``, which goes to the MCP function: the same
handler code (``agentmem.api.app.lambda_handler`` serves every route), with a third layer holding the
MCP SDK and what it brings (cryptography, starlette, uvicorn, ...). The API function never imports
them, so they stay out of its layer (under 60 MB) and off its cold start.
``/v1/health``, ``/v1/openapi.json``, ``/v1/docs``, the console's files (``/console``, ``/console/*``,
which hold no data) and ``/`` (a redirect to the console) are routed without the authorizer; everything
else, ``/v1/mcp`` included, passes it first, and the function trusts the principal it puts in the
request context.

Throttling: the stage's limit caps the whole API; the usage plan caps each account. Every method behind the
authorizer requires an API Gateway API key, which the authorizer names (``apiKeySource: AUTHORIZER``,
``usageIdentifierKey``): its account's key in the plan, made on the account's first call
(``agentmem.adapters.aws.usage_plan``). Over either limit API Gateway answers 429 ``rate_limited`` with
``Retry-After``, before any function runs. Unless ``agentmem:rateLimitWaf`` is false, an AWS WAF web ACL
on the stage also limits each API key and each source address (``infra.constructs.rate_limit_waf``), with
a 429 in the same shape.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from aws_cdk import Aws, Duration, RemovalPolicy
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_logs as logs
from constructs import Construct

from ..config import DeploymentConfig
from ..nag import acknowledge
from ..stacks.shared import SharedResources
from .function import AgentmemFunction, FunctionSpec, retention
from .grants import (
    OBJECT_DELETE,
    OBJECT_READ,
    OBJECT_WRITE,
    TABLE_KEY_LOOKUP,
    TABLE_READ,
    TABLE_WRITE,
    grant_bedrock_model,
    grant_bedrock_rerank,
    grant_bucket,
    grant_start_execution,
    grant_table,
)
from .packaging import Layers
from .rate_limit_waf import RateLimitWaf

PUBLIC_PATHS = ("health", "openapi.json", "docs")  # under /v1; agentmem.api.app.PUBLIC_PATHS
# the console's page and files (agentmem.console): public like the docs; the page then calls /v1 with a key
CONSOLE_PATHS = ("/console", "/console/{proxy+}")
# the root: a redirect to the console, as `agentmem serve` answers it (agentmem.api.app.root)
ROOT_PATH = "/"
MCP_PATH = "mcp"  # under /v1: agentmem.api.routes.mcp, served by the MCP function
# Every body passes through as bytes (base64 to the function, which decodes JSON itself): a workspace file
# of any type (text/csv with Latin-1 bytes, curl's default form type) arrives byte for byte, and a file read
# back leaves as bytes whatever the client's Accept says.
BINARY_MEDIA_TYPES = ["*/*"]
ACCESS_LOG_FORMAT = {
    "requestId": "$context.requestId",
    "extendedRequestId": "$context.extendedRequestId",
    "requestTime": "$context.requestTime",
    "ip": "$context.identity.sourceIp",
    "httpMethod": "$context.httpMethod",
    "resourcePath": "$context.resourcePath",
    "path": "$context.path",
    "status": "$context.status",
    "responseLength": "$context.responseLength",
    "responseLatency": "$context.responseLatency",
    "integrationLatency": "$context.integrationLatency",
    "accountId": "$context.authorizer.account_id",
    "keyId": "$context.authorizer.key_id",
    "error": "$context.error.message",
    "xrayTraceId": "$context.xrayTraceId",
}


@dataclass(frozen=True)
class GatewayError:
    """A response API Gateway gives itself, in the SPEC §10 error shape."""

    response: apigw.ResponseType
    status: str
    code: str
    message: str | None = None  # None: API Gateway's own message

    def template(self) -> str:
        message = json.dumps(self.message) if self.message else "$context.error.messageString"
        return f'{{"error": {{"code": "{self.code}", "message": {message}}}}}'


GATEWAY_ERRORS = (
    GatewayError(apigw.ResponseType.UNAUTHORIZED, "401", "unauthorized",
                 "missing or invalid API key: send 'Authorization: Bearer <key>'"),
    GatewayError(apigw.ResponseType.ACCESS_DENIED, "403", "forbidden"),
    GatewayError(apigw.ResponseType.THROTTLED, "429", "rate_limited",
                 "too many requests for this account (or for the whole API); retry after Retry-After seconds"),
    GatewayError(apigw.ResponseType.QUOTA_EXCEEDED, "429", "rate_limited"),
    GatewayError(apigw.ResponseType.REQUEST_TOO_LARGE, "413", "too_large"),
    GatewayError(apigw.ResponseType.MISSING_AUTHENTICATION_TOKEN, "404", "not_found"),
    GatewayError(apigw.ResponseType.DEFAULT_4_XX, "400", "invalid"),
    GatewayError(apigw.ResponseType.DEFAULT_5_XX, "500", "internal",
                 "the service failed; the request may be retried"),
)


class AgentmemApi(Construct):
    def __init__(
        self, scope: Construct, construct_id: str, *, config: DeploymentConfig, layers: Layers,
        environment: dict[str, str], mcp_environment: Mapping[str, str], authorizer_environment: Mapping[str, str],
        shared: SharedResources, state_machine_arn: str,
    ) -> None:
        super().__init__(scope, construct_id)
        self.config = config
        self.handler = self._build_api_function(layers, environment, shared, state_machine_arn)
        self.mcp_handler = self._build_mcp_function(layers, mcp_environment, shared.table)
        self.usage_plan_name = f"{config.name}-per-account"
        self.authorizer_function = self._build_authorizer_function(
            layers, {**authorizer_environment, "AGENTMEM_USAGE_PLAN": self.usage_plan_name}, shared.table
        )
        self.access_logs = logs.LogGroup(
            self, "AccessLogs", retention=retention(config.log_retention_days), removal_policy=RemovalPolicy.DESTROY
        )
        self.rest_api = self._build_rest_api()
        self.authorizer = self._build_authorizer()
        self._build_routes()
        self.usage_plan = self._build_usage_plan()
        self._build_gateway_responses()
        self.waf = self._build_waf()

    @property
    def url(self) -> str:
        return self.rest_api.url

    # -- functions ---------------------------------------------------------------------------------------
    def _build_api_function(
        self, layers: Layers, environment: dict[str, str], shared: SharedResources, state_machine_arn: str
    ) -> AgentmemFunction:
        if self.config.rerank_model_id:  # journal search's deep mode re-ranks on Bedrock
            environment = {**environment, "AGENTMEM_RERANKER": "bedrock",
                           "AGENTMEM_RERANK_MODEL_ID": self.config.rerank_model_id}
        api = AgentmemFunction(
            self, "Api", layers=layers, config=self.config, environment=environment,
            spec=FunctionSpec(
                name="api", description="agentmem: the REST API (functions/api/handler.lambda_handler)",
                memory_mb=self.config.api_memory_mb, timeout=Duration.seconds(29),
            ),
        )
        grant_table(api, shared.table, TABLE_READ + TABLE_WRITE)
        # reads sealed journal segments; a purge (or erasing a user) deletes them
        grant_bucket(api, shared.journal_bucket, OBJECT_READ + OBJECT_DELETE, arn_label=shared.journal_arn_label,
                     list_objects=True)
        grant_bucket(
            api, shared.workspace_bucket, OBJECT_READ + OBJECT_WRITE + OBJECT_DELETE,
            arn_label=shared.workspace_arn_label, list_objects=True,
        )
        # download links are CloudFront signed URLs: the key group's private key, read once per cold start
        api.grant(["secretsmanager:GetSecretValue"], [shared.downloads["AGENTMEM_DOWNLOAD_KEY_SECRET_ARN"]])
        grant_start_execution(api, state_machine_arn)
        if self.config.search_collection:
            grant_bedrock_model(api, self.config.embedding_model_id)  # a recall query is embedded first
        if self.config.rerank_model_id:
            grant_bedrock_rerank(api, self.config.rerank_model_id)
        return api

    def _build_mcp_function(
        self, layers: Layers, environment: Mapping[str, str], table: dynamodb.ITable
    ) -> AgentmemFunction:
        mcp = AgentmemFunction(
            self, "Mcp", layers=layers, config=self.config, environment=environment,
            spec=FunctionSpec(
                name="mcp",
                description="agentmem: MCP over streamable HTTP, POST /v1/mcp (functions/mcp/handler.lambda_handler)",
                memory_mb=self.config.mcp_memory_mb, timeout=Duration.seconds(29),
            ),
        )
        # the agent tools read and save entries in the table (search included) and count usage there;
        # they touch no bucket, state machine, collection or model
        grant_table(mcp, table, TABLE_READ + TABLE_WRITE)
        if self.config.search_collection:
            grant_bedrock_model(mcp, self.config.embedding_model_id)  # its memory__search embeds the query
        return mcp

    def _build_authorizer_function(
        self, layers: Layers, environment: Mapping[str, str], table: dynamodb.ITable
    ) -> AgentmemFunction:
        authorizer = AgentmemFunction(
            self, "Authorizer", layers=layers, config=self.config, environment=environment,
            spec=FunctionSpec(
                name="authorizer", description="agentmem: API-key authorizer (Bearer key → account, user, kind)",
                memory_mb=512, timeout=Duration.seconds(10),
            ),
        )
        grant_table(authorizer, table, TABLE_KEY_LOOKUP, indexes=False)  # one GetItem on KEY#{sha256}
        # an account's first call: its API key made and added to the usage plan (found by name: the plan's id
        # cannot be named here, the plan depends on the stage, which depends on this function)
        apigateway = f"arn:{Aws.PARTITION}:apigateway:{Aws.REGION}::"
        authorizer.grant(["apigateway:POST"], [f"{apigateway}/apikeys", f"{apigateway}/usageplans/*/keys"])
        authorizer.grant(["apigateway:GET"], [f"{apigateway}/apikeys", f"{apigateway}/usageplans"])
        acknowledge(
            authorizer.role,
            "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:apigateway:<AWS::Region>::/usageplans/*/keys]",
            "Adding an account's API key to the usage plan: the plan's id cannot be named in this policy (the plan "
            "depends on the stage, the stage on the authorizer); the keys of usage plans are all this reaches.",
        )
        return authorizer

    # -- API Gateway -------------------------------------------------------------------------------------
    def _build_rest_api(self) -> apigw.RestApi:
        api = apigw.RestApi(
            self, "RestApi",
            rest_api_name=f"{self.config.name}-api",
            description="agentmem REST API (SPEC §10)",
            endpoint_types=[apigw.EndpointType.REGIONAL],
            binary_media_types=BINARY_MEDIA_TYPES,
            api_key_source_type=apigw.ApiKeySourceType.AUTHORIZER,
            cloud_watch_role=True,  # API Gateway's account-level role, needed for access and execution logs
            cloud_watch_role_removal_policy=RemovalPolicy.RETAIN,
            deploy_options=apigw.StageOptions(
                stage_name=self.config.stage_name,
                throttling_rate_limit=self.config.throttle_rate,
                throttling_burst_limit=self.config.throttle_burst,
                tracing_enabled=True,
                logging_level=apigw.MethodLoggingLevel.ERROR,
                data_trace_enabled=False,  # request bodies carry user content: never in execution logs
                access_log_destination=apigw.LogGroupLogDestination(self.access_logs),
                access_log_format=apigw.AccessLogFormat.custom(json.dumps(ACCESS_LOG_FORMAT)),
            ),
        )
        role = api.node.try_find_child("CloudWatchRole")
        if role is not None:
            acknowledge(
                role, "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
                "AmazonAPIGatewayPushToCloudWatchLogs]",
                "API Gateway's CloudWatch role is one account-wide setting for every REST API in the region; "
                "AWS documents this managed policy for it, and it cannot be scoped to one API's log groups.",
            )
        acknowledge(
            api.node.default_child, "AwsSolutions-APIG2",  # type: ignore[arg-type]
            "Requests are validated by the function (Pydantic models, SPEC §10 error bodies naming the field); "
            "a gateway validator would answer in another shape than the embedded server does.",
        )
        return api

    def _build_authorizer(self) -> apigw.TokenAuthorizer:
        return apigw.TokenAuthorizer(
            self, "ApiKeyAuthorizer",
            handler=self.authorizer_function.function,
            identity_source=apigw.IdentitySource.header("Authorization"),
            results_cache_ttl=Duration.seconds(self.config.authorizer_cache_seconds),
        )

    def _build_routes(self) -> None:
        integration = apigw.LambdaIntegration(
            self.handler.function, proxy=True, scope_permission_to_method=False  # one permission for the API
        )
        root = self.rest_api.root
        v1 = root.add_resource("v1")

        def keyed(resource: apigw.IResource, target: apigw.LambdaIntegration = integration) -> apigw.Method:
            """Behind the authorizer, and the API key it names (the account's, in the usage plan)."""
            return resource.add_method("ANY", target, authorizer=self.authorizer, api_key_required=True)

        protected = [
            keyed(root.add_resource("{proxy+}")),
            keyed(v1),
            # a sibling of the public resources: API Gateway does not fall back from /v1/* to /{proxy+}
            keyed(v1.add_resource("{proxy+}")),
        ]
        # /v1/mcp: its own function; every method goes there (POST is served, the app answers 405 to the
        # rest, as it did before), and API Gateway may invoke that function for this path only
        mcp_integration = apigw.LambdaIntegration(self.mcp_handler.function, proxy=True)
        protected.append(keyed(v1.add_resource(MCP_PATH), mcp_integration))
        for method in protected:
            acknowledge(
                method, "AwsSolutions-COG4",
                "Callers are programs holding agentmem API keys (SPEC §10), not Cognito users: this method "
                "uses the API-key Lambda authorizer instead of a Cognito user pool.",
            )
        console = root.add_resource(CONSOLE_PATHS[0].strip("/"))
        public: list[tuple[str, apigw.IResource]] = [(f"/v1/{path}", v1.add_resource(path)) for path in PUBLIC_PATHS]
        public += [(CONSOLE_PATHS[0], console), (CONSOLE_PATHS[1], console.add_resource("{proxy+}")), (ROOT_PATH, root)]
        for path, resource in public:
            method = resource.add_method("ANY", integration, authorization_type=apigw.AuthorizationType.NONE)
            acknowledge(
                method, "AwsSolutions-APIG4",
                f"{path} is public by contract (SPEC §10: liveness, the API's own documentation, the console's "
                "files and the root's redirect to it need no key); the function answers 405 for any method it does "
                "not serve there.",
            )
            acknowledge(
                method, "AwsSolutions-COG4",
                f"{path} is public by contract and has no authorizer at all.",
            )

    def _build_usage_plan(self) -> apigw.UsagePlan:
        plan = self.rest_api.add_usage_plan(
            "PerAccount", name=self.usage_plan_name,
            description="agentmem: each account's requests (its API key, named by the authorizer)",
            throttle=apigw.ThrottleSettings(
                rate_limit=self.config.account_throttle_rate, burst_limit=self.config.account_throttle_burst
            ),
        )
        plan.add_api_stage(stage=self.rest_api.deployment_stage)
        return plan

    def _build_waf(self) -> RateLimitWaf | None:
        stage = self.rest_api.deployment_stage
        if self.config.rate_limit_waf:
            return RateLimitWaf(self, "RateLimits", config=self.config, stage=stage)
        acknowledge(
            stage, "AwsSolutions-APIG3",
            "This deployment leaves the web ACL out (agentmem:rateLimitWaf=false, to save its monthly cost): the "
            "stage and each account are still throttled by API Gateway and every data route needs an API key; "
            "there is no limit per key apart from its account's, nor per source address.",
        )
        return None

    def _build_gateway_responses(self) -> None:
        for error in GATEWAY_ERRORS:
            headers = {"Content-Type": "'application/json'"}
            if error.status == "401":
                headers["WWW-Authenticate"] = "'Bearer'"
            if error.status == "429":  # a token comes back within the second at any limit the stack sets
                headers["Retry-After"] = "'1'"
            self.rest_api.add_gateway_response(
                f"{error.response.response_type}Response",
                type=error.response, status_code=error.status, response_headers=headers,
                templates={"application/json": error.template()},
            )
