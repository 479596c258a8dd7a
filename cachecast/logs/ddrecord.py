"""dd-trace-java's HTTP records (DataDog/dd-trace-java, the OpenAI Java instrumentation's test
client ``RequestResponseRecord``: ``src/test/resources/http-records/<path>/<md5 of the request
body, split by +>.<METHOD>.rec``; docs/log-formats.md, "VCR and HAR", the dd-trace-java row). One
call per file, plain text, written line by line::

    method: POST
    path: chat/completions
    -- begin request body --
    <the request body as sent>
    -- end request body --␠
    status code: 200
    -- begin response headers --
    <name>: <value>            (one line per header that came once; repeated ones are dropped)
    -- end response headers --
    -- begin response body --
    <the response body: JSON, or the server-sent events of a stream>
    -- end response body --

- The recorder writes each body, then a line break, then the closing marker: that one break
  is no part of the body. The request body's closing marker ends with a space.
- The files in the repository end the response body with one or two bytes that are not text
  (read as U+FFFD) before that line break: the recorder writes the bytes it kept with the
  platform charset, and they are no part of the JSON or of the event stream: dropped.
- ``path`` is the request's path segments joined by ``/``, relative to the client's base URL:
  no host is kept. The recorder is the OpenAI Java SDK's HTTP client (base URL
  ``https://api.openai.com/v1``), and OpenAI's responses say so in their ``openai-*``
  headers (``openai-version``, ``openai-organization``, ``openai-processing-ms``): such a
  record is joined to that base. A record whose headers name no provider is a bad record
  saying so (where it went is unknown).
- Time: the response's ``Date`` header.

A record is read whole (at most ``max_document_bytes``, docs/limits.md); its line is 1, its
field path ``record``.
"""

from __future__ import annotations

from collections.abc import Iterator

from cachecast.core.errors import RecordFieldError
from cachecast.core.limits import current
from cachecast.logs.errors import LogFileError
from cachecast.logs.http import Exchange, http_date, read_exchanges
from cachecast.logs.http.exchange import BadEntry
from cachecast.logs.stream import MAX_DOCUMENT_BYTES, Item, LogStream, check_size

FORMAT = "dd-http-record"

_METHOD = "method: "
_PATH = "path: "
_BEGIN_REQUEST = "-- begin request body --"
_END_REQUEST = "-- end request body --"
_STATUS = "status code: "
_BEGIN_HEADERS = "-- begin response headers --"
_END_HEADERS = "-- end response headers --"
_BEGIN_RESPONSE = "-- begin response body --"
_END_RESPONSE = "-- end response body --"
# The OpenAI Java SDK's base URL, to which the recorded path is relative.
OPENAI_BASE = "https://api.openai.com/v1"
# What the recorder leaves after a body's last character (see the module's docstring).
_NOT_TEXT = "\ufffd\x00"


def fits_text(text: str) -> bool:
    """Whether a file is a dd-trace-java HTTP record: ``method:`` and ``path:`` lines, then
    the request body's opening marker."""
    lines = text.split("\n", 3)
    return (
        len(lines) >= 3
        and lines[0].startswith(_METHOD)
        and lines[1].startswith(_PATH)
        and lines[2].rstrip("\r") == _BEGIN_REQUEST
    )


def read(stream: LogStream) -> Iterator[Item]:
    check_size(
        stream.path,
        min(MAX_DOCUMENT_BYTES, current().max_document_bytes),
        "a dd-trace-java HTTP record",
    )
    text = stream.path.read_bytes().decode("utf-8", errors="replace")
    if text.split("\n", 1)[0].endswith("\r"):
        # checked out with CRLF line ends (git's autocrlf): the recorder wrote LF
        text = text.replace("\r\n", "\n")
    if not fits_text(text):
        raise LogFileError(
            stream.source, "not a dd-trace-java HTTP record: no 'method:' and 'path:' lines"
        )
    stream.whole_document = True
    try:
        found: Exchange | BadEntry = _exchange(text)
    except RecordFieldError as exc:
        found = BadEntry(1, exc.field, exc.reason)
    yield from read_exchanges(stream, [found])


def _between(text: str, begin: str, end: str, where: str) -> tuple[str, int]:
    """The text between the line ``begin`` and the line opening with ``end`` (less the line
    break the recorder writes before ``end``), and where the closing line starts."""
    opened = text.find(f"\n{begin}\n")
    if opened < 0:
        raise RecordFieldError(where, f"no '{begin}' line")
    start = opened + len(begin) + 2
    closed = text.find(f"\n{end}", start - 1)
    if closed < 0:
        raise RecordFieldError(where, f"no '{end}' line after '{begin}'")
    return text[start:closed] if closed >= start else "", closed + 1


def _line(text: str, prefix: str, start: int) -> str | None:
    at = text.find(f"\n{prefix}", max(start - 1, 0))
    if at < 0:
        return None
    end = text.find("\n", at + 1)
    return text[at + 1 + len(prefix) : end if end >= 0 else len(text)].strip()


def _exchange(text: str) -> Exchange:
    method = text[len(_METHOD) : text.index("\n")].strip().upper()
    path = (_line(text, _PATH, 0) or "").lstrip("/")
    request_body, after = _between(text, _BEGIN_REQUEST, _END_REQUEST, "record.request.body")
    status_text = _line(text, _STATUS, after)
    status = int(status_text) if status_text and status_text.isdigit() else None
    header_text, after = _between(text, _BEGIN_HEADERS, _END_HEADERS, "record.response.headers")
    headers: dict[str, str] = {}
    for line in header_text.split("\n"):
        name, colon, value = line.partition(": ")
        if colon and name.strip():
            headers.setdefault(name.strip().lower(), value.strip())
    response_body, _ = _between(text, _BEGIN_RESPONSE, _END_RESPONSE, "record.response.body")
    if not any(name.startswith("openai-") for name in headers):
        raise RecordFieldError(
            "record.path",
            f"'{path}' is kept without its host and the response headers name no provider"
            " (openai-version, openai-organization): where the call went is unknown",
        )
    return Exchange(
        line=1,
        where="record",
        method=method,
        url=f"{OPENAI_BASE}/{path}",
        request_headers={},
        request_body=request_body or None,
        status=status,
        response_headers=headers,
        response_body=response_body.rstrip(_NOT_TEXT) or None,
        timestamp=http_date(headers.get("date")),
    )
