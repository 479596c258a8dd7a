"""Recorded HTTP exchanges (VCR cassettes, HAR files) -> canonical records.

Only calls to model endpoints are requests; everything else in a recording (auth, file
uploads, listing models, telemetry) is counted in ``skipped``. The endpoints:

============================  ===================================================  =========
endpoint                      path                                                 body read
============================  ===================================================  =========
OpenAI Chat Completions       ``.../chat/completions`` (OpenAI, Azure, gateways)   chat
OpenAI Responses              ``.../responses``                                    responses
Anthropic Messages            ``/v1/messages``                                     anthropic
Bedrock Converse              ``/model/{id}/converse``, ``converse-stream``        bedrock
Bedrock InvokeModel           ``/model/{id}/invoke``, ``invoke-with-response-stream`` by body
Gemini generateContent        ``.../models/{model}:generateContent`` (and stream)  gemini
Gemini cachedContents         ``POST .../cachedContents``                          (cache)
============================  ===================================================  =========

The provider comes from the host (api.openai.com, *.openai.azure.com, api.anthropic.com,
bedrock-runtime.*.amazonaws.com, generativelanguage / aiplatform.googleapis.com,
openrouter.ai and other OpenAI-compatible APIs), the model from the body or the URL.
Responses other than 2xx were not billed. Usage comes from the response body, from a
streamed body (server-sent events: Anthropic's ``message_start`` usage updated by
``message_delta``, OpenAI's final chunk with usage, Responses' ``response.completed``,
Gemini's last chunk; Bedrock's binary event stream), or from Bedrock's
``X-Amzn-Bedrock-*-Token-Count`` headers.

Conversation state the API keeps is followed within the recording: a Responses request
with ``previous_response_id`` gets the earlier input and output in front of its own; a
Gemini request naming ``cachedContent`` created earlier in the recording gets the cached
system instruction, tools and contents in front, with a cache breakpoint at their end (the
``cache_control`` mark the renderer reads on a Gemini content). A reference to state the
recording does not hold makes the request ``prompt_complete`` false, and so does a stored
request body whose length differs from the ``Content-Length`` the request was sent with (a
recording filter replaced it: the text in the file is not the prompt the provider counted).
"""

from __future__ import annotations

import base64
import binascii
import gzip
import struct
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import unquote, urlsplit

import orjson

from cachecast.core.errors import RecordFieldError
from cachecast.logs.canonical import make_record
from cachecast.logs.errors import LogError
from cachecast.logs.stream import Item, LogStream
from cachecast.logs.types import ObservedUsage
from cachecast.logs.usage import normalize_usage

_HOST_PROVIDERS = (
    ("api.openai.com", "openai"),
    (".openai.azure.com", "azure"),
    (".cognitiveservices.azure.com", "azure"),
    (".services.ai.azure.com", "azure"),
    ("api.anthropic.com", "anthropic"),
    ("bedrock-runtime.", "bedrock"),
    ("generativelanguage.googleapis.com", "google"),
    ("aiplatform.googleapis.com", "google"),
    ("openrouter.ai", "openrouter"),
    ("api.deepseek.com", "deepseek"),
    ("api.x.ai", "xai"),
    ("api.moonshot.ai", "moonshot"),
    ("api.moonshot.cn", "moonshot"),
    ("dashscope", "alibaba"),
    ("api.mistral.ai", "mistral"),
    ("api.groq.com", "groq"),
)
BEDROCK_ACTIONS = {
    "converse": "converse",
    "converse-stream": "converse",
    "invoke": "invoke",
    "invoke-with-response-stream": "invoke",
}


@dataclass(slots=True)
class Exchange:
    """One recorded request and its response; ``where`` prefixes field paths."""

    line: int
    where: str
    method: str
    url: str
    request_headers: dict[str, str]
    request_body: Any  # bytes, str, an already parsed value, or None
    status: int | None
    response_headers: dict[str, str]
    response_body: Any
    timestamp: float | None = None


@dataclass(slots=True)
class Endpoint:
    api: str  # chat, responses, anthropic, bedrock-converse, bedrock-invoke, gemini, gemini-cache
    provider: str | None
    model: str | None  # from the URL where it names one


