"""nock recordings (Node.js: ``nock.back`` fixtures, ``nock.recorder.rec({output_objects:
true})``): one JSON document, a list of definitions (docs/log-formats.md, "nock")::

    [{"scope": "https://api.openai.com:443", "method": "POST", "path": "/v1/chat/completions",
      "body": {...}, "status": 200, "response": {...}, "rawHeaders": [...],
      "reqheaders": {...}, "responseIsBinary": false}]

- ``scope`` is the origin (with its port), ``path`` the path and query; the URL is the two.
- ``body``: the request body, parsed JSON where it was JSON, else its text ("" for none).
- ``response``: parsed JSON, text (a server-sent-events stream stays text), or the raw bytes
  as hexadecimal where nock could not keep them as text: one hex string with
  ``responseIsBinary: true`` (nock 13+), or a list of hex chunks (older nock, for a gzip
  response). Hex is refused before it is decoded when it would decode past
  ``max_decompressed_bytes``; gzip bytes are inflated by ``cachecast.logs.http`` (bounded).
- ``rawHeaders``: the response headers as a flat ``[name, value, name, value...]`` list (or,
  in some versions, a mapping); ``reqheaders`` the request headers where recorded.

nock stores no time: the response's ``Date`` header stands for it, else the response body's
own creation time. ``line`` is the definition's 1-based position, ``[i]`` its field path.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from cachecast.core.errors import RecordFieldError
from cachecast.logs.http import Exchange, http_date, read_documents
from cachecast.logs.http.exchange import (
    decoded_bytes,
    http_status,
    is_hex,
    joined_url,
    listed_headers,
)
from cachecast.logs.sanitize import shown
from cachecast.logs.stream import Item, LogStream

_KEYS = ("scope", "method", "status")


def is_definition(value: Any) -> bool:
    return isinstance(value, dict) and all(key in value for key in _KEYS) and "path" in value


def fits(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(map(is_definition, value[:8]))


def read(stream: LogStream) -> Iterator[Item]:
    missing = ("<document>", "missing: not a list of nock definitions {scope, method, path}")
    yield from read_documents(stream, fits, missing, lambda document: ("", document), _exchange)


def _exchange(definition: Any, line: int, where: str) -> Exchange:
    if not is_definition(definition):
        raise RecordFieldError(where, "expected a definition {scope, method, path, status}")
    scope, path, method = definition["scope"], definition["path"], definition["method"]
    for key, value in (("scope", scope), ("path", path), ("method", method)):
        if not isinstance(value, str):
            raise RecordFieldError(f"{where}.{key}", f"expected a string, got {shown(value)}")
    status = http_status(definition["status"], f"{where}.status")
    headers = _raw_headers(definition.get("rawHeaders"), f"{where}.rawHeaders")
    body = definition.get("body")
    return Exchange(
        line=line,
        where=where,
        method=method,
        url=joined_url(scope, path),
        request_headers=listed_headers(definition.get("reqheaders")),
        request_body=None if body == "" else body,
        status=status,
        response_headers=headers,
        response_body=_response(definition, f"{where}.response"),
        timestamp=http_date(headers.get("date")),
    )


def _raw_headers(value: Any, field: str) -> dict[str, str]:
    if value is None or isinstance(value, dict):
        return listed_headers(value)
    if not isinstance(value, list) or len(value) % 2:
        raise RecordFieldError(field, "expected a list of names and values, in pairs")
    headers: dict[str, str] = {}
    for name, text in zip(value[::2], value[1::2], strict=True):
        if isinstance(name, str) and isinstance(text, str):
            headers.setdefault(name.lower(), text)
    return headers


def _response(definition: dict[str, Any], field: str) -> Any:
    value = definition.get("response")
    if (
        isinstance(value, list)
        and value
        and all(isinstance(chunk, str) and is_hex(chunk) for chunk in value)
    ):
        # older nock: a gzip response as a list of hex chunks
        return decoded_bytes("".join(value), "hex", field)
    if definition.get("responseIsBinary") is True:
        if not isinstance(value, str):
            raise RecordFieldError(field, f"responseIsBinary, but not hex text: {shown(value)}")
        return decoded_bytes(value, "hex", field)
    return value
