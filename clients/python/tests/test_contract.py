"""The client against the server's own OpenAPI document (`GET /docs/json`, generated from the zod contract).

- every path and method of the document is in the client's route table, with a method on both clients;
- every request field the client's types can send is in that route's schema (body or query), recursively,
  and every field the schema requires is one the client always sends or makes the caller give;
- every field of each 2xx response schema is a field of the client's response type, recursively, and
  every field the client's type requires is one the schema requires;
- the error shape and its codes are CairnError's.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, Union, get_args, get_origin

import pytest

from cairn_client import (
    ERROR_CODES,
    ROUTES,
    AsyncCairnClient,
    CairnClient,
    SearchFilters,
    SearchRequest,
    TokenUsage,
)
from cairn_client._wire import wire_name


@pytest.fixture(scope="module")
def doc(client: CairnClient) -> dict[str, Any]:
    return client.openapi()


def deref(doc: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while True:
        if "$ref" in schema:
            name = schema["$ref"].split("/")[-1]
            schema = doc["components"]["schemas"][name]
        elif "allOf" in schema and len(schema["allOf"]) == 1:
            schema = schema["allOf"][0]
        else:
            return schema


def variants(doc: dict[str, Any], schema: dict[str, Any]) -> list[dict[str, Any]]:
    """The alternatives of a schema (anyOf/oneOf flattened, allOf merged), each dereferenced."""
    schema = deref(doc, schema)
    alts = schema.get("anyOf") or schema.get("oneOf")
    if alts:
        return [v for a in alts for v in variants(doc, a)]
    if "allOf" in schema:  # an intersection (zod's .and): one object with the properties of every part
        merged: dict[str, Any] = {"type": "object", "properties": {}, "required": []}
        for part in schema["allOf"]:
            (v,) = variants(doc, part)
            merged["properties"].update(v.get("properties") or {})
            merged["required"] += v.get("required") or []
        return [merged]
    return [schema]


def object_props(
    doc: dict[str, Any], schema: dict[str, Any]
) -> tuple[dict[str, list[dict[str, Any]]], set[str], bool]:
    """Properties (each with the schemas it has across alternatives), required in all, and whether any object."""
    props: dict[str, list[dict[str, Any]]] = {}
    required: set[str] | None = None
    any_object = False
    for v in variants(doc, schema):
        if v.get("type") != "object" and "properties" not in v:
            continue
        any_object = True
        for name, s in (v.get("properties") or {}).items():
            props.setdefault(name, []).append(s)
        req = set(v.get("required") or [])
        required = req if required is None else required & req
    return props, required or set(), any_object


def unwrap(tp: Any) -> list[tuple[str, Any]]:
    """The dataclasses inside a type, each with how to reach its schema: '' (itself), '[]' (items), '{}' (values)."""
    origin = get_origin(tp)
    if origin is Union or origin is types.UnionType:
        return [x for a in get_args(tp) for x in unwrap(a)]
    if origin is list:
        return [("[]" + how, t) for how, t in unwrap(get_args(tp)[0])]
    if origin is dict:
        return [("{}" + how, t) for how, t in unwrap(get_args(tp)[1])]
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return [("", tp)]
    return []


def descend(doc: dict[str, Any], schemas: list[dict[str, Any]], how: str) -> list[dict[str, Any]]:
    for step in how:
        if step == "[":
            schemas = [deref(doc, v["items"]) for s in schemas for v in variants(doc, s) if "items" in v]
        elif step == "{":
            schemas = [
                v["additionalProperties"]
                for s in schemas
                for v in variants(doc, s)
                if isinstance(v.get("additionalProperties"), dict)
            ]
    return schemas


def fields_of(cls: type) -> list[tuple[str, Any, dataclasses.Field[Any]]]:
    """(wire name, type, field) of a dataclass, with `flatten` fields spread into their parent."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        if f.metadata.get("flatten"):
            inner = next(t for how, t in unwrap(hints[f.name]) if how == "")
            out.extend(fields_of(inner))
        else:
            out.append((wire_name(f), hints[f.name], f))
    return out


