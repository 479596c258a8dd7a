"""httpmock recordings and static mocks (Rust, the ``httpmock`` crate: httpmock.rs, "Record
and Playback"; docs/log-formats.md, "httpmock"): YAML, one mock per document, the documents
split by ``---`` lines::

    when:
      path: /v1/messages
      method: POST
      query_param: [{name: key, value: '[REDACTED]'}]
      header: [{name: content-type, value: application/json}]
      body: '{"model": "claude-haiku-4-5", ...}'
    then:
      status: 200
      header: [{name: content-type, value: application/json}]
      body: '{"id": "msg_...", "usage": {...}}'

- ``when`` is the request the recording matched: ``method``, ``path``, the ``query_param``
  and ``header`` lists of ``{name, value}``, the body as text (``body``), parsed JSON
  (``json_body``) or base64 (``body_base64``); ``host``, ``scheme`` and ``port`` where the
  mock names them.
- ``then`` is the response: ``status``, ``header``, ``body`` (a streamed response's
  server-sent events as text), ``json_body`` or ``body_base64``.
- A recording names no host unless the mock does (the server forwarded to one): the URL is
  then the path on ``localhost``, and the provider comes from the path (``/v1/messages``:
  Anthropic, ``:generateContent``: Google) or, for OpenAI-compatible paths, from the model
  (``cachecast.logs.providers``).
- There is no time: a ``date`` response header stands for it, else the response body's own
  creation time (``created`` of 0, as recordings scrub it, is no time).

The file is read whole (at most :data:`~cachecast.logs.stream.MAX_YAML_BYTES`), each document
through :func:`cachecast.logs.decoding.load_yaml` (aliases bounded); a document's line is the
line of its ``when:``, its field path ``documents[i]`` (0-based, in file order).
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

from cachecast.core.errors import RecordFieldError
from cachecast.logs.decoding import YamlError, load_yaml
from cachecast.logs.errors import LogFileError
from cachecast.logs.http import Exchange, http_date, read_exchanges
from cachecast.logs.http.exchange import BadEntry, check_decoded_size, http_status, joined_url
from cachecast.logs.sanitize import shown
from cachecast.logs.stream import MAX_YAML_BYTES, Item, LogStream, check_size

# A mock opens with ``when:`` (after an optional ``---``) and names a path or method under it.
_OPENS = re.compile(
    r"\A(?:---[ \t]*\r?\n)?(?:[ \t]*#.*\r?\n)*when:[ \t]*\r?\n[ \t]+(?:path|method|host)\s*:"
)
_SEPARATOR = re.compile(r"^---[ \t]*\r?$", re.MULTILINE)
_DEFAULT_ORIGIN = "http://localhost"


def fits_text(text: str) -> bool:
    """Whether a file is an httpmock recording: its first mock opens with ``when:`` and a
    path, method or host under it."""
    return _OPENS.match(text) is not None


def read(stream: LogStream) -> Iterator[Item]:
    check_size(stream.path, MAX_YAML_BYTES, "an httpmock recording")
    try:
        text = stream.path.read_text(encoding="utf-8", errors="strict")
    except UnicodeDecodeError as exc:
        raise LogFileError(stream.source, f"not UTF-8 text: {exc}") from None
    stream.whole_document = True
    yield from read_exchanges(stream, _exchanges(stream, text))


def _documents(text: str) -> Iterator[tuple[int, str]]:
    """Each document's text and the 1-based line it starts on (after its ``---``)."""
    start, line = 0, 1
    for separator in _SEPARATOR.finditer(text):
        yield line, text[start : separator.start()]
        line += text.count("\n", start, separator.end()) + 1
        start = separator.end() + 1
    yield line, text[start:]


def _exchanges(stream: LogStream, text: str) -> Iterator[Exchange | BadEntry]:
    index = 0
    for line, document in _documents(text):
        if not document.strip():
            continue
        where = f"documents[{index}]"
        index += 1
        try:
            data = load_yaml(document, source=stream.source).data
        except YamlError as exc:
            at = line + exc.line - 1 if exc.line is not None else line
            yield BadEntry(at, where, f"not YAML: {exc.reason}")
            continue
        first = line + _leading_lines(document)
        try:
            exchange = _exchange(data, first, where)
        except RecordFieldError as exc:
            yield BadEntry(first, exc.field, exc.reason)
            continue
        exchange.entry = index
        yield exchange