@dataclass(slots=True)
class _State:
    """What the API keeps between calls, as far as the recording shows it."""

    responses: dict[str, list[Any]] = field(default_factory=dict)  # response id -> items
    caches: dict[str, tuple[dict[str, Any], str | None]] = field(default_factory=dict)
    # cachedContents name -> (created, lifetime seconds, deleted before its TTL ran out)
    lifetimes: dict[str, tuple[float | None, int, bool]] = field(default_factory=dict)


GEMINI_DEFAULT_TTL_SECONDS = 3600  # "If not set, the TTL defaults to 1 hour" (Gemini docs)


def classify(method: str, url: str) -> Endpoint | None:
    """The model endpoint a request went to, or None for any other call."""
    if method.upper() != "POST":
        return None
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    path = unquote(parts.path)
    provider = next((name for pattern, name in _HOST_PROVIDERS if pattern in host), None)
    if "bedrock-runtime" in host or ("/model/" in path and provider == "bedrock"):
        segments = path.split("/")
        if len(segments) >= 4 and segments[-3] == "model" and segments[-1] in BEDROCK_ACTIONS:
            kind = BEDROCK_ACTIONS[segments[-1]]
            return Endpoint(f"bedrock-{kind}", "bedrock", segments[-2])
        return None
    if ":generateContent" in path or ":streamGenerateContent" in path:
        model = path.rsplit("/models/", 1)[-1].split(":", 1)[0] if "/models/" in path else None
        return Endpoint("gemini", provider or "google", model)
    if path.rstrip("/").endswith("/cachedContents"):
        return Endpoint("gemini-cache", provider or "google", None)
    if path.endswith("/chat/completions"):
        model = None
        if "/openai/deployments/" in path:  # Azure: the deployment stands for the model
            model = path.split("/openai/deployments/", 1)[1].split("/", 1)[0]
        return Endpoint("chat", provider, model)
    if path.endswith("/responses"):
        return Endpoint("responses", provider, None)
    if path.endswith("/v1/messages") or path == "/messages":
        return Endpoint("anthropic", provider or "anthropic", None)
    return None


def read_exchanges(stream: LogStream, exchanges: Iterable[Exchange | LogError]) -> Iterator[Item]:
    """The model calls among ``exchanges`` as records (an unreadable exchange comes as its
    LogError, in order). Recordings are read whole, so the lifetime of every Gemini cache
    (its TTL, updates and deletion later in the recording) is known before its creation
    is handed on."""
    state = _State()
    exchanges = list(exchanges)
    state.lifetimes = _cache_lifetimes(exchanges)
    for exchange in exchanges:
        if isinstance(exchange, LogError):
            yield exchange.line, exchange
            continue
        endpoint = classify(exchange.method, exchange.url)
        if endpoint is None:
            stream.skip("recorded call that is not a model endpoint")
            continue
        try:
            record = _record(stream, exchange, endpoint, state)
        except RecordFieldError as exc:
            field_path = (
                exc.field
                if exc.field.startswith(exchange.where)
                else f"{exchange.where}.{exc.field}"
            )
            yield exchange.line, stream.error(exchange.line, field_path, exc.reason)
            continue
        if record is not None:
            yield exchange.line, record


def _record(
    stream: LogStream, exchange: Exchange, endpoint: Endpoint, state: _State
) -> dict[str, Any] | None:
    body = decode_json(exchange.request_body, exchange.request_headers, "request.body")
    if not isinstance(body, dict):
        raise RecordFieldError("request.body", "expected a JSON object")
    status = exchange.status
    if status is not None and not 200 <= status < 300:
        stream.skip(f"HTTP {status} response (not billed)")
        return None
    response = decode_body(exchange.response_body, exchange.response_headers, "response.body")
    if endpoint.api == "gemini-cache":
        return _cache_creation(exchange, body, response, state)
    # A recording filter may replace the body it stores (secrets, long prompts): the stored
    # body is then not what was sent, whose length the request's Content-Length still gives.
    complete = not _body_rewritten(exchange)
    cached_content: str | None = None
    model = body.get("model") if isinstance(body.get("model"), str) else endpoint.model
    if endpoint.api == "responses":
        body, chained = _chain_response(body, state)
        complete = complete and chained
    elif endpoint.api == "gemini" and isinstance(body.get("cachedContent"), str):
        cached_content = body["cachedContent"]
        body, merged = _with_cache(body, state)
        complete = complete and merged
    final = _final_response(response, endpoint.api)
    if model is None and isinstance(final, dict) and isinstance(final.get("model"), str):
        model = final["model"]
    observed = _observed(endpoint, final, response, exchange.response_headers)
    if endpoint.api == "responses" and isinstance(final, dict):
        _remember_response(body, final, state)
    request_id = _request_id(exchange.response_headers, final)
    record = make_record(
        request=body,
        model=model,
        provider=endpoint.provider,
        timestamp=exchange.timestamp,
        request_id=request_id,
        observed=observed,
        prompt_complete=complete,
    )
    if cached_content is not None:
        record["cached_content"] = cached_content
    return record


