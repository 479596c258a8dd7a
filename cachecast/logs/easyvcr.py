"""EasyVCR cassettes (EasyPost's EasyVCR for C# and Java): one JSON document, a list of
interactions (docs/log-formats.md, "EasyVCR").

- C# (Newtonsoft.Json, capitalised keys): ``{"RecordedAt": "2024-...+00:00", "Duration":
  ms, "Request": {"Method", "Uri", "Body", "RequestHeaders", "ContentHeaders",
  "BodyContentType"}, "Response": {"Status": {"Code", "Message"}, "Body",
  "ResponseHeaders", "ContentHeaders", "HttpVersion"}}``. Headers map a name to one value;
  the content headers (Content-Type, Content-Encoding) are kept apart and read with the
  others. ``Code`` is .NET's ``HttpStatusCode``: a number, or its name (``"OK"``) where
  the writer spells enums as text.
- Java (Gson, field names): ``{"recordedAt": epoch seconds, "duration", "request": {"method",
  "uri", "body", "headers"}, "response": {"status": {"code", "message"}, "body", "headers",
  "httpVersion", "uri"}}``; headers map a name to a list of values.

Bodies are the text the client read (already decoded). ``RecordedAt`` / ``recordedAt`` is
the time, else the response's ``Date`` header. ``line`` is the interaction's 1-based position,
``[i]`` its field path.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from http import HTTPStatus
from typing import Any

from cachecast.core.errors import RecordFieldError
from cachecast.logs.canonical import iso_seconds
from cachecast.logs.http import Exchange, http_date, read_documents
from cachecast.logs.http.exchange import http_status, listed_headers
from cachecast.logs.stream import Item, LogStream

_WORD_START = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def _key(value: dict[str, Any], name: str) -> Any:
    """``value``'s ``Name`` (C#) or ``name`` (Java)."""
    if name in value:
        return value[name]
    return value.get(name[0].lower() + name[1:])


def is_interaction(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(_key(value, "Request"), dict)
        and isinstance(_key(value, "Response"), dict)
        and _key(value, "RecordedAt") is not None
    )


def fits(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(map(is_interaction, value[:8]))


def read(stream: LogStream) -> Iterator[Item]:
    missing = ("<document>", "missing: not a list of EasyVCR interactions")
    yield from read_documents(stream, fits, missing, lambda document: ("", document), _exchange)


def _status(value: Any, field: str) -> int:
    code = _key(value, "Code") if isinstance(value, dict) else None
    if isinstance(code, str) and not code.isdigit():
        name = _WORD_START.sub("_", code).upper()  # .NET's "TooManyRequests"
        if name in HTTPStatus.__members__:
            return int(HTTPStatus[name])
    if isinstance(code, str) and code.isdigit() and len(code) <= 3:
        code = int(code)
    return http_status(code, field)


def _headers(side: dict[str, Any], own: str) -> dict[str, str]:
    headers = listed_headers(_key(side, "ContentHeaders"))
    headers.update(listed_headers(_key(side, own) or _key(side, "Headers")))
    return headers


def _time(value: Any, field: str) -> float | None:
    """C#'s ISO 8601 DateTimeOffset, or Java's epoch seconds."""
    return None if value is None else iso_seconds(value, field)


def _exchange(interaction: Any, line: int, where: str) -> Exchange:
    if not is_interaction(interaction):
        raise RecordFieldError(where, "expected an interaction {RecordedAt, Request, Response}")
    request, response = _key(interaction, "Request"), _key(interaction, "Response")
    java = "request" in interaction
    at = {name: f"{where}.{name.lower() if java else name}" for name in ("Request", "Response")}
    method, uri = _key(request, "Method"), _key(request, "Uri")
    if not isinstance(method, str) or not isinstance(uri, str):
        raise RecordFieldError(at["Request"], "needs a method and a uri")
    status_field = f"{at['Response']}.{'status.code' if java else 'Status.Code'}"
    status = _status(_key(response, "Status"), status_field)
    response_headers = _headers(response, "ResponseHeaders")
    recorded = _time(_key(interaction, "RecordedAt"), f"{where}.RecordedAt")
    return Exchange(
        line=line,
        where=where,
        method=method,
        url=uri,
        request_headers=_headers(request, "RequestHeaders"),
        request_body=_key(request, "Body") or None,
        status=status,
        response_headers=response_headers,
        response_body=_key(response, "Body") or None,
        timestamp=recorded if recorded is not None else http_date(response_headers.get("date")),
    )