def _leading_lines(document: str) -> int:
    """Blank and comment lines before a document's first key."""
    count = 0
    for text in document.split("\n"):
        if text.strip() and not text.lstrip().startswith("#"):
            break
        count += 1
    return count


def _exchange(data: Any, line: int, where: str) -> Exchange:
    if not isinstance(data, dict):
        raise RecordFieldError(where, f"expected a mock {{when, then}}, got {shown(data)}")
    when, then = data.get("when"), data.get("then")
    if not isinstance(when, dict):
        raise RecordFieldError(f"{where}.when", "missing or not a mapping")
    method, path = when.get("method"), when.get("path")
    if not isinstance(method, str):
        raise RecordFieldError(f"{where}.when.method", f"expected a string, got {shown(method)}")
    if not isinstance(path, str):
        raise RecordFieldError(f"{where}.when.path", f"expected a string, got {shown(path)}")
    url = joined_url(_origin(when, f"{where}.when"), path)
    query = _pairs(when.get("query_param"), f"{where}.when.query_param")
    if query:
        url += ("&" if "?" in url else "?") + urlencode(query)
    request_headers = dict(_pairs(when.get("header"), f"{where}.when.header"))
    status: int | None = None
    response_headers: dict[str, str] = {}
    response_body: Any = None
    if then is not None:
        if not isinstance(then, dict):
            raise RecordFieldError(f"{where}.then", f"expected a mapping, got {shown(then)}")
        if "status" in then:
            status = http_status(then["status"], f"{where}.then.status")
        response_headers = dict(_pairs(then.get("header"), f"{where}.then.header"))
        response_body = _body(then, f"{where}.then")
    return Exchange(
        line=line,
        where=where,
        method=method,
        url=url,
        request_headers=request_headers,
        request_body=_body(when, f"{where}.when"),
        status=status,
        response_headers=response_headers,
        response_body=response_body,
        timestamp=http_date(response_headers.get("date")),
    )


def _origin(when: dict[str, Any], where: str) -> str:
    host = when.get("host")
    if host is None:
        return _DEFAULT_ORIGIN
    if not isinstance(host, str) or not host:
        raise RecordFieldError(f"{where}.host", f"expected a host name, got {shown(host)}")
    scheme = when.get("scheme")
    scheme = scheme.lower() if isinstance(scheme, str) and scheme else "https"
    port = when.get("port")
    if isinstance(port, int) and not isinstance(port, bool):
        return f"{scheme}://{host}:{port}"
    return f"{scheme}://{host}"


def _pairs(value: Any, where: str) -> list[tuple[str, str]]:
    """httpmock's ``[{name, value}]`` lists (headers, query parameters): lower-case header
    names are left to the caller; each pair as (name, value)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise RecordFieldError(where, f"expected a list of {{name, value}}, got {shown(value)}")
    pairs: list[tuple[str, str]] = []
    for index, item in enumerate(value):
        name = item.get("name") if isinstance(item, dict) else None
        text = item.get("value") if isinstance(item, dict) else None
        # (an unquoted value is whatever YAML reads it as: ``anthropic-version: 2023-06-01``
        # comes as a date, and stands for the text it was written as)
        if not isinstance(name, str) or text is None or isinstance(text, dict | list):
            raise RecordFieldError(
                f"{where}[{index}]", f"expected {{name, value}}, got {shown(item)}"
            )
        value = text.isoformat() if isinstance(text, dt.date) else str(text)
        pairs.append((name.lower() if where.endswith("header") else name, value))
    return pairs


def _body(message: dict[str, Any], where: str) -> Any:
    """A body as text (``body``), parsed JSON (``json_body``) or base64 (``body_base64``)."""
    if message.get("json_body") is not None:
        return message["json_body"]
    encoded = message.get("body_base64")
    if encoded is not None:
        if not isinstance(encoded, str):
            raise RecordFieldError(f"{where}.body_base64", f"expected text, got {shown(encoded)}")
        check_decoded_size(len(encoded), "base64", f"{where}.body_base64")
        try:
            return base64.b64decode(encoded, validate=True)
        except (ValueError, binascii.Error):
            raise RecordFieldError(f"{where}.body_base64", "not base64") from None
    body = message.get("body")
    if body is None or isinstance(body, str | bytes):
        return body or None
    raise RecordFieldError(f"{where}.body", f"expected text, got {shown(body)}")
