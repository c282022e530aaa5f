"""The composition root: builds the services for the configured backend.

Nothing else chooses adapters. The AWS backend plugs in here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from .domain.clock import Clock, iso, utcnow
from .services.agents import AgentService
from .services.keys import DEFAULT_ACCOUNT, KEY_CACHE_SECONDS, KeyService
from .services.memories import MemoryService
from .services.usage import UsageMeter
from .settings import Settings, load_settings

if TYPE_CHECKING:  # built on first use: the authorizer's cold start needs none of them
    import boto3

    from .adapters.aws.cloudfront_links import CloudFrontLinkSigner
    from .adapters.aws.usage_plan import UsagePlanKeys
    from .adapters.embedded.database import Database
    from .adapters.embedded.minilm_states import TokenStates
    from .adapters.embedded.server_state import ServerState
    from .domain.recall import Calibration
    from .local.rate_limit import RateLimiter
    from .ports.accounts import AccountStore
    from .ports.agents import AgentStore
    from .ports.blobs import BlobStore
    from .ports.conversations import ConversationStore
    from .ports.embedder import Embedder
    from .ports.entries import EntryStore
    from .ports.jobs import Jobs
    from .ports.memories import MemoryStore
    from .ports.reranker import Reranker
    from .ports.search_index import SearchIndex
    from .ports.summariser import Summariser
    from .ports.usage import UsageStore
    from .services.agent_memory import AgentMemory
    from .services.conversations import ConversationService
    from .services.entries import EntryService
    from .services.erasure import ErasureService
    from .services.recall import Reranking
    from .services.scrub import Removed
    from .services.summary_pass import SummaryPass
    from .services.tools import ToolService
    from .services.workspaces import WorkspaceService


@dataclass
class Stores:
    accounts: AccountStore
    agents: AgentStore
    memories: MemoryStore
    entries: EntryStore
    usage: UsageStore
    conversations: ConversationStore
    maintenance: list[object] = field(default_factory=list)


@dataclass
class Adapters:
    """Blobs, jobs and the search index: what the conversations, workspaces and recall services use."""

    embedder: Embedder | None  # None: the semantic side is off
    journal: BlobStore
    workspaces: BlobStore
    search_index: SearchIndex | None = None  # None: recall answers in keyword mode
    jobs: Jobs | None = None


@dataclass
class Container:
    settings: Settings
    stores: Stores
    keys: KeyService
    memories: MemoryService
    agents: AgentService
    usage: UsageMeter
    adapters: Adapters | None = None  # built on first use: the API's cold start needs none of them
    _jobs: Jobs | None = None
    # the local server's rate limits (agentmem serve sets them); on AWS, API Gateway's usage plan limits instead
    rate_limiter: RateLimiter | None = None
    # a worker of `agentmem serve --workers N`: the file the workers share (rate limits, job runs)
    shared: ServerState | None = None

    # Entries, conversations, summaries, tools and erasure are built on first use: the authorizer (which only
    # checks keys) never pays for their imports, nor a request on a route that has no entries (recall, the
    # screening of what is saved).
    @cached_property
    def entries(self) -> EntryService:
        from .services.entries import EntryService
        from .services.recall import SemanticSide

        entries = EntryService(self.stores.entries, self.memories, self.memories.clock)
        # recall's semantic side: the embedder and the index, built on first use (a cold start that never
        # recalls never loads a model)
        entries.calibration = build_calibration(self.settings)
        entries.semantic = SemanticSide(lambda: self.embedder, lambda: self.search_index, entries.calibration,
                                        deadline_s=self.settings.recall_deadline_ms / 1000)
        # the re-ranking stage (mode=deep), its model shared with journal search, found and loaded on the first
        # deep search; no budget short of its deadline: nothing reads entries ahead, and a memory's entries, once
        # read, stay at hand in the model's cache
        entries.reranking = self.entry_reranking
        # deleting a checkpoint forgets what it covered
        entries.checkpoint_deleted.append(lambda layer, entry: self.conversations.forget_checkpoint(layer, entry))
        return entries

    @cached_property
    def agent_memory(self) -> AgentMemory:
        from .services.agent_memory import AgentMemory

        return AgentMemory(self.agents, self.entries)

    @cached_property
    def conversations(self) -> ConversationService:
        from .services.conversations import ConversationService

        service = ConversationService(self.stores.conversations, self.agent_memory, clock=self.memories.clock,
                                      jobs=lambda: self.jobs())
        # purging a conversation takes its workspace
        service.purge_hooks.append(lambda ref: self.workspaces.purge_conversation(ref))
        service.reranking = self.reranking  # mode=deep
        return service

    @cached_property
    def reranking(self) -> Reranking:
        from .services.recall import Reranking

        return Reranking(lambda: self.reranker, deadline_s=self.settings.rerank_deadline_ms / 1000,
                         budget_s=self.settings.rerank_budget_ms / 1000)

    @cached_property
    def entry_reranking(self) -> Reranking:
        from .services.recall import Reranking

        return Reranking(lambda: self.reranker, deadline_s=self.settings.rerank_deadline_ms / 1000, budget_s=None)

    @cached_property
    def reranker(self) -> Reranker | None:
        return build_reranker(self.settings, db=getattr(self.stores.entries, "db", None))

    @cached_property
    def workspaces(self) -> WorkspaceService:
        from .services.workspaces import WorkspaceService

        return WorkspaceService(self.conversations, lambda: self.require_adapters().workspaces, self.memories.clock)

    @cached_property
    def summary_pass(self) -> SummaryPass:
        from .services.summary_pass import SummaryPass

        # looked up at each pass, so a summariser patched in (tests, a settings change) takes effect
        return SummaryPass(self.conversations, lambda: self.summariser(), self.memories.clock,
                           embedder=lambda: self.embedder)

    @cached_property
    def tools(self) -> ToolService:
        from .services.tools import ToolService

        return ToolService(self.agent_memory, self.conversations)

    @cached_property
    def erasure(self) -> ErasureService:
        from .services.erasure import ErasureService

        return ErasureService(self.memories, self.agents, self.conversations, self.workspaces, self.keys)

    @cached_property
    def usage_plan_keys(self) -> UsagePlanKeys | None:
        """The deployed stack's per-account API keys in its usage plan, which the authorizer names to API Gateway
        (None off AWS, or with no ``AGENTMEM_USAGE_PLAN``)."""
        if self.settings.backend != "aws" or not self.settings.usage_plan:
            return None
        from .adapters.aws.usage_plan import UsagePlanKeys

        return UsagePlanKeys(self.settings.usage_plan, boto3_session=aws_session(self.settings))

    def jobs(self) -> Jobs | None:
        """Where summary passes run (``passes_in_process``): the state machine on AWS, else an in-process runner."""
        if self._jobs is None:
            if not passes_in_process(self.settings):
                self._jobs = self.require_adapters().jobs
            else:
                from .adapters.embedded.job_runs import SharedRuns
                from .adapters.embedded.jobs import ThreadJobRunner

                self._jobs = ThreadJobRunner(self.summary_pass.run,
                                             shared=None if self.shared is None else SharedRuns(self.shared))
        return self._jobs

    def summariser(self) -> Summariser:
        if self.settings.summariser == "bedrock":
            from .adapters.aws.bedrock import BedrockSummariser

            return BedrockSummariser(self.settings.summary_model_id, boto3_session=aws_session(self.settings))
        from .domain.summary import ExtractiveSummariser

        if self.settings.summariser == "openai":
            from .adapters.openai_summariser import OpenAICompatibleSummariser
            from .services.summary_fallback import FallbackSummariser

            model = OpenAICompatibleSummariser(
                self.settings.summary_url or "", self.settings.summary_model or "",
                api_key=self.settings.summary_api_key, timeout_s=self.settings.summary_timeout_s,
            )
            return FallbackSummariser(model, ExtractiveSummariser())
        return ExtractiveSummariser()

    def require_adapters(self) -> Adapters:
        if self.adapters is None:
            self.adapters = build_adapters(self.settings, db=getattr(self.stores.entries, "db", None))
        return self.adapters

    @property
    def search_index(self) -> SearchIndex | None:
        return self.require_adapters().search_index

    @property
    def embedder(self) -> Embedder | None:
        return self.require_adapters().embedder

    def scrub_files(self, removed: frozenset[Removed]) -> None:
        """After a purge or an erasure on the embedded backend, no copy of what went is left in the data dir
        (docs/security.md): the versions a delete kept until now leave the history, the semantic index drops the
        vectors of what went (their labels are names), and the database merges the full-text indexes of what was
        ``removed`` and empties its WAL (``Database.scrub``). The blob files are gone already (unlinked, never
        copied)."""
        now = iso(self.memories.clock())
        for store in self.stores.maintenance:
            purge = getattr(store, "purge_expired", None)
            if purge is not None:
                purge(now)
        catch_up = getattr(self.search_index, "catch_up", None)
        if catch_up is not None:
            catch_up()
        db = getattr(self.stores.entries, "db", None)
        if db is not None:
            db.scrub(entries="entries" in removed, messages="messages" in removed)

    def sweep(self) -> dict[str, int]:
        """Housekeeping the embedded backend does itself (AWS has TTL): trash and expiry."""
        purged = self.memories.purge_due()
        agents_purged = self.agents.purge_due()
        passes = self.conversations.start_due_passes()
        expired = 0
        now = iso(self.memories.clock())
        for store in self.stores.maintenance:
            purge = getattr(store, "purge_expired", None)
            if purge is not None:
                expired += int(purge(now))
        self.usage.flush()
        return {"memories_purged": purged, "agents_purged": agents_purged, "entries_expired": expired,
                "passes_started": passes}


def in_lambda() -> bool:
    """Whether this process is a Lambda function (Lambda names it in the environment)."""
    return bool(os.environ.get("AWS_LAMBDA_FUNCTION_NAME"))


def passes_in_process(settings: Settings) -> bool:
    """Whether summary passes run in this process: on the embedded backend, and on AWS without a state machine
    (``agentmem serve --backend aws``) — but never in a Lambda function, which may be frozen as soon as it has
    answered: one without the state machine (the MCP function) starts no pass."""
    return settings.backend == "embedded" or (not settings.state_machine_arn and not in_lambda())


def aws_session(settings: Settings) -> boto3.Session:
    """A boto3 session in the settings' region (unset: boto3's own lookup); the AWS backend's clients use one.
    From the first one on, the tracer records the calls out (X-Ray patches botocore once it is imported)."""
    import boto3

    from .observability import trace_calls_out

    trace_calls_out()
    return boto3.Session(region_name=settings.region)


def build_stores(settings: Settings, *, create_resources: bool = False) -> Stores:
    """The record stores of the configured backend; ``create_resources`` makes a missing table (local AWS mode)."""
    if settings.backend == "aws":
        from .adapters.aws.dynamodb import build_dynamodb_stores

        dynamo = build_dynamodb_stores(settings, aws_session(settings), create_missing_table=create_resources)
        return Stores(
            accounts=dynamo.accounts, agents=dynamo.agents, memories=dynamo.memories, entries=dynamo.entries,
            usage=dynamo.usage, conversations=dynamo.conversations,
        )
    if in_lambda():
        raise RuntimeError("the embedded backend does not run inside Lambda; set AGENTMEM_BACKEND=aws")
    from .adapters.embedded.accounts import SqliteAccountStore
    from .adapters.embedded.agents import SqliteAgentStore
    from .adapters.embedded.conversations import SqliteConversationStore
    from .adapters.embedded.database import Database
    from .adapters.embedded.entries import SqliteEntryStore
    from .adapters.embedded.memories import SqliteMemoryStore
    from .adapters.embedded.usage import SqliteUsageStore

    db = Database(settings.data_dir / "agentmem.db")
    db.setup()
    entries = SqliteEntryStore(db)
    return Stores(
        accounts=SqliteAccountStore(db),
        agents=SqliteAgentStore(db),
        memories=SqliteMemoryStore(db),
        entries=entries,
        usage=SqliteUsageStore(db),
        conversations=SqliteConversationStore(db),
        maintenance=[entries],
    )


EMBEDDED_EXTRA = "pip install 'agentmem-server[embedded]'"


def missing_semantic_modules(settings: Settings) -> list[str]:
    """The modules of the ``embedded`` extra that the chosen embedder (and, on the embedded backend, its index)
    needs and this install lacks: an install without the extra serves keyword-only recall instead of failing."""
    from importlib.util import find_spec

    if settings.embedder == "none":
        return []
    wanted = []
    if settings.backend == "embedded" or settings.embedder == "wordllama":
        wanted.append("numpy")  # the embedded index holds its vectors in numpy, and the offline model answers in it
    if settings.embedder == "wordllama":
        wanted.append("wordllama")
    return [name for name in wanted if find_spec(name) is None]


def semantic_fallback_note(settings: Settings) -> str | None:
    """One line for ``agentmem serve`` when the semantic side cannot run on this install, naming the extra."""
    missing = missing_semantic_modules(settings)
    if not missing:
        return None
    return (f"note: recall is keyword-only: the {settings.embedder} embedder needs {', '.join(missing)} "
            f"(the embedded extra: {EMBEDDED_EXTRA}); AGENTMEM_EMBEDDER=none silences this")


def build_embedder(settings: Settings) -> Embedder | None:
    """The embedder the settings choose (SPEC §6.2); None when the semantic side is off, or when this install
    lacks what the chosen embedder needs (``missing_semantic_modules``): recall then answers by keyword."""
    dimension = settings.embedding_dimension
    if settings.embedder == "none" or missing_semantic_modules(settings):
        return None
    if settings.embedder == "wordllama":
        from .adapters.embedded.wordllama_embedder import WordLlamaEmbedder

        return WordLlamaEmbedder(dimension or 256)
    if settings.embedder == "minilm":
        from .adapters.embedded.minilm_embedder import MiniLMEmbedder

        if dimension not in (None, 384):
            raise ValueError("AGENTMEM_EMBEDDER=minilm has 384 dimensions")
        return MiniLMEmbedder()
    if settings.embedder == "hashing":
        from .adapters.embedded.embedder import HashingEmbedder

        return HashingEmbedder(dimension or 256)
    if settings.embedder == "bedrock":
        from .adapters.aws.bedrock_embedder import BedrockTitanEmbedder

        return BedrockTitanEmbedder(settings.embedding_model_id, dimension=dimension or 512, region=settings.region)
    from .adapters.openai_embedder import OpenAICompatibleEmbedder

    if not settings.embedding_url or not settings.embedding_model or not dimension:
        raise ValueError("AGENTMEM_EMBEDDER=openai needs AGENTMEM_EMBEDDING_URL, AGENTMEM_EMBEDDING_MODEL and "
                         "AGENTMEM_EMBEDDING_DIMENSION")
    return OpenAICompatibleEmbedder(settings.embedding_url, settings.embedding_model,
                                    api_key=settings.embedding_api_key, dimension=dimension)


# how each embedder's cosine similarities read (domain/recall.py's floor and ceiling), from bench/recall_quality.py
_CALIBRATION = {"wordllama": (0.05, 0.8), "minilm": (0.1, 0.75), "hashing": (0.1, 0.8), "bedrock": (0.1, 0.8),
                "openai": (0.15, 0.75)}


def build_reranker(settings: Settings, *, db: Database | None = None) -> Reranker | None:
    """Journal search's re-ranking stage (mode=deep); None when it is off or its model is not installed. ``db``:
    the embedded backend's database, where the indexer keeps the token states it read ahead."""
    if settings.reranker == "none":
        return None
    timeout_s = settings.rerank_deadline_ms / 1000  # one attempt, within the stage's deadline
    if settings.reranker == "bedrock":
        from .adapters.aws.bedrock_reranker import BedrockReranker

        return BedrockReranker(settings.rerank_model_id, region=settings.region, timeout_s=timeout_s)
    if settings.reranker == "http":
        from .adapters.http_reranker import HttpReranker

        assert settings.rerank_url is not None  # Settings refuses http without it
        return HttpReranker(settings.rerank_url, model=settings.rerank_model, api_key=settings.rerank_api_key,
                            timeout_s=timeout_s)
    from .adapters.embedded import minilm

    if not minilm.installed():
        return None
    from .adapters.embedded.minilm_reranker import MiniLMLateInteraction

    return MiniLMLateInteraction(store=token_states(settings, db))