# --- bodies ------------------------------------------------------------------------------


def _body_rewritten(exchange: Exchange) -> bool:
    """Whether the stored request body differs in length from the Content-Length sent."""
    declared = exchange.request_headers.get("content-length", "").strip()
    raw = exchange.request_body
    if not declared.isdigit() or not isinstance(raw, str | bytes | bytearray):
        return False
    if isinstance(raw, str):
        if exchange.request_headers.get("content-encoding"):
            return False  # the stored text is the decoded body, the length the encoded one
        raw = raw.encode("utf-8")
    return len(raw) != int(declared)


def decode_bytes(raw: Any, headers: dict[str, str], path: str) -> Any:
    """Body bytes un-gzipped (by header or magic number) and decoded as UTF-8 text; a
    value already parsed (a cassette's ``parsed_body``) or None passes through."""
    if raw is None or isinstance(raw, dict | list):
        return raw
    if isinstance(raw, str):
        return raw
    if not isinstance(raw, bytes | bytearray):
        raise RecordFieldError(path, f"expected text or bytes, got {type(raw).__name__}")
    data = bytes(raw)
    encoding = headers.get("content-encoding", "").lower()
    try:
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        elif encoding == "deflate":
            data = zlib.decompress(data)
        elif encoding == "br":
            raise RecordFieldError(path, "brotli-compressed body: record the cassette decompressed")
    except (OSError, zlib.error, EOFError) as exc:
        raise RecordFieldError(path, f"cannot decompress the body: {exc}") from None
    if _is_event_stream(headers):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data  # binary (a Bedrock event stream recorded without its content type)


def decode_json(raw: Any, headers: dict[str, str], path: str) -> Any:
    value = decode_bytes(raw, headers, path)
    if value is None:
        raise RecordFieldError(path, "missing")
    if isinstance(value, dict | list):
        return value
    if isinstance(value, bytes):
        raise RecordFieldError(path, "binary, not JSON")
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError as exc:
        raise RecordFieldError(path, f"not JSON: {exc}") from None


def decode_body(raw: Any, headers: dict[str, str], path: str) -> Any:
    """A response body as JSON, a list of streamed events, or None when it is empty."""
    value = decode_bytes(raw, headers, path)
    if value is None or isinstance(value, dict | list):
        return value
    if isinstance(value, bytes):
        return event_stream(value, path)
    stripped = value.lstrip()
    if not stripped:
        return None
    if stripped.startswith(("event:", "data:", ":")) or "text/event-stream" in headers.get(
        "content-type", ""
    ):
        return server_sent_events(value)
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError as exc:
        raise RecordFieldError(path, f"not JSON nor server-sent events: {exc}") from None


def _is_event_stream(headers: dict[str, str]) -> bool:
    return "vnd.amazon.eventstream" in headers.get("content-type", "")


def server_sent_events(text: str) -> list[dict[str, Any]]:
    """The JSON data of each server-sent event, with its ``event`` name under ``_event``."""
    events: list[dict[str, Any]] = []
    name: str | None = None
    data: list[str] = []

    def flush() -> None:
        nonlocal name, data
        if data:
            payload = "\n".join(data)
            if payload.strip() != "[DONE]":
                try:
                    value = orjson.loads(payload)
                except orjson.JSONDecodeError:
                    value = None
                if isinstance(value, dict):
                    if name is not None:
                        value = {**value, "_event": name}
                    events.append(value)
                elif isinstance(value, list):  # Gemini's streamGenerateContent without SSE
                    events.extend(v for v in value if isinstance(v, dict))
        name, data = None, []

    for raw_line in text.splitlines():
        line = raw_line.rstrip("\r")
        if not line:
            flush()
        elif line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].lstrip())
        # (comments and other fields carry nothing usage needs)
    flush()
    return events


