"""Embedding spaces (an operator's routes, with the `*` key) and the open routes: health, ready, metrics, docs."""

from __future__ import annotations

import time

from cairn_client import CairnClient, CairnError, Space
from conftest import wait_for


def test_spaces_reindex_activate_and_drop(client: CairnClient, ns: str) -> None:
    client.save(ns, "a memory for the new space to embed")
    before = client.spaces().spaces
    active = next(s for s in before if s.active)
    assert isinstance(active, Space) and active.state == "ready" and active.dimensions > 0
    assert active.progress.total >= 1

    started = client.reindex("hash:64", activate=False)
    assert started.started is True
    new = started.space
    assert new.id != active.id and new.dimensions == 64 and not new.active
    assert new.activate_when_ready is False

    def built() -> Space | None:
        s = next((s for s in client.spaces().spaces if s.id == new.id), None)
        if s is None or s.progress.embedded < s.progress.total:
            return None
        # Without activate, a complete space waits to be activated by hand.
        return s if s.state == "ready" or (s.build is not None and s.build.phase == "waiting") else None

    ready = wait_for(built, timeout=60)
    assert ready.embedder is not None and ready.embedder.startswith("hash")

    assert client.activate_space(new.id).activated == new.id
    assert client.stats().space == new.id
    # The replaced space is kept current for its grace period, so switching back is instant.
    replaced = next(s for s in client.spaces().spaces if s.id == active.id)
    assert replaced.current_until is not None and replaced.current_until > time.time() * 1000
    assert new.current_until is None
    assert client.search(ns, "memory to embed").hits  # searches go on in the new space

    # Back to the original space, then drop the new one (an active space may not be dropped).
    try:
        client.drop_space(client.stats().space or "")
    except CairnError as e:
        assert e.code == "INVALID_INPUT" and e.status == 400
    else:
        raise AssertionError("dropping the active space was accepted")
    assert client.activate_space(active.id, force=True).activated == active.id
    dropped = client.drop_space(new.id)
    assert dropped.dropped == new.id and dropped.vectors >= 1
    assert new.id not in {s.id for s in client.spaces().spaces}


def test_health_ready_metrics_openapi(client: CairnClient) -> None:
    assert client.health().status == "ok"
    ready = client.ready()
    assert ready.status == "ok" and ready.checks is not None and ready.checks["store"].ok
    metrics = client.metrics()
    assert "# TYPE" in metrics and "cairn" in metrics
    doc = client.openapi()
    assert doc["openapi"].startswith("3.") and "/v1/search" in doc["paths"]


def test_dead_letters_in_the_embedded_mode(client: CairnClient) -> None:
    res = client.dead_letters()
    assert res.mode == "embedded" and res.dead_letters == []