def always_sent(f: dataclasses.Field[Any]) -> bool:
    no_default = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    return no_default or f.default is not None


def check_request(
    doc: dict[str, Any], cls: type, schemas: list[dict[str, Any]], where: str, problems: list[str]
) -> None:
    props: dict[str, list[dict[str, Any]]] = {}
    required: set[str] = set()
    for s in schemas:
        p, r, is_obj = object_props(doc, s)
        assert is_obj, f"{where}: the schema is not an object, but the client sends {cls.__name__}"
        for k, v in p.items():
            props.setdefault(k, []).extend(v)
        required |= r
    sent = {}
    for name, tp, f in fields_of(cls):
        sent[name] = f
        if name not in props:
            problems.append(f"{where}.{name}: sent by {cls.__name__}, not in the schema")
            continue
        for how, inner in unwrap(tp):
            check_request(doc, inner, descend(doc, props[name], how), f"{where}.{name}", problems)
    for name in required:
        if name not in sent:
            problems.append(f"{where}.{name}: required by the schema, missing from {cls.__name__}")
        elif not always_sent(sent[name]):
            problems.append(f"{where}.{name}: required by the schema, optional in {cls.__name__}")


def check_response(
    doc: dict[str, Any], cls: type, schema: dict[str, Any], where: str, problems: list[str]
) -> None:
    props, required, is_obj = object_props(doc, schema)
    assert is_obj, f"{where}: the schema is not an object, but the client reads {cls.__name__}"
    mine = {name: (tp, f) for name, tp, f in fields_of(cls)}
    for name in props:
        if name not in mine:
            problems.append(f"{where}.{name}: in the schema, not read by {cls.__name__}")
    for name, (tp, f) in mine.items():
        if name not in props:
            problems.append(f"{where}.{name}: read by {cls.__name__}, not in the schema")
            continue
        no_default = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        if no_default and name not in required:
            problems.append(f"{where}.{name}: required by {cls.__name__}, optional in the schema")
        for how, inner in unwrap(tp):
            for s in descend(doc, props[name], how):
                check_response(doc, inner, s, f"{where}.{name}", problems)


def operations(doc: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (method.upper(), path): op
        for path, item in doc["paths"].items()
        for method, op in item.items()
        if method in ("get", "post", "put", "patch", "delete")
    }


def test_every_documented_route_is_in_the_client(doc: dict[str, Any]) -> None:
    documented = set(operations(doc))
    table = {(r.method, r.path) for r in ROUTES.values() if r.documented}
    assert documented - table == set(), "routes of the API the Python client does not implement"
    assert table - documented == set(), "routes in the client's table that the server does not document"
    for name in ROUTES:
        assert callable(getattr(CairnClient, name, None)), f"CairnClient.{name} is missing"
        assert callable(getattr(AsyncCairnClient, name, None)), f"AsyncCairnClient.{name} is missing"


def test_the_undocumented_routes_answer(client: CairnClient) -> None:
    for r in ROUTES.values():
        if not r.documented:
            assert getattr(client, r.name)()