def event_stream(data: bytes, path: str) -> list[dict[str, Any]]:
    """AWS event-stream messages (Bedrock's streaming responses) as their JSON payloads;
    InvokeModel's ``{"bytes": base64}`` chunks are opened to the model's own event."""
    events: list[dict[str, Any]] = []
    offset = 0
    while offset + 12 <= len(data):
        total, headers_length = struct.unpack_from(">II", data, offset)
        if total < 16 or offset + total > len(data):
            raise RecordFieldError(
                path, f"event-stream message at byte {offset} is cut or malformed"
            )
        message = data[offset : offset + total]
        if (
            zlib.crc32(message[:8]) != struct.unpack_from(">I", message, 8)[0]
            or zlib.crc32(message[:-4]) != struct.unpack_from(">I", message, total - 4)[0]
        ):
            raise RecordFieldError(
                path, f"event-stream message at byte {offset}: checksum mismatch"
            )
        headers = _event_headers(message[12 : 12 + headers_length])
        payload = message[12 + headers_length : -4]
        offset += total
        try:
            value = orjson.loads(payload) if payload else {}
        except orjson.JSONDecodeError:
            continue
        if not isinstance(value, dict):
            continue
        if isinstance(value.get("bytes"), str):
            try:
                inner = orjson.loads(base64.b64decode(value["bytes"]))
            except (binascii.Error, orjson.JSONDecodeError):
                raise RecordFieldError(
                    path, "event-stream chunk: bytes are not base64 JSON"
                ) from None
            if isinstance(inner, dict):
                value = inner
        event = headers.get(":event-type")
        if event is not None and "type" not in value:
            value = {**value, "_event": event}
        events.append(value)
    return events


def _event_headers(raw: bytes) -> dict[str, str]:
    headers: dict[str, str] = {}
    offset = 0
    sizes = {2: 1, 3: 2, 4: 4, 5: 8, 8: 8, 9: 16}
    while offset < len(raw):
        name_length = raw[offset]
        name = raw[offset + 1 : offset + 1 + name_length].decode("utf-8", "replace")
        offset += 1 + name_length
        kind = raw[offset]
        offset += 1
        if kind in (0, 1):
            continue
        if kind in (6, 7):
            (length,) = struct.unpack_from(">H", raw, offset)
            value = raw[offset + 2 : offset + 2 + length]
            offset += 2 + length
            if kind == 7:
                headers[name] = value.decode("utf-8", "replace")
            continue
        offset += sizes.get(kind, 0)
    return headers


# --- usage -------------------------------------------------------------------------------


def _final_response(response: Any, api: str) -> Any:
    """The response object (the last one of a stream where it has one) for its model/id."""
    if isinstance(response, list):
        for event in reversed(response):
            if api == "responses" and isinstance(event.get("response"), dict):
                return event["response"]
            if api in ("anthropic", "bedrock-invoke") and isinstance(event.get("message"), dict):
                return event["message"]
        return response[-1] if response else None
    return response


def _observed(
    endpoint: Endpoint, final: Any, response: Any, headers: dict[str, str]
) -> ObservedUsage | None:
    api = endpoint.api
    usage: dict[str, Any] | None = None
    if isinstance(response, list):
        usage = _streamed_usage(response, api)
    elif isinstance(response, dict):
        key = "usageMetadata" if api == "gemini" else "usage"
        if isinstance(response.get(key), dict):
            usage = response[key]
    if usage:
        convention = {
            "anthropic": "anthropic",
            "bedrock-converse": "bedrock",
            "gemini": "gemini",
        }.get(api)
        if api == "bedrock-invoke" and ("input_tokens" in usage or "output_tokens" in usage):
            convention = "anthropic"
        return normalize_usage(usage, convention=convention, path="response.body.usage")
    return _header_usage(headers)


def _streamed_usage(events: list[dict[str, Any]], api: str) -> dict[str, Any] | None:
    if api in ("anthropic", "bedrock-invoke"):
        merged: dict[str, Any] = {}
        metrics = None
        for event in events:
            kind = event.get("type", event.get("_event"))
            if kind == "message_start" and isinstance(event.get("message"), dict):
                merged.update(event["message"].get("usage") or {})
            elif kind == "message_delta" and isinstance(event.get("usage"), dict):
                merged.update(event["usage"])  # the final output count (and totals, newer)
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
    return None


