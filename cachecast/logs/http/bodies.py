"""Recorded request and response bodies -> JSON values or lists of streamed events.

Bodies may be gzip-, deflate-, zstd- or brotli-compressed (bounded by
``decoding.decompress``), text, bytes or already parsed; a streamed response is server-sent
events (OpenAI, Anthropic, Gemini) or AWS's binary event stream (Bedrock),
each reduced to the JSON payloads of its events.
"""

from __future__ import annotations

import base64
import binascii
import struct
import zlib
from typing import Any

import orjson

from cachecast.core.errors import RecordFieldError
from cachecast.logs.decoding import decompress


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
    encoding = headers.get("content-encoding", "").strip().lower()
    # The magic number decides for gzip (a cassette may keep the body compressed while its
    # header was scrubbed); other encodings go by the header. Every one is bounded
    # (max_decompressed_bytes) by cachecast.logs.decoding.
    if data[:2] == b"\x1f\x8b":
        data = decompress(data, "gzip", field=path)
    elif encoding in ("deflate", "zstd", "br"):
        data = decompress(data, encoding, field=path)
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
    content_type = headers.get("content-type", "")
    if "stream+json" in content_type or "ndjson" in content_type or "jsonl" in content_type:
        return json_lines(value, path)
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError as exc:
        raise RecordFieldError(path, f"not JSON nor server-sent events: {exc}") from None


def json_lines(text: str, path: str) -> list[dict[str, Any]]:
    """A newline-delimited JSON stream (Cohere v1's ``application/stream+json``) as its
    objects."""
    events: list[dict[str, Any]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise RecordFieldError(path, f"line {number} of the JSON stream: {exc}") from None
        if isinstance(value, dict):
            events.append(value)
    return events


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
