"""What the sync and the async client share: building requests, reading answers, the request bodies."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx

from . import models as m
from ._wire import ResponseShapeError, from_wire, to_wire
from .errors import CairnError
from .retry import RetryPolicy, parse_retry_after
from .routes import ROUTES, Route

__version__ = "0.1.0"

DEFAULT_BASE_URL = "http://127.0.0.1:7411"


@dataclass(frozen=True)
class PreparedCall:
    route: Route
    url: str
    path: str
    params: dict[str, str] | None
    content: bytes | None
    headers: dict[str, str]


def _segment(value: str) -> str:
    """One path segment, percent-encoded. ``.`` and ``..`` cannot be one: URL parsers resolve them away, and
    ``DELETE /v1/memories/..`` asked ``DELETE /v1/``. No memory has such an id (writes refuse it), so the call
    is refused here with the error the server gives such an id on a write."""
    if value in (".", ".."):
        raise CairnError("INVALID_INPUT", 'id must not be "." or "..": a URL cannot address it', field="id")
    try:
        return quote(value, safe="")
    except UnicodeEncodeError:
        # A lone surrogate has no UTF-8, and no memory has one in its id (writes refuse it).
        raise CairnError("INVALID_INPUT", "id holds a lone UTF-16 surrogate: not valid Unicode text", field="id") from None


def _query_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


class ClientCore:
    """Configuration and the transport-independent half of a call."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        retry: RetryPolicy | None,
        headers: Mapping[str, str] | None,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must be an http:// or https:// URL, not {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self.retry = retry if retry is not None else RetryPolicy()
        self._headers = {
            "accept": "application/json",
            "user-agent": f"cairn-client-python/{__version__}",
            **(dict(headers) if headers else {}),
        }
        if api_key:
            self._headers["authorization"] = f"Bearer {api_key}"

    def _prepare(
        self,
        result: type[Any],
        name: str,
        *,
        path_params: Mapping[str, str] | None = None,
        query: Any = None,
        body: Any = None,
    ) -> PreparedCall:
        route = ROUTES[name]
        if route.response is not result:
            raise TypeError(f"{name} answers {route.response!r}, not {result!r}")  # a bug in this package
        path = route.path.format(**{k: _segment(v) for k, v in (path_params or {}).items()})
        params = None
        if query is not None:
            params = {k: _query_value(v) for k, v in to_wire(query).items()}
        headers = dict(self._headers)
        content = None
        if body is not None:
            wire = to_wire(body)
            try:
                content = json.dumps(wire, ensure_ascii=False, allow_nan=False).encode("utf-8")
            except UnicodeEncodeError:
                # A lone surrogate has no UTF-8: sent escaped, so the server names the field at fault, as
                # it does for every client, rather than this process raising an encoding error.
                content = json.dumps(wire, ensure_ascii=True, allow_nan=False).encode("ascii")
            headers["content-type"] = "application/json"
        return PreparedCall(route, self.base_url + path, path, params, content, headers)

    def _unreachable(self, call: PreparedCall, err: Exception) -> CairnError:
        what = "timed out" if isinstance(err, httpx.TimeoutException) else "did not answer"
        return CairnError(
            "BACKEND_UNAVAILABLE",
            f"Cairn API at {self.base_url} {what}: {err}",
            method=call.route.method,
            path=call.path,
        )

    def _retry_delay(self, call: PreparedCall, attempt: int, res: httpx.Response) -> float | None:
        if not call.route.retry or res.status_code in call.route.ok:
            return None
        return self.retry.delay(attempt, res.status_code, parse_retry_after(res.headers.get("retry-after")))

    def _finish(self, call: PreparedCall, res: httpx.Response) -> Any:
        route = call.route
        status = res.status_code
        if 200 <= status < 300 or status in route.ok:
            if route.response is str:
                return res.text
            try:
                data = res.json()
            except ValueError as e:
                raise CairnError(
                    "INTERNAL",
                    f"the answer to {route.method} {call.path} is not JSON: {e}",
                    status=status,
                    method=route.method,
                    path=call.path,
                ) from e
            if route.response is dict:
                return data
            try:
                return from_wire(route.response, data)
            except ResponseShapeError as e:
                raise CairnError(
                    "INTERNAL",
                    f"unexpected answer to {route.method} {call.path}: {e}",
                    status=status,
                    method=route.method,
                    path=call.path,
                ) from e
        try:
            body = res.json()
        except ValueError:
            body = None
        raise CairnError.from_response(
            status,
            body,
            retry_after=parse_retry_after(res.headers.get("retry-after")),
            method=route.method,
            path=call.path,
        )


# ------------------------------------------------------------------------------- request bodies


def write_body(
    memories: m.MemoryWrite
    | m.WriteOne
    | m.WriteBatch
    | Mapping[str, Any]
    | Sequence[m.MemoryWrite | Mapping[str, Any]],
    namespace: str | None,
    wait: m.Wait | None,
) -> m.WriteOne | m.WriteBatch | dict[str, Any]:
    if isinstance(memories, m.WriteBatch):
        return memories
    if isinstance(memories, m.MemoryWrite):
        fields = {f: getattr(memories, f) for f in m.MemoryWrite.__dataclass_fields__}
        one = m.WriteOne(**fields)
        if isinstance(memories, m.WriteOne):
            one.wait = memories.wait
        if one.namespace is None:
            one.namespace = namespace
        if wait is not None:
            one.wait = wait
        return one
    if isinstance(memories, Mapping):
        if "memories" in memories:
            raise TypeError("pass a batch as a list of memories (and namespace=, wait=), or a WriteBatch")
        d = dict(memories)
        if namespace is not None:
            d.setdefault("namespace", namespace)
        if wait is not None:
            d["wait"] = wait
        return d
    if isinstance(memories, (str, bytes)):
        raise TypeError(
            "write takes a MemoryWrite, a mapping, or a list of them; save(namespace, text) takes text"
        )
    return m.WriteBatch(memories=list(memories), namespace=namespace, wait=wait)


def filters_of(filters: m.SearchFilters | Mapping[str, Any] | None) -> Any:
    return filters if filters is None or isinstance(filters, m.SearchFilters) else dict(filters)
