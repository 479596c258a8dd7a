"""govcr cassettes (github.com/seborama/govcr, every major version): one JSON document,
``{"Name"?, "Tracks": [{Request, Response, ErrType, ErrMsg, UUID?}]}``, written by Go's
``encoding/json`` from govcr's own structs (docs/log-formats.md, "govcr"):

- ``Request``: ``Method``, ``URL``, ``Header`` (name -> list of values), ``Body``. ``URL`` is
  Go's ``url.URL`` struct (``Scheme``, ``Host``, ``Path``, ``RawPath``, ``RawQuery``,
  ``Opaque``...), in v1-v4 as a value and from v5 as a pointer (null when absent); a plain
  string is read too. ``Body`` is a Go ``[]byte``: base64 text (null when empty).
- ``Response``: ``Status`` ("200 OK"), ``StatusCode``, ``Header``, ``Body`` (base64 again),
  ``Proto``, ``ContentLength``, ``TLS``...; null where the call failed in transport.
- ``ErrType`` / ``ErrMsg``: a transport error (v1-v4 write "" for none, v5+ null). Such a
  track got no response and was not billed.

govcr stores no time: the response's ``Date`` header stands for it, else the response body's
own creation time (``cachecast.logs.http``). ``line`` is the track's 1-based position in
the cassette (its ``entry``), ``Tracks[i]`` its field path. A ``$ENC$`` cassette (govcr v5+
encryption) cannot be read without its key: detection says so. A gzip cassette
(``.json.gz``, govcr's "long play") is inflated like every compressed log
(``cachecast.logs.compressed``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from cachecast.core.errors import RecordFieldError
from cachecast.logs.http import Exchange, http_date, read_documents
from cachecast.logs.http.exchange import decoded_bytes, http_status, listed_headers
from cachecast.logs.sanitize import shown
from cachecast.logs.stream import Item, LogStream

ENCRYPTED_HEADER = "$ENC$"  # govcr v5+: the marker an encrypted cassette starts with


def fits(value: Any) -> bool:
    if not isinstance(value, dict) or not isinstance(value.get("Tracks"), list):
        return False
    tracks = value["Tracks"]
    return not tracks or any(
        isinstance(track, dict) and isinstance(track.get("Request"), dict) for track in tracks[:8]
    )


def read(stream: LogStream) -> Iterator[Item]:
    missing = ("Tracks", "missing: not a govcr cassette")
    yield from read_documents(stream, fits, missing, _tracks, _exchange)


def _tracks(document: dict[str, Any]) -> tuple[str, list[Any]]:
    return "Tracks", document["Tracks"]


def _exchange(track: Any, line: int, where: str) -> Exchange:
    if not isinstance(track, dict):
        raise RecordFieldError(where, "expected a track object {Request, Response}")
    request = track.get("Request")
    if not isinstance(request, dict):
        raise RecordFieldError(f"{where}.Request", "missing or not an object")
    method = request.get("Method")
    if not isinstance(method, str) or not method:
        raise RecordFieldError(f"{where}.Request.Method", f"expected a method, got {shown(method)}")
    url = _url(request.get("URL"), f"{where}.Request.URL")
    response = track.get("Response")
    error_type = track.get("ErrType")
    status: int | None = None
    response_headers: dict[str, str] = {}
    response_body: Any = None
    if isinstance(response, dict):
        status = _status(response, f"{where}.Response")
        response_headers = listed_headers(response.get("Header"))
        response_body = _bytes(response.get("Body"), f"{where}.Response.Body")
    elif response is not None:
        raise RecordFieldError(f"{where}.Response", "expected an object or null")
    if error_type or response is None:
        # A transport error (ErrType, v1-v4 write "" for none) or no response: nothing
        # reached the provider's billing; status 0 is the "no response" mark of the readers.
        status = 0
    return Exchange(
        line=line,
        where=where,
        method=method,
        url=url,
        request_headers=listed_headers(request.get("Header")),
        request_body=_bytes(request.get("Body"), f"{where}.Request.Body"),
        status=status,
        response_headers=response_headers,
        response_body=response_body,
        timestamp=http_date(response_headers.get("date")),
    )


def _url(value: Any, field: str) -> str:
    """Go's ``url.URL`` as JSON (``Scheme``, ``Opaque``, ``Host``, ``Path``, ``RawPath``,
    ``RawQuery``), or a URL string."""
    if isinstance(value, str) and value:
        return value
    if not isinstance(value, dict):
        raise RecordFieldError(field, f"expected a URL object or string, got {shown(value)}")
    parts = {key: value.get(key) for key in ("Scheme", "Opaque", "Host", "Path", "RawPath")}
    query = value.get("RawQuery")
    for key, part in [*parts.items(), ("RawQuery", query)]:
        if part is not None and not isinstance(part, str):
            raise RecordFieldError(f"{field}.{key}", f"expected a string, got {shown(part)}")
    scheme, host = parts["Scheme"] or "", parts["Host"] or ""
    if not host and not parts["Opaque"]:
        raise RecordFieldError(f"{field}.Host", "missing: the URL names no host")
    if parts["Opaque"]:
        text = f"{scheme}:{parts['Opaque']}"
    else:
        path = parts["RawPath"] or parts["Path"] or ""
        text = f"{scheme or 'https'}://{host}{path}"
    return f"{text}?{query}" if query else text


def _status(response: dict[str, Any], where: str) -> int | None:
    code = response.get("StatusCode")
    return None if code is None else http_status(code, f"{where}.StatusCode")


def _bytes(value: Any, field: str) -> bytes | str | None:
    """A Go ``[]byte``: base64 text (bounded before it is decoded). Text that cannot be
    base64 but is JSON (a cassette edited by hand) is taken as it stands."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise RecordFieldError(field, f"expected base64 text, got {type(value).__name__}")
    if value.lstrip().startswith(("{", "[")):
        return value  # '{' and '[' are not base64: the body was written as text
    return decoded_bytes(value, "base64", field)
