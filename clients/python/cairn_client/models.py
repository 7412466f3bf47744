"""The request and response types of the Cairn HTTP API, as dataclasses.

They mirror the zod schemas of ``packages/api-contract`` (the source of the server's OpenAPI document at
``/docs/json``); field names are snake_case, and a field whose JSON name differs says so in its metadata
(``wire``). Responses are frozen; requests are plain dataclasses whose ``None`` fields are left out of the
request, so the server's defaults apply.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Union

from ._wire import ResponseShapeError, from_wire, wire

# --------------------------------------------------------------------------------------------- literals

WriteStatus = Literal["stored", "updated", "unchanged", "queued"]
Wait = Literal["stored", "queued"]
Explain = Literal["none", "hits", "full"]
Leg = Literal["lexical", "vector"]
EmptyReasonCode = Literal["no_match", "empty_namespace", "filtered_out", "blank_query"]
ContextFormat = Literal["markdown", "text"]
TimeLike = Union[int, float, str]
"""ISO-8601, epoch milliseconds, or (in filters) a relative window such as ``"7d"``."""

# --------------------------------------------------------------------------------------------- requests


@dataclass
class MemoryWrite:
    """One memory to write (``MemoryWrite`` in the OpenAPI document).

    A fact with ``slot`` and ``key`` replaces the earlier fact of that (namespace, slot, key).
    """

    text: str
    namespace: str | None = None
    """Defaults to the request's namespace."""
    id: str | None = None
    """A stable id: writing it again updates in place. Default ``m_<content hash>``."""
    kind: str | None = None
    """turn, observation (the default), summary, fact, prompt, or your own."""
    title: str | None = None
    session: str | None = None
    agent: str | None = None
    ts: TimeLike | None = None
    tags: list[str] | None = None
    meta: dict[str, Any] | None = None
    importance: float | None = None
    """0–1, default 0.5."""
    confidence: float | None = None
    """0–1: how sure the writer is; lowers the score (``confidenceWeight``). Default unstated."""
    valid_from: TimeLike | None = wire("validFrom")
    """When what it says became true; a search ``as_of`` earlier skips it."""
    valid_to: TimeLike | None = wire("validTo")
    """When it stopped being true (exclusive)."""
    supersedes: list[str] | None = None
    fields: dict[str, str] | None = None
    """Named fields (at most 8), each searched as a route of its own."""
    slot: str | None = None
    key: str | None = None


@dataclass
class SearchFilters:
    kinds: list[str] | None = None
    sessions: list[str] | None = None
    agents: list[str] | None = None
    tags: list[str] | None = None
    since: TimeLike | None = None
    until: TimeLike | None = None
    slots: list[str] | None = None
    """Facts of these slots: search within a slot."""
    as_of: TimeLike | None = wire("asOf")
    """Only memories valid then (their ``validFrom``/``validTo``)."""


@dataclass
class LegWeights:
    lexical: float | None = None
    vector: float | None = None


@dataclass
class RecencyOptions:
    tie_break: float | None = wire("tieBreak")
    intent: float | None = None
    peer_margin: float | None = wire("peerMargin")
    peer_depth: int | None = wire("peerDepth")


@dataclass
class SearchTuning:
    """The ranking knobs of a search; every one defaults to the server's configuration."""

    candidate_pool: int | None = wire("candidatePool")
    weights: LegWeights | None = None
    rrf_k: float | None = wire("rrfK")
    context_weight: float | None = wire("contextWeight")
    agent_boost: float | None = wire("agentBoost")
    session_match: float | None = wire("sessionMatch")
    session_support: float | None = wire("sessionSupport")
    route_weight: float | None = wire("routeWeight")
    route_weights: dict[str, float] | None = wire("routeWeights")
    route_fusion: Literal["best", "sum"] | None = wire("routeFusion")
    decay: str | dict[str, float] | None = None
    """``"auto"``, ``"off"``, a half-life such as ``"30d"``, or ``{"halfLifeMs": …}`` / ``{"tauMs": …}``."""
    recency: RecencyOptions | None = None
    importance_weight: float | None = wire("importanceWeight")
    confidence_weight: float | None = wire("confidenceWeight")
    kind_half_lives: dict[str, str | float] | None = wire("kindHalfLives")
    """Per-kind half-lives: ``{"summary": "7d", "fact": "off"}``."""
    mmr_lambda: float | None = wire("mmrLambda")
    mmr_tag_weight: float | None = wire("mmrTagWeight")
    duplicate_threshold: float | None = wire("duplicateThreshold")
    rerank: Literal["auto", "off", "deterministic", "model"] | None = None
    """Reorder the first hits: by the configured reranker (``model``; ``auto`` when one is set), or by query coverage (``deterministic``)."""
    rerank_depth: int | None = wire("rerankDepth")
    rerank_timeout_ms: int | None = wire("rerankTimeoutMs")
    boosts: list[dict[str, Any]] | None = None
    """Per-query boosts: ``[{"tag": "auth", "factor": 2}]`` (tag, kind, agent or path; factor in (0, 10])."""
    min_cosine: float | None = wire("minCosine")


