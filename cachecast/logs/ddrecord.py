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
- The recorder's first generation (the records committed in November 2025) writes the same
  things under other markers: ``> method: POST``, ``> path: completions``, ``> begin request
  body <`` / ``> end request body <``, ``> response code: 200``, ``> begin response headers
  <`` / ``> end response headers <`` with headers as ``name -> value``, ``> begin response
  body <`` / ``> end response body <``. Both are read.

A record is read whole (at most ``max_document_bytes``, docs/limits.md); its line is 1, its
field path ``record``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from cachecast.core.errors import RecordFieldError
from cachecast.core.limits import current
from cachecast.logs.errors import LogFileError
from cachecast.logs.http import Exchange, http_date, read_exchanges
from cachecast.logs.http.exchange import BadEntry
from cachecast.logs.stream import MAX_DOCUMENT_BYTES, Item, LogStream, check_size

FORMAT = "dd-http-record"


@dataclass(frozen=True, slots=True)
class _Layout:
    """The marker lines of one generation of the recorder."""

    method: str
    path: str
    begin_request: str
    end_request: str
    status: str
    begin_headers: str
    end_headers: str
    header_separator: str
    begin_response: str
    end_response: str


# ``RequestResponseRecord`` as it is now (openai-java-1.0 and -3.0 tests, 2026)
_CURRENT = _Layout(
    "method: ",
    "path: ",
    "-- begin request body --",
    "-- end request body --",
    "status code: ",
    "-- begin response headers --",
    "-- end response headers --",
    ": ",
    "-- begin response body --",
    "-- end response body --",
)
# its first generation, as the records committed in November 2025 keep it (``> method:``,
# headers as ``name -> value``): read from those files, the writer of the time not at hand
_FIRST = _Layout(
    "> method: ",
    "> path: ",
    "> begin request body <",
    "> end request body <",
    "> response code: ",
    "> begin response headers <",
    "> end response headers <",
    " -> ",
    "> begin response body <",
    "> end response body <",
)
_LAYOUTS = (_CURRENT, _FIRST)
# The OpenAI Java SDK's base URL, to which the recorded path is relative.
OPENAI_BASE = "https://api.openai.com/v1"
# What the recorder leaves after a body's last character (see the module's docstring).
_NOT_TEXT = "\ufffd\x00"


def _layout(text: str) -> _Layout | None:
    lines = text.split("\n", 3)
    if len(lines) < 3:
        return None
    for layout in _LAYOUTS:
        if (
            lines[0].startswith(layout.method)
            and lines[1].startswith(layout.path)
            and lines[2].rstrip("\r") == layout.begin_request
        ):
            return layout
    return None


def fits_text(text: str) -> bool:
    """Whether a file is a dd-trace-java HTTP record: ``method:`` and ``path:`` lines, then
    the request body's opening marker (either generation's)."""
    return _layout(text) is not None


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
    layout = _layout(text)
    if layout is None:
        raise LogFileError(
            stream.source, "not a dd-trace-java HTTP record: no 'method:' and 'path:' lines"
        )
    stream.whole_document = True
    try:
        found: Exchange | BadEntry = _exchange(text, layout)
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


def _exchange(text: str, layout: _Layout) -> Exchange:
    method = text[len(layout.method) : text.index("\n")].strip().upper()
    path = (_line(text, layout.path, 0) or "").lstrip("/")
    request_body, after = _between(
        text, layout.begin_request, layout.end_request, "record.request.body"
    )
    status_text = _line(text, layout.status, after)
    status = int(status_text) if status_text and status_text.isdigit() else None
    header_text, after = _between(
        text, layout.begin_headers, layout.end_headers, "record.response.headers"
    )
    headers: dict[str, str] = {}
    for line in header_text.split("\n"):
        name, separator, value = line.partition(layout.header_separator)
        if separator and name.strip():
            headers.setdefault(name.strip().lower(), value.strip())
    response_body, _ = _between(
        text, layout.begin_response, layout.end_response, "record.response.body"
    )
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
