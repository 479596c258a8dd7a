"""One recorded HTTP exchange (a VCR interaction, a HAR entry), as the recording formats hand
it to ``cachecast.logs.http``, and what those formats read alike.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any, NamedTuple

from cachecast.core.errors import RecordFieldError
from cachecast.core.limits import current
from cachecast.logs.sanitize import shown
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
    # The exchange's 1-based position in a recording whose lines do not tell its entries
    # apart (HAR and govcr: one JSON document, or several entries on one line).
    entry: int | None = None
    # The time the recording states for all its calls (by-shape: an enclosing object's
    # ``recordedAt``), taken where neither the exchange nor its response body states one.
    recorded_at: float | None = None


def body_rewritten(exchange: Exchange) -> bool:
    """Whether the stored request body differs in length from the Content-Length sent.

    A JSON body stored re-serialized (a recorder's filter that parses the body and writes it
    back with ``json.dumps``' default ``", "`` and ``": "`` separators) is the same body: where
    its compact serialization has the length sent, it was not rewritten (seen: Future-House's
    lmi cassettes, a 13,838-byte request stored as 13,859 characters)."""
    declared = exchange.request_headers.get("content-length", "").strip()
    raw = exchange.request_body
    # (more than 20 digits is no length a body has: not compared, nor converted)
    if not declared.isdigit() or len(declared) > 20 or not isinstance(raw, str | bytes | bytearray):
        return False
    if isinstance(raw, str):
        if exchange.request_headers.get("content-encoding"):
            return False  # the stored text is the decoded body, the length the encoded one
        raw = raw.encode("utf-8")
    if len(raw) == int(declared):
        return False
    return not _reserialized(bytes(raw), int(declared))


def _reserialized(raw: bytes, declared: int) -> bool:
    """Whether ``raw`` is JSON whose compact serialization (non-ASCII kept or escaped) is
    ``declared`` bytes long."""
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return False
    if not isinstance(value, dict | list):
        return False
    return any(
        len(json.dumps(value, separators=(",", ":"), ensure_ascii=escaped).encode("utf-8"))
        == declared
        for escaped in (False, True)
    )


_HEX = re.compile(r"[0-9a-fA-F]*")


def is_hex(text: str) -> bool:
    return len(text) % 2 == 0 and _HEX.fullmatch(text) is not None


def check_decoded_size(characters: int, encoding: str, field: str) -> None:
    """Refuse ``characters`` of hex or base64 that would decode past the bound."""
    limit = current().max_decompressed_bytes
    size = characters // 2 if encoding == "hex" else characters // 4 * 3
    if size > limit:
        raise RecordFieldError(
            field,
            f"{characters:,} {encoding} characters decode past the limit of {limit:,} bytes "
            "(setting max_decompressed_bytes; docs/limits.md)",
        )


def decoded_bytes(text: str, encoding: str, field: str) -> bytes:
    """``text`` as the bytes it spells in ``encoding`` (``hex`` or ``base64``), refused
    before it is decoded when the bytes would pass ``max_decompressed_bytes``
    (docs/limits.md): a recording's binary body cannot make more than the bound."""
    check_decoded_size(len(text), encoding, field)
    try:
        if encoding == "hex":
            return bytes.fromhex(text)
        return base64.b64decode(text, validate=True)
    except (ValueError, binascii.Error):
        raise RecordFieldError(field, f"not {encoding} bytes") from None


def http_status(value: Any, field: str) -> int:
    """A recorded status code: an integer from 0 (no response) to 999, else an error naming
    ``field``."""
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 999:
        raise RecordFieldError(field, f"expected an HTTP status, got {shown(value)}")
    return value


def joined_url(origin: str, path: str) -> str:
    """An origin (``https://host:443``) and the path a recording keeps apart from it."""
    return origin.rstrip("/") + (path if path.startswith("/") else f"/{path}")


def listed_headers(value: Any) -> dict[str, str]:
    """Headers written as a mapping of names to lists of values (vcrpy, go-vcr, Ruby VCR,
    govcr's Go ``http.Header``), or to single values: lower-case names, each first value."""
    headers: dict[str, str] = {}
    if isinstance(value, dict):
        for name, values in value.items():
            first = values[0] if isinstance(values, list) and values else values
            if isinstance(first, bytes):
                first = first.decode("utf-8", "replace")
            if isinstance(first, str | int):
                headers[str(name).lower()] = str(first)
    return headers


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


def numbered(exchanges: Iterable[Exchange | BadEntry]) -> Iterator[Exchange | BadEntry]:
    """Each exchange with its 1-based position among ``exchanges`` (``Exchange.entry``): for
    recordings whose lines do not tell their entries apart."""
    for number, exchange in enumerate(exchanges, start=1):
        if isinstance(exchange, Exchange):
            exchange.entry = number
        yield exchange


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
