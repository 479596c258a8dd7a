"""Azure SDK test-proxy recordings (docs/log-formats.md, "Azure SDK test proxy"): one JSON
document per test, as the Azure SDK Tools Test Proxy writes it (``RecordSession`` /
``RecordEntry``) and the .NET SDKs that record through it or through System.ClientModel's
test framework keep them (openai/openai-dotnet's ``tests/SessionRecords/**/*.json``, the
Azure SDKs' ``assets`` recordings)::

    {"Entries": [{"RequestUri": "https://api.openai.com/v1/chat/completions",
                  "RequestMethod": "POST",
                  "RequestHeaders": {"Content-Type": "application/json", ...},
                  "RequestBody": {...},
                  "StatusCode": 200,
                  "ResponseHeaders": {"Content-Type": "text/event-stream", ...},
                  "ResponseBody": ["event: ...\\n", "data: {...}\\n\\n", ...]}],
     "Variables": {...}}

- Headers map a name to one value, or to a list of values where the message had several.
- A body is written by its side's ``Content-Type``: ``null`` for none, ``[]`` for an empty
  one; for a text type (``text/*``, ``*json``, ``*xml``, form-urlencoded, or a UTF-8
  ``charset``) the JSON value itself where the body parsed as a JSON object, else the text,
  as one string or (text with line breaks: event streams) a list of strings, each ending at
  its line break, to be joined; for any other type the base64 of the bytes.

The time is the response's ``Date`` header (recordings often sanitize it: then none).
``line`` is the entry's 1-based position, ``Entries[i]`` its field path.

Before the test proxy, the Java SDKs recorded through azure-core-test's own recorder
(``RecordedData`` / ``NetworkCallRecord``; azure-sdk-for-java's
``src/test/resources/session-records/*.json`` until 2023)::

    {"networkCallRecords": [{"Method": "POST", "Uri": "https://.../chat/completions?...",
                             "Headers": {"Content-Type": "application/json", ...},
                             "Response": {"StatusCode": "200", "Date": "...",
                                          "Content-Type": "application/json",
                                          "Body": "{...}", ...},
                             "Exception": null}],
     "variables": []}

``Headers`` are the request's, ``Response`` maps the response's headers, its ``StatusCode``
(text) and its ``Body`` (text) in one map of strings. That recorder kept no request body: a
call to a model endpoint is a bad record saying so (its prompt is unknown, so nothing about
it can be predicted); any other call is skipped as no model endpoint.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from cachecast.core.errors import RecordFieldError
from cachecast.logs.http import Exchange, http_date, read_documents
from cachecast.logs.http.endpoints import model_endpoint
from cachecast.logs.http.exchange import decoded_bytes, http_status, listed_headers
from cachecast.logs.sanitize import shown
from cachecast.logs.stream import Item, LogStream

ENTRIES = "Entries"
CALLS = "networkCallRecords"


def is_entry(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("RequestUri"), str)
        and isinstance(value.get("RequestMethod"), str)
        and "StatusCode" in value
    )


def fits(value: Any) -> bool:
    entries = value.get(ENTRIES) if isinstance(value, dict) else None
    return isinstance(entries, list) and bool(entries) and all(map(is_entry, entries[:8]))


def read(stream: LogStream) -> Iterator[Item]:
    missing = ("Entries", "missing: not an Azure SDK test-proxy recording")
    yield from read_documents(
        stream, fits, missing, lambda document: (ENTRIES, document[ENTRIES]), _exchange
    )


def _textual(content_type: str | None) -> bool:
    """The test proxy's ``ContentTypeUtilities.TryGetTextEncoding``: whether it wrote the
    body as text (or JSON) rather than base64."""
    if content_type is None:
        return False
    kind = content_type.lower()
    charset = kind.find("; charset=")
    if charset != -1 and kind[charset + len("; charset=") :].startswith("utf-8"):
        return True
    return kind.startswith(
        ("text/", "application/json", "application/x-www-form-urlencoded")
    ) or kind.endswith(("json", "xml", "-urlencoded"))


def _body(value: Any, headers: dict[str, str], field: str) -> Any:
    if value is None or value == []:
        return None
    if isinstance(value, dict):
        return value  # a JSON object, written as itself
    textual = _textual(headers.get("content-type"))
    if isinstance(value, list):
        if not all(isinstance(part, str) for part in value):
            raise RecordFieldError(field, "expected a list of text lines")
        return "".join(value) if textual else None  # the proxy reads a non-text list as empty
    if not isinstance(value, str):
        raise RecordFieldError(field, f"expected text, lines or a JSON object, got {shown(value)}")
    if textual or not value:
        return value or None
    return decoded_bytes(value, "base64", field)


def _exchange(entry: Any, line: int, where: str) -> Exchange:
    if not is_entry(entry):
        raise RecordFieldError(where, "expected an entry {RequestUri, RequestMethod, StatusCode}")
    request_headers = listed_headers(entry.get("RequestHeaders"))
    response_headers = listed_headers(entry.get("ResponseHeaders"))
    return Exchange(
        line=line,
        where=where,
        method=entry["RequestMethod"],
        url=entry["RequestUri"],
        request_headers=request_headers,
        request_body=_body(entry.get("RequestBody"), request_headers, f"{where}.RequestBody"),
        status=http_status(entry["StatusCode"], f"{where}.StatusCode"),
        response_headers=response_headers,
        response_body=_body(entry.get("ResponseBody"), response_headers, f"{where}.ResponseBody"),
        timestamp=http_date(response_headers.get("date")),
    )


def is_call(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("Method"), str)
        and isinstance(value.get("Uri"), str)
        and isinstance(value.get("Response"), dict)
    )


def fits_calls(value: Any) -> bool:
    calls = value.get(CALLS) if isinstance(value, dict) else None
    return isinstance(calls, list) and bool(calls) and all(map(is_call, calls[:8]))


def read_calls(stream: LogStream) -> Iterator[Item]:
    missing = (CALLS, "missing: not an azure-core-test session record")
    yield from read_documents(
        stream, fits_calls, missing, lambda document: (CALLS, document[CALLS]), _call
    )


def _call(call: Any, line: int, where: str) -> Exchange:
    if not is_call(call):
        raise RecordFieldError(where, "expected a network call record {Method, Uri, Response}")
    if model_endpoint(call["Method"], call["Uri"]) is not None:
        # azure-core-test's NetworkCallRecord has no field for the request body.
        raise RecordFieldError(
            where,
            "no request body: azure-core-test's network call records keep none, so the "
            "prompt of this model call is unknown (re-record through the test proxy, which "
            "keeps RequestBody)",
        )
    response = dict(call["Response"])
    body = response.pop("Body", None)
    status = response.pop("StatusCode", None)
    if not (isinstance(status, str) and status.isdigit() and len(status) <= 3):
        raise RecordFieldError(
            f"{where}.Response.StatusCode", f"expected an HTTP status as text, got {shown(status)}"
        )
    response_headers = listed_headers(response)
    return Exchange(
        line=line,
        where=where,
        method=call["Method"],
        url=call["Uri"],
        request_headers=listed_headers(call.get("Headers")),
        request_body=None,
        status=int(status),
        response_headers=response_headers,
        response_body=body,
        timestamp=http_date(response_headers.get("date")),
    )
