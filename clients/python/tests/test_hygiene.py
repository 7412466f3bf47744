"""Memory hygiene: consolidation of near-duplicates (and its undo), and pruning policies."""

from __future__ import annotations

import pytest

from cairn_client import CairnClient, CairnError, MemoryWrite
from conftest import namespace, wait_for


def test_consolidate_list_and_undo(client: CairnClient, scoped: CairnClient, ns: str) -> None:
    text = "The nightly backup job writes to s3://acme-backups and keeps 30 days"
    client.write(
        [
            MemoryWrite(text=text, id="backup-old", ts=1_700_000_000_000),
            MemoryWrite(text=text, id="backup-new", ts=1_700_000_100_000),
            MemoryWrite(text="an unrelated memory about lunch", id="lunch"),
        ],
        namespace=ns,
    )
    wait_for(lambda: (s := client.stats().namespaces.get(ns)) and s.embedded == s.stored == 3)

    dry = client.consolidate(ns, dry_run=True)
    assert dry.dry_run is True and dry.skipped is None
    assert [(m.id, m.into) for m in dry.merges] == [("backup-old", "backup-new")]
    assert client.consolidations(ns).merges == []  # a dry run merges nothing

    done = client.consolidate(ns)
    assert done.merged == 1 and done.exact == 1 and done.by_namespace == {ns: 1}
    merge = done.merges[0]
    assert (merge.namespace, merge.id, merge.into, merge.undone_at) == (ns, "backup-old", "backup-new", None)
    assert merge.cosine == pytest.approx(1.0)

    hits = client.search(ns, "nightly backup job").hits
    assert [h.id for h in hits][:1] == ["backup-new"] and hits[0].dup_count == 1
    assert client.get(ns, ["backup-old"]).memories[0].superseded_by == "backup-new"

    listed = client.consolidations(ns, limit=10).merges
    assert [(m.id, m.into) for m in listed] == [("backup-old", "backup-new")]

    restored = client.undo_consolidation(ns, ["backup-old"]).restored
    assert [m.id for m in restored] == ["backup-old"] and restored[0].undone_at is not None
    assert client.get(ns, ["backup-old"]).memories[0].superseded_by is None
    assert client.consolidations(ns).merges[0].undone_at is not None

    # A key scoped to other namespaces may not run it here, nor over every namespace.
    with pytest.raises(CairnError) as info:
        scoped.consolidate(ns)
    assert info.value.code == "FORBIDDEN_NAMESPACE"
    with pytest.raises(CairnError) as info:
        scoped.consolidate()
    assert (info.value.code, info.value.field) == ("FORBIDDEN_NAMESPACE", "namespace")
    with pytest.raises(CairnError) as info:
        scoped.undo_consolidation(ns)
    assert info.value.code == "FORBIDDEN_NAMESPACE"


def test_prune_dry_run_then_for_real(client: CairnClient, scoped: CairnClient, ns: str) -> None:
    ids = [
        client.save(ns, f"scratch note number {i}", kind="scratch", ts=1_700_000_000_000 + i * 1000).id
        for i in range(4)
    ]
    keep = client.save(ns, "a fact that no scratch policy covers", kind="fact").id

    dry = client.prune(ns, 2, kind="scratch", dry_run=True)
    assert dry.dry_run is True and dry.covered == 4 and len(dry.pruned) == 2
    assert set(dry.pruned) <= set(ids)
    assert client.stats().namespaces[ns].stored == 5  # nothing deleted (get would count as an access)

    done = client.prune(ns, 2, kind="scratch")
    assert done.dry_run is False and done.namespace == ns and sorted(done.pruned) == sorted(dry.pruned)
    assert sorted(client.get(ns, ids).missing) == sorted(done.pruned)
    assert client.get(ns, [keep]).missing == []

    with pytest.raises(CairnError) as info:
        client.prune(ns, 1)  # a policy names a slot or a kind
    assert (info.value.code, info.value.field) == ("INVALID_INPUT", "slot")
    with pytest.raises(CairnError) as info:
        scoped.prune(namespace("private"), 1, kind="scratch")
    assert info.value.code == "FORBIDDEN_NAMESPACE"
