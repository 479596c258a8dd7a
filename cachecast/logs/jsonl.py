"""cachecast's own JSON lines: wrapper records, bare provider bodies, ``{"prompt"}``,
``{"tokens"}`` and Mooncake traces pass through as they are (the reader in
``cachecast.tokenizers.records`` knows them), with no per-line work beyond JSON parsing.

The same records kept as one JSON document (one record pretty-printed, as test suites keep a
``{"request": ..., "response": ...}`` pair, or a JSON list of records) are read too, each
numbered by its position in the document (docs/log-formats.md, "Formats")."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from cachecast.core.errors import RecordFieldError
from cachecast.logs.errors import LogRecordError
from cachecast.logs.stream import (
    READ_BUFFER_BYTES,
    Item,
    LogStream,
    bounded_lines,
    each_record,
    first_line_is_json,
)

# Keys one of which a cachecast record has at its top level (see the records module).
RECORD_KEYS = (
    "request",
    "body",
    "messages",
    "input",
    "instructions",
    "contents",
    "prompt",
    "tokens",
    "hash_ids",
    "input_length",
)


# The keys of a provider's response object beside its ``usage`` (Chat Completions ``choices``,
# Anthropic Messages ``content``, the Gemini API's ``candidates``, the Responses API's
# ``output``): a record of these alone recorded the answer, not the request.
RESPONSE_KEYS = ("choices", "content", "candidates", "output")
NOTHING_TO_RECONCILE = "its prompt is not recorded, so there is nothing to reconcile"


def response_alone(record: dict[str, Any]) -> str | None:
    """Why ``record`` is a provider's response kept without its request (test fixtures keep
    replies alone: a bare ``chat.completion`` object, or a recorded HTTP response
    ``{status, headers, body}`` whose body is the response's JSON text), or None where it is
    not one (docs/log-formats.md, "Canonical records")."""
    body = record.get("body")
    if "status" in record and isinstance(body, str) and "request" not in record:
        try:
            reply = orjson.loads(body)
        except orjson.JSONDecodeError:
            return None
        if isinstance(reply, dict) and "usage" in reply:
            return (
                "a recorded HTTP response alone ({status, headers, body} with the response's"
                f" usage, no request): {NOTHING_TO_RECONCILE}"
            )
        return None
    if (
        "usage" in record
        and any(key in record for key in RESPONSE_KEYS)
        and not any(key in record for key in RECORD_KEYS)
    ):
        kind = record.get("object") or record.get("type") or "response"
        return (
            f"a provider's response alone ({kind} object with usage, no request):"
            f" {NOTHING_TO_RECONCILE}"
        )
    return None


def fits(record: dict[str, object]) -> str | None:
    if any(key in record for key in RECORD_KEYS):
        return None
    alone = response_alone(record)
    if alone is not None:
        return alone
    return "no " + "/".join(RECORD_KEYS[:7]) + "... key (a wrapper record or a request body)"


def read(stream: LogStream) -> Iterator[Item]:
    """Counts inline (local counters, stored when the reading ends) rather than through a
    wrapping generator: this is the per-line path of the log reader's benchmark."""
    if stream.preloaded is not None or not first_line_is_json(stream.path):
        return _read_document(stream)
    return read_range(stream, 0, None, 1)


def _one_record(at: int, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise RecordFieldError("<record>", "expected a JSON object (a wrapper record or a body)")
    return value


def _read_document(stream: LogStream) -> Iterator[Item]:
    """The records of a file that is one JSON document: the document itself, or each
    element of a JSON list."""
    records = errors = 0
    try:
        for line, item in each_record(stream, _one_record):
            if isinstance(item, LogRecordError):
                errors += 1
            else:
                records += 1
            yield line, item
    finally:
        stream.records += records
        stream.errors += errors


def read_range(stream: LogStream, start: int, end: int | None, first_line: int) -> Iterator[Item]:
    """The lines of bytes ``start`` to ``end`` (None: the file's end), the first numbered
    ``first_line``: one part of a file split at line starts (``logs.ranges``)."""
    source = stream.source
    records = errors = 0
    try:
        # Bytes straight to orjson (strict RFC 8259 JSON, UTF-8 checked): no separate decode.
        with open(stream.path, "rb", buffering=READ_BUFFER_BYTES) as handle:
            handle.seek(start)
            size = None if end is None else end - start
            for number, text in bounded_lines(handle, source, first_line, size):
                if text.isspace():  # (stops at the first other byte; no copy of the line)
                    continue
                try:
                    record = orjson.loads(text)
                except orjson.JSONDecodeError as exc:
                    errors += 1
                    yield number, LogRecordError(source, number, "<line>", f"invalid JSON: {exc}")
                    continue
                if not isinstance(record, dict):
                    errors += 1
                    yield number, LogRecordError(source, number, "<line>", "expected a JSON object")
                    continue
                records += 1
                yield number, record
    finally:
        stream.records += records
        stream.errors += errors