def token_states(settings: Settings, db: Database | None) -> TokenStates | None:
    """The journal's token states read ahead by the indexer for the MiniLM re-ranking stage (embedded)."""
    if db is None or settings.reranker != "minilm" or settings.rerank_store_tokens <= 0:
        return None
    from .adapters.embedded import minilm

    if not minilm.installed():
        return None
    from .adapters.embedded.minilm_states import TokenStates

    return TokenStates(db, max_tokens=settings.rerank_store_tokens)


def build_calibration(settings: Settings) -> Calibration:
    from .domain.recall import Calibration

    floor, ceiling = _CALIBRATION.get(settings.embedder, (0.15, 0.65))
    return Calibration(
        floor=settings.recall_floor if settings.recall_floor is not None else floor,
        ceiling=settings.recall_ceiling if settings.recall_ceiling is not None else ceiling,
        keyword_weight=settings.recall_keyword_weight, min_score=settings.recall_min_score,
        fusion=settings.recall_fusion,
    )


def build_download_links(settings: Settings, session: boto3.Session) -> CloudFrontLinkSigner | None:
    """CloudFront signed download links where the stack has the distribution; None: S3 presigned links. The
    private key is read from its secret on the first link made, not here."""
    if not (settings.download_domain and settings.download_key_pair_id and settings.download_key_secret_arn):
        return None
    from .adapters.aws.cloudfront_links import CloudFrontLinkSigner, secret_reader

    return CloudFrontLinkSigner(settings.download_domain, settings.download_key_pair_id,
                                secret_reader(settings.download_key_secret_arn, session))


