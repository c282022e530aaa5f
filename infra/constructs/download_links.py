"""Workspace download links that live as long as they say: CloudFront signed URLs in front of the workspace bucket.

An S3 presigned URL dies with the session credentials that signed it, and a Lambda role's session can end
before a one-day link does. So download links are CloudFront signed URLs (``agentmem.adapters.aws.
cloudfront_links``), signed with a key of the deployment's own:

- a **key pair** made at deploy time by a custom resource (``infra/download_key_pair/handler.py``: CloudFormation
  cannot make one), its private key in a **Secrets Manager secret** that only the API function may read (once per
  cold start), its public key in the distribution's **key group**;
- a **distribution** whose one behaviour takes only signed requests (GET and HEAD, HTTPS), caches nothing (a file
  rewritten under a link is served new, as S3 would) and forwards to S3 only the file name and type a link
  carries (``response-content-disposition``, ``response-content-type``) and ``Origin`` (for CORS);
- the workspace bucket reachable through the distribution's **origin access control** (OAC): the bucket policy
  lets only this distribution read objects; the functions reach the bucket through their own roles.

It lives in the stateful stack beside the bucket, since the bucket policy names the distribution, and the key must
outlive redeploys of the functions: links already given keep working. Upload links stay S3 presigned.
"""

from __future__ import annotations

from aws_cdk import CustomResource, Duration, IgnoreMode, RemovalPolicy
from aws_cdk import aws_cloudfront as cloudfront
from aws_cdk import aws_cloudfront_origins as origins
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from ..config import ROOT, DeploymentConfig, resolve_deps_layer_dir
from ..nag import RUNTIME_REASON, acknowledge
from .function import retention
from .packaging import DEPS_EXCLUDE, FUNCTION_EXCLUDE, RUNTIME, lambda_architecture

KEY_PAIR_CODE = ROOT / "infra" / "download_key_pair"
FORWARDED_QUERY = ("response-content-disposition", "response-content-type")  # what a download link asks S3 for

SECRET_ROTATION_REASON = (
    "The secret is the private key of the download links' CloudFront key group. Rotating it means adding a new "
    "public key to the key group before signing with it, and links already given are signed with the old one; "
    "Secrets Manager's rotation cannot do that (docs/deploying.md, Download links, says how to rotate by hand)."
)
ACCESS_LOG_REASON = (
    "Every download link reaches the workspace bucket (the distribution caches nothing), whose S3 server access "
    "logs (the access-log bucket, workspace/ prefix) record each request CloudFront makes for a link. CloudFront's "
    "standard logs would need an ACL-enabled bucket; the account's buckets all have ACLs disabled."
)
WAF_REASON = (
    "The distribution answers only requests with a valid CloudFront signature (its one behaviour trusts only the "
    "key group), so an unsigned request is refused at the edge before reaching S3; a web ACL adds a fixed monthly "
    "cost for nothing it could block that the signature check does not."
)
GEO_REASON = (
    "Download links are given to an account's own users wherever they are; which countries may download is the "
    "account's choice, not the deployment's."
)
CERTIFICATE_REASON = (
    "The distribution uses its cloudfront.net domain and CloudFront's default certificate, for which CloudFront "
    "fixes the minimum viewer protocol itself; a custom domain with its own ACM certificate (in us-east-1) would set "
    "TLSv1.2_2021. Links are HTTPS only."
)


