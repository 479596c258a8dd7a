"""moscaFetch records (Node.js: KaibanJS's fetch recorder, ``tests/utils/moscaFetch``,
whose ``getRecords()`` its tests keep as ``*.requests.json``): one JSON document, a list of
the calls that went through ``fetch`` (docs/log-formats.md, "moscaFetch")::

    [{"url": "https://api.openai.com/v1/chat/completions", "method": "POST",
      "body": {...}, "response": {...}}]

- ``url``: the URL passed to ``fetch``; ``method`` upper-cased (GET where none was given).
- ``body``: the request body parsed as JSON, its text where it was not JSON; absent where
  the call sent none.
- ``response``: the response parsed as JSON (moscaFetch keeps no call whose response is not
  JSON, so no streamed reply is recorded).

moscaFetch writes no status, no headers and no time (``JSON.stringify(records, null, 2)``):
the response body's own creation time stands for the time, a call to another service (a
search tool) is skipped as any non-model call is. ``line`` is the call's 1-based position,
``[i]`` its field path.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from cachecast.core.errors import RecordFieldError
from cachecast.logs.http import Exchange, read_documents
from cachecast.logs.sanitize import shown
from cachecast.logs.stream import Item, LogStream

_REQUIRED = frozenset(("url", "method", "response"))
# Every key moscaFetch writes: a record with any other key is some other recorder's.
_KEYS = _REQUIRED | {"body"}


def is_record(value: Any) -> bool:
    return isinstance(value, dict) and _REQUIRED <= value.keys() <= _KEYS


def fits(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(map(is_record, value[:8]))


def read(stream: LogStream) -> Iterator[Item]:
    missing = ("<document>", "missing: not a list of moscaFetch records {url, method, response}")
    yield from read_documents(stream, fits, missing, lambda document: ("", document), _exchange)


def _exchange(record: Any, line: int, where: str) -> Exchange:
    if not is_record(record):
        raise RecordFieldError(where, "expected a record {url, method, body, response}")
    for key in ("url", "method"):
        if not isinstance(record[key], str):
            raise RecordFieldError(f"{where}.{key}", f"expected a string, got {shown(record[key])}")
    return Exchange(
        line=line,
        where=where,
        method=record["method"],
        url=record["url"],
        request_headers={},
        request_body=record.get("body"),
        status=None,  # not recorded
        response_headers={},
        response_body=record["response"],
    )