def build_adapters(settings: Settings, *, create_resources: bool = False, db: Database | None = None) -> Adapters:
    """Blob stores, jobs and the search index of the configured backend (imported only when used); ``db`` is the
    embedded backend's database, where its vectors live."""
    embedder = build_embedder(settings)
    if settings.backend == "aws":
        from .adapters.aws.s3 import S3BlobStore

        session = aws_session(settings)
        journal = S3BlobStore(settings.journal_bucket, boto3_session=session)
        workspaces = S3BlobStore(settings.workspace_bucket, boto3_session=session,
                                 downloads=build_download_links(settings, session))
        if create_resources:
            journal.ensure_bucket()
            workspaces.ensure_bucket()
        jobs: Jobs | None = None
        if settings.state_machine_arn:
            from .adapters.aws.stepfunctions import StepFunctionsJobs

            jobs = StepFunctionsJobs(settings.state_machine_arn, boto3_session=session)
        index: SearchIndex | None = None
        if settings.opensearch_endpoint and embedder is not None:
            from .adapters.aws.opensearch import OpenSearchIndex

            index = OpenSearchIndex.connect(
                settings.opensearch_endpoint, dimension=embedder.dimension, boto3_session=session
            )
            if create_resources:
                index.setup()
        return Adapters(embedder=embedder, journal=journal, workspaces=workspaces, search_index=index, jobs=jobs)
    from .adapters.embedded.blobs import FileBlobStore
    from .adapters.embedded.links import LinkSigner, load_secret

    blobs = settings.data_dir / "blobs"
    links = LinkSigner(load_secret(settings.data_dir), base_url=settings.public_url or "")
    embedded_index: SearchIndex | None = None
    if db is not None and embedder is not None:  # numpy is imported only with a semantic index to hold
        from .adapters.embedded.vector_index import SqliteVectorIndex

        embedded_index = SqliteVectorIndex(db, embedder)
        # the indexer's work once caught up: the token states mode=deep reads, ahead
        embedded_index.read_ahead = token_states(settings, db)
    return Adapters(
        embedder=embedder,
        journal=FileBlobStore(blobs / "journal"),
        workspaces=FileBlobStore(blobs / "workspaces", links=links),
        search_index=embedded_index,
    )