@dataclass
class SearchRequest:
    """One search (``SearchRequest``); also an entry of :meth:`CairnClient.search_batch`."""

    namespace: str
    query: str = ""
    k: int | None = None
    max_tokens: int | None = None
    filters: SearchFilters | Mapping[str, Any] | None = None
    explain: Explain | None = None
    neighbors: int | None = None
    """Memories around each hit in its session, on each side."""
    offset: int | None = None
    """A listing (blank query with filters) only: skip this many."""
    max_age: str | float | None = wire("maxAge")
    """Leave out memories older than this before ``now``: ``"90d"``, ``"12h"`` or ms."""
    now: TimeLike | None = None
    tuning: SearchTuning | None = field(default=None, metadata={"flatten": True})


@dataclass
class FederatedSearchRequest:
    """One query over several namespaces (``FederatedSearchRequest``)."""

    namespaces: list[str]
    query: str = ""
    k: int | None = None
    per_namespace: int | None = wire("perNamespace")
    max_tokens: int | None = None
    filters: SearchFilters | Mapping[str, Any] | None = None
    explain: Explain | None = None
    neighbors: int | None = None
    max_age: str | float | None = wire("maxAge")
    now: TimeLike | None = None
    tuning: SearchTuning | None = field(default=None, metadata={"flatten": True})


@dataclass
class WriteBatch:
    memories: list[MemoryWrite | Mapping[str, Any]]
    namespace: str | None = None
    wait: Wait | None = None


@dataclass
class WriteOne(MemoryWrite):
    wait: Wait | None = None


@dataclass
class BatchSearchRequest:
    queries: list[SearchRequest | Mapping[str, Any]]


@dataclass
class TimelineQuery:
    namespace: str
    anchor: str | None = None
    query: str | None = None
    before: int | None = None
    after: int | None = None
    max_tokens: int | None = None


@dataclass
class GetRequest:
    namespace: str
    ids: list[str]
    max_tokens: int | None = None


@dataclass
class ContextRequest:
    namespace: str
    query: str | None = None
    max_tokens: int | None = None
    format: ContextFormat | None = None
    summaries: int | None = None
    k: int | None = None
    exclude_ids: list[str] | None = None


@dataclass
class DeleteQuery:
    namespace: str


@dataclass
class WriteQuery:
    wait: Wait | None = None


@dataclass
class ReindexRequest:
    embedder: str
    """``hash``, ``hash:<dims>``, ``ollama:<model>`` or ``openai:<model>``."""
    activate: bool | None = None


@dataclass
class SpaceActionRequest:
    space: str
    force: bool | None = None


@dataclass
class DropSpaceRequest:
    space: str


@dataclass
class ConsolidateRequest:
    namespace: str | None = None
    """Without it, every namespace (a key for all of them, ``*``)."""
    dry_run: bool | None = None


@dataclass
class UndoConsolidationRequest:
    namespace: str
    ids: list[str] | None = None
    """The merged memories to bring back; without it, every merge of the namespace."""


@dataclass
class ConsolidationsQuery:
    namespace: str
    limit: int | None = None


@dataclass
class PruneRequest:
    """A pruning policy (it names a ``slot`` or a ``kind``, or both), applied now or dry."""

    namespace: str
    cap: int
    """Live memories of the slot/kind to keep: the most used."""
    slot: str | None = None
    kind: str | None = None
    min_age: str | float | None = None
    """Never delete one younger than this (``"7d"`` or ms)."""
    min_access: int | None = None
    """Never delete one accessed at least this many times."""
    dry_run: bool | None = None


# -------------------------------------------------------------------------------------------- responses


@dataclass(frozen=True)
class TokenUsage:
    used: int
    budget: int | None
    omitted: int
    """Entries left out to stay within the budget."""


@dataclass(frozen=True)
class IndexEntry:
    """One line per memory: enough to decide whether to fetch it."""

    id: str
    namespace: str
    kind: str
    title: str
    date: str
    session: str | None
    tokens: int
    """Tokens of the full record (what :meth:`CairnClient.get` will cost)."""


@dataclass(frozen=True)
class WriteItem:
    index: int
    id: str
    namespace: str
    status: WriteStatus


@dataclass(frozen=True)
class WriteResponse:
    items: list[WriteItem]
    counts: dict[str, int]
    durable: bool


