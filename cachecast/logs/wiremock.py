"""WireMock stub mappings (Java WireMock, its standalone recorder and snapshots, and the
clients that write its JSON; WireMock.Net's own model is read by
:mod:`cachecast.logs.wiremock_net`): recorded traffic as a JSON document,
either ``{"mappings": [mapping, ...]}`` or one mapping per file (the recorder writes
``<root>/mappings/*.json``, docs/log-formats.md, "WireMock")::

    {"request": {"method": "POST", "url": "/v1/chat/completions",
                 "bodyPatterns": [{"equalToJson": "{...}", "ignoreExtraElements": true}]},
     "response": {"status": 200, "body": "{...}", "headers": {"Content-Type": "..."}}}

- The request: ``method``, the URL as ``url`` or ``urlPath`` (the recorder's; a pattern,
  ``urlPattern`` / ``urlPathPattern``, is taken as written). The mapping keeps no host: the
  provider is then told by the model. The body is the first body pattern that spells it out:
  ``equalToJson`` (JSON text, or the JSON value itself), ``equalTo`` (text) or
  ``binaryEqualTo`` (base64); a mapping that only matches parts of its body
  (``matchesJsonPath``, ``contains``) has no body to read.
- The response: ``status`` (200 when absent), ``headers`` (a value or a list of values per
  name), and its body as ``body`` (text), ``jsonBody`` (a JSON value), ``base64Body`` or
  ``bodyFileName``: a file under ``__files/`` of the WireMock root, the folder that holds
  ``mappings/`` (else the mapping's own folder). Body files are held with the recording:
  together they are bounded by ``max_document_bytes`` (docs/limits.md), and a name that leads
  out of ``__files`` is refused.

WireMock stores no time: the response's ``Date`` header stands for it, else the response
body's own creation time. ``line`` is the mapping's 1-based position in the file,
``mappings[i]`` its field path (a file of one mapping: line 1, fields from its top).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from cachecast.core.errors import LimitExceededError, Location, RecordFieldError
from cachecast.core.limits import current
from cachecast.logs import wiremock_net
from cachecast.logs.http import Exchange, read_documents
from cachecast.logs.http.exchange import decoded_bytes, http_status, listed_headers
from cachecast.logs.sanitize import shown
from cachecast.logs.stream import Item, LogStream

_URL_KEYS = ("url", "urlPath", "urlPattern", "urlPathPattern")
_REQUEST_ONLY = ("urlPath", "urlPattern", "urlPathPattern", "bodyPatterns", "queryParameters")
_RESPONSE_ONLY = (
    "jsonBody",
    "base64Body",
    "bodyFileName",
    "fixedDelayMilliseconds",
    "transformers",
)
_MAPPING_ONLY = ("uuid", "persistent", "insertionIndex", "scenarioName", "priority")


def is_mapping(value: Any) -> bool:
    """A stub mapping's shape: a request with a method and a URL key of WireMock's, a
    response that is no HAR response (HAR entries have ``content``), no ``startedDateTime``."""
    if not isinstance(value, dict) or "startedDateTime" in value:
        return False
    request, response = value.get("request"), value.get("response")
    if not isinstance(request, dict) or not isinstance(response, dict):
        return False
    if "content" in response or isinstance(request.get("headers"), list):
        return False
    has_url = any(key in request for key in _URL_KEYS)
    return has_url and isinstance(request.get("method"), str)


def _wiremock_only(mapping: dict[str, Any]) -> bool:
    """Keys no other recording has: WireMock's matchers, response bodies and stub metadata
    (a file of one mapping is told from other {request, response} records by them)."""
    request, response = mapping["request"], mapping["response"]
    return (
        any(key in request for key in _REQUEST_ONLY)
        or any(key in response for key in _RESPONSE_ONLY)
        or any(key in mapping for key in _MAPPING_ONLY)
    )


def fits(value: Any) -> bool:
    if isinstance(value, dict) and isinstance(value.get("mappings"), list):
        mappings = value["mappings"]
        return not mappings or any(is_mapping(m) for m in mappings[:8])
    return (is_mapping(value) and _wiremock_only(value)) or wiremock_net.fits(value)


def read(stream: LogStream) -> Iterator[Item]:
    missing = ("mappings", "missing: neither WireMock mappings nor a stub mapping")
    yield from read_documents(stream, fits, missing, _entries, _BodyFiles(stream).exchange)


def _entries(document: Any) -> tuple[str, list[Any]] | None:
    """A document's mappings: WireMock.Net's list, Java's ``mappings``, or None for a file of
    one mapping."""
    if isinstance(document, list):  # WireMock.Net: a list of its mappings
        return "", document
    if "mappings" in document and not is_mapping(document):
        return "mappings", document["mappings"]
    return None


class _BodyFiles:
    """Reads mappings of one recording, and the ``__files`` bodies they name (bounded)."""

    def __init__(self, stream: LogStream) -> None:
        self.stream = stream
        self.read_bytes = 0
        path = Path(stream.path)
        root = next((p.parent for p in path.parents if p.name == "mappings"), path.parent)
        self.folder = root / "__files"

    def exchange(self, mapping: Any, line: int, where: str) -> Exchange:
        if isinstance(mapping, dict) and "Request" in mapping:
            return wiremock_net.exchange(mapping, line, where)
        at = f"{where}." if where else ""
        if not isinstance(mapping, dict):
            raise RecordFieldError(where or "<document>", "expected a mapping {request, response}")
        request, response = mapping.get("request"), mapping.get("response")
        if not isinstance(request, dict):
            raise RecordFieldError(f"{at}request", "missing or not an object")
        if not isinstance(response, dict):
            raise RecordFieldError(f"{at}response", "missing or not an object")
        method = request.get("method")
        if not isinstance(method, str):
            raise RecordFieldError(f"{at}request.method", f"expected a string, got {shown(method)}")
        url = next((request[k] for k in _URL_KEYS if isinstance(request.get(k), str)), None)
        if url is None:
            raise RecordFieldError(f"{at}request.url", "missing (url, urlPath or a pattern)")
        return wiremock_net.stub_exchange(
            line,
            where,
            (method, url, _request_body(request.get("bodyPatterns"), f"{at}request.bodyPatterns")),
            http_status(response.get("status", 200), f"{at}response.status"),
            listed_headers(response.get("headers")),
            self._response_body(response, f"{at}response", line),
        )

    def _response_body(self, response: dict[str, Any], field: str, line: int) -> Any:
        if "jsonBody" in response:
            return wiremock_net.json_body(response["jsonBody"])
        if isinstance(response.get("base64Body"), str):
            return decoded_bytes(response["base64Body"], "base64", f"{field}.base64Body")
        name = response.get("bodyFileName")
        if name is None:
            body = response.get("body")
            if body is not None and not isinstance(body, str):
                raise RecordFieldError(f"{field}.body", f"expected text, got {shown(body)}")
            return body
        if not isinstance(name, str) or not name:
            raise RecordFieldError(f"{field}.bodyFileName", f"expected a file name: {shown(name)}")
        return self._file(name, f"{field}.bodyFileName", line)

    def _file(self, name: str, field: str, line: int) -> bytes:
        folder = os.path.realpath(self.folder)
        target = os.path.realpath(os.path.join(folder, name))
        if os.path.commonpath([folder, target]) != folder:
            raise RecordFieldError(field, f"{name!r} leads out of the __files folder")
        if not os.path.isfile(target):
            raise RecordFieldError(
                field,
                f"{name!r} is not in the __files folder beside the mappings (WireMock keeps"
                " response bodies there: read the mapping where the recorder wrote it; an"
                " upload carries no body files)",
            )
        bound = current().max_document_bytes
        self.read_bytes += os.path.getsize(target)
        if self.read_bytes > bound:
            raise LimitExceededError(
                f"the body files this recording names pass {bound:,} bytes together, over the"
                " limit (setting max_document_bytes; docs/limits.md); refused before reading",
                location=Location(source=self.stream.source, line=line, field=field),
            )
        with open(target, "rb") as handle:
            return handle.read(bound + 1)


def _request_body(patterns: Any, field: str) -> Any:
    """The body a mapping's patterns spell out whole, or None."""
    if not isinstance(patterns, list):
        return None
    for index, pattern in enumerate(patterns):
        if not isinstance(pattern, dict):
            continue
        if "equalToJson" in pattern:
            return wiremock_net.json_body(pattern["equalToJson"])
        if isinstance(pattern.get("equalTo"), str):
            return pattern["equalTo"]
        if isinstance(pattern.get("binaryEqualTo"), str):
            return decoded_bytes(pattern["binaryEqualTo"], "base64", f"{field}[{index}]")
    return None
