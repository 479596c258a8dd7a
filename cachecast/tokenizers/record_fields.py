"""The fields of a log record's wrapper, read and checked (see ``records`` for the shape):
its body, timestamp, scope, request id, provider, output length, whether its prompt is
complete, and its request-level caching controls. Each bad field raises
:class:`RecordFieldError` naming it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cachecast.core.errors import RecordFieldError
from cachecast.core.identity import hashed
from cachecast.core.limits import check_tokens
from cachecast.logs.canonical import NOTED_SERVICE_TIERS, optional_str, response_tier
from cachecast.logs.http.response_usage import response_time
from cachecast.logs.jsonl import response_alone
from cachecast.logs.providers import normalize_provider_name
from cachecast.logs.sanitize import epoch_seconds
from cachecast.tokenizers.render import Rendered
from cachecast.tokenizers.types import NO_CONTROLS, CacheControls, CacheCreation, ObservedUsage

SCOPE_FIELDS = (
    "org",
    "organization",
    "project",
    "api_key",
    "prompt_cache_key",
    "cache_salt",
    "user",
)
WRAPPER_KEYS = ("request", "body")


def wrapped_body(record: dict[str, Any]) -> dict[str, Any]:
    """The request body of a wrapper record (``request``, or ``body`` in OpenAI batch files),
    or the record itself where it is a bare body."""
    for key in WRAPPER_KEYS:
        if key in record:
            if not isinstance(record[key], dict):
                alone = response_alone(record)
                if alone is not None:
                    raise RecordFieldError(key, alone)
                raise RecordFieldError(key, f"expected an object, got {type(record[key]).__name__}")
            body: dict[str, Any] = record[key]
            return body
    return record


def cache_controls(
    record: dict[str, Any], rendered: Rendered, implicit: int | None
) -> CacheControls:
    """The request-level caching controls of a record (see ``CacheControls``)."""
    cached = optional_str(record, "cached_content")
    creates = cache_creation(record)
    carries = carried_reply_label(record)
    built_in = built_in_tools(rendered.chat_tools)
    if (
        implicit is None
        and rendered.implicit_breakpoint
        and rendered.cache_ttl is None
        and cached is None
        and creates is None
        and carries is None
        and not built_in
    ):
        return NO_CONTROLS
    return CacheControls(
        implicit_breakpoint=rendered.implicit_breakpoint,
        implicit_offset=implicit,
        ttl=rendered.cache_ttl,
        cached_content=cached,
        creates=creates,
        carries_reply=carries,
        built_in_tools=built_in,
    )


# Tool types a caller defines itself; any other ``type`` names a tool the provider defines.
_CALLER_TOOL_TYPES = ("function", "custom")


def built_in_tools(tools: list[Any] | None) -> tuple[str, ...]:
    """The types of the provider-defined tools among ``tools`` (OpenAI's hosted
    ``web_search``, Anthropic's ``web_search_20250305``...), in order, each once."""
    found: list[str] = []
    for tool in tools or ():
        kind = tool.get("type") if isinstance(tool, dict) else None
        if isinstance(kind, str) and kind not in _CALLER_TOOL_TYPES and kind not in found:
            found.append(kind[:64])
    return tuple(found)


def carried_reply_label(record: dict[str, Any]) -> str | None:
    """The canonical ``carries_reply`` key (the index of the Chat Completions message that
    carries the previous request's reply verbatim) as that message's segment label."""
    value = record.get("carries_reply")
    if value is None:
        return None
    if type(value) is not int or value < 0:
        raise RecordFieldError("carries_reply", "expected a message index (an integer >= 0)")
    return f"messages[{value}]"


def cache_creation(record: dict[str, Any]) -> CacheCreation | None:
    """The canonical ``cache_creation`` key: this record creates a named cache object."""
    value = record.get("cache_creation")
    if value is None:
        return None
    if not isinstance(value, dict):
        raise RecordFieldError("cache_creation", "expected an object")
    name = value.get("name")
    lifetime = value.get("lifetime_seconds")
    if not isinstance(name, str) or not name:
        raise RecordFieldError("cache_creation.name", "expected the cache's name")
    if not isinstance(lifetime, int) or isinstance(lifetime, bool) or lifetime < 0:
        raise RecordFieldError("cache_creation.lifetime_seconds", "expected whole seconds >= 0")
    ttl = value.get("ttl")
    if ttl is not None and not isinstance(ttl, str):
        raise RecordFieldError("cache_creation.ttl", "expected a TTL name such as '1h'")
    return CacheCreation(name, lifetime, ttl, value.get("deleted") is True)


def count_field(record: dict[str, Any], key: str) -> int:
    if key not in record:
        raise RecordFieldError(key, "missing")
    value = record[key]
    if not isinstance(value, int) or isinstance(value, bool):
        raise RecordFieldError(key, f"expected an integer, got {value!r}")
    if value < 0:
        raise RecordFieldError(key, f"negative length {value}")
    check_tokens(value, key)
    return value


def timestamp_of(record: dict[str, Any], body: dict[str, Any]) -> float | None:
    """The record's own timestamp; else the creation time its recorded response states
    (OpenAI's ``created`` / Responses ``created_at``, epoch seconds; read as the recorded-HTTP
    readers read it, ``logs.http.response_time``), so that a ``{request, response}`` pair
    kept without a time is priced on the day it was served, not as of 1970
    (docs/log-formats.md, "Canonical records"); else None (the previous record's time)."""
    raw = record.get("timestamp", record.get("created_at", body.get("timestamp")))
    if raw is not None:
        return epoch_seconds(raw, "timestamp")
    response = record.get("response")
    if isinstance(response, dict) and isinstance(response.get("body"), dict):
        response = response["body"]  # a batch output line's shape
    return response_time(response)


def scope_of(record: dict[str, Any], body: dict[str, Any]) -> str:
    explicit = record.get("scope")
    if explicit is not None:
        if isinstance(explicit, bool) or not isinstance(explicit, str | int):
            raise RecordFieldError("scope", f"expected a string, got {type(explicit).__name__}")
        return str(explicit)
    pairs = []
    for key in SCOPE_FIELDS:
        value = record.get(key, body.get(key))
        if value is not None:
            # An identity (an API key, an organization, a user) is kept as its keyed hash
            # only: scopes stay apart, and no output ever carries the value (core.identity).
            pairs.append(f"{key}={hashed(str(value))}")
    return ";".join(pairs) if pairs else "default"


def request_id_of(record: dict[str, Any], source: str, line: int) -> str:
    for key in ("request_id", "id", "custom_id"):
        value = record.get(key)
        if isinstance(value, str | int) and not isinstance(value, bool):
            return str(value)
    return f"{Path(source).name}:{line}"


def served_model(record: dict[str, Any]) -> str | None:
    """The model the record's response says served it (``response.model``, or
    ``response.body.model`` in a batch output line's shape), for a record whose wrapper and
    body name none: a test fixture's ``{request, response}`` pair (docs/log-formats.md,
    "Formats", ``cachecast``)."""
    response = record.get("response")
    if not isinstance(response, dict):
        return None
    model = response.get("model")
    if model is None and isinstance(response.get("body"), dict):
        model = response["body"].get("model")
    return model if isinstance(model, str) and model.strip() else None


def service_tier_of(record: dict[str, Any]) -> str | None:
    """The service tier the record was billed under where the reports note it
    (docs/log-formats.md, "Canonical records"): the wrapper's ``service_tier`` (a format
    adapter's, or a hand-written line's), else the one its ``response`` (or a batch output
    line's ``response.body``) reports; standard tiers (``default``, ``standard``) are none."""
    tier = optional_str(record, "service_tier")
    if tier is not None:
        return tier.lower() if tier.lower() in NOTED_SERVICE_TIERS else None
    response = record.get("response")
    if isinstance(response, dict) and isinstance(response.get("body"), dict):
        return response_tier(response) or response_tier(response["body"])
    return response_tier(response)


def provider_of(record: dict[str, Any]) -> str | None:
    name = optional_str(record, "provider")
    return None if name is None else normalize_provider_name(name)


def prompt_complete(record: dict[str, Any]) -> bool:
    value = record.get("prompt_complete", True)
    if value is not True and value is not False:
        raise RecordFieldError("prompt_complete", f"expected true or false, got {value!r}")
    return value


def output_tokens(record: dict[str, Any], observed: ObservedUsage | None) -> int:
    if "output_tokens" in record:
        return count_field(record, "output_tokens")
    if observed is not None and observed.output_tokens is not None:
        return observed.output_tokens
    return 0
