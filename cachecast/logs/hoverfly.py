"""Hoverfly simulations (SpectoLabs/hoverfly, its Java and Python bindings): captured traffic
exported as one JSON document ``{"data": {"pairs": [{request, response}]}, "meta":
{"schemaVersion"}}`` (docs/log-formats.md, "Hoverfly"); the v1 records export,
``{"data": [{request, response}]}``, is read too.

- The request's fields (``method``, ``scheme``, ``destination`` the host, ``path``,
  ``query``, ``body``) are written by schema v5+ as lists of matchers, ``[{"matcher":
  "exact", "value": "..."}]`` (the capture writes ``exact``, or ``json`` for a JSON body); by
  v3/v4 as ``{"exactMatch": "..."}`` (or ``jsonMatch``); by v1/v2 as plain strings. The value
  of the first literal matcher (exact, json, xml) is the field; a field only matched by a
  pattern (glob, regex, jsonpath) is not recorded. ``query`` is text (v1-v4, v5's
  ``deprecatedQuery``) or, from v5.1, a mapping of names to matchers.
- The response: ``status``, ``headers`` (name -> list of values), ``body``, which is base64
  when ``encodedBody`` is true (bytes Hoverfly could not keep as text, a gzip body).

Hoverfly stores no time: the response's ``Date`` header stands for it, else the response
body's own creation time. ``line`` is the pair's 1-based position, ``data.pairs[i]`` its
field path.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

from cachecast.core.errors import RecordFieldError
from cachecast.logs.http import Exchange, http_date, read_documents
from cachecast.logs.http.exchange import decoded_bytes, http_status, joined_url, listed_headers
from cachecast.logs.sanitize import shown
from cachecast.logs.stream import Item, LogStream

_LITERAL = ("exact", "json", "xml")
_LITERAL_V3 = ("exactMatch", "jsonMatch", "xmlMatch")


def _pairs_of(value: Any) -> Any:
    data = value.get("data") if isinstance(value, dict) else None
    return data.get("pairs") if isinstance(data, dict) else data


def _is_pair(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("request"), dict)
        and isinstance(value.get("response"), dict)
    )


def fits(value: Any) -> bool:
    pairs = _pairs_of(value)
    if not isinstance(pairs, list):
        return False
    if isinstance(value["data"], dict):  # data.pairs: Hoverfly's own key
        return not pairs or any(_is_pair(pair) for pair in pairs[:8])
    # the v1 records export: a list under data, of pairs whose response says encodedBody
    return bool(pairs) and all(
        _is_pair(pair) and "encodedBody" in pair["response"] for pair in pairs[:8]
    )


def read(stream: LogStream) -> Iterator[Item]:
    missing = ("data.pairs", "missing: not a Hoverfly simulation")
    yield from read_documents(stream, fits, missing, _pairs, _exchange)


def _pairs(document: dict[str, Any]) -> tuple[str, list[Any]]:
    if isinstance(document["data"], dict):
        return "data.pairs", document["data"]["pairs"]
    return "data", document["data"]


def literal(value: Any) -> str | None:
    """The literal value a request field holds in any schema version, else None."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return next((value[k] for k in _LITERAL_V3 if isinstance(value.get(k), str)), None)
    if isinstance(value, list):
        for matcher in value:
            if isinstance(matcher, str):  # v1/v2 headers: a list of values
                return matcher
            if (
                isinstance(matcher, dict)
                and str(matcher.get("matcher", "")).lower() in _LITERAL
                and isinstance(matcher.get("value"), str)
            ):
                return str(matcher["value"])
    return None


def _query(request: dict[str, Any]) -> str:
    value = request.get("query")
    if isinstance(value, dict) and not any(key in value for key in _LITERAL_V3):
        parts = []
        for name, matchers in value.items():
            text = literal(matchers)
            if text is not None:
                parts.append(f"{quote(str(name))}={quote(text)}")
        return "&".join(parts)
    return literal(value) or literal(request.get("deprecatedQuery")) or ""


def _headers(value: Any) -> dict[str, str]:
    headers: dict[str, str] = {}
    if isinstance(value, dict):
        for name, values in value.items():
            text = literal(values)
            if text is not None:
                headers[str(name).lower()] = text
    return headers


def _exchange(pair: Any, line: int, where: str) -> Exchange:
    if not _is_pair(pair):
        raise RecordFieldError(where, "expected a pair {request, response}")
    request, response = pair["request"], pair["response"]
    method = literal(request.get("method"))
    if method is None:
        raise RecordFieldError(f"{where}.request.method", "missing or not a literal value")
    scheme = literal(request.get("scheme")) or "https"
    host = literal(request.get("destination")) or "localhost"
    path = literal(request.get("path")) or "/"
    query = _query(request)
    status = http_status(response.get("status"), f"{where}.response.status")
    headers = listed_headers(response.get("headers"))
    body = response.get("body")
    if body is not None and not isinstance(body, str):
        raise RecordFieldError(f"{where}.response.body", f"expected text, got {shown(body)}")
    if response.get("encodedBody") is True and body:
        body = decoded_bytes(body, "base64", f"{where}.response.body")
    request_body = literal(request.get("body"))
    return Exchange(
        line=line,
        where=where,
        method=method,
        url=joined_url(f"{scheme}://{host}", path) + (f"?{query}" if query else ""),
        request_headers=_headers(request.get("headers")),
        request_body=request_body or None,
        status=status,
        response_headers=headers,
        response_body=body,
        timestamp=http_date(headers.get("date")),
    )
