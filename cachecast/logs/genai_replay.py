"""Google Gen AI SDK replay files (docs/log-formats.md, "Google Gen AI SDK replays"): one
JSON document per test, as the SDKs' replay clients write them (googleapis/js-genai's
``test/system/recordings/*.json``; googleapis/python-genai's ``ReplayApiClient``, whose files
live under ``GOOGLE_GENAI_REPLAYS_DIRECTORY``)::

    {"recordID": "Chats_Tests_...",                     # python-genai: "replay_id"
     "interactions": [
       {"request": {"method": "POST",
                    "url": "/v1beta/models/gemini-2.0-flash:generateContent",
                    "headers": {...},
                    "bodySegments": [{"contents": [...], ...}],   # python: body_segments
                    "serverAddress": "generativelanguage.googleapis.com",
                    "port": 443, "protocol": "https", "previousRequest": "..."},
        "shaSum": "...",
        "response": {"statusCode": 200,                           # python: status_code
                     "headers": {"Date": "...", ...},
                     "bodySegments": [{"candidates": [...], "usageMetadata": {...}}]}}]}

- The request's one body segment is the JSON body as sent.
- The response's body segments are its JSON objects: one for ``generateContent``, one per
  streamed chunk for ``streamGenerateContent`` (the server-sent events' data, in order);
  none for an empty or binary body (python-genai keeps bytes apart, in ``byte_segments``).
- js-genai keeps the URL's path and the host apart (``serverAddress``, ``port``,
  ``protocol``); python-genai writes the URL with its front replaced by a placeholder
  (``{MLDEV_URL_PREFIX}/models/...`` for the Gemini API, ``{VERTEX_URL_PREFIX}/publishers/...``
  for Vertex AI), read here as the service it stands for. Both SDKs may redact the project,
  the location or the model in the path (``REDACTED``): a redacted model is read as the one
  the response names (its ``modelVersion``), where it names one.

The time is the response's ``Date`` header (python-genai drops it when it records: then
none). ``line`` is the interaction's 1-based position, ``interactions[i]`` its field path.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from cachecast.core.errors import RecordFieldError
from cachecast.logs.http import Exchange, http_date, read_documents
from cachecast.logs.http.exchange import http_status, listed_headers
from cachecast.logs.sanitize import shown
from cachecast.logs.stream import Item, LogStream

INTERACTIONS = "interactions"
# The replay's name: js-genai's spelling, python-genai's field, and its camel-case alias.
_NAMES = ("recordID", "replay_id", "replayId")
_SEGMENTS = ("bodySegments", "body_segments")
_STATUS = ("statusCode", "status_code")
# python-genai's placeholders for the redacted front of a URL (its ``_redact_request_url``):
# the Gemini API's host and version, and Vertex AI's host, version, project and location.
_PREFIXES = {
    "{MLDEV_URL_PREFIX}": "https://generativelanguage.googleapis.com/v1beta",
    "{VERTEX_URL_PREFIX}": "https://aiplatform.googleapis.com/v1/projects/REDACTED/locations/REDACTED",
}
_DEFAULT_PORTS = {"https": 443, "http": 80}
_REDACTED_MODEL = "/models/REDACTED:"


def _segments_key(value: dict[str, Any]) -> str | None:
    return next((key for key in _SEGMENTS if isinstance(value.get(key), list)), None)


def is_interaction(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    request, response = value.get("request"), value.get("response")
    return (
        isinstance(request, dict)
        and isinstance(response, dict)
        and isinstance(request.get("url"), str)
        and _segments_key(request) is not None
    )


def fits(value: Any) -> bool:
    if not isinstance(value, dict) or not any(isinstance(value.get(n), str) for n in _NAMES):
        return False
    interactions = value.get(INTERACTIONS)
    return (
        isinstance(interactions, list)
        and bool(interactions)
        and all(map(is_interaction, interactions[:8]))
    )


def read(stream: LogStream) -> Iterator[Item]:
    missing = (INTERACTIONS, "missing: not a Google Gen AI SDK replay file")
    yield from read_documents(
        stream, fits, missing, lambda document: (INTERACTIONS, document[INTERACTIONS]), _exchange
    )


def _url(request: dict[str, Any], field: str) -> str:
    url: str = request["url"]
    for placeholder, front in _PREFIXES.items():
        if url.startswith(placeholder):
            return front + url[len(placeholder) :]
    if "://" in url:
        return url
    host = request.get("serverAddress")
    if not isinstance(host, str) or not host:
        return url  # a path alone: the endpoint is still told by it (``:generateContent``)
    protocol = request.get("protocol")
    scheme = protocol if isinstance(protocol, str) and protocol else "https"
    port = request.get("port")
    if port is not None and (not isinstance(port, int) or isinstance(port, bool)):
        raise RecordFieldError(f"{field}.port", f"expected a port number, got {shown(port)}")
    authority = host if port in (None, _DEFAULT_PORTS.get(scheme)) else f"{host}:{port}"
    return f"{scheme}://{authority}" + (url if url.startswith("/") else f"/{url}")


def _request_body(request: dict[str, Any], field: str) -> Any:
    key = _segments_key(request)
    segments = request[key] if key else []
    if not segments:
        return None
    if len(segments) > 1:
        # Both clients write a request's body as its one segment.
        raise RecordFieldError(f"{field}.{key}", f"expected one body segment, got {len(segments)}")
    return segments[0]


def _response_body(response: dict[str, Any], streamed: bool, field: str) -> Any:
    key = _segments_key(response)
    if key is None:
        return None
    segments: list[Any] = response[key]
    for index, segment in enumerate(segments):
        if not isinstance(segment, dict):
            raise RecordFieldError(
                f"{field}.{key}[{index}]", f"expected a JSON object, got {shown(segment)}"
            )
    if not segments or segments == [{}]:
        return None  # python-genai replays ``{}`` as an empty body
    if streamed or len(segments) > 1:
        return list(segments)  # the stream's chunks, as its server-sent events' data
    return segments[0]


def _exchange(entry: Any, line: int, where: str) -> Exchange:
    if not is_interaction(entry):
        raise RecordFieldError(
            where, "expected an interaction {request: {url, bodySegments}, response}"
        )
    request: dict[str, Any] = entry["request"]
    response: dict[str, Any] = entry["response"]
    url = _url(request, f"{where}.request")
    status_key = next((key for key in _STATUS if key in response), None)
    # python-genai's ReplayResponse defaults the status to 200 when it is not written.
    status = (
        200
        if status_key is None
        else http_status(response[status_key], f"{where}.response.{status_key}")
    )
    method = request.get("method")
    response_headers = listed_headers(response.get("headers"))
    body = _response_body(
        response, ":streamGenerateContent" in url or "alt=sse" in url, f"{where}.response"
    )
    if _REDACTED_MODEL in url:
        # js-genai redacts the model of some tests' URLs; the response names the model that
        # served it (``modelVersion``, https://ai.google.dev/api/generate-content#response-body).
        first = body[0] if isinstance(body, list) else body
        served = first.get("modelVersion") if isinstance(first, dict) else None
        if isinstance(served, str) and served and "/" not in served and ":" not in served:
            url = url.replace(_REDACTED_MODEL, f"/models/{served}:", 1)
    return Exchange(
        line=line,
        where=where,
        # Both clients always write the method; the SDKs send every model call as a POST.
        method=method if isinstance(method, str) else "POST",
        url=url,
        request_headers=listed_headers(request.get("headers")),
        request_body=_request_body(request, f"{where}.request"),
        status=status,
        response_headers=response_headers,
        response_body=body,
        timestamp=http_date(response_headers.get("date")),
    )
