"""WireMock.Net's own mapping model (C#: what its recorder, ``SaveStaticMappings`` and the
``__admin/mappings`` API write), read by :mod:`cachecast.logs.wiremock` beside Java
WireMock's (docs/log-formats.md, "WireMock")::

    {"Guid": "...", "Request": {"Path": {"Matchers": [{"Name": "ExactMatcher",
     "Pattern": "/v1/chat/completions"}]}, "Methods": ["POST"],
     "Body": {"Matcher": {"Name": "JsonMatcher", "Pattern": {...}}}},
     "Response": {"StatusCode": 200, "Headers": {...}, "BodyAsJson": {...}}}

- The path: ``Path`` (or ``Url``) as text or as matchers, the first ``ExactMatcher`` or
  ``WildcardMatcher`` pattern; the method: the first of ``Methods``.
- The request body: ``Body.Matcher`` (or the first of ``Body.Matchers``) that spells it whole:
  ``JsonMatcher`` / ``ExactMatcher`` / ``ExactObjectMatcher`` (a JSON value or text).
- The response: ``StatusCode`` (a number or its digits; 200 when absent), ``Headers`` (a value
  or a list per name), ``BodyAsJson``, ``Body`` (text) or ``BodyAsBytes`` (base64).
  ``BodyAsFile`` names a file anywhere on the recording machine: not read (refused naming the
  field).

A file holds one mapping or a JSON list of them.
"""

from __future__ import annotations

from typing import Any

import orjson

from cachecast.core.errors import RecordFieldError
from cachecast.logs.http import Exchange, http_date
from cachecast.logs.http.exchange import decoded_bytes, http_status, joined_url, listed_headers
from cachecast.logs.sanitize import int_text, shown

_PATH_MATCHERS = ("ExactMatcher", "WildcardMatcher")
_BODY_MATCHERS = ("JsonMatcher", "ExactMatcher", "ExactObjectMatcher")


def is_mapping(value: Any) -> bool:
    """WireMock.Net's shape: ``Request`` with ``Path``, ``Url`` or ``Methods``, and a
    ``Response`` (EasyVCR's interactions, also capitalised, carry ``Method`` and ``Uri``)."""
    if not isinstance(value, dict) or "RecordedAt" in value:
        return False
    request, response = value.get("Request"), value.get("Response")
    return (
        isinstance(request, dict)
        and isinstance(response, dict)
        and any(key in request for key in ("Path", "Url", "Methods"))
    )


def fits(value: Any) -> bool:
    if isinstance(value, list):
        return bool(value) and all(map(is_mapping, value[:8]))
    return is_mapping(value)


def _pattern(value: Any, names: tuple[str, ...]) -> Any:
    """The pattern of the first literal matcher in ``value`` ({Matcher} or {Matchers}), or
    ``value`` itself where it is text."""
    if isinstance(value, str):
        return value
    if not isinstance(value, dict):
        return None
    matchers = value.get("Matchers")
    candidates = [value.get("Matcher"), *(matchers if isinstance(matchers, list) else [])]
    for matcher in candidates:
        if isinstance(matcher, dict) and matcher.get("Name") in names and "Pattern" in matcher:
            return matcher["Pattern"]
    return None


def json_body(value: Any) -> Any:
    """A body WireMock holds as a JSON value: objects and lists as they are (the readers take
    them parsed), any other value as its JSON text."""
    return value if isinstance(value, str | dict | list) else orjson.dumps(value).decode()


def stub_exchange(
    line: int,
    where: str,
    request: tuple[str, str, Any],
    status: int,
    headers: dict[str, str],
    response_body: Any,
) -> Exchange:
    """A mapping of either model as an exchange; ``request`` is (method, path, body). No
    host is kept: a local origin, so that the path is read as a path; no time either, but
    the response's ``Date`` header."""
    method, path, body = request
    return Exchange(
        line=line,
        where=where,
        method=method,
        url=joined_url("http://localhost", path),
        request_headers={},
        request_body=body,
        status=status,
        response_headers=headers,
        response_body=response_body,
        timestamp=http_date(headers.get("date")),
    )


def _status(value: Any, field: str) -> int:
    if value is None:
        return 200  # WireMock.Net's default
    if isinstance(value, str) and value.strip().isdigit():
        value = int_text(value, field)
    return http_status(value, field)


def exchange(mapping: Any, line: int, where: str) -> Exchange:
    at = f"{where}." if where else ""
    if not is_mapping(mapping):
        raise RecordFieldError(where or "<document>", "expected a mapping {Request, Response}")
    request, response = mapping["Request"], mapping["Response"]
    methods = request.get("Methods")
    method = methods[0] if isinstance(methods, list) and methods else None
    if not isinstance(method, str):
        raise RecordFieldError(f"{at}Request.Methods", f"expected a method, got {shown(methods)}")
    path = _pattern(request.get("Path"), _PATH_MATCHERS)
    if not isinstance(path, str):
        path = _pattern(request.get("Url"), _PATH_MATCHERS)
    if not isinstance(path, str):
        raise RecordFieldError(f"{at}Request.Path", "no exact path (ExactMatcher or text)")
    body = _pattern(request.get("Body"), _BODY_MATCHERS)
    return stub_exchange(
        line,
        where,
        (method, path, None if body is None else json_body(body)),
        _status(response.get("StatusCode"), f"{at}Response.StatusCode"),
        listed_headers(response.get("Headers")),
        _response_body(response, f"{at}Response"),
    )


def _response_body(response: dict[str, Any], field: str) -> Any:
    if "BodyAsJson" in response:
        return json_body(response["BodyAsJson"])
    if isinstance(response.get("BodyAsBytes"), str):
        return decoded_bytes(response["BodyAsBytes"], "base64", f"{field}.BodyAsBytes")
    if response.get("BodyAsFile") is not None:
        raise RecordFieldError(
            f"{field}.BodyAsFile", "a file elsewhere on the recording machine: not read"
        )
    body = response.get("Body")
    if body is not None and not isinstance(body, str):
        raise RecordFieldError(f"{field}.Body", f"expected text, got {shown(body)}")
    return body
