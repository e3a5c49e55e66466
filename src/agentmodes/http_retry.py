"""When and how long to retry a request to an OpenAI-compatible server.

The chat backend (llm/openai_compat.py) and the embeddings client (knowledge/embedders.py)
talk to the same kinds of servers, so they share one policy: which statuses are transient,
how to read Retry-After, and exponential backoff with full jitter (spreads the retries of
many clients) where Retry-After is a floor, not a hint.
"""

from __future__ import annotations

import email.utils
import random
import time
from typing import Optional

RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


def parse_retry_after(value: Optional[str]) -> Optional[float]:
    """Retry-After is either seconds or an HTTP date; None when absent or unreadable."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def backoff_delay(attempt: int, retry_after: Optional[float] = None, *, base: float = 0.5,
                  cap: float = 20.0, max_retry_after: float = 60.0) -> float:
    """Seconds to wait before retry number `attempt` (1 for the first retry)."""
    delay = random.uniform(0.5, 1.0) * min(cap, base * 2 ** (attempt - 1))
    if retry_after is not None:
        delay = max(delay, min(retry_after, max_retry_after))
    return delay