class DownloadLinks(Construct):
    def __init__(
        self, scope: Construct, construct_id: str, *, config: DeploymentConfig, bucket: s3.IBucket
    ) -> None:
        super().__init__(scope, construct_id)
        self.config = config
        self.secret = self._build_secret()
        self.key_pair_function = self._build_key_pair_function()
        public_key_pem = self._build_key_pair()
        self.public_key = cloudfront.PublicKey(
            self, "PublicKey", encoded_key=public_key_pem,
            comment=f"{config.name}: signs workspace download links (private key in Secrets Manager)",
        )
        self.key_group = cloudfront.KeyGroup(
            self, "KeyGroup", items=[self.public_key], comment=f"{config.name}: workspace download links",
        )
        self.distribution = self._build_distribution(bucket)

    @property
    def domain_name(self) -> str:
        return self.distribution.distribution_domain_name

    @property
    def key_pair_id(self) -> str:
        return self.public_key.public_key_id

    # -- the key pair --------------------------------------------------------------------------------------
    def _build_secret(self) -> secretsmanager.Secret:
        secret = secretsmanager.Secret(
            self, "PrivateKey",
            description="agentmem: the private key (PKCS #8 PEM) of the workspace download links' CloudFront key "
            "group; written at deploy time, read by the API function",
            removal_policy=RemovalPolicy.DESTROY,  # it signs for this stack's distribution only, which goes with it
        )
        acknowledge(secret, "AwsSolutions-SMG4", SECRET_ROTATION_REASON)
        return secret

    def _build_key_pair_function(self) -> lambda_.Function:
        self.key_pair_role = role = iam.Role(
            self, "KeyPairRole", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description="agentmem download key pair (deploy time): writes the link key's secret, nothing else",
        )
        log_group = logs.LogGroup(
            self, "KeyPairLogs", retention=retention(self.config.log_retention_days),
            removal_policy=RemovalPolicy.DESTROY,
        )
        log_group.grant_write(role)
        role.add_to_principal_policy(iam.PolicyStatement(
            actions=["secretsmanager:GetSecretValue", "secretsmanager:PutSecretValue"],
            resources=[self.secret.secret_arn],
        ))
        # cryptography, from the dependency layer (the layer's asset is the one the stateless stack uploads)
        deps = lambda_.LayerVersion(
            self, "KeyPairDeps",
            code=lambda_.Code.from_asset(str(resolve_deps_layer_dir(self.config)), exclude=DEPS_EXCLUDE,
                                         ignore_mode=IgnoreMode.GIT),
            description="agentmem: third-party dependencies, for the download key pair's function",
            compatible_runtimes=[RUNTIME], compatible_architectures=[lambda_architecture(self.config)],
            removal_policy=RemovalPolicy.DESTROY,
        )
        function = lambda_.Function(
            self, "KeyPairFunction",
            description="agentmem: makes the download links' key pair at deploy time (custom resource)",
            runtime=RUNTIME, architecture=lambda_architecture(self.config), handler="handler.lambda_handler",
            code=lambda_.Code.from_asset(str(KEY_PAIR_CODE), exclude=FUNCTION_EXCLUDE), layers=[deps],
            role=role, log_group=log_group, memory_size=512, timeout=Duration.minutes(1),
        )
        acknowledge(function, "AwsSolutions-L1", RUNTIME_REASON)
        return function

    def _build_key_pair(self) -> str:
        resource = CustomResource(
            self, "KeyPair", service_token=self.key_pair_function.function_arn,
            resource_type="Custom::AgentmemDownloadKeyPair",
            properties={"SecretArn": self.secret.secret_arn},
            service_timeout=Duration.minutes(5),
        )
        resource.node.add_dependency(self.key_pair_role)  # its grants (the role's policy) first
        return resource.get_att_string("PublicKeyPem")

    # -- the distribution ----------------------------------------------------------------------------------
    def _build_distribution(self, bucket: s3.IBucket) -> cloudfront.Distribution:
        forwarded = cloudfront.OriginRequestPolicy(
            self, "ForwardFileNameAndType",
            comment="agentmem download links: the file name and type S3 answers with, and Origin for CORS",
            query_string_behavior=cloudfront.OriginRequestQueryStringBehavior.allow_list(*FORWARDED_QUERY),
            header_behavior=cloudfront.OriginRequestHeaderBehavior.allow_list("Origin"),
            cookie_behavior=cloudfront.OriginRequestCookieBehavior.none(),
        )
        distribution = cloudfront.Distribution(
            self, "Distribution",
            comment=f"{self.config.name}: workspace download links (CloudFront signed URLs)",
            default_behavior=cloudfront.BehaviorOptions(
                origin=origins.S3BucketOrigin.with_origin_access_control(
                    bucket, origin_access_levels=[cloudfront.AccessLevel.READ],
                ),
                trusted_key_groups=[self.key_group],
                viewer_protocol_policy=cloudfront.ViewerProtocolPolicy.HTTPS_ONLY,
                allowed_methods=cloudfront.AllowedMethods.ALLOW_GET_HEAD,
                cached_methods=cloudfront.CachedMethods.CACHE_GET_HEAD,
                cache_policy=cloudfront.CachePolicy.CACHING_DISABLED,
                origin_request_policy=forwarded,
                compress=False,  # the file's bytes as stored, with its own Content-Length
            ),
            http_version=cloudfront.HttpVersion.HTTP2_AND_3,
        )
        acknowledge(distribution, "AwsSolutions-CFR3", ACCESS_LOG_REASON)
        acknowledge(distribution, "AwsSolutions-CFR2", WAF_REASON)
        acknowledge(distribution, "AwsSolutions-CFR1", GEO_REASON)
        acknowledge(distribution, "AwsSolutions-CFR4", CERTIFICATE_REASON)
        return distribution
