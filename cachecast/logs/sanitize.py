"""One sanitizer at the reader boundary: what every record of every format passes through.

A log is written by someone else; a few bytes of it can claim a moment billions of years away
(``timestamp: 1e300``, a 40-digit ``startTimeUnixNano``), an integer of thousands of digits
(which Python refuses to convert past 4,300 digits, and which no count needs), or a value
nested a thousand levels deep (which recursive code, a JSON encoder among them, cannot walk).
Each is refused here as a bad record naming its field, before any of it is used:

- :func:`epoch_seconds` and :func:`epoch_nanos` read every timestamp of every format into
  epoch seconds within :data:`MIN_EPOCH` .. :data:`MAX_EPOCH` (what ``datetime`` can show);
- :func:`int_text` reads an integer written as text (a status code, a ``Content-Length``,
  OTLP's ``intValue``, the ``<N>`` of ``gen_ai.prompt.<N>``) of at most
  :data:`MAX_INT_DIGITS` digits;
- :func:`check_record` checks a canonical record: depth at most :data:`MAX_RECORD_DEPTH`,
  every integer within 64 bits, its timestamp in range, and its text at most
  ``max_record_chars`` characters (a limit, docs/limits.md) before any of it is rendered
  or tokenized.

:class:`~cachecast.logs.stream.LogStream` hands every record it yields to
:func:`check_record`, so a format adapter needs none of its own checks (docs/limits.md).
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

import orjson

from cachecast.core.errors import LimitExceededError, LogRecordError, RecordFieldError
from cachecast.core.limits import current, exceeded

# 1970-01-01T00:00:00Z .. 9999-12-31T23:59:59Z: the moments ``datetime`` represents (and every
# report shows); a log of a real call lies far inside.
MIN_EPOCH = 0.0
MAX_EPOCH = 253_402_300_799.0
# An epoch number above this is taken as milliseconds (1e11 seconds is the year 5138).
MILLISECONDS_ABOVE = 1e11
# No count, status or index a log holds needs more digits; Python refuses past 4,300 anyway.
MAX_INT_DIGITS = 20
# Nesting of a record (its body, tool schemas, a trace's input), the record itself level 1:
# real ones nest a few tens of levels; orjson's encoder stops past 254 (and Python's
# recursion not far beyond), so a deeper record is refused before anything encodes it.
MAX_RECORD_DEPTH = 254
# The integers a record may hold anywhere: what orjson encodes (it parses larger ones as
# floats already).
_INT_BOUND = 1 << 64
_INT_MIN = -(1 << 63)
# How much of a refused value a message repeats, and of a deep path.
_SHOWN_CHARS = 40
_SPELLED_LEVELS = 8


def shown(value: Any) -> str:
    """``repr(value)`` cut to a few dozen characters: an error repeats what it refuses, never
    all of a hostile value."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**_SHOWN_CHARS:
        return f"an integer of more than {_SHOWN_CHARS} digits"
    text = repr(value)
    if len(text) <= _SHOWN_CHARS:
        return text
    return f"{text[:_SHOWN_CHARS]}... ({len(text):,} characters)"


def _in_range(seconds: float, raw: Any, field: str) -> float:
    if not MIN_EPOCH <= seconds <= MAX_EPOCH:
        raise RecordFieldError(
            field, f"a timestamp of {shown(raw)} is outside 1970-01-01 to 9999-12-31 (UTC)"
        )
    return seconds


def iso_moment(value: Any) -> float | None:
    """An ISO 8601 string as epoch seconds (naive = UTC, as ``epoch_seconds`` reads it), or
    None where ``value`` is not one: for the optional times of a record (a cache object's
    ``expireTime``, an event's ``timestamp``), whose absence leaves the record undated rather
    than refused."""
    if not isinstance(value, str) or len(value) > 64:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        return moment.timestamp()
    except (OverflowError, ValueError):  # year 1 or 9999 moved past the range by an offset
        return None


def epoch_seconds(raw: Any, field: str) -> float:
    """A timestamp as epoch seconds: an ISO 8601 string (naive = UTC) or an epoch number
    (seconds, or milliseconds above 1e11), within 1970..9999."""
    if isinstance(raw, bool):
        raise RecordFieldError(field, "expected ISO 8601 or epoch seconds, got a boolean")
    if isinstance(raw, int | float):
        if isinstance(raw, float) and not math.isfinite(raw):
            raise RecordFieldError(field, f"expected a finite epoch, got {shown(raw)}")
        if raw < 0:
            raise RecordFieldError(field, f"expected a non-negative epoch, got {shown(raw)}")
        if isinstance(raw, int) and raw >= _INT_BOUND:
            return _in_range(math.inf, raw, field)
        seconds = raw / 1000.0 if raw > MILLISECONDS_ABOVE else float(raw)
        return _in_range(seconds, raw, field)
    if isinstance(raw, str):
        if len(raw) > 64:  # ISO 8601 with nanoseconds and an offset is about 35 characters
            raise RecordFieldError(field, f"not ISO 8601: {shown(raw)}")
        try:
            moment = datetime.fromisoformat(raw.replace("Z", "+00:00"))
        except ValueError:
            raise RecordFieldError(field, f"not ISO 8601: {shown(raw)}") from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        try:
            seconds = moment.timestamp()
        except (OverflowError, ValueError):  # year 1 or 9999 moved past the range by an offset
            seconds = math.inf
        return _in_range(seconds, raw, field)
    raise RecordFieldError(field, f"expected ISO 8601 or epoch, got {type(raw).__name__}")


