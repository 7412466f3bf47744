"""The asyncio client against the real server: the same calls, awaited, concurrently."""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
from pathlib import Path

import pytest

from cairn_client import AsyncCairnClient, CairnClient, CairnError, MemoryWrite, SearchRequest
from conftest import ADMIN_KEY, FAST_RETRY, SCOPED_KEY, Server, namespace


def test_async_client_end_to_end(server: Server) -> None:
    async def main() -> None:
        ns = namespace()
        async with AsyncCairnClient(server.url, api_key=ADMIN_KEY, retry=FAST_RETRY) as cairn:
            items = await asyncio.gather(
                *(
                    cairn.save(ns, f"async note {i}: the cache key includes the tenant", session="a")
                    for i in range(8)
                )
            )
            assert len({i.id for i in items}) == 8
            batch = await cairn.write([MemoryWrite(text="async batch memory about tenants")], namespace=ns)
            assert batch.durable

            res = await cairn.search(ns, "cache key tenant", k=3)
            assert len(res.hits) == 3
            got = await cairn.get(ns, [h.id for h in res.hits])
            assert {r.id for r in got.memories} == {h.id for h in res.hits}
            tl = await cairn.timeline(ns, anchor=items[3].id, before=1, after=1)
            assert tl.anchor.id == items[3].id and len(tl.before) == 1
            pack = await cairn.context(ns, query="tenant cache")
            assert pack.included
            fed = await cairn.search_federated([ns], "tenant", k=2)
            assert len(fed.hits) == 2
            bs = await cairn.search_batch([SearchRequest(namespace=ns, query="tenant", k=1)])
            assert bs.results[0].ok
            assert (await cairn.stats()).namespaces[ns].stored == 9
            assert (await cairn.delete(ns, items[0].id)).deleted == items[0].id
            assert (await cairn.health()).status == "ok"
            assert (await cairn.ready()).status == "ok"
            assert "# TYPE" in await cairn.metrics()
            assert "/v1/stats" in (await cairn.openapi())["paths"]
            assert any(s.active for s in (await cairn.spaces()).spaces)

            with pytest.raises(CairnError) as info:
                await cairn.search(ns, "x", k=0)
            assert (info.value.code, info.value.field) == ("INVALID_INPUT", "k")

        async with AsyncCairnClient(server.url, api_key=SCOPED_KEY, retry=FAST_RETRY) as scoped:
            with pytest.raises(CairnError) as info:
                await scoped.search(ns, "tenant")
            assert info.value.code == "FORBIDDEN_NAMESPACE"
            assert ns not in (await scoped.stats()).namespaces

    asyncio.run(main())


def test_the_two_clients_have_the_same_methods() -> None:
    def public(cls: type) -> dict[str, inspect.Signature]:
        return {
            n: inspect.signature(f)
            for n, f in vars(cls).items()
            if callable(f) and not n.startswith("_") and n not in ("close",)
        }

    sync, aio = public(CairnClient), public(AsyncCairnClient)
    assert sync.keys() == aio.keys()
    for name in sync:
        if name == "from_env":
            continue
        s, a = sync[name], aio[name]
        assert list(s.parameters) == list(a.parameters), name
        assert str(s.return_annotation) == str(a.return_annotation), name
        assert inspect.iscoroutinefunction(getattr(AsyncCairnClient, name)), name


def test_the_async_client_is_generated_from_the_sync_one() -> None:
    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("generate_async", root / "scripts" / "generate_async.py")
    assert spec and spec.loader
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    expected = gen.generate((root / "cairn_client" / "client.py").read_text())
    assert (
        root / "cairn_client" / "async_client.py"
    ).read_text() == expected, (
        "async_client.py is out of date: run python3 clients/python/scripts/generate_async.py"
    )
