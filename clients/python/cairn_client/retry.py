"""Retries with backoff on 429 and 503, honouring the server's ``Retry-After``."""

from __future__ import annotations

import email.utils
import random
import time
from dataclasses import dataclass, field


@dataclass(frozen=True)
class RetryPolicy:
    """When and how long to wait before trying a request again.

    An answer whose status is in ``statuses`` (429 Too Many Requests and 503 Service Unavailable by
    default) is retried, up to ``max_attempts`` tries in all. The wait is the server's ``Retry-After``
    when it sends one (seconds, or an HTTP date), else an exponential backoff: ``backoff``,
    ``2 × backoff``, … capped at ``max_backoff``, with jitter. A ``Retry-After`` longer than
    ``max_retry_after`` is not waited for: the error is raised at once, with its ``retry_after`` set.
    ``RetryPolicy(max_attempts=1)`` never retries.

    Requests that failed to reach the server (connection refused, timeout) are not retried: the error is
    raised with ``code="BACKEND_UNAVAILABLE"``.
    """

    max_attempts: int = 4
    backoff: float = 0.5
    max_backoff: float = 8.0
    max_retry_after: float = 60.0
    statuses: frozenset[int] = field(default_factory=lambda: frozenset({429, 503}))
    jitter: bool = True

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if self.backoff < 0 or self.max_backoff < 0 or self.max_retry_after < 0:
            raise ValueError("backoff, max_backoff and max_retry_after must not be negative")

    def delay(self, attempt: int, status: int, retry_after: float | None) -> float | None:
        """Seconds to wait before try ``attempt + 1``, or None to give up and raise.

        ``attempt`` counts from 1 (the try that just got ``status``).
        """
        if status not in self.statuses or attempt >= self.max_attempts:
            return None
        if retry_after is not None:
            return retry_after if retry_after <= self.max_retry_after else None
        wait = min(self.max_backoff, self.backoff * 2.0 ** (attempt - 1))
        return wait * random.uniform(0.5, 1.0) if self.jitter else wait


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """A ``Retry-After`` header in seconds: delay-seconds, or an HTTP date; None when absent or unreadable."""
    if value is None:
        return None
    value = value.strip()
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when is None:
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    if seconds != seconds:  # NaN
        return None
    return max(0.0, seconds)
