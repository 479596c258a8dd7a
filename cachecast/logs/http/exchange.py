"""One recorded HTTP exchange (a VCR interaction, a HAR entry), as the recording formats hand
it to ``cachecast.logs.http``, and what those formats read alike.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any, NamedTuple

from cachecast.core.errors import RecordFieldError
from cachecast.logs.stream import LogStream


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


def body_rewritten(exchange: Exchange) -> bool:
    """Whether the stored request body differs in length from the Content-Length sent."""
    declared = exchange.request_headers.get("content-length", "").strip()
    raw = exchange.request_body
    # (more than 20 digits is no length a body has: not compared, nor converted)
    if not declared.isdigit() or len(declared) > 20 or not isinstance(raw, str | bytes | bytearray):
        return False
    if isinstance(raw, str):
        if exchange.request_headers.get("content-encoding"):
            return False  # the stored text is the decoded body, the length the encoded one
        raw = raw.encode("utf-8")
    return len(raw) != int(declared)


def http_date(value: str | None) -> float | None:
    """A ``Date`` header (RFC 9110) as epoch seconds, None when absent or unreadable."""
    if not value:
        return None
    try:
        return parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError):
        return None


class BadEntry(NamedTuple):
    """An entry the format's reader could not read: its line, field and why. Kept this small
    (not as its LogRecordError, about a kilobyte) while the recording is held whole: a
    cassette of a million bad entries held 1.2 GB of errors."""

    line: int
    field: str
    reason: str


def exchanges_of(
    stream: LogStream,
    entries: Iterable[tuple[int, str, Any]],
    parse: Callable[[Any, int, str], Exchange],
) -> Iterator[Exchange | BadEntry]:
    """A recording's entries, each given as (its line, its path in the file, the entry), read
    by the format's ``parse``; an entry it cannot read comes as a :class:`BadEntry` naming its
    line and field instead."""
    for line, where, entry in entries:
        try:
            yield parse(entry, line, where)
        except RecordFieldError as exc:
            yield BadEntry(line, exc.field, exc.reason)