def _header_usage(headers: dict[str, str]) -> ObservedUsage | None:
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
            if not value.strip().isdigit():
                raise RecordFieldError(
                    f"response.headers.{header}", f"expected a count, got {value!r}"
                )
            usage[key] = int(value)
    if not usage:
        return None
    return normalize_usage(usage, convention="bedrock", path="response.headers")


def _request_id(headers: dict[str, str], final: Any) -> str | None:
    for header in ("x-request-id", "request-id", "x-amzn-requestid", "apim-request-id"):
        if headers.get(header):
            return headers[header]
    if isinstance(final, dict) and isinstance(final.get("id"), str):
        return str(final["id"])
    return None


def http_date(value: str | None) -> float | None:
    """A ``Date`` header (RFC 9110) as epoch seconds, None when absent or unreadable."""
    if not value:
        return None
    try:
        return parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError):
        return None


# --- conversation state the APIs keep --------------------------------------------------------


def _chain_response(body: dict[str, Any], state: _State) -> tuple[dict[str, Any], bool]:
    previous = body.get("previous_response_id")
    if previous is None:
        return body, True
    earlier = state.responses.get(previous) if isinstance(previous, str) else None
    if earlier is None:
        return body, False  # the earlier turns are not in the recording
    current = body.get("input", [])
    items = (
        [{"type": "message", "role": "user", "content": current}]
        if isinstance(current, str)
        else list(current)
    )
    chained = {k: v for k, v in body.items() if k != "previous_response_id"}
    chained["input"] = [*earlier, *items]
    return chained, True


def _remember_response(body: dict[str, Any], final: dict[str, Any], state: _State) -> None:
    response_id = final.get("id")
    output = final.get("output")
    if not isinstance(response_id, str) or not isinstance(output, list):
        return
    current = body.get("input", [])
    items = (
        [{"type": "message", "role": "user", "content": current}]
        if isinstance(current, str)
        else list(current)
    )
    state.responses[response_id] = [*items, *(i for i in output if isinstance(i, dict))]


def ttl_name(ttl: Any) -> str | None:
    """Gemini's ``ttl`` (``"3600s"``) as a TTL option name (``1h``, ``5m``, ``90s``)."""
    if not isinstance(ttl, str) or not ttl.endswith("s"):
        return None
    try:
        seconds = float(ttl[:-1])
    except ValueError:
        return None
    whole = int(seconds)
    if whole != seconds or whole <= 0:
        return f"{ttl}"
    if whole % 3600 == 0:
        return f"{whole // 3600}h"
    if whole % 60 == 0:
        return f"{whole // 60}m"
    return f"{whole}s"


CACHE_KEYS = ("contents", "systemInstruction", "system_instruction", "tools")


def _cache_creation(
    exchange: Exchange, body: dict[str, Any], response: Any, state: _State
) -> dict[str, Any] | None:
    """A ``cachedContents`` creation as a record of its own: its content is its prompt
    (billed at the input price when created), its lifetime what the recording shows."""
    name = response.get("name") if isinstance(response, dict) else None
    if not isinstance(name, str):
        raise RecordFieldError("response.body.name", "a cachedContents creation names no cache")
    cached: dict[str, Any] = {k: body[k] for k in CACHE_KEYS if k in body}
    ttl = ttl_name(body.get("ttl"))
    state.caches[name] = (cached, ttl)
    _, lifetime, deleted = state.lifetimes.get(
        name, (exchange.timestamp, GEMINI_DEFAULT_TTL_SECONDS, False)
    )
    count = None
    usage = response.get("usageMetadata") if isinstance(response, dict) else None
    if isinstance(usage, dict) and isinstance(usage.get("totalTokenCount"), int):
        count = usage["totalTokenCount"]
    model = body.get("model")
    record = make_record(
        request={**cached, "contents": cached.get("contents", [])},
        model=model.removeprefix("models/") if isinstance(model, str) else None,
        provider="google",
        timestamp=exchange.timestamp,
        request_id=name,
        observed=(
            ObservedUsage(input_tokens=count, cache_write_tokens=count, output_tokens=0)
            if count is not None
            else None
        ),
    )
    record["cache_creation"] = {
        "name": name,
        "lifetime_seconds": lifetime,
        "ttl": ttl,
        "deleted": deleted,
    }
    return record


