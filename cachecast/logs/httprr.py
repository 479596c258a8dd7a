"""Go ``httprr`` traces (golang.org/x/oscar ``internal/httprr``, copied into
tmc/langchaingo's ``internal/httprr``; docs/log-formats.md, "httprr"): a file that starts with
the line ``httprr trace v1``, then one record per round trip::

    <request bytes> <response bytes>\\n
    <the request as HTTP/1.1 wire bytes: Go's Request.WriteProxy, so an absolute URL>
    <the response as wire bytes: Go's Response.Write>

- The request line is ``POST https://api.anthropic.com/v1/messages HTTP/1.1`` (a path alone
  is joined to the ``Host`` header, ``https`` assumed); headers end at the first blank line
  (CRLF, or LF where a trace was edited by hand), the body is the rest of the request bytes.
- The response is ``HTTP/2.0 200 OK`` (any protocol), headers, a blank line, the body: as
  sent where a length was known, else in chunked transfer coding (``Transfer-Encoding:
  chunked``, undone here); a ``Content-Encoding`` (gzip) is undone by the shared body decoder.
- Time: the response's ``Date`` header, else the response body's own creation time.

A trace is read whole, at most ``max_document_bytes`` (docs/limits.md); each record's line is
the line of its size pair, its field path ``records[i]`` (0-based, in file order). A size
pair that cannot be read ends the trace (the records after it cannot be found): an error
naming its line. A gzip trace (``.httprr.gz``) is inflated like every compressed log.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import urlsplit

from cachecast.core.errors import RecordFieldError
from cachecast.core.limits import current
from cachecast.logs.errors import LogFileError
from cachecast.logs.http import Exchange, http_date, read_exchanges
from cachecast.logs.http.exchange import BadEntry
from cachecast.logs.stream import MAX_DOCUMENT_BYTES, Item, LogStream, check_size

MAGIC = b"httprr trace v1\n"
MAX_HEADER_BYTES = 1 << 16  # one message's start line and headers (Go's default is 1 MiB,
# real traces hold a few kilobytes; a header block past this is no trace we can trust)
MAX_HEADERS = 500  # header lines of one message
MAX_SIZE_DIGITS = 20  # digits of one declared length (more is no length a record has)

_SIZES = re.compile(rb"(\d{1,%d}) (\d{1,%d})\r?" % (MAX_SIZE_DIGITS, MAX_SIZE_DIGITS))
_STATUS = re.compile(rb"HTTP/\d(?:\.\d)? (\d{3})(?: .*)?")
_REQUEST = re.compile(rb"([A-Z]{1,16}) (\S+) HTTP/\d(?:\.\d)?")


def fits_text(text: str) -> bool:
    """Whether a file is an httprr trace: its first line is the magic line."""
    return text.startswith(MAGIC.decode())


def read(stream: LogStream) -> Iterator[Item]:
    check_size(
        stream.path, min(MAX_DOCUMENT_BYTES, current().max_document_bytes), "an httprr trace"
    )
    data = stream.path.read_bytes()
    if not data.startswith(MAGIC):
        raise LogFileError(stream.source, "not an httprr trace: no 'httprr trace v1' first line")
    stream.whole_document = True
    yield from read_exchanges(stream, _records(data))


def _records(data: bytes) -> Iterator[Exchange | BadEntry]:
    offset, line, index = len(MAGIC), 2, 0
    while offset < len(data):
        where = f"records[{index}]"
        end = data.find(b"\n", offset, offset + 2 * MAX_SIZE_DIGITS + 3)
        sizes = _SIZES.fullmatch(data, offset, end) if end >= 0 else None
        if sizes is None:
            shown = data[offset : offset + 40].decode("utf-8", "replace")
            yield BadEntry(
                line,
                f"{where}.sizes",
                f"expected '<request bytes> <response bytes>', got {shown!r}: the records"
                " from here on cannot be found",
            )
            return
        request_size, response_size = int(sizes.group(1)), int(sizes.group(2))
        start = end + 1
        if start + request_size + response_size > len(data):
            yield BadEntry(
                line,
                f"{where}.sizes",
                f"{request_size:,} + {response_size:,} bytes declared, {len(data) - start:,}"
                " left in the file: a truncated trace",
            )
            return
        request = data[start : start + request_size]
        response = data[start + request_size : start + request_size + response_size]
        try:
            exchange = _exchange(request, response, line, where)
        except RecordFieldError as exc:
            yield BadEntry(line, exc.field, exc.reason)
        else:
            exchange.entry = index + 1
            yield exchange
        line += 1 + request.count(b"\n") + response.count(b"\n")
        offset = start + request_size + response_size
        index += 1


def _exchange(request: bytes, response: bytes, line: int, where: str) -> Exchange:
    start, request_headers, request_body = _message(request, f"{where}.request")
    found = _REQUEST.fullmatch(start)
    if found is None:
        raise RecordFieldError(
            f"{where}.request", f"expected a request line 'METHOD URL HTTP/1.1', got {_text(start)}"
        )
    method, target = found.group(1).decode(), found.group(2).decode("utf-8", "replace")
    url = target
    if not urlsplit(target).scheme:
        host = request_headers.get("host", "localhost")
        url = f"https://{host}{target if target.startswith('/') else '/' + target}"
    status_line, response_headers, response_body = _message(response, f"{where}.response")
    status = _STATUS.fullmatch(status_line)
    if status is None:
        raise RecordFieldError(
            f"{where}.response",
            f"expected a status line 'HTTP/1.1 200 OK', got {_text(status_line)}",
        )
    if "chunked" in request_headers.pop("transfer-encoding", "").lower():
        request_body = _dechunked(request_body, f"{where}.request.body")
    if "chunked" in response_headers.pop("transfer-encoding", "").lower():
        response_body = _dechunked(response_body, f"{where}.response.body")
    return Exchange(
        line=line,
        where=where,
        method=method,
        url=url,
        request_headers=request_headers,
        request_body=request_body or None,
        status=int(status.group(1)),
        response_headers=response_headers,
        response_body=response_body or None,
        timestamp=http_date(response_headers.get("date")),
    )


def _message(raw: bytes, where: str) -> tuple[bytes, dict[str, str], bytes]:
    """A wire message's start line, headers (lower-case names, the first value of each) and
    body."""
    head_end, gap = raw.find(b"\r\n\r\n", 0, MAX_HEADER_BYTES), 4
    if head_end < 0:
        head_end, gap = raw.find(b"\n\n", 0, MAX_HEADER_BYTES), 2
    if head_end < 0:
        if len(raw) >= MAX_HEADER_BYTES:
            raise RecordFieldError(
                f"{where}.headers", f"no end of the headers in the first {MAX_HEADER_BYTES:,} bytes"
            )
        head_end, gap = len(raw), 0  # headers only, no body
    lines = raw[:head_end].split(b"\n")
    if len(lines) > MAX_HEADERS + 1:
        raise RecordFieldError(f"{where}.headers", f"more than {MAX_HEADERS} header lines")
    headers: dict[str, str] = {}
    for text in lines[1:]:
        name, colon, value = text.rstrip(b"\r").partition(b":")
        if not colon or not name.strip():
            raise RecordFieldError(f"{where}.headers", f"not a header line: {_text(text)}")
        key = name.strip().decode("latin-1").lower()
        headers.setdefault(key, value.strip().decode("latin-1"))
    return lines[0].rstrip(b"\r"), headers, raw[head_end + gap :]


def _dechunked(body: bytes, where: str) -> bytes:
    """A body in chunked transfer coding (RFC 9112, section 7.1) as the bytes it carries."""
    parts: list[bytes] = []
    offset = 0
    while True:
        end = body.find(b"\n", offset, offset + 1024)
        if end < 0:
            raise RecordFieldError(where, f"chunked body: no chunk size at byte {offset:,}")
        size_text = body[offset:end].split(b";", 1)[0].strip()
        if not size_text or len(size_text) > 16:
            raise RecordFieldError(where, f"chunked body: bad chunk size at byte {offset:,}")
        try:
            size = int(size_text, 16)
        except ValueError:
            raise RecordFieldError(
                where, f"chunked body: bad chunk size {_text(size_text)} at byte {offset:,}"
            ) from None
        if size == 0:
            return b"".join(parts)  # (trailer fields after the last chunk are not read)
        start = end + 1
        if start + size > len(body):
            raise RecordFieldError(where, f"chunked body: a chunk of {size:,} bytes runs past it")
        parts.append(body[start : start + size])
        offset = start + size
        if body.startswith(b"\r\n", offset):
            offset += 2
        elif body.startswith(b"\n", offset):
            offset += 1


def _text(raw: bytes) -> str:
    return repr(raw[:80].decode("utf-8", "replace"))
