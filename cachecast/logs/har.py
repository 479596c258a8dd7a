"""HAR 1.2 files (browser dev tools, mitmproxy, Charles, most proxies):
``{"log": {"entries": [{startedDateTime, request: {method, url, headers, postData: {text}},
response: {status, headers, content: {text, encoding}}}]}}``.

Per the HAR 1.2 specification ``content.text`` is the decoded body (or base64 with
``"encoding": "base64"``); ``startedDateTime`` is the timestamp. The file is one JSON
document, read whole under :data:`~cachecast.logs.stream.MAX_DOCUMENT_BYTES` (``line`` is
then the entry's position), or JSON lines: one HAR document per line (a whole ``log`` on
one line: each entry's ``line`` is that line), or one HAR *entry* per line, no ``log``
around them (exporters that stream entries; ``line`` is the entry's line). Every exchange
carries its 1-based ``entry`` number in the file, so that entries that share a line are told
apart (their request ids, where the response names none: ``file:line entry N``). The
exchanges are read by :mod:`cachecast.logs.http`.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from cachecast.core.errors import RecordFieldError
from cachecast.logs.canonical import iso_seconds
from cachecast.logs.errors import LogRecordError
from cachecast.logs.http import Exchange, exchanges_of, read_exchanges
from cachecast.logs.http.exchange import (
    BadEntry,
    check_decoded_size,
    decoded_bytes,
    is_hex,
    numbered,
)
from cachecast.logs.sanitize import shown
from cachecast.logs.stream import Item, LogStream, documents


def fits(value: Any) -> bool:
    log = value.get("log") if isinstance(value, dict) else None
    return (isinstance(log, dict) and isinstance(log.get("entries"), list)) or is_entry(value)


def is_entry(value: Any) -> bool:
    """A HAR entry on its own (a line of an entries stream): a request with method and url
    and a response with a status, and HAR's list-of-{name, value} headers or its
    ``startedDateTime`` (what no other format's line has)."""
    if not isinstance(value, dict):
        return False
    request, response = value.get("request"), value.get("response")
    if not isinstance(request, dict) or not isinstance(response, dict):
        return False
    if not isinstance(request.get("method"), str) or not isinstance(request.get("url"), str):
        return False
    return "status" in response and (
        "startedDateTime" in value or isinstance(request.get("headers"), list)
    )


def read(stream: LogStream) -> Iterator[Item]:
    yield from read_exchanges(stream, numbered(_exchanges(stream)))


def _exchanges(stream: LogStream) -> Iterator[Exchange | BadEntry]:
    missing = ("log.entries", "missing: neither a HAR document nor a HAR entry")
    for line, document in documents(stream, fits, missing):
        if isinstance(document, LogRecordError):  # a line that is no HAR entry
            yield BadEntry(line, document.location.field or "<line>", document.reason)
            continue
        if "log" not in document:  # one entry per line
            entries: Iterable[tuple[int, str, Any]] = [(line, "", document)]
        else:
            whole = stream.whole_document
            entries = [
                (index + 1 if whole else line, f"log.entries[{index}]", entry)
                for index, entry in enumerate(document["log"]["entries"])
            ]
        yield from exchanges_of(stream, entries, _exchange)


def _exchange(entry: Any, line: int, where: str) -> Exchange:
    if not isinstance(entry, dict):
        raise RecordFieldError(where or "<line>", "expected an entry object")
    at = f"{where}." if where else ""  # an entry on a line of its own: paths from its top
    request = entry.get("request")
    response = entry.get("response")
    if not isinstance(request, dict):
        raise RecordFieldError(f"{at}request", "missing or not an object")
    method, url = request.get("method"), request.get("url")
    if not isinstance(method, str) or not isinstance(url, str):
        raise RecordFieldError(f"{at}request", "needs method and url")
    post = request.get("postData")
    request_body = _text(post, f"{at}request.postData") if isinstance(post, dict) else None
    status = None
    response_headers: dict[str, str] = {}
    response_body = None
    if isinstance(response, dict):
        status = response.get("status")
        if status is not None and (not isinstance(status, int) or isinstance(status, bool)):
            raise RecordFieldError(
                f"{at}response.status", f"expected an integer, got {shown(status)}"
            )
        response_headers = _headers(response.get("headers"))
        content = response.get("content")
        chunks = None
        if isinstance(content, dict):
            path = f"{at}response.content"
            if response_headers.get("content-encoding"):
                chunks = _encoded_chunks(content, f"{path}.text")
            response_body = chunks if chunks is not None else _text(content, path)
            if "content-type" not in response_headers and isinstance(content.get("mimeType"), str):
                response_headers["content-type"] = content["mimeType"]
        if chunks is None:
            # HAR's text is already decoded: the recorded Content-Encoding no longer applies.
            response_headers.pop("content-encoding", None)
    started = entry.get("startedDateTime")
    return Exchange(
        line=line,
        where=where,
        method=method,
        url=url,
        request_headers={
            k: v for k, v in _headers(request.get("headers")).items() if k != "content-encoding"
        },
        request_body=request_body,
        status=status,  # 0: no response was received (not billed)
        response_headers=response_headers,
        response_body=response_body,
        timestamp=None if started is None else iso_seconds(started, f"{at}startedDateTime"),
    )


def _headers(value: Any) -> dict[str, str]:
    headers: dict[str, str] = {}
    if isinstance(value, list):
        for header in value:
            if isinstance(header, dict) and isinstance(header.get("name"), str):
                headers.setdefault(header["name"].lower(), str(header.get("value", "")))
    return headers


def _encoded_chunks(content: dict[str, Any], field: str) -> bytes | None:
    """Polly.JS's node-http adapter keeps a response sent with a Content-Encoding as the
    encoded bytes, chunk by chunk: ``text`` is a JSON list of hex strings (or of base64
    strings with ``encoding: base64``). The bytes joined, still encoded (the header then
    applies); None for any other text."""
    text = content.get("text")
    if not isinstance(text, str) or not text.startswith("["):
        return None
    try:
        items = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
        return None
    if content.get("encoding") == "base64":
        check_decoded_size(sum(len(item) for item in items), "base64", field)
        return b"".join(decoded_bytes(item, "base64", field) for item in items)
    if all(is_hex(item) for item in items):
        return decoded_bytes("".join(items), "hex", field)
    return None


def _text(container: dict[str, Any], path: str) -> str | bytes | None:
    text = container.get("text")
    if text is None:
        return None
    if not isinstance(text, str):
        raise RecordFieldError(f"{path}.text", f"expected a string, got {type(text).__name__}")
    if container.get("encoding") == "base64":
        try:
            return base64.b64decode(text, validate=True)
        except binascii.Error:
            raise RecordFieldError(
                f"{path}.text", "encoding says base64, but the text is not"
            ) from None
    return text
