"""talkback tapes (Node.js, ijpiantanida/talkback): one recorded exchange per file, written
by ``JSON5.stringify`` (``.json5``; talkback 1.x wrote plain JSON), read by
:mod:`cachecast.logs.json5` (docs/log-formats.md, "talkback")::

    {meta: {createdAt: '2025-...Z', host: 'https://api.openai.com', reqHumanReadable: true,
            resHumanReadable: true, resUncompressed: true},
     req: {url: '/v1/chat/completions', method: 'POST', headers: {...}, body: {...}},
     res: {status: 200, headers: {'content-type': ['application/json']}, body: {...}}}

- The URL is ``meta.host`` followed by ``req.url`` (the path and query talkback proxied).
- A body is a JSON value where talkback kept a JSON body readable, text where it kept other
  readable text (``meta.reqHumanReadable`` / ``resHumanReadable`` true; an event stream is
  text), else base64 of the bytes.
- ``meta.resUncompressed: true``: the response was inflated before it was written, so its
  recorded ``Content-Encoding`` no longer applies.
- Headers map a name to a value or a list of values.

``meta.createdAt`` is the time, else the response's ``Date`` header. The tape is read whole,
at most ``max_document_bytes`` (docs/limits.md); ``line`` is 1 and fields are named from the
tape's top (``res.status``); a file that is not JSON5 is named with its line.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from cachecast.core.errors import RecordFieldError
from cachecast.core.limits import current
from cachecast.logs.canonical import iso_seconds
from cachecast.logs.errors import LogFileError
from cachecast.logs.http import Exchange, exchanges_of, http_date, read_exchanges
from cachecast.logs.http.exchange import (
    decoded_bytes,
    http_status,
    joined_url,
    listed_headers,
)
from cachecast.logs.json5 import Json5Error, loads
from cachecast.logs.sanitize import check_nesting, shown
from cachecast.logs.stream import MAX_DOCUMENT_BYTES, Item, LogStream, check_size

# A tape's three keys, each opening a line of the pretty-printed file (quoted or not).
_KEYS = {
    name: re.compile(rf"""^[ \t]*["']?{name}["']?[ \t]*:[ \t]*\{{""", re.MULTILINE)
    for name in ("meta", "req", "res")
}


def fits_text(text: str) -> bool:
    """Whether the head of a file is a talkback tape: an object whose lines open with
    ``meta:``, ``req:`` and ``res:`` objects."""
    head = text[: 1 << 16]
    return head.lstrip().startswith(("{", "//", "/*")) and all(
        key.search(head) for key in _KEYS.values()
    )


def is_tape(value: Any) -> bool:
    """A tape parsed already (a compact JSON tape, all on one line): ``meta``, and ``req``
    with a method and url, ``res`` with a status."""
    if not isinstance(value, dict) or not isinstance(value.get("meta"), dict):
        return False
    req, res = value.get("req"), value.get("res")
    return (
        isinstance(req, dict)
        and isinstance(req.get("method"), str)
        and isinstance(req.get("url"), str)
        and isinstance(res, dict)
        and "status" in res
    )


def read(stream: LogStream) -> Iterator[Item]:
    tape = stream.take_preloaded()
    if tape is None:
        tape = _load(stream)
    stream.whole_document = True
    try:
        check_nesting(tape)
    except RecordFieldError as exc:
        yield 1, stream.error(1, exc.field, exc.reason)
        return
    yield from read_exchanges(stream, exchanges_of(stream, [(1, "", tape)], _exchange))


def _load(stream: LogStream) -> Any:
    check_size(stream.path, min(MAX_DOCUMENT_BYTES, current().max_document_bytes), "a tape")
    try:
        text = stream.path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LogFileError(stream.source, f"not UTF-8 text ({exc.reason})") from None
    try:
        return loads(text)
    except Json5Error as exc:
        raise LogFileError(
            stream.source, f"not a JSON5 tape: line {exc.line}: {exc.reason}"
        ) from None


def _body(value: Any, readable: bool, field: str) -> Any:
    if value is None or isinstance(value, dict | list):
        return value
    if not isinstance(value, str):
        raise RecordFieldError(field, f"expected text or a JSON value, got {shown(value)}")
    if readable or not value:
        return value or None
    return decoded_bytes(value, "base64", field)


def _exchange(tape: Any, line: int, where: str) -> Exchange:
    if not isinstance(tape, dict):
        raise RecordFieldError("<document>", "expected a tape {meta, req, res}")
    meta, req, res = tape.get("meta"), tape.get("req"), tape.get("res")
    meta = meta if isinstance(meta, dict) else {}
    if not isinstance(req, dict):
        raise RecordFieldError("req", "missing or not an object")
    if not isinstance(res, dict):
        raise RecordFieldError("res", "missing or not an object")
    method, path = req.get("method"), req.get("url")
    if not isinstance(method, str) or not isinstance(path, str):
        raise RecordFieldError("req", "needs method and url")
    host = meta.get("host")
    if not isinstance(host, str):
        host = "http://localhost"
    status = http_status(res.get("status"), "res.status")
    headers = listed_headers(res.get("headers"))
    if meta.get("resUncompressed") is True:
        headers.pop("content-encoding", None)  # the body was inflated before it was written
    created = meta.get("createdAt")
    return Exchange(
        line=line,
        where=where,
        method=method,
        url=joined_url(host, path),
        request_headers=listed_headers(req.get("headers")),
        request_body=_body(req.get("body"), meta.get("reqHumanReadable") is True, "req.body"),
        status=status,
        response_headers=headers,
        response_body=_body(res.get("body"), meta.get("resHumanReadable") is True, "res.body"),
        timestamp=iso_seconds(created, "meta.createdAt")
        if isinstance(created, str)
        else http_date(headers.get("date")),
    )
