"""The stateful stack: the table, the buckets and the search collection. Deploy rarely; delete never."""

from __future__ import annotations

from typing import Any

from aws_cdk import Stack
from constructs import Construct

from ..config import DeploymentConfig
from ..constructs.download_links import DownloadLinks
from ..constructs.search import SearchCollection
from ..constructs.storage import Storage
from .shared import publish


class StatefulStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, *, config: DeploymentConfig, **kwargs: Any) -> None:
        super().__init__(
            scope, construct_id,
            description="agentmem: table, journal and workspace buckets, download links' distribution"
            + (", search collection" if config.search_collection else ""),
            **kwargs,
        )
        self.config = config
        self.storage = Storage(self, "Storage", config=config)
        # a small install leaves the collection out (agentmem:searchCollection=false): recall is keyword-only
        self.search = SearchCollection(self, "Search", config=config) if config.search_collection else None
        # workspace download links: CloudFront signed URLs, the bucket reachable only through the distribution
        self.downloads = DownloadLinks(self, "DownloadLinks", config=config, bucket=self.storage.workspace_bucket)
        publish(self, config, self.storage, self.search, self.downloads)
