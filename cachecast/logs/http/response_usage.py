"""A recorded response -> the usage the provider reported, its request id and model.

Usage comes from the response body, from a streamed body (server-sent events: Anthropic's
``message_start`` usage updated by ``message_delta``, OpenAI's final chunk with usage,
Responses' ``response.completed``, Gemini's last chunk, Cohere's ``message-end`` (v2) or
``stream-end`` (v1, a JSON-lines stream), Ollama's final ``done`` object; Bedrock's binary
event stream), or from Bedrock's ``X-Amzn-Bedrock-*-Token-Count`` headers; it is normalized by
``cachecast.logs.usage``. A response body's own creation time dates a request whose
recording kept no Date header (``response_time``).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from cachecast.core.errors import RecordFieldError
from cachecast.logs.http.endpoints import Endpoint
from cachecast.logs.sanitize import int_text
from cachecast.logs.types import ObservedUsage
from cachecast.logs.usage import normalize_usage


def final_response(response: Any, api: str) -> Any:
    """The response object (the last one of a stream where it has one) for its model/id."""
    if isinstance(response, list):
        for event in reversed(response):
            if api == "cohere-v1" and isinstance(event.get("response"), dict):
                return event["response"]  # the stream-end event's whole response
            if api == "responses" and isinstance(event.get("response"), dict):
                return event["response"]
            if api in ("anthropic", "bedrock-invoke") and isinstance(event.get("message"), dict):
                return event["message"]
        return response[-1] if response else None
    return response


def reported_usage(
    endpoint: Endpoint,
    final: Any,
    response: Any,
    headers: dict[str, str],
    write_ttl: str | None = None,
) -> ObservedUsage | None:
    """The usage the response reports; ``write_ttl``: the TTL the request asked for, for
    writes the response does not split by TTL (``cachecast.logs.usage.requested_ttl``)."""
    api = endpoint.api
    usage: dict[str, Any] | None = None
    if api.startswith("ollama-"):
        usage = ollama_usage(final)
        return None if usage is None else normalize_usage(usage, convention="openai-chat")
    if isinstance(response, list):
        usage = _streamed_usage(response, api)
    elif isinstance(response, dict):
        key = {"gemini": "usageMetadata", "cohere-v1": "meta"}.get(api, "usage")
        if isinstance(response.get(key), dict):
            usage = response[key]
        elif api == "bedrock-invoke" and "inputTextTokenCount" in response:
            usage = _titan_usage(response)
        elif api == "bedrock-invoke" and "prompt_token_count" in response:
            usage = _llama_usage(response)
    if usage:
        convention = {
            "anthropic": "anthropic",
            "bedrock-converse": "bedrock",
            "gemini": "gemini",
            "cohere": "cohere",
            "cohere-v1": "cohere",
        }.get(api)
        if api == "bedrock-invoke" and ("input_tokens" in usage or "output_tokens" in usage):
            convention = "anthropic"
        return normalize_usage(
            usage, convention=convention, path="response.body.usage", write_ttl=write_ttl
        )
    return _header_usage(headers, write_ttl)


def is_ollama_final(final: Any) -> bool:
    """Whether ``final`` is Ollama's last response object (``done``: docs/log-formats.md,
    "Recorded HTTP"), the one that carries the counts."""
    return isinstance(final, dict) and isinstance(final.get("done"), bool)


def ollama_usage(final: Any) -> dict[str, Any] | None:
    """Ollama's counts in OpenAI's names: ``prompt_eval_count`` the prompt tokens evaluated,
    ``eval_count`` the tokens generated, and (newer servers) ``prompt_eval_cached_count`` the
    prompt tokens its KV cache held, which are not among the evaluated ones. Without that
    count a cache hit only shows as a smaller or missing ``prompt_eval_count``
    (docs/log-formats.md, "Recorded HTTP"): a missing one is an error naming the field, not
    a prompt of 0 tokens."""
    if not is_ollama_final(final) or not final["done"]:
        return None
    evaluated, cached = final.get("prompt_eval_count"), final.get("prompt_eval_cached_count")
    if type(evaluated) is not int:
        raise RecordFieldError(
            "response.body.prompt_eval_count",
            "missing: Ollama leaves it out when the whole prompt came from its KV cache,"
            " so the prompt's length is not known",
        )
    usage: dict[str, Any] = {"prompt_tokens": evaluated}
    if type(cached) is int:
        usage["prompt_tokens"] = evaluated + cached
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    if type(final.get("eval_count")) is int:
        usage["completion_tokens"] = final["eval_count"]
    return usage


def _titan_usage(response: dict[str, Any]) -> dict[str, Any]:
    """Amazon Titan Text's counts (``inputTextTokenCount``; ``results[].tokenCount``, the
    tokens of each result: AWS's "Amazon Titan Text models" page) in OpenAI's names. Titan
    has no prompt caching, so there is nothing else to read."""
    usage: dict[str, Any] = {"prompt_tokens": response["inputTextTokenCount"]}
    results = response.get("results")
    if isinstance(results, list):
        counts = [item.get("tokenCount") for item in results if isinstance(item, dict)]
        if counts and all(type(count) is int for count in counts):
            usage["completion_tokens"] = sum(counts)
    return usage


def _llama_usage(response: dict[str, Any]) -> dict[str, Any]:
    """Meta Llama's counts on Bedrock (``prompt_token_count``, ``generation_token_count``:
    AWS's "Meta Llama models" page, the InvokeModel response body) in OpenAI's names; no
    prompt caching, nothing else to read."""
    usage: dict[str, Any] = {"prompt_tokens": response["prompt_token_count"]}
    if "generation_token_count" in response:
        usage["completion_tokens"] = response["generation_token_count"]
    return usage


def _split_outdated(merged: dict[str, Any], final: dict[str, Any]) -> bool:
    """Whether the TTL split ``message_start`` gave no longer adds up to the writes the final
    ``message_delta`` reports without a split of its own: a server tool's later sampling
    iterations wrote more (the split was the first iteration's)."""
    split = merged.get("cache_creation")
    total = final.get("cache_creation_input_tokens")
    if "cache_creation" in final or not isinstance(split, dict) or type(total) is not int:
        return False
    parts = [value for value in split.values() if type(value) is int]
    return sum(parts) != total


def _streamed_usage(events: list[dict[str, Any]], api: str) -> dict[str, Any] | None:
    if api in ("anthropic", "bedrock-invoke"):
        merged: dict[str, Any] = {}
        metrics = None
        for event in events:
            kind = event.get("type", event.get("_event"))
            if kind == "message_start" and isinstance(event.get("message"), dict):
                merged.update(event["message"].get("usage") or {})
            elif kind == "message_delta" and isinstance(event.get("usage"), dict):
                final = event["usage"]  # the final output count (and totals, newer)
                if _split_outdated(merged, final):
                    del merged["cache_creation"]
                merged.update(final)
            if isinstance(event.get("amazon-bedrock-invocationMetrics"), dict):
                metrics = event["amazon-bedrock-invocationMetrics"]
        if merged:
            return merged
        if metrics is not None:
            return {
                "inputTokens": metrics.get("inputTokenCount"),
                "outputTokens": metrics.get("outputTokenCount"),
                "cacheReadInputTokens": metrics.get("cacheReadInputTokenCount"),
                "cacheWriteInputTokens": metrics.get("cacheWriteInputTokenCount"),
            }
        return None
    if api == "bedrock-converse":
        for event in reversed(events):
            if isinstance(event.get("usage"), dict) and (
                event.get("_event") == "metadata" or "metrics" in event
            ):
                return dict(event["usage"])
        return None
    if api in ("cohere", "cohere-v1"):
        # v2: the message-end event's delta.usage; v1: the stream-end event's response.meta
        for event in reversed(events):
            kind = event.get("type", event.get("event_type"))
            delta, whole = event.get("delta"), event.get("response")
            if (
                kind == "message-end"
                and isinstance(delta, dict)
                and isinstance(delta.get("usage"), dict)
            ):
                return dict(delta["usage"])
            if (
                kind == "stream-end"
                and isinstance(whole, dict)
                and isinstance(whole.get("meta"), dict)
            ):
                return dict(whole["meta"])
        return None
    if api == "responses":
        for event in reversed(events):
            response = event.get("response")
            if isinstance(response, dict) and isinstance(response.get("usage"), dict):
                return dict(response["usage"])
        return None
    key = "usageMetadata" if api == "gemini" else "usage"
    for event in reversed(events):  # OpenAI's final chunk, Gemini's last chunk
        if isinstance(event.get(key), dict) and event[key]:
            return dict(event[key])
    if api == "chat":
        # Groq's streams carry their usage in the last chunk's ``x_groq.usage`` unless the
        # request asked for OpenAI's usage chunk (docs/log-formats.md, "Formats": streams).
        for event in reversed(events):
            groq = event.get("x_groq")
            if isinstance(groq, dict) and isinstance(groq.get("usage"), dict) and groq["usage"]:
                return dict(groq["usage"])
    return None


def _header_usage(headers: dict[str, str], write_ttl: str | None) -> ObservedUsage | None:
    """Bedrock InvokeModel's token-count headers (input excludes cache reads and writes)."""
    names = {
        "inputTokens": "x-amzn-bedrock-input-token-count",
        "outputTokens": "x-amzn-bedrock-output-token-count",
        "cacheReadInputTokens": "x-amzn-bedrock-cache-read-input-token-count",
        "cacheWriteInputTokens": "x-amzn-bedrock-cache-write-input-token-count",
    }
    usage: dict[str, Any] = {}
    for key, header in names.items():
        value = headers.get(header)
        if value is not None:
            usage[key] = int_text(value, f"response.headers.{header}")
    if not usage:
        return None
    return normalize_usage(
        usage, convention="bedrock", path="response.headers", write_ttl=write_ttl
    )


def response_id(headers: dict[str, str], final: Any) -> str | None:
    for header in ("x-request-id", "request-id", "x-amzn-requestid", "apim-request-id"):
        if headers.get(header):
            return headers[header]
    if isinstance(final, dict) and isinstance(final.get("id"), str):
        return str(final["id"])
    return None


# Response bodies that carry their creation time: OpenAI-style chat completions (``created``,
# epoch seconds: OpenAI, DeepSeek, xAI, Mistral, OpenRouter, Azure), the Responses API
# (``created_at``, epoch seconds) and Vertex AI's ``createTime`` (RFC 3339). A stored
# response without a Date header (go-vcr and pydantic-ai cassettes drop headers) still
# dates its request by them.
_EPOCH_FIELDS = ("created", "created_at")
_EARLIEST = 946_684_800  # 2000-01-01: smaller values are placeholders, not creation times
_LATEST = 32_503_680_000  # 3000-01-01: larger values are milliseconds or garbage


def response_time(final: Any) -> float | None:
    """The creation time the response body states, as epoch seconds; None where it states
    none or a value that is no plausible date."""
    if not isinstance(final, dict):
        return None
    for name in _EPOCH_FIELDS:
        value = final.get(name)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value) if _EARLIEST <= value < _LATEST else None
    stamp = final.get("createTime")
    if isinstance(stamp, str) and len(stamp) <= 64:
        try:
            moment = dt.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        except ValueError:
            return None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=dt.UTC)
        return moment.timestamp()
    return None
