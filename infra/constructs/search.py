"""Recall and journal search: an OpenSearch Serverless VECTORSEARCH collection and its policies.

The collection, its encryption policy and its network policy live in the stateful stack. The
data-access policy names the roles allowed in, and those roles belong to the stateless stack, so
it is built there (``SearchAccess``): declaring it beside the collection would make each stack
depend on the other.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from aws_cdk import RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_opensearchserverless as aoss
from constructs import Construct

from ..config import DeploymentConfig

# what each kind of caller may do with the collection's indexes (OpenSearch Serverless permissions). Nothing
# creates the index by hand: the first caller to find it missing creates it (``OpenSearchIndex.setup``: the
# indexer before its first write, the API on a query that finds no index), or adds the fields its mapping
# lacks, so both roles may set it up.
INDEX_SETUP_PERMISSIONS = ["aoss:CreateIndex", "aoss:DescribeIndex", "aoss:UpdateIndex"]
READ_PERMISSIONS = [*INDEX_SETUP_PERMISSIONS, "aoss:ReadDocument"]
WRITE_PERMISSIONS = [*INDEX_SETUP_PERMISSIONS, "aoss:ReadDocument", "aoss:WriteDocument"]
COLLECTION_READ = ["aoss:DescribeCollectionItems"]
COLLECTION_WRITE = ["aoss:DescribeCollectionItems", "aoss:CreateCollectionItems", "aoss:UpdateCollectionItems"]


def collection_name(config: DeploymentConfig) -> str:
    return config.name  # 3–32 chars of [a-z0-9-], checked by DeploymentConfig


class SearchCollection(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, config: DeploymentConfig) -> None:
        super().__init__(scope, construct_id)
        self.name = collection_name(config)
        encryption = self._build_encryption_policy()
        network = self._build_network_policy()
        self.collection = self._build_collection(config)
        self.collection.add_resource_dependency(encryption)  # a collection cannot be created before its key policy
        self.collection.add_resource_dependency(network)

    @property
    def arn(self) -> str:
        return self.collection.attr_arn

    @property
    def endpoint(self) -> str:
        return self.collection.attr_collection_endpoint

    def _resource(self) -> list[str]:
        return [f"collection/{self.name}"]

    def _build_encryption_policy(self) -> aoss.CfnSecurityPolicy:
        document = {"Rules": [{"ResourceType": "collection", "Resource": self._resource()}], "AWSOwnedKey": True}
        return aoss.CfnSecurityPolicy(
            self, "EncryptionPolicy", name=f"{self.name}-enc", type="encryption",
            description="agentmem: encrypt the collection at rest with an AWS-owned key",
            policy=json.dumps(document),
        )

    def _build_network_policy(self) -> aoss.CfnSecurityPolicy:
        # The functions run outside a VPC: the endpoint is public, and every request is SigV4-signed
        # and checked against IAM and the data-access policy.
        document = [{"Rules": [{"ResourceType": "collection", "Resource": self._resource()}], "AllowFromPublic": True}]
        return aoss.CfnSecurityPolicy(
            self, "NetworkPolicy", name=f"{self.name}-net", type="network",
            description="agentmem: a public HTTPS endpoint; every request needs SigV4 and the data policy",
            policy=json.dumps(document),
        )

    def _build_collection(self, config: DeploymentConfig) -> aoss.CfnCollection:
        collection = aoss.CfnCollection(
            self, "Collection", name=self.name, type="VECTORSEARCH",
            description="agentmem: entries and journal messages for hybrid (vector + keyword) recall",
            standby_replicas=config.search_standby_replicas,
        )
        # derived data: the indexer rebuilds it from the table, and an idle collection still costs OCUs
        collection.apply_removal_policy(RemovalPolicy.DESTROY)
        return collection


class SearchAccess(Construct):
    """The collection's data-access policy and the IAM side (``aoss:APIAccessAll``) for the roles."""

    def __init__(
        self, scope: Construct, construct_id: str, *, collection_name: str, collection_arn: str,
        readers: Sequence[iam.IRole], writers: Sequence[iam.IRole],
    ) -> None:
        super().__init__(scope, construct_id)
        self.policy = aoss.CfnAccessPolicy(
            self, "DataAccessPolicy", name=f"{collection_name}-data", type="data",
            description="agentmem: the API reads the indexes, the indexer writes them; either creates them",
            policy=self._document(collection_name, readers, writers),
        )
        for role in [*readers, *writers]:
            role.add_to_principal_policy(iam.PolicyStatement(actions=["aoss:APIAccessAll"], resources=[collection_arn]))

    @staticmethod
    def _document(name: str, readers: Sequence[iam.IRole], writers: Sequence[iam.IRole]) -> str:
        def rule(roles: Sequence[iam.IRole], collection: list[str], index: list[str], what: str) -> dict[str, object]:
            return {
                "Description": what,
                "Rules": [
                    {"ResourceType": "collection", "Resource": [f"collection/{name}"], "Permission": collection},
                    {"ResourceType": "index", "Resource": [f"index/{name}/*"], "Permission": index},
                ],
                "Principal": [role.role_arn for role in roles],
            }

        rules = []
        if readers:
            rules.append(rule(readers, COLLECTION_READ, READ_PERMISSIONS, "read"))
        if writers:
            rules.append(rule(writers, COLLECTION_WRITE, WRITE_PERMISSIONS, "index"))
        return json.dumps(rules)