@dataclass(frozen=True)
class MemoryRecord:
    id: str
    namespace: str
    kind: str
    title: str | None
    text: str
    session: str | None
    agent: str | None
    ts: float
    date: str
    tags: list[str]
    meta: dict[str, Any]
    importance: float
    confidence: float | None
    """As stated by the writer; ``None`` when none."""
    valid_from: float | None = field(metadata={"wire": "validFrom"})
    valid_to: float | None = field(metadata={"wire": "validTo"})
    superseded_by: str | None = field(metadata={"wire": "supersededBy"})
    access_count: int = field(metadata={"wire": "accessCount"})
    """How often searches returned it or get fetched it."""
    last_accessed: int | None = field(metadata={"wire": "lastAccessed"})
    fields: dict[str, str]
    """Named fields; ``{}`` when none."""
    tokens: int


@dataclass(frozen=True)
class DeleteResponse:
    deleted: str
    namespace: str


@dataclass(frozen=True)
class ExplainParts:
    lexical: float
    vector: float
    routes: float
    agent: float
    session: float
    recency: float
    importance: float
    confidence: float
    """The stated confidence's factor (1: none stated)."""
    boost: float
    """The product of the query's boosts it matched (1: none)."""


@dataclass(frozen=True)
class HitRerank:
    score: float
    fused_rank: int = field(metadata={"wire": "fusedRank"})


@dataclass(frozen=True)
class HitExplain:
    """Why a hit ranked where it did."""

    bm25_rank: int | None = field(metadata={"wire": "bm25Rank"})
    vec_rank: int | None = field(metadata={"wire": "vecRank"})
    bm25: float | None
    bm25_session: float | None = field(metadata={"wire": "bm25Session"})
    """The share of ``bm25`` from the memory's session's match."""
    cosine: float | None
    recency: float
    rrf: float
    score: float
    parts: ExplainParts
    routes: list[str] | None = None
    """Multi-route recall: the routes that found it."""
    rerank: HitRerank | None = None
    """Set when a reranker reordered the page: its score, and the rank fusion gave."""


@dataclass(frozen=True)
class NeighborEntry:
    id: str
    kind: str
    ts: int
    title: str | None
    text: str


@dataclass(frozen=True)
class Neighbors:
    before: list[NeighborEntry]
    after: list[NeighborEntry]


@dataclass(frozen=True)
class SearchHit:
    id: str
    namespace: str
    kind: str
    title: str
    date: str
    session: str | None
    tokens: int
    score: float
    dup_count: int | None = wire("dupCount")
    """Near-duplicates the consolidation job merged into this memory; None when none."""
    explain: HitExplain | None = None
    neighbors: Neighbors | None = None


@dataclass(frozen=True)
class EmptyReason:
    reason: EmptyReasonCode
    message: str


@dataclass(frozen=True)
class Listing:
    offset: int
    next: int | None = None
    """Where the next page starts: the first memory this page did not return (a page under
    ``max_tokens`` stops at the first that does not fit). ``None`` from a server older than it."""


@dataclass(frozen=True)
class SearchRelevance:
    score: float
    level: Literal["relevant", "weak", "none"]
    missing: list[str]


@dataclass(frozen=True)
class RerankInfo:
    """Who reranked the page, and, when the fused order was kept, why."""

    by: str
    applied: bool
    depth: int
    took_ms: float = field(metadata={"wire": "tookMs"})
    reason: str | None = None


@dataclass(frozen=True)
class SearchResponse:
    namespace: str
    query: str
    hits: list[SearchHit]
    degraded: list[Leg]
    degraded_reasons: dict[str, str] = field(metadata={"wire": "degradedReasons"})
    tokens: TokenUsage
    empty: EmptyReason | None = None
    listing: Listing | None = None
    relevance: SearchRelevance | None = None
    rerank: RerankInfo | None = None
    trace: Any = None
    """``explain="full"`` only: the settings and every fused candidate."""


@dataclass(frozen=True)
class BatchError:
    code: str
    message: str
    field: str | None = None


@dataclass(frozen=True)
class BatchSearchResult:
    """One slot of a batch: ``ok`` with a ``result``, or not with an ``error``."""

    ok: bool
    result: SearchResponse | None = None
    error: BatchError | None = None

    @classmethod
    def _from_wire(cls, value: dict[str, Any], path: str) -> BatchSearchResult:
        ok = value.get("ok")
        if ok is True:
            return cls(ok=True, result=from_wire(SearchResponse, value.get("result"), f"{path}.result"))
        if ok is False:
            return cls(ok=False, error=from_wire(BatchError, value.get("error"), f"{path}.error"))
        raise ResponseShapeError(f"{path}.ok: expected true or false")


