"""cachecast's own JSON lines: wrapper records, bare provider bodies, ``{"prompt"}``,
``{"tokens"}`` and Mooncake traces pass through as they are (the reader in
``cachecast.tokenizers.records`` knows them), with no per-line work beyond JSON parsing."""

from __future__ import annotations

from collections.abc import Iterator

import orjson

from cachecast.logs.errors import LogRecordError
from cachecast.logs.stream import READ_BUFFER_BYTES, Item, LogStream, bounded_lines

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


def fits(record: dict[str, object]) -> str | None:
    if any(key in record for key in RECORD_KEYS):
        return None
    return "no " + "/".join(RECORD_KEYS[:7]) + "... key (a wrapper record or a request body)"


def read(stream: LogStream) -> Iterator[Item]:
    """Counts inline (local counters, stored when the reading ends) rather than through a
    wrapping generator: this is the per-line path of the log reader's benchmark."""
    return read_range(stream, 0, None, 1)


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
