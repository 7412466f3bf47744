"""The synchronous client: :class:`CairnClient`."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import httpx

from . import models as m
from ._core import DEFAULT_BASE_URL, ClientCore, filters_of, write_body
from .retry import RetryPolicy

T = TypeVar("T")


class CairnClient(ClientCore):
    """The typed client of the Cairn HTTP API (blocking; :class:`AsyncCairnClient` is the asyncio twin).

    Every route of the API has a method (see :data:`cairn_client.routes.ROUTES`); every non-2xx answer is
    raised as :class:`CairnError` with the server's ``code``, ``message`` and ``field``; 429 and 503 are
    retried as ``retry`` says (:class:`RetryPolicy`, honouring ``Retry-After``).

    Use it as a context manager, or call :meth:`close`, to release its connections::

        with CairnClient("http://127.0.0.1:7411", api_key="…") as cairn:
            cairn.save("team/app", "the deploy target is fly.io", kind="fact")
            hits = cairn.search("team/app", "where do we deploy?", k=3).hits
    """

    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        *,
        api_key: str | None = None,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        headers: Mapping[str, str] | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        super().__init__(base_url, api_key, retry, headers)
        self._http = httpx.Client(timeout=timeout, transport=transport)

    @classmethod
    def from_env(cls, **kwargs: Any) -> CairnClient:
        """A client of ``$CAIRN_API_URL`` (default ``http://127.0.0.1:7411``) with the key ``$CAIRN_API_KEY``."""
        kwargs.setdefault("api_key", os.environ.get("CAIRN_API_KEY") or None)
        return cls(os.environ.get("CAIRN_API_URL") or DEFAULT_BASE_URL, **kwargs)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> CairnClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(
        self,
        result: type[T],
        name: str,
        *,
        path_params: Mapping[str, str] | None = None,
        query: Any = None,
        body: Any = None,
    ) -> T:
        call = self._prepare(result, name, path_params=path_params, query=query, body=body)
        attempt = 1
        while True:
            try:
                res = self._http.request(
                    call.route.method,
                    call.url,
                    params=call.params,
                    content=call.content,
                    headers=call.headers,
                )
            except httpx.HTTPError as e:
                raise self._unreachable(call, e) from e
            delay = self._retry_delay(call, attempt, res)
            if delay is None:
                value: T = self._finish(call, res)
                return value
            time.sleep(delay)
            attempt += 1

    # ------------------------------------------------------------------------------------ memories

    def write(
        self,
        memories: m.MemoryWrite
        | m.WriteBatch
        | Mapping[str, Any]
        | Sequence[m.MemoryWrite | Mapping[str, Any]],
        *,
        namespace: str | None = None,
        wait: m.Wait | None = None,
    ) -> m.WriteResponse:
        """Writes one memory, or a batch (a list), in one request: ``POST /v1/memories``.

        ``namespace`` applies to the memories that do not name their own. ``wait="stored"`` (the server's
        default) answers once durable; ``wait="queued"`` once accepted. The whole request is refused if
        any memory is invalid or in a namespace the key may not use: nothing of it is stored.
        """
        return self._call(m.WriteResponse, "write", body=write_body(memories, namespace, wait))

    def save(
        self,
        namespace: str,
        text: str,
        *,
        kind: str | None = None,
        title: str | None = None,
        session: str | None = None,
        agent: str | None = None,
        ts: m.TimeLike | None = None,
        tags: Sequence[str] | None = None,
        meta: Mapping[str, Any] | None = None,
        importance: float | None = None,
        confidence: float | None = None,
        supersedes: Sequence[str] | None = None,
        fields: Mapping[str, str] | None = None,
        slot: str | None = None,
        key: str | None = None,
        id: str | None = None,
        wait: m.Wait | None = None,
    ) -> m.WriteItem:
        """Writes one memory and returns its item (``id``, ``namespace``, ``status``): :meth:`write`'s short form."""
        memory = m.MemoryWrite(
            text=text,
            namespace=namespace,
            id=id,
            kind=kind,
            title=title,
            session=session,
            agent=agent,
            ts=ts,
            tags=list(tags) if tags is not None else None,
            meta=dict(meta) if meta is not None else None,
            importance=importance,
            confidence=confidence,
            supersedes=list(supersedes) if supersedes is not None else None,
            fields=dict(fields) if fields is not None else None,
            slot=slot,
            key=key,
        )
        res = self.write(memory, wait=wait)
        return res.items[0]

    def delete(self, namespace: str, id: str) -> m.DeleteResponse:
        """Tombstones a memory: ``DELETE /v1/memories/{id}?namespace=``."""
        return self._call(
            m.DeleteResponse, "delete", path_params={"id": id}, query=m.DeleteQuery(namespace=namespace)
        )

    def get(self, namespace: str, ids: Sequence[str], *, max_tokens: int | None = None) -> m.GetResponse:
        """Full records by id (layer 3): ``POST /v1/memories/get``. Unknown ids are listed in ``missing``."""
        return self._call(
            m.GetResponse, "get", body=m.GetRequest(namespace=namespace, ids=list(ids), max_tokens=max_tokens)
        )

    # -------------------------------------------------------------------------------------- search

    def search(
        self,
        namespace: str,
        query: str = "",
        *,
        k: int | None = None,
        max_tokens: int | None = None,
        filters: m.SearchFilters | Mapping[str, Any] | None = None,
        explain: m.Explain | None = None,
        neighbors: int | None = None,
        offset: int | None = None,
        max_age: str | float | None = None,
        now: m.TimeLike | None = None,
        tuning: m.SearchTuning | None = None,
    ) -> m.SearchResponse:
        """Hybrid search (layer 1, the compact index, every hit explained): ``POST /v1/search``.

        A blank ``query`` with ``filters`` lists the memories passing them, newest first from ``offset``.
        """
        return self._call(
            m.SearchResponse,
            "search",
            body=m.SearchRequest(
                namespace=namespace,
                query=query,
                k=k,
                max_tokens=max_tokens,
                filters=filters_of(filters),
                explain=explain,
                neighbors=neighbors,
                offset=offset,
                max_age=max_age,
                now=now,
                tuning=tuning,
            ),
        )

    def search_batch(self, queries: Sequence[m.SearchRequest | Mapping[str, Any]]) -> m.BatchSearchResponse:
        """Many searches in one call, each answering or failing in its own slot: ``POST /v1/search/batch``."""
        return self._call(
            m.BatchSearchResponse, "search_batch", body=m.BatchSearchRequest(queries=list(queries))
        )

    def search_federated(
        self,
        namespaces: Sequence[str],
        query: str = "",
        *,
        k: int | None = None,
        per_namespace: int | None = None,
        max_tokens: int | None = None,
        filters: m.SearchFilters | Mapping[str, Any] | None = None,
        explain: m.Explain | None = None,
        neighbors: int | None = None,
        max_age: str | float | None = None,
        now: m.TimeLike | None = None,
        tuning: m.SearchTuning | None = None,
    ) -> m.FederatedSearchResponse:
        """One query over several namespaces, merged by score: ``POST /v1/search/federated``.

        Each namespace contributes at most ``per_namespace`` hits (default ``k``). The key must be allowed to use
        every namespace named, or the whole request is refused.
        """
        return self._call(
            m.FederatedSearchResponse,
            "search_federated",
            body=m.FederatedSearchRequest(
                namespaces=list(namespaces),
                query=query,
                k=k,
                per_namespace=per_namespace,
                max_tokens=max_tokens,
                filters=filters_of(filters),
                explain=explain,
                neighbors=neighbors,
                max_age=max_age,
                now=now,
                tuning=tuning,
            ),
        )

    def timeline(
        self,
        namespace: str,
        *,
        anchor: str | None = None,
        query: str | None = None,
        before: int | None = None,
        after: int | None = None,
        max_tokens: int | None = None,
    ) -> m.TimelineResponse:
        """The memories around one (layer 2), by ``anchor`` id or the best hit of ``query``: ``GET /v1/timeline``."""
        return self._call(
            m.TimelineResponse,
            "timeline",
            query=m.TimelineQuery(
                namespace=namespace,
                anchor=anchor,
                query=query,
                before=before,
                after=after,
                max_tokens=max_tokens,
            ),
        )

    def context(
        self,
        namespace: str,
        *,
        query: str | None = None,
        max_tokens: int | None = None,
        format: m.ContextFormat | None = None,
        summaries: int | None = None,
        k: int | None = None,
        exclude_ids: Sequence[str] | None = None,
    ) -> m.ContextResponse:
        """A session-start pack within a token budget: ``POST /v1/context``."""
        return self._call(
            m.ContextResponse,
            "context",
            body=m.ContextRequest(
                namespace=namespace,
                query=query,
                max_tokens=max_tokens,
                format=format,
                summaries=summaries,
                k=k,
                exclude_ids=list(exclude_ids) if exclude_ids is not None else None,
            ),
        )

    def stats(self) -> m.StatsResponse:
        """Counts of the namespaces this key may read: ``GET /v1/stats``."""
        return self._call(m.StatsResponse, "stats")

    # ------------------------------------------------------------ embedding spaces (a `*` key only)

    def spaces(self) -> m.SpacesResponse:
        """Embedding spaces with their progress: ``GET /v1/spaces``."""
        return self._call(m.SpacesResponse, "spaces")

    def reindex(self, embedder: str, *, activate: bool | None = None) -> m.ReindexResponse:
        """Starts a live reindex into the space ``embedder`` builds (``hash:384``, ``ollama:<model>``, …).

        ``POST /v1/spaces/reindex`` answers at once; follow the build with :meth:`spaces`.
        """
        return self._call(
            m.ReindexResponse, "reindex", body=m.ReindexRequest(embedder=embedder, activate=activate)
        )

    def activate_space(self, space: str, *, force: bool | None = None) -> m.ActivateSpaceResponse:
        """Makes a complete space the one searches use: ``POST /v1/spaces/activate``."""
        return self._call(
            m.ActivateSpaceResponse, "activate_space", body=m.SpaceActionRequest(space=space, force=force)
        )

    def drop_space(self, space: str) -> m.DropSpaceResponse:
        """Deletes an inactive space, its vectors and index files: ``POST /v1/spaces/drop``."""
        return self._call(m.DropSpaceResponse, "drop_space", body=m.DropSpaceRequest(space=space))

    def dead_letters(self) -> m.DeadLettersResponse:
        """The distributed pipeline's dead letters, newest first: ``GET /v1/dead-letters`` (a ``*`` key)."""
        return self._call(m.DeadLettersResponse, "dead_letters")

    # ------------------------------------------------------------------------------------- hygiene

    def consolidate(
        self, namespace: str | None = None, *, dry_run: bool | None = None
    ) -> m.ConsolidateResponse:
        """Merges near-duplicates into the newer memory now, or lists what would merge (``dry_run``).

        ``POST /v1/hygiene/consolidate``; without a namespace, every one (a ``*`` key).
        """
        return self._call(
            m.ConsolidateResponse,
            "consolidate",
            body=m.ConsolidateRequest(namespace=namespace, dry_run=dry_run),
        )

    def undo_consolidation(
        self, namespace: str, ids: Sequence[str] | None = None
    ) -> m.UndoConsolidationResponse:
        """Brings merged memories back (every merge of the namespace without ``ids``): ``POST /v1/hygiene/undo``."""
        return self._call(
            m.UndoConsolidationResponse,
            "undo_consolidation",
            body=m.UndoConsolidationRequest(namespace=namespace, ids=list(ids) if ids is not None else None),
        )

    def consolidations(self, namespace: str, *, limit: int | None = None) -> m.ConsolidationsResponse:
        """A namespace's merges, newest first: ``GET /v1/hygiene/consolidations``."""
        return self._call(
            m.ConsolidationsResponse,
            "consolidations",
            query=m.ConsolidationsQuery(namespace=namespace, limit=limit),
        )

    def prune(
        self,
        namespace: str,
        cap: int,
        *,
        slot: str | None = None,
        kind: str | None = None,
        min_age: str | float | None = None,
        min_access: int | None = None,
        dry_run: bool | None = None,
    ) -> m.PruneResponse:
        """Applies a pruning policy now, or lists what it would delete (``dry_run``): ``POST /v1/hygiene/prune``.

        Of the live memories of a fact ``slot`` or a ``kind``, keeps the ``cap`` most used and deletes the
        rest, never one younger than ``min_age`` or accessed at least ``min_access`` times.
        """
        return self._call(
            m.PruneResponse,
            "prune",
            body=m.PruneRequest(
                namespace=namespace,
                cap=cap,
                slot=slot,
                kind=kind,
                min_age=min_age,
                min_access=min_access,
                dry_run=dry_run,
            ),
        )

    # ---------------------------------------------------------------------------------- operations

    def health(self) -> m.HealthResponse:
        """Liveness: ``GET /healthz`` (no key needed)."""
        return self._call(m.HealthResponse, "health")

    def ready(self) -> m.HealthResponse:
        """Readiness with its checks: ``GET /readyz``; ``status="unavailable"`` (HTTP 503) is returned, not raised."""
        return self._call(m.HealthResponse, "ready")

    def metrics(self) -> str:
        """Prometheus metrics, as text: ``GET /metrics``."""
        return self._call(str, "metrics")

    def openapi(self) -> dict[str, Any]:
        """The server's OpenAPI document: ``GET /docs/json``."""
        return self._call(dict, "openapi")
