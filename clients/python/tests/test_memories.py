"""The memory routes against the real server: write, search, get, timeline, context, delete, stats."""

from __future__ import annotations

from cairn_client import (
    CairnClient,
    IndexEntry,
    MemoryRecord,
    MemoryWrite,
    SearchFilters,
    SearchHit,
    SearchRequest,
    SearchTuning,
    LegWeights,
    TokenUsage,
)
from conftest import namespace


def test_save_search_get_delete(client: CairnClient, ns: str) -> None:
    item = client.save(
        ns,
        "The auth middleware crashed on an expired JWT: parseConfig threw before the refresh",
        kind="observation",
        title="auth middleware crash",
        session="s1",
        agent="claude",
        tags=["auth", "bug"],
        meta={"file": "src/auth/middleware.ts"},
        importance=0.8,
    )
    assert item.namespace == ns and item.status == "stored" and item.id
    again = client.save(
        ns,
        "The auth middleware crashed on an expired JWT: parseConfig threw before the refresh",
        kind="observation",
        title="auth middleware crash",
        session="s1",
        agent="claude",
        tags=["auth", "bug"],
        meta={"file": "src/auth/middleware.ts"},
        importance=0.8,
    )
    assert again.id == item.id and again.status == "unchanged"

    res = client.search(ns, "why did the auth middleware crash?", k=3)
    assert res.namespace == ns
    assert isinstance(res.tokens, TokenUsage)
    hit = res.hits[0]
    assert isinstance(hit, SearchHit)
    assert (hit.id, hit.title, hit.kind, hit.session) == (
        item.id,
        "auth middleware crash",
        "observation",
        "s1",
    )
    assert hit.score > 0 and hit.tokens > 0
    assert hit.explain is not None and hit.explain.bm25_rank == 1
    assert hit.explain.parts.lexical > 0

    got = client.get(ns, [item.id, "m_missing"])
    assert got.missing == ["m_missing"] and got.omitted == []
    rec = got.memories[0]
    assert isinstance(rec, MemoryRecord)
    assert rec.id == item.id and rec.text.startswith("The auth middleware crashed")
    assert rec.tags == ["auth", "bug"] and rec.meta == {"file": "src/auth/middleware.ts"}
    assert rec.agent == "claude" and rec.importance == 0.8 and rec.superseded_by is None
    assert rec.fields == {} and rec.tokens > 0 and isinstance(rec.ts, float)

    deleted = client.delete(ns, item.id)
    assert (deleted.deleted, deleted.namespace) == (item.id, ns)
    assert client.get(ns, [item.id]).missing == [item.id]
    assert client.search(ns, "auth middleware crash").hits == []


def test_write_batch_and_one(client: CairnClient, ns: str) -> None:
    res = client.write(
        [
            MemoryWrite(text="we deploy to fly.io from the main branch", kind="fact"),
            {"text": "the release train leaves on Thursdays", "tags": ["process"]},
            MemoryWrite(text="elsewhere", namespace=namespace()),
        ],
        namespace=ns,
    )
    assert res.durable is True
    assert [i.index for i in res.items] == [0, 1, 2]
    assert [i.namespace for i in res.items][:2] == [ns, ns]
    assert res.items[2].namespace != ns
    assert res.counts.get("stored") == 3

    one = client.write(MemoryWrite(text="the staging database is postgres 16", namespace=ns, id="db-fact"))
    assert [(i.id, i.status) for i in one.items] == [("db-fact", "stored")]
    updated = client.write({"text": "the staging database is postgres 17", "id": "db-fact"}, namespace=ns)
    assert updated.items[0].status == "updated"
    assert client.get(ns, ["db-fact"]).memories[0].text.endswith("17")

    queued = client.write(MemoryWrite(text="queued write", namespace=ns), wait="queued")
    assert queued.items[0].status in ("queued", "stored")


def test_facts_replace_by_slot_and_key(client: CairnClient, ns: str) -> None:
    first = client.save(ns, "Preferred editor: vim", slot="user.preferences", key="editor")
    second = client.save(ns, "Preferred editor: helix", slot="user.preferences", key="editor")
    assert first.id == second.id
    rec = client.get(ns, [second.id]).memories[0]
    assert rec.text == "Preferred editor: helix" and rec.kind == "fact"


