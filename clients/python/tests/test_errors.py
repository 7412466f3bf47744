"""Errors carry the server's code, field, message and status; a key sees only its own namespaces."""

from __future__ import annotations

import socket

import pytest

from cairn_client import ERROR_CODES, CairnClient, CairnError, MemoryWrite, RetryPolicy
from conftest import ADMIN_KEY, FAST_RETRY, Server, namespace


def raises(fn, *args, **kwargs) -> CairnError:  # type: ignore[no-untyped-def]
    with pytest.raises(CairnError) as info:
        fn(*args, **kwargs)
    return info.value


def test_a_bad_field_is_named(client: CairnClient, ns: str) -> None:
    e = raises(client.search, ns, "anything", k=1000)
    assert (e.code, e.field, e.status) == ("INVALID_INPUT", "k", 400)
    assert "k must be at most 100" in e.message
    assert e.method == "POST" and e.path == "/v1/search"
    assert "INVALID_INPUT" in str(e) and "field k" in str(e)

    e = raises(client.write, [MemoryWrite(text="ok"), MemoryWrite(text="bad", importance=7)], namespace=ns)
    assert (e.code, e.field) == ("INVALID_INPUT", "memories.1.importance")
    assert client.stats().namespaces.get(ns) is None  # nothing of the refused batch was stored

    e = raises(client.write, {"text": "x", "colour": "red"}, namespace=ns)
    assert e.code == "INVALID_INPUT" and e.field is not None and "colour" in (e.field + e.message)

    e = raises(client.timeline, ns, before=3)
    assert (e.code, e.field) == ("INVALID_INPUT", "anchor")

    e = raises(client.get, "not a namespace!", ["x"])
    assert (e.code, e.field) == ("INVALID_INPUT", "namespace")


def test_not_found(client: CairnClient, ns: str) -> None:
    e = raises(client.timeline, ns, anchor="m_nope")
    assert (e.code, e.status) == ("NOT_FOUND", 404)


def test_every_code_the_server_can_send_is_known() -> None:
    e = CairnError.from_response(507, {"error": {"code": "STORAGE_FULL", "message": "disk full"}})
    assert (e.code, e.message, e.field, e.status) == ("STORAGE_FULL", "disk full", None, 507)
    # Answers without Cairn's body (a proxy's) get a code from their status.
    assert CairnError.from_response(401, "<html>").code == "UNAUTHORIZED"
    assert CairnError.from_response(502, None).code == "BACKEND_UNAVAILABLE"
    assert (
        CairnError.from_response(418, {"error": {"code": "TEAPOT", "message": "?"}}).code == "INVALID_INPUT"
    )
    assert "WRITER_ELSEWHERE" in ERROR_CODES


def test_no_key_and_an_unknown_key_are_unauthorized(server: Server, ns: str) -> None:
    with CairnClient(server.url, retry=FAST_RETRY) as anonymous:
        e = raises(anonymous.search, ns, "x")
        assert (e.code, e.status) == ("UNAUTHORIZED", 401)
        assert anonymous.health().status == "ok"  # health stays open
    with CairnClient(server.url, api_key="not-a-key-at-all", retry=FAST_RETRY) as wrong:
        assert raises(wrong.stats).code == "UNAUTHORIZED"


def test_a_key_without_access_gets_the_error_and_sees_nothing(
    client: CairnClient, scoped: CairnClient
) -> None:
    secret = namespace("private")
    mine = namespace("scoped")
    secret_id = client.save(secret, "the launch codes are in the blue binder").id
    scoped.save(mine, "my own note about binders")

    for call in (
        lambda: scoped.search(secret, "launch codes"),
        lambda: scoped.get(secret, [secret_id]),
        lambda: scoped.timeline(secret, anchor=secret_id),
        lambda: scoped.context(secret, query="launch codes"),
        lambda: scoped.delete(secret, secret_id),
        lambda: scoped.save(secret, "overwrite attempt"),
        lambda: scoped.search_batch(
            [{"namespace": mine, "query": "binder"}, {"namespace": secret, "query": "x"}]
        ),
    ):
        try:
            res = call()
        except CairnError as err:
            assert (err.code, err.status) == ("FORBIDDEN_NAMESPACE", 403)
            assert err.field is not None
        else:  # a batch answers per slot: the forbidden one fails in its own slot
            slots = res.results  # type: ignore[attr-defined]
            assert slots[0].ok and not slots[1].ok
            assert slots[1].error.code == "FORBIDDEN_NAMESPACE"

    e = raises(scoped.search_federated, [mine, secret], "binder")
    assert (e.code, e.field) == ("FORBIDDEN_NAMESPACE", "namespaces.1")
    # The message never says whether the namespace exists.
    unused = namespace("private")
    assert raises(scoped.search, unused, "x").message.replace(unused, "NS") == raises(
        scoped.search, secret, "x"
    ).message.replace(secret, "NS")

    stats = scoped.stats()
    assert mine in stats.namespaces and secret not in stats.namespaces
    assert all(n.startswith("scoped/") for n in stats.namespaces)
    # Nothing of the refused write landed; the memory is still there for its owner.
    assert client.get(secret, [secret_id]).memories[0].text == "the launch codes are in the blue binder"
    assert [h.id for h in client.search(secret, "launch codes").hits] == [secret_id]

    # Embedding spaces hold every namespace: a scoped key may not see or manage them.
    for op in (scoped.spaces, lambda: scoped.reindex("hash:64"), lambda: scoped.drop_space("x")):
        e = raises(op)
        assert (e.code, e.field) == ("FORBIDDEN_NAMESPACE", "authorization")


def test_an_unreachable_server_is_backend_unavailable() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with CairnClient(f"http://127.0.0.1:{port}", api_key=ADMIN_KEY, retry=RetryPolicy(max_attempts=1)) as c:
        e = raises(c.stats)
    assert e.code == "BACKEND_UNAVAILABLE" and e.status is None
    assert isinstance(e.__cause__, Exception)


def test_bad_base_url() -> None:
    with pytest.raises(ValueError):
        CairnClient("127.0.0.1:7411")


def test_a_lone_surrogate_and_a_dot_id_get_the_servers_answer(client: CairnClient, ns: str) -> None:
    # No UTF-8 encoding error raised here: the text goes escaped and the server names the field.
    e = raises(client.write, {"text": "bad \ud800"}, namespace=ns)
    assert (e.code, e.field, e.status) == ("INVALID_INPUT", "text", 400)
    # `.` and `..` cannot be sent as ids (resolved away, they asked another route): refused by name.
    for bad in (".", "..", "bad \ud800"):
        e = raises(client.delete, ns, bad)
        assert (e.code, e.field) == ("INVALID_INPUT", "id")