def epoch_nanos(raw: Any, field: str) -> float:
    """OTLP's ``startTimeUnixNano`` (a decimal string or an integer) as epoch seconds."""
    if isinstance(raw, str) and raw.isdigit() and len(raw) > MAX_INT_DIGITS:
        return _in_range(math.inf, raw, field)  # (not converted: it may have 5,000 digits)
    value = int_text(raw, field) if isinstance(raw, str) else raw
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise RecordFieldError(field, f"expected nanoseconds since the epoch, got {shown(raw)}")
    return _in_range(value / 1e9 if value < _INT_BOUND else math.inf, raw, field)


def int_text(text: str, field: str) -> int:
    """A non-negative integer written in decimal digits, at most MAX_INT_DIGITS of them."""
    digits = text.strip()
    if not digits.isdigit() or not digits.isascii():
        raise RecordFieldError(field, f"expected decimal digits, got {shown(text)}")
    if len(digits) > MAX_INT_DIGITS:
        raise RecordFieldError(
            field, f"an integer of {len(digits):,} digits (at most {MAX_INT_DIGITS})"
        )
    return int(digits)


def check_record(
    record: dict[str, Any], field: str = "", taken: int = 0, earlier_size: int = 0
) -> int:
    """Refuse a record nested too deep, holding an integer beyond 64 bits, a timestamp out of
    range, or more text than ``max_record_chars`` (RecordFieldError naming the field; a
    LimitExceededError for the text, which stops the read); return its size. No recursion
    in Python: orjson's encoder (C) checks depth and integers and gives the size at once
    (its bytes are at least the record's characters); only a record it refuses, or a large
    one, is walked to name the field.

    ``taken``: the leading items of ``request.input`` are those of a record checked before,
    of size ``earlier_size``: only the rest is encoded, and the size is at most the two
    added (a Responses chain: each request holds every earlier one's input)."""
    timestamp = record.get("timestamp")
    if timestamp is not None and not isinstance(timestamp, str):
        epoch_seconds(timestamp, "timestamp")
    limit = current().max_record_chars
    looked_at: dict[str, Any] = record
    if taken:
        request = record["request"]
        looked_at = {**record, "request": {**request, "input": request["input"][taken:]}}
    try:
        size = len(orjson.dumps(looked_at)) + earlier_size
    except orjson.JSONEncodeError:  # too deep, an integer beyond 64 bits, a key not text
        size = None
    if size is None or size > limit:
        # Past here nothing is wrong but a size in bytes over a limit in characters: the
        # characters counted are the record's size.
        return _refuse(record, field, limit)
    return size


def check_nesting(document: Any, field: str = "") -> None:
    """Refuse a document (a JSON line, an export) nested deeper than MAX_RECORD_DEPTH or
    holding an integer beyond 64 bits, before a format adapter reads it (an adapter may
    encode part of it, or recurse through it); its size is bounded where it was read."""
    try:
        orjson.dumps(document)
    except orjson.JSONEncodeError:
        _refuse(document, field, math.inf)


def _refuse(record: Any, field: str, limit: float) -> int:
    """Raise the error of what is wrong with ``record``, naming the field; where nothing is
    (a key that is not text, bytes, more bytes than characters), return its characters."""
    chars = 0
    stack: list[tuple[Any, int, tuple[Any, ...]]] = [(record, 1, ())]
    while stack:
        value, depth, path = stack.pop()
        if depth > MAX_RECORD_DEPTH:
            raise RecordFieldError(
                _spell(field, path), f"nested more than {MAX_RECORD_DEPTH} levels deep"
            )
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in items:
            if isinstance(item, str):
                chars += len(item)
                if chars > limit:
                    raise exceeded(
                        "max_record_chars",
                        f"{chars:,}",
                        field=_spell(field, (*path, key)),
                        what="the record's text reaches",
                    )
            elif isinstance(item, dict | list):
                if item:
                    stack.append((item, depth + 1, (*path, key)))
            elif isinstance(item, int) and not _INT_MIN <= item < _INT_BOUND:
                raise RecordFieldError(
                    _spell(field, (*path, key)), f"{shown(item)} is out of range"
                )
    return chars


def checked(record: dict[str, Any], source: str, line: int) -> dict[str, Any] | LogRecordError:
    """``record`` (line ``line`` of ``source``) through :func:`check_record`: itself, or the
    LogRecordError of what is wrong with it; a limit crossed stops the read, naming the line."""
    size = checked_size(record, source, line)
    return size if isinstance(size, LogRecordError) else record


def checked_size(
    record: dict[str, Any], source: str, line: int, taken: int = 0, earlier_size: int = 0
) -> int | LogRecordError:
    """As :func:`checked`, but the record's size where it passes (``taken`` and
    ``earlier_size``: see :func:`check_record`)."""
    try:
        return check_record(record, "", taken, earlier_size)
    except RecordFieldError as exc:
        return LogRecordError(source, line, exc.field, exc.reason)
    except LimitExceededError as exc:
        raise exc.located(source, line) from None


def _spell(field: str, path: tuple[Any, ...]) -> str:
    """The JSON path of a refused value; a deep one shortened to its first levels."""
    text = field
    for key in path[:_SPELLED_LEVELS]:
        if isinstance(key, int):
            text += f"[{key}]"
        else:
            name = shown(key) if len(str(key)) > _SHOWN_CHARS else str(key)
            text = f"{text}.{name}" if text else name
    if len(path) > _SPELLED_LEVELS:
        text += f"... ({len(path)} levels)"
    return text or "<record>"
