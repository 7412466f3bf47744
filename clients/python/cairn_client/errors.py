"""The one exception of this client: :class:`CairnError`, carrying the server's error body."""

from __future__ import annotations

from typing import Any, Literal

ErrorCode = Literal[
    "INVALID_INPUT",
    "NOT_FOUND",
    "METHOD_NOT_ALLOWED",
    "DIMENSION_MISMATCH",
    "FORBIDDEN_NAMESPACE",
    "UNAUTHORIZED",
    "PAYLOAD_TOO_LARGE",
    "RATE_LIMITED",
    "BACKEND_UNAVAILABLE",
    "STORAGE_ERROR",
    "STORAGE_FULL",
    "WRITER_ELSEWHERE",
    "INTERNAL",
]
"""The codes of the server's error body (``Error`` in the OpenAPI document)."""

ERROR_CODES: frozenset[str] = frozenset(ErrorCode.__args__)  # type: ignore[attr-defined]

# Codes for answers without Cairn's error body (a proxy's 401, say), as the TypeScript client maps them.
_STATUS_CODES: dict[int, str] = {
    401: "UNAUTHORIZED",
    403: "FORBIDDEN_NAMESPACE",
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    413: "PAYLOAD_TOO_LARGE",
    429: "RATE_LIMITED",
}


class CairnError(Exception):
    """A request the server refused, or could not be made.

    Every non-2xx answer is raised as one, with the server's error body ``{"error": {code, message,
    field?}}``: ``code`` (one of :data:`ErrorCode`), ``message``, ``field`` (the input field at fault, as a
    dotted path such as ``memories.0.text``, when there is one), and the HTTP ``status``. A server that did
    not answer gives ``code="BACKEND_UNAVAILABLE"`` and ``status=None``.
    """

    def __init__(
        self,
        code: str,
        message: str,
        *,
        field: str | None = None,
        status: int | None = None,
        retry_after: float | None = None,
        method: str | None = None,
        path: str | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.field = field
        self.status = status
        self.retry_after = retry_after
        """Seconds the server asked to wait (its ``Retry-After``), when it said."""
        self.method = method
        self.path = path

    def __str__(self) -> str:
        where = f" (field {self.field})" if self.field else ""
        status = f" [HTTP {self.status}]" if self.status is not None else ""
        return f"{self.code}: {self.message}{where}{status}"

    def __repr__(self) -> str:
        return (
            f"CairnError(code={self.code!r}, message={self.message!r}, field={self.field!r}, "
            f"status={self.status!r})"
        )

    @classmethod
    def from_response(
        cls,
        status: int,
        body: Any,
        *,
        retry_after: float | None = None,
        method: str | None = None,
        path: str | None = None,
    ) -> CairnError:
        """The error of a non-2xx answer, from Cairn's error body or, without one, from the status."""
        err = body.get("error") if isinstance(body, dict) else None
        if isinstance(err, dict) and isinstance(err.get("code"), str) and err["code"] in ERROR_CODES:
            code = err["code"]
        else:
            code = _STATUS_CODES.get(status, "BACKEND_UNAVAILABLE" if status >= 500 else "INVALID_INPUT")
        message = err.get("message") if isinstance(err, dict) else None
        field = err.get("field") if isinstance(err, dict) else None
        return cls(
            code,
            message if isinstance(message, str) else f"HTTP {status} from {method} {path}",
            field=field if isinstance(field, str) else None,
            status=status,
            retry_after=retry_after,
            method=method,
            path=path,
        )