def _seconds(ttl: Any) -> int | None:
    if isinstance(ttl, str) and ttl.endswith("s"):
        try:
            return max(0, round(float(ttl[:-1])))
        except ValueError:
            return None
    return None


def _moment(value: Any) -> float | None:
    """An RFC 3339 ``expireTime`` as epoch seconds."""
    if not isinstance(value, str):
        return None
    from datetime import datetime

    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _cache_lifetimes(
    exchanges: list[Exchange | LogError],
) -> dict[str, tuple[float | None, int, bool]]:
    """Every cache the recording creates: (created, lifetime in seconds, deleted early).

    The lifetime runs from the creation to the expiry its TTL (or ``expireTime``) sets, as
    moved by later updates (``PATCH .../cachedContents/NAME``), or to its deletion
    (``DELETE``) where that comes first; a recording without times keeps the TTL."""
    lifetimes: dict[str, tuple[float | None, int, bool]] = {}
    expiries: dict[str, float | None] = {}
    for exchange in exchanges:
        if isinstance(exchange, LogError) or not _is_success(exchange.status):
            continue
        path = unquote(urlsplit(exchange.url).path).rstrip("/")
        if "/cachedContents" not in path:
            continue
        method = exchange.method.upper()
        now = exchange.timestamp
        try:
            body = decode_json(exchange.request_body, exchange.request_headers, "request.body")
        except RecordFieldError:
            body = {}
        body = body if isinstance(body, dict) else {}
        if method == "POST" and path.endswith("/cachedContents"):
            try:
                response = decode_body(
                    exchange.response_body, exchange.response_headers, "response.body"
                )
            except RecordFieldError:
                continue
            name = response.get("name") if isinstance(response, dict) else None
            if not isinstance(name, str):
                continue
            ttl = _seconds(body.get("ttl"))
            expiry = _moment(body.get("expireTime"))
            if expiry is None and now is not None:
                expiry = now + (ttl if ttl is not None else GEMINI_DEFAULT_TTL_SECONDS)
            lifetime = ttl if ttl is not None else GEMINI_DEFAULT_TTL_SECONDS
            if expiry is not None and now is not None:
                lifetime = max(0, round(expiry - now))
            lifetimes[name] = (now, lifetime, False)
            expiries[name] = expiry
            continue
        name = "cachedContents/" + path.rsplit("/cachedContents/", 1)[-1]
        if name not in lifetimes or "/cachedContents/" not in path:
            continue
        created = lifetimes[name][0]
        if method == "PATCH" and now is not None and created is not None:
            ttl = _seconds(body.get("ttl"))
            expiry = _moment(body.get("expireTime")) or (now + ttl if ttl is not None else None)
            if expiry is not None:
                expiries[name] = expiry
                lifetimes[name] = (created, max(0, round(expiry - created)), False)
        elif method == "DELETE":
            expiry = expiries.get(name)
            if now is not None and created is not None and (expiry is None or now < expiry):
                lifetimes[name] = (created, max(0, round(now - created)), True)
    return lifetimes


def _is_success(status: int | None) -> bool:
    return status is None or 200 <= status < 300


def _with_cache(body: dict[str, Any], state: _State) -> tuple[dict[str, Any], bool]:
    name = body["cachedContent"]
    merged = {k: v for k, v in body.items() if k != "cachedContent"}
    found = state.caches.get(name)
    if found is None:
        return merged, False  # created outside the recording: its content is unknown
    cached, ttl = found
    marker: dict[str, Any] = {"type": "ephemeral"}
    if ttl is not None:
        marker["ttl"] = ttl
    contents = [dict(c) if isinstance(c, dict) else c for c in cached.get("contents", [])]
    for key in ("systemInstruction", "system_instruction", "tools"):
        if key in cached:
            merged[key] = cached[key]
    if contents and isinstance(contents[-1], dict):
        contents[-1]["cache_control"] = marker
    elif isinstance(merged.get("systemInstruction"), dict):
        merged["systemInstruction"] = {**merged["systemInstruction"], "cache_control": marker}
    merged["contents"] = [*contents, *body.get("contents", [])]
    return merged, True