@dataclass(frozen=True)
class BatchSearchResponse:
    results: list[BatchSearchResult]


@dataclass(frozen=True)
class FederatedNamespace:
    hits: int
    degraded: list[Leg]
    empty: EmptyReason | None = None


@dataclass(frozen=True)
class FederatedSearchResponse:
    query: str
    hits: list[SearchHit]
    namespaces: dict[str, FederatedNamespace]
    tokens: TokenUsage


@dataclass(frozen=True)
class TimelineResponse:
    namespace: str
    scope: Literal["session", "namespace"]
    anchor: IndexEntry
    before: list[IndexEntry]
    after: list[IndexEntry]
    tokens: TokenUsage


@dataclass(frozen=True)
class GetResponse:
    memories: list[MemoryRecord]
    missing: list[str]
    omitted: list[str]
    """Found, but past ``max_tokens``."""
    tokens: TokenUsage


@dataclass(frozen=True)
class ContextResponse:
    namespace: str
    format: ContextFormat
    text: str
    included: list[str]
    tokens: TokenUsage


@dataclass(frozen=True)
class NamespaceStats:
    stored: int
    """Live memories: neither superseded nor deleted."""
    embedded: int
    """Live and superseded memories with a vector of their present text in the active space."""
    indexed: int
    pending: int
    failed: int
    fields: int
    fields_embedded: int = field(metadata={"wire": "fieldsEmbedded"})
    # Defaults: a server older than this client does not send them.
    superseded: int = 0
    deleted: int = 0


@dataclass(frozen=True)
class StatsResponse:
    mode: Literal["embedded", "distributed"]
    space: str | None
    namespaces: dict[str, NamespaceStats]
    """Only the namespaces the key may read."""


@dataclass(frozen=True)
class HealthCheck:
    ok: bool
    detail: str | None = None


@dataclass(frozen=True)
class HealthResponse:
    status: Literal["ok", "unavailable"]
    checks: dict[str, HealthCheck] | None = None


@dataclass(frozen=True)
class SpaceProgress:
    total: int
    embedded: int
    failed: int


@dataclass(frozen=True)
class SpaceBuild:
    phase: Literal["embedding", "indexing", "waiting", "activated", "stopped", "failed"]
    last_error: str | None


@dataclass(frozen=True)
class Space:
    """An embedding space (``EmbeddingSpace``)."""

    id: str
    embedder: str | None
    dimensions: int
    active: bool
    state: Literal["building", "ready"]
    activate_when_ready: bool
    progress: SpaceProgress
    build: SpaceBuild | None
    current_until: int | None = None
    """Until when (epoch ms) this inactive space keeps receiving new writes' vectors (the space a reindex
    replaced, during its grace period, so activating it again is instant); None when not kept current (or
    from a server older than this client)."""


@dataclass(frozen=True)
class SpacesResponse:
    spaces: list[Space]


@dataclass(frozen=True)
class ReindexResponse:
    space: Space
    started: bool
    """False when the space was already active."""


@dataclass(frozen=True)
class ActivateSpaceResponse:
    activated: str


@dataclass(frozen=True)
class DropSpaceResponse:
    dropped: str
    vectors: int


@dataclass(frozen=True)
class DeadLetter:
    """A job of the distributed pipeline that failed for good."""

    queue: str
    job: str
    id: str
    reason: str
    attempts: int
    failed_at: int | None
    size: int


@dataclass(frozen=True)
class DeadLettersResponse:
    mode: Literal["embedded", "distributed"]
    dead_letters: list[DeadLetter]


@dataclass(frozen=True)
class Merge:
    """A memory the consolidation job merged into a newer near-duplicate (undoable)."""

    namespace: str
    id: str
    """The memory merged (superseded; still readable with get)."""
    into: str
    """The newer near-duplicate that absorbed it."""
    cosine: float
    at: int
    undone_at: int | None


@dataclass(frozen=True)
class ConsolidateResponse:
    dry_run: bool
    scanned: int
    merged: int
    exact: int
    near: int
    by_namespace: dict[str, int]
    merges: list[Merge]
    """The first 100."""
    took_ms: float
    skipped: str | None = None
    """Why the job could not run."""


@dataclass(frozen=True)
class UndoConsolidationResponse:
    restored: list[Merge]


@dataclass(frozen=True)
class ConsolidationsResponse:
    merges: list[Merge]
    """Newest first, undone ones included."""


@dataclass(frozen=True)
class PruneResponse:
    namespace: str
    dry_run: bool
    covered: int
    """Live memories the policy covers."""
    protected: int
    """Over the cap but protected by ``min_age`` or ``min_access``."""
    pruned: list[str]
    """Ids deleted (or that would be), least used first."""
