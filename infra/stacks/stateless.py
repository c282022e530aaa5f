"""The stateless stack: the functions (the API's and the MCP endpoint's among them), the REST API, the
summary state machine, the schedule, alarms.

It imports the stateful stack's resources by export name (``shared.py``); replacing or deleting this
stack never touches stored data.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from constructs import Construct

from ..config import DeploymentConfig
from ..constructs.api import AgentmemApi
from ..constructs.compaction import CompactionSchedule
from ..constructs.function import base_environment
from ..constructs.indexer import SearchIndexer
from ..constructs.monitoring import Monitoring
from ..constructs.packaging import Layers
from ..constructs.search import SearchAccess
from ..constructs.summaries import SummaryPipeline
from .shared import SharedResources


class StatelessStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, *, config: DeploymentConfig, **kwargs: Any) -> None:
        super().__init__(
            scope, construct_id, description="agentmem: API, functions, summary pass, schedule, alarms", **kwargs
        )
        shared = SharedResources.import_into(self, config)
        layers = Layers(self, "Layers", config=config)
        # The settings each function reads (agentmem.settings.Settings, AGENTMEM_*): what every one has, then
        # what some add. Each names only what its role may reach (tests/infra builds every function's container
        # from its synthesised environment and checks the adapters against the grants).
        settings = base_environment({
            "AGENTMEM_TABLE": shared.table_name,
            "AGENTMEM_JOURNAL_BUCKET": shared.journal_bucket.bucket_name,
            "AGENTMEM_WORKSPACE_BUCKET": shared.workspace_bucket.bucket_name,
            "AGENTMEM_EMBEDDER": "none",  # only the functions that recall or index embed
        })
        # recall: the collection and its embedder, Titan Text Embeddings V2 on Bedrock (the API and the MCP
        # function embed queries, the indexer what it indexes). Without a collection nothing embeds: recall
        # answers in keyword mode ("fallback": "not_configured")
        recalling = {
            **settings,
            "AGENTMEM_OPENSEARCH_ENDPOINT": shared.search.endpoint,
            "AGENTMEM_EMBEDDER": "bedrock",
            "AGENTMEM_EMBEDDING_MODEL_ID": config.embedding_model_id,
            "AGENTMEM_EMBEDDING_DIMENSION": str(config.embedding_dimension),
        } if shared.search is not None else settings
        # the summary pass's model, through Bedrock's Converse API: only the summarise task writes summaries
        summarising = {
            **settings, "AGENTMEM_SUMMARISER": "bedrock", "AGENTMEM_SUMMARY_MODEL_ID": config.summary_model_id,
        }

        # the summarise task is what the state machine calls: it cannot also be given the machine's ARN
        self.summaries = SummaryPipeline(
            self, "Summaries", config=config, layers=layers, environment=summarising, shared=shared
        )
        machine = {"AGENTMEM_STATE_MACHINE_ARN": self.summaries.state_machine_arn}
        # the MCP function runs agent tools only (entries in the table): it starts no summary pass; the API alone
        # makes workspace links (download links signed for the CloudFront distribution, with its key)
        self.api = AgentmemApi(
            self, "Api", config=config, layers=layers, environment={**recalling, **machine, **shared.downloads},
            mcp_environment=recalling, authorizer_environment=settings,
            shared=shared, state_machine_arn=self.summaries.state_machine_arn,
        )
        self.indexer = SearchIndexer(
            self, "Indexer", config=config, layers=layers, environment=recalling, table=shared.table,
            search=shared.search is not None,
        )
        self.compaction = CompactionSchedule(
            self, "Compaction", config=config, layers=layers, environment={**settings, **machine}, shared=shared,
            state_machine_arn=self.summaries.state_machine_arn,
        )
        self.search_access = SearchAccess(
            self, "SearchAccess", collection_name=shared.search.name, collection_arn=shared.search.arn,
            # the MCP function recalls too (memory__search is hybrid): it reads the index like the API
            readers=[self.api.handler.role, self.api.mcp_handler.role], writers=[self.indexer.indexer.role],
        ) if shared.search is not None else None
        self.monitoring = self._build_monitoring(config)
        self._build_outputs()

    def _build_monitoring(self, config: DeploymentConfig) -> Monitoring:
        monitoring = Monitoring(self, "Alarms", email=config.alarm_email)
        monitoring.watch_functions([
            ("Api", self.api.handler.function, 1),
            ("Mcp", self.api.mcp_handler.function, 1),
            ("Authorizer", self.api.authorizer_function.function, config.authorizer_error_alarm_threshold),
            ("Indexer", self.indexer.indexer.function, 1),
            ("Summarise", self.summaries.task.function, 1),
            ("Compaction", self.compaction.sweeper.function, 1),
        ])
        monitoring.watch_api(self.api.rest_api)
        monitoring.watch_state_machine(self.summaries.state_machine)
        monitoring.watch_queue(
            "CompactionFailedSweeps", self.compaction.failed_sweeps,
            "agentmem compaction: a scheduled sweep could not be delivered to its function after its retries",
        )
        monitoring.watch_indexing(self.indexer.indexer.function, self.indexer.failed_batches)
        return monitoring

    def _build_outputs(self) -> None:
        CfnOutput(
            self, "ApiUrl", value=self.api.url, description="AGENTMEM_URL: the stage URL; API paths start with /v1"
        )
        CfnOutput(self, "StateMachineArn", value=self.summaries.state_machine_arn,
                  description="AGENTMEM_STATE_MACHINE_ARN")
        CfnOutput(self, "AlarmTopicArn", value=self.monitoring.topic.topic_arn,
                  description="The SNS topic every alarm notifies: subscribe your pager, chat or email to it")
