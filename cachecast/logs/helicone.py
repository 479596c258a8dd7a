"""Helicone exports (``npx @helicone/export`` as JSON lines or JSON, or the
``/v1/request/query-clickhouse`` API): one ``HeliconeRequest`` per record with
``request_id``, ``request_created_at``, ``request_body`` (the provider request as sent),
``response_body`` (the provider's response), ``response_status``, ``provider``, ``model``,
``target_url`` and Helicone's own token columns.

Usage is the provider's own ``response_body.usage`` (``usageMetadata`` for Gemini), read by
the provider's convention. Helicone's columns (``prompt_tokens``, ``prompt_cache_read_tokens``,
``prompt_cache_write_tokens``, ``completion_tokens``) are used only where the response body
has no usage and no cache column is set: whether Helicone's ``prompt_tokens`` includes the
cache columns is not documented, so a record that needs it keeps no observed usage and is
counted in ``skipped`` (with the reason) rather than guessed. ``cost`` is Helicone's
price-table estimate, not an observed cost. Responses served from Helicone's cache
(``cache_reference_id`` set) and non-2xx responses were not billed by the provider.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from cachecast.core.errors import RecordFieldError
from cachecast.logs.canonical import iso_seconds, make_record, require_dict, response_tier
from cachecast.logs.http.endpoints import model_endpoint
from cachecast.logs.messages import maybe_json
from cachecast.logs.providers import resolve_provider
from cachecast.logs.stream import Item, LogStream, each_record
from cachecast.logs.types import ObservedUsage
from cachecast.logs.usage import normalize_usage

NO_CACHE_REFERENCE = "00000000-0000-0000-0000-000000000000"


def fits(record: Any) -> bool:
    if isinstance(record, list):
        return bool(record) and all(fits(r) for r in record[:8])
    return (
        isinstance(record, dict)
        and "request_id" in record
        and "request_body" in record
        and ("response_body" in record or "provider" in record)
    )


def read(stream: LogStream) -> Iterator[Item]:
    def unwrap(document: Any) -> Any:
        if isinstance(document, dict) and isinstance(document.get("data"), list):
            return document["data"]  # the query API's {"data": [...], "error": null}
        return document

    return each_record(stream, lambda line, record: _request(stream, line, record), unwrap)


def _request(stream: LogStream, line: int, record: Any) -> dict[str, Any] | None:
    record = require_dict(record, "<record>")
    status = record.get("response_status")
    if isinstance(status, int | float) and not 200 <= status < 300:
        stream.skip(f"HTTP {int(status)} response (not billed)")
        return None
    reference = record.get("cache_reference_id")
    if isinstance(reference, str) and reference and reference != NO_CACHE_REFERENCE:
        stream.skip("served from Helicone's response cache (no provider call)")
        return None
    body = maybe_json(record.get("request_body"))
    if not isinstance(body, dict):
        raise RecordFieldError("request_body", "expected the provider request (a JSON object)")
    response = maybe_json(record.get("response_body"))
    provider = record.get("provider")
    model = record.get("model") or record.get("request_model") or body.get("model")
    url = record.get("target_url") or record.get("request_path") or ""
    endpoint = None
    if isinstance(url, str) and url.startswith("http"):
        endpoint = model_endpoint("POST", url)
    provider, model = resolve_provider(
        provider if isinstance(provider, str) else (endpoint.provider if endpoint else None),
        model if isinstance(model, str) else None,
    )
    observed = _usage(stream, record, response, provider, endpoint.api if endpoint else None)
    created = record.get("request_created_at")
    properties = maybe_json(record.get("request_properties"))
    session = None
    if isinstance(properties, dict):
        session = properties.get("Helicone-Session-Id") or properties.get("helicone-session-id")
    return make_record(
        request=body,
        model=model,
        provider=provider,
        timestamp=None if created is None else iso_seconds(created, "request_created_at"),
        request_id=record.get("request_id") if isinstance(record.get("request_id"), str) else None,
        session=session if isinstance(session, str) else None,
        observed=observed,
        service_tier=response_tier(response),
    )


def _usage(
    stream: LogStream, record: dict[str, Any], response: Any, provider: str | None, api: str | None
) -> ObservedUsage | None:
    if isinstance(response, dict):
        for key in ("usage", "usageMetadata"):
            usage = response.get(key)
            if isinstance(usage, dict) and usage:
                anthropic = provider == "anthropic" or api == "anthropic"
                return normalize_usage(
                    usage, api="anthropic" if anthropic else None, path=f"response_body.{key}"
                )
    read = record.get("prompt_cache_read_tokens") or 0
    written = record.get("prompt_cache_write_tokens") or 0
    if record.get("prompt_tokens") is None and record.get("completion_tokens") is None:
        return None
    if read or written:
        stream.skip(
            "usage not taken: the response body has none and whether Helicone's prompt_tokens "
            "includes its cache columns is undocumented"
        )
        return None
    counts: dict[str, Any] = {
        "prompt_tokens": record.get("prompt_tokens"),
        "completion_tokens": record.get("completion_tokens"),
    }
    if record.get("prompt_cache_read_tokens") is not None:
        # The column states a read of 0 (a read above it returned above): an observed 0,
        # not a read left unreported (docs/log-formats.md, "Absent cache reads").
        counts["prompt_tokens_details"] = {"cached_tokens": 0}
    return normalize_usage(counts, convention="openai-chat", path="<record>")
