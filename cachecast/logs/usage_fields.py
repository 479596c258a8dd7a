"""The field readers of usage objects (``cachecast.logs.usage``), and what a request says
about the writes its usage reports: the TTL it asked for (docs/log-formats.md, "Requested
TTL"). Split from ``usage`` to keep each module small."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from decimal import Decimal, InvalidOperation
from typing import Any

from cachecast.core.errors import RecordFieldError
from cachecast.core.limits import check_tokens
from cachecast.logs.sanitize import shown
from cachecast.logs.types import ObservedUsage

_SPLIT_KEYS = ("cache_creation", "cacheDetails", "cache_creation_token_details")


def splits_writes(usage: Mapping[str, Any]) -> bool:
    details = usage.get("prompt_tokens_details")
    nested = details if isinstance(details, dict) else {}
    return any(usage.get(k) is not None or nested.get(k) is not None for k in _SPLIT_KEYS)


def with_write_ttl(observed: ObservedUsage, ttl: str) -> ObservedUsage:
    iterations = tuple(with_write_ttl(part, ttl) for part in observed.iterations)
    written = observed.cache_write_tokens
    if not written:
        return replace(observed, iterations=iterations)
    return replace(observed, cache_write_by_ttl={ttl: written}, iterations=iterations)


def requested_ttl(body: Mapping[str, Any], inherited: frozenset[str] = frozenset()) -> str | None:
    """The TTL a request asked for where every cache mark asks for the same one: Anthropic's
    ``cache_control: {"type": "ephemeral", "ttl": "1h"}`` (on blocks, tools, or at the top:
    automatic caching) and Bedrock's ``cachePoint: {"type": "default", "ttl": "1h"}``; a
    mark without ``ttl`` is the default ``5m``. None where the request marks nothing or mixes
    TTLs (the response's split, where it gives one, says the rest). ``inherited``: the TTLs
    of marks in items the body takes over from conversation state already looked at (a
    Responses chain), which are not walked again."""
    found = set(inherited) | ttl_marks(body)
    return found.pop() if len(found) == 1 else None


def ttl_marks(value: Any) -> frozenset[str]:
    """The TTLs of the cache marks anywhere in ``value`` (see :func:`requested_ttl`)."""
    found: set[str] = set()
    pending: list[Any] = [value]
    visited = 0
    while pending and visited < MAX_TTL_WALK:
        value = pending.pop()
        visited += 1
        if isinstance(value, dict):
            for key, item in value.items():
                if key in ("cache_control", "cachePoint") and isinstance(item, dict):
                    ttl = item.get("ttl", "5m")
                    found.add(ttl if isinstance(ttl, str) else "5m")
                elif isinstance(item, dict | list):
                    pending.append(item)
        elif isinstance(value, list):
            pending.extend(item for item in value if isinstance(item, dict | list))
    return frozenset(found)


MAX_TTL_WALK = 100_000  # containers looked at for cache marks (a body is bounded before)


def count_value(value: Any, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RecordFieldError(path, f"expected a non-negative integer, got {shown(value)}")
    if isinstance(value, float) and (not math.isfinite(value) or not value.is_integer()):
        raise RecordFieldError(path, f"expected a non-negative integer, got {shown(value)}")
    if value < 0:
        raise RecordFieldError(path, f"expected a non-negative integer, got {shown(value)}")
    # Every count here is a token count the record claims: bounded before anything is sized
    # by it (a claimed 1e40 must not become 1e40 of anything; docs/limits.md).
    check_tokens(value, path)
    return int(value)


def count_at(usage: Mapping[str, Any], key: str, path: str) -> int | None:
    value = usage.get(key)
    if value is None:
        return None
    return count_value(value, f"{path}.{key}")


def object_at(usage: Mapping[str, Any], key: str, path: str) -> Mapping[str, Any]:
    value = usage.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise RecordFieldError(f"{path}.{key}", f"expected an object, got {type(value).__name__}")
    return value


def total_of(*values: int | None) -> int | None:
    present = [value for value in values if value is not None]
    return sum(present) if present else None


def amount(value: Any, path: str) -> Decimal | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise RecordFieldError(path, f"expected a number, got {value!r}")
    try:
        # str() of a float is its shortest round-trip text, so 0.0012 stays 0.0012.
        cost = Decimal(str(value))
    except InvalidOperation:
        raise RecordFieldError(path, f"expected a number, got {value!r}") from None
    if not cost.is_finite() or cost < 0:
        raise RecordFieldError(path, f"expected a non-negative amount, got {value!r}")
    return cost