def test_ids_with_reserved_characters_round_trip(client: CairnClient, ns: str) -> None:
    weird = "doc/a b?c#d%e&f=g"
    client.save(ns, "an id with every reserved URL character", id=weird)
    assert client.get(ns, [weird]).memories[0].id == weird
    assert client.delete(ns, weird).deleted == weird


def test_search_options_filters_listing_and_batch(client: CairnClient, ns: str) -> None:
    client.write(
        [
            MemoryWrite(text="turn one: the user asks about retries", kind="turn", session="s", ts=1_000),
            MemoryWrite(text="turn two: we add backoff to the client", kind="turn", session="s", ts=2_000),
            MemoryWrite(text="an observation about retries and backoff", kind="observation", ts=3_000),
        ],
        namespace=ns,
    )
    only_turns = client.search(
        ns,
        "retries backoff",
        k=5,
        filters=SearchFilters(kinds=["turn"]),
        explain="full",
        neighbors=1,
        tuning=SearchTuning(weights=LegWeights(lexical=1, vector=0.5), rrf_k=60, candidate_pool=50),
    )
    assert only_turns.hits and all(h.kind == "turn" for h in only_turns.hits)
    assert only_turns.trace is not None
    assert only_turns.hits[0].neighbors is not None

    none_hits = client.search(ns, "retries", explain="none", filters={"kinds": ["summary"]})
    assert none_hits.hits == [] and none_hits.empty is not None

    listing = client.search(ns, "", filters=SearchFilters(sessions=["s"]), offset=1)
    assert listing.listing is not None and listing.listing.offset == 1
    assert [h.title for h in listing.hits] == ["turn one: the user asks about retries"]

    budget = client.search(ns, "retries", max_tokens=1)
    assert budget.tokens.budget == 1

    batch = client.search_batch(
        [
            SearchRequest(namespace=ns, query="backoff", k=1),
            {"namespace": ns, "query": "retries", "k": 2},
            SearchRequest(namespace=ns, query="x", k=1000),
        ]
    )
    assert [r.ok for r in batch.results] == [True, True, False]
    assert batch.results[0].result is not None and len(batch.results[0].result.hits) == 1
    err = batch.results[2].error
    # The field is named from the batch's body, as a whole-batch error names it.
    assert err is not None and err.code == "INVALID_INPUT" and err.field == "queries.2.k"


def test_federated_search(client: CairnClient) -> None:
    a, b = namespace(), namespace()
    client.save(a, "kafka consumer lag alert fired at night")
    client.save(b, "kafka broker disk filled up")
    res = client.search_federated([a, b], "kafka", k=4, per_namespace=1)
    assert sorted(h.namespace for h in res.hits) == sorted([a, b])
    assert set(res.namespaces) == {a, b} and res.namespaces[a].hits == 1


def test_timeline(client: CairnClient, ns: str) -> None:
    ids = [
        client.save(ns, f"step {i} of the migration plan", session="mig", ts=1_700_000_000_000 + i * 1000).id
        for i in range(5)
    ]
    tl = client.timeline(ns, anchor=ids[2], before=1, after=2)
    assert tl.scope == "session"
    assert isinstance(tl.anchor, IndexEntry) and tl.anchor.id == ids[2]
    assert [e.id for e in tl.before] == [ids[1]]
    assert [e.id for e in tl.after] == ids[3:5]
    by_query = client.timeline(ns, query="step 4 migration", before=0, after=0, max_tokens=500)
    assert by_query.anchor.id == ids[4] and by_query.tokens.budget == 500


def test_context(client: CairnClient, ns: str) -> None:
    first = client.save(ns, "Session summary: we moved CI to GitHub Actions", kind="summary", session="a")
    client.save(ns, "The flaky test is auth.spec.ts; it races the token refresh", session="b")
    pack = client.context(ns, query="flaky test", max_tokens=800, format="text", summaries=2, k=5)
    assert pack.namespace == ns and pack.format == "text"
    assert "auth.spec.ts" in pack.text and pack.tokens.used <= 800
    assert first.id in pack.included
    without = client.context(ns, query="flaky test", exclude_ids=[first.id])
    assert first.id not in without.included and without.format == "markdown"


def test_stats(client: CairnClient, ns: str) -> None:
    client.save(ns, "one memory to count")
    stats = client.stats()
    assert stats.mode == "embedded"
    assert stats.namespaces[ns].stored == 1
    assert stats.space is not None