def test_request_fields_exist_in_the_schema(doc: dict[str, Any]) -> None:
    ops = operations(doc)
    problems: list[str] = []
    for r in ROUTES.values():
        if not r.documented:
            continue
        op = ops[(r.method, r.path)]
        where = f"{r.method} {r.path}"
        body = (op.get("requestBody") or {}).get("content", {}).get("application/json", {}).get("schema")
        if r.bodies:
            assert body is not None, f"{where}: the client sends a body, the API takes none"
            # A union body: each type the client sends must fit one alternative of it.
            for cls in r.bodies:
                fits = []
                for alt in variants(doc, body):
                    found: list[str] = []
                    check_request(doc, cls, [alt], f"{where} body", found)
                    fits.append(found)
                if all(fits):
                    problems.extend(min(fits, key=len))
        else:
            assert body is None, f"{where}: the API takes a body the client does not send"
        params = op.get("parameters") or []
        query = {p["name"]: p for p in params if p["in"] == "query"}
        path_params = {p["name"] for p in params if p["in"] == "path"}
        assert path_params == {seg[1:-1] for seg in r.path.split("/") if seg.startswith("{")}, where
        sent = {name: f for name, _, f in fields_of(r.query)} if r.query else {}
        for name in sent:
            if name not in query:
                problems.append(f"{where} ?{name}: sent by the client, not a query parameter")
        for name, param in query.items():
            if name not in sent:
                problems.append(f"{where} ?{name}: a query parameter the client cannot send")
            elif param.get("required") and not always_sent(sent[name]):
                problems.append(f"{where} ?{name}: required by the API, optional in the client")
    assert not problems, "\n".join(problems)


def test_response_types_match_the_schema(doc: dict[str, Any]) -> None:
    ops = operations(doc)
    problems: list[str] = []
    for r in ROUTES.values():
        if not r.documented:
            continue
        responses = ops[(r.method, r.path)]["responses"]
        ok = sorted(s for s in responses if s.startswith("2") or int(s) in r.ok)
        assert [int(s) for s in ok] == sorted(
            r.ok
        ), f"{r.method} {r.path}: answers {ok}, the client takes {r.ok}"
        for status in ok:
            schema = responses[status]["content"]["application/json"]["schema"]
            check_response(doc, r.response, schema, f"{r.method} {r.path} {status}", problems)
    assert not problems, "\n".join(problems)


def test_the_error_shape_is_cairn_errors(doc: dict[str, Any]) -> None:
    schema = deref(doc, {"$ref": "#/components/schemas/Error"})
    error = deref(doc, schema["properties"]["error"])
    assert set(error["properties"]) == {"code", "message", "field"}
    assert set(error["required"]) == {"code", "message"}
    assert set(error["properties"]["code"]["enum"]) == ERROR_CODES
    for r in ROUTES.values():
        if r.documented and r.path.startswith("/v1/"):
            responses = operations(doc)[(r.method, r.path)]["responses"]
            for status in ("400", "401", "403", "429"):
                assert responses[status]["content"]["application/json"]["schema"] == {
                    "$ref": "#/components/schemas/Error"
                }, (r.path, status)


# Types the contract does not have, to show the checks catch them (module level: their annotations resolve).
@dataclasses.dataclass
class _DriftedFilters(SearchFilters):
    colours: list[str] | None = None


@dataclasses.dataclass
class _DriftedSearch(SearchRequest):
    bogus_knob: float | None = None
    filters: _DriftedFilters | None = None


@dataclasses.dataclass(frozen=True)
class _DriftedUsage:
    used: int
    budget: int | None
    spent: int


def test_the_checks_catch_drift(doc: dict[str, Any]) -> None:
    """The checks above would fail on a field the contract does not have, either way."""
    search = operations(doc)[("POST", "/v1/search")]["requestBody"]["content"]["application/json"]["schema"]
    problems: list[str] = []
    check_request(doc, _DriftedSearch, [search], "search", problems)
    assert sorted(problems) == [
        "search.bogus_knob: sent by _DriftedSearch, not in the schema",
        "search.filters.colours: sent by _DriftedFilters, not in the schema",
    ]
    usage = {"$ref": "#/components/schemas/TokenUsage"}
    problems = []
    check_response(doc, _DriftedUsage, usage, "tokens", problems)
    assert sorted(problems) == [
        "tokens.omitted: in the schema, not read by _DriftedUsage",
        "tokens.spent: read by _DriftedUsage, not in the schema",
    ]
    problems = []
    check_response(doc, TokenUsage, usage, "tokens", problems)
    assert problems == []
