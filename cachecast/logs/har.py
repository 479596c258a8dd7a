"""HAR 1.2 files (browser dev tools, mitmproxy, Charles, most proxies):
``{"log": {"entries": [{startedDateTime, request: {method, url, headers, postData: {text}},
response: {status, headers, content: {text, encoding}}}]}}``.

Per the HAR 1.2 specification ``content.text`` is the decoded body (or base64 with
``"encoding": "base64"``); ``startedDateTime`` is the timestamp. The file is one JSON
document, read whole under :data:`~cachecast.logs.stream.MAX_DOCUMENT_BYTES`; ``line`` is
the entry's position. The exchanges are read by :mod:`cachecast.logs.http`.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator
from typing import Any

from cachecast.core.errors import RecordFieldError
from cachecast.logs.canonical import iso_seconds
from cachecast.logs.errors import LogRecordError
from cachecast.logs.http import Exchange, exchanges_of, read_exchanges
from cachecast.logs.stream import Item, LogStream, documents


def fits(value: Any) -> bool:
    log = value.get("log") if isinstance(value, dict) else None
    return isinstance(log, dict) and isinstance(log.get("entries"), list)


def read(stream: LogStream) -> Iterator[Item]:
    for line, document in documents(stream, fits, ("log.entries", "missing: not a HAR document")):
        if isinstance(document, LogRecordError):
            yield line, document
            continue
        whole = stream.whole_document
        entries = (
            (index + 1 if whole else line, f"log.entries[{index}]", entry)
            for index, entry in enumerate(document["log"]["entries"])
        )
        yield from read_exchanges(stream, exchanges_of(stream, entries, _exchange))


def _exchange(entry: Any, line: int, where: str) -> Exchange:
    if not isinstance(entry, dict):
        raise RecordFieldError(where, "expected an entry object")
    request = entry.get("request")
    response = entry.get("response")
    if not isinstance(request, dict):
        raise RecordFieldError(f"{where}.request", "missing or not an object")
    method, url = request.get("method"), request.get("url")
    if not isinstance(method, str) or not isinstance(url, str):
        raise RecordFieldError(f"{where}.request", "needs method and url")
    post = request.get("postData")
    request_body = _text(post, f"{where}.request.postData") if isinstance(post, dict) else None
    status = None
    response_headers: dict[str, str] = {}
    response_body = None
    if isinstance(response, dict):
        status = response.get("status")
        if status is not None and (not isinstance(status, int) or isinstance(status, bool)):
            raise RecordFieldError(
                f"{where}.response.status", f"expected an integer, got {status!r}"
            )
        response_headers = _headers(response.get("headers"))
        content = response.get("content")
        if isinstance(content, dict):
            response_body = _text(content, f"{where}.response.content")
            if "content-type" not in response_headers and isinstance(content.get("mimeType"), str):
                response_headers["content-type"] = content["mimeType"]
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
        timestamp=None if started is None else iso_seconds(started, f"{where}.startedDateTime"),
    )


def _headers(value: Any) -> dict[str, str]:
    headers: dict[str, str] = {}
    if isinstance(value, list):
        for header in value:
            if isinstance(header, dict) and isinstance(header.get("name"), str):
                headers.setdefault(header["name"].lower(), str(header.get("value", "")))
    return headers


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
