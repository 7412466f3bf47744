"""The route table: every route of the Cairn HTTP API, and the client method that calls it.

The contract test (``tests/test_contract.py``) fetches the server's OpenAPI document (``GET /docs/json``)
and checks that every path and method in it has an entry here, and that every request field the types
below can send is in the route's schema: the zod contract and this client cannot drift apart unseen.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import models as m


@dataclass(frozen=True)
class Route:
    name: str
    """The client method (the same on :class:`CairnClient` and :class:`AsyncCairnClient`)."""
    method: str
    path: str
    """As in the OpenAPI document: path parameters in braces."""
    bodies: tuple[type, ...] = ()
    """The request body types the client may send (a union has several)."""
    query: type | None = None
    """The query-string type."""
    response: Any = None
    """The type of a 2xx answer; ``str`` for plain text, ``dict`` for raw JSON."""
    ok: tuple[int, ...] = (200,)
    """Statuses answered with ``response`` rather than raised."""
    retry: bool = True
    """Retried on 429/503 (see :class:`RetryPolicy`)."""
    documented: bool = True
    """In the OpenAPI document (``/metrics`` and the document itself are not)."""


ROUTES: dict[str, Route] = {
    r.name: r
    for r in (
        Route(
            "write",
            "POST",
            "/v1/memories",
            bodies=(m.WriteOne, m.WriteBatch),
            query=m.WriteQuery,
            response=m.WriteResponse,
            ok=(201, 202),
        ),
        Route("delete", "DELETE", "/v1/memories/{id}", query=m.DeleteQuery, response=m.DeleteResponse),
        Route("get", "POST", "/v1/memories/get", bodies=(m.GetRequest,), response=m.GetResponse),
        Route("search", "POST", "/v1/search", bodies=(m.SearchRequest,), response=m.SearchResponse),
        Route(
            "search_batch",
            "POST",
            "/v1/search/batch",
            bodies=(m.BatchSearchRequest,),
            response=m.BatchSearchResponse,
        ),
        Route(
            "search_federated",
            "POST",
            "/v1/search/federated",
            bodies=(m.FederatedSearchRequest,),
            response=m.FederatedSearchResponse,
        ),
        Route("timeline", "GET", "/v1/timeline", query=m.TimelineQuery, response=m.TimelineResponse),
        Route("context", "POST", "/v1/context", bodies=(m.ContextRequest,), response=m.ContextResponse),
        Route("stats", "GET", "/v1/stats", response=m.StatsResponse),
        Route("spaces", "GET", "/v1/spaces", response=m.SpacesResponse),
        Route(
            "reindex",
            "POST",
            "/v1/spaces/reindex",
            bodies=(m.ReindexRequest,),
            response=m.ReindexResponse,
            ok=(202,),
        ),
        Route(
            "activate_space",
            "POST",
            "/v1/spaces/activate",
            bodies=(m.SpaceActionRequest,),
            response=m.ActivateSpaceResponse,
        ),
        Route("dead_letters", "GET", "/v1/dead-letters", response=m.DeadLettersResponse),
        Route(
            "drop_space",
            "POST",
            "/v1/spaces/drop",
            bodies=(m.DropSpaceRequest,),
            response=m.DropSpaceResponse,
        ),
        Route(
            "consolidate",
            "POST",
            "/v1/hygiene/consolidate",
            bodies=(m.ConsolidateRequest,),
            response=m.ConsolidateResponse,
        ),
        Route(
            "undo_consolidation",
            "POST",
            "/v1/hygiene/undo",
            bodies=(m.UndoConsolidationRequest,),
            response=m.UndoConsolidationResponse,
        ),
        Route(
            "consolidations",
            "GET",
            "/v1/hygiene/consolidations",
            query=m.ConsolidationsQuery,
            response=m.ConsolidationsResponse,
        ),
        Route("prune", "POST", "/v1/hygiene/prune", bodies=(m.PruneRequest,), response=m.PruneResponse),
        Route("health", "GET", "/healthz", response=m.HealthResponse),
        # /readyz answers 503 with the same body when a check fails: a state to report, not to retry.
        Route("ready", "GET", "/readyz", response=m.HealthResponse, ok=(200, 503), retry=False),
        Route("metrics", "GET", "/metrics", response=str, documented=False),
        Route("openapi", "GET", "/docs/json", response=dict, documented=False),
    )
}