def build_container(
    settings: Settings | None = None,
    *,
    clock: Clock = utcnow,
    stores: Stores | None = None,
    adapters: Adapters | None = None,
    create_resources: bool = False,
) -> Container:
    settings = settings or load_settings()
    stores = stores or build_stores(settings, create_resources=create_resources)
    memories = MemoryService(stores.memories, clock)
    agents = AgentService(stores.agents, memories, clock)
    container = Container(
        settings=settings,
        stores=stores,
        # on AWS the authorizer's answer is cached by API Gateway; a process that looks keys up itself (agentmem
        # serve --backend aws) caches them as long, and the authorizer's function never (functions/authorizer)
        keys=KeyService(stores.accounts, clock,
                        cache_seconds=KEY_CACHE_SECONDS if settings.backend == "aws" and not in_lambda() else 0),
        memories=memories,
        agents=agents,
        usage=UsageMeter(stores.usage, clock),
        adapters=adapters,
    )
    # purging an agent takes its conversations and its workspaces
    agents.purge_hooks.append(lambda record: container.conversations.purge_agent(record))
    agents.purge_hooks.append(lambda record: container.workspaces.purge_agent(record))
    if settings.backend == "embedded":
        memories.scrub.steps.append(container.scrub_files)
    return container


_container: Container | None = None


def get_container() -> Container:
    """The process's container, built on first use (a Lambda's cold start, or the local server)."""
    global _container
    if _container is None:
        _container = build_container()
    return _container


def set_container(container: Container | None) -> None:
    global _container
    _container = container


def create_account(settings: Settings, name: str) -> tuple[str, str]:
    """Operator command: create an account directly in the backend; returns (account id, first key)."""
    container = build_container(settings)
    account, secret = container.keys.create_account(name)
    return account.account_id, secret


def ensure_default_account(container: Container) -> str | None:
    """On a new data dir: the ``default`` account and its key (``AGENTMEM_API_KEY`` if set)."""
    _, secret = container.keys.ensure_account(DEFAULT_ACCOUNT, container.settings.api_key)
    return secret
