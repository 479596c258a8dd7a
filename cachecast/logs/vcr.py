"""VCR cassettes (vcrpy, pytest-recording, VCR.py's YAML): ``interactions: [{request:
{method, uri, headers, body}, response: {status: {code}, headers, body: {string: ...}}}]``.

Bodies are text, gzip ``!!binary`` (un-gzipped here), or already parsed (``parsed_body``);
streamed responses are kept as their server-sent events text. The cassette is YAML and
read whole, refused above :data:`~cachecast.logs.stream.MAX_YAML_BYTES` before it is read;
``line`` is the line where the interaction starts. Cassettes carry no request times; the
response's ``Date`` header (one-second resolution) stands for it where present. The
exchanges are read by :mod:`cachecast.logs.http`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml

from cachecast.core.errors import RecordFieldError
from cachecast.logs.errors import LogFileError
from cachecast.logs.http import Exchange, exchanges_of, http_date, read_exchanges
from cachecast.logs.stream import MAX_YAML_BYTES, Item, LogStream, check_size

_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def fits(value: Any) -> bool:  # (detection looks at the text: see formats._vcr_fits)
    return isinstance(value, dict) and isinstance(value.get("interactions"), list)


def load(path: Any) -> tuple[Any, list[int]]:
    """The cassette and the 1-based line where each interaction starts."""
    check_size(path, MAX_YAML_BYTES, "a YAML cassette")
    text = path.read_text(encoding="utf-8", errors="strict")
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as exc:
        raise LogFileError(str(path), f"not a YAML cassette: {exc}") from None
    finally:
        loader.dispose()
    lines: list[int] = []
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if getattr(key, "value", None) == "interactions" and isinstance(
                value, yaml.SequenceNode
            ):
                lines = [item.start_mark.line + 1 for item in value.value]
    return data, lines


def read(stream: LogStream) -> Iterator[Item]:
    try:
        data, lines = load(stream.path)
    except UnicodeDecodeError as exc:
        raise LogFileError(stream.source, f"not UTF-8 text: {exc}") from None
    if not fits(data):
        yield 1, stream.error(1, "interactions", "missing: not a VCR cassette")
        return
    entries = (
        (lines[index] if index < len(lines) else index + 1, f"interactions[{index}]", entry)
        for index, entry in enumerate(data["interactions"])
    )
    yield from read_exchanges(stream, exchanges_of(stream, entries, _exchange))


def _exchange(interaction: Any, line: int, where: str) -> Exchange:
    if not isinstance(interaction, dict):
        raise RecordFieldError(where, "expected a mapping with request and response")
    request = interaction.get("request")
    response = interaction.get("response")
    if not isinstance(request, dict):
        raise RecordFieldError(f"{where}.request", "missing or not a mapping")
    method = request.get("method")
    uri = request.get("uri", request.get("url"))
    if not isinstance(method, str) or not isinstance(uri, str):
        raise RecordFieldError(f"{where}.request", "needs method and uri")
    status = None
    response_headers: dict[str, str] = {}
    response_body = None
    if isinstance(response, dict):
        code = response.get("status")
        status = code.get("code") if isinstance(code, dict) else code
        if status is not None and not isinstance(status, int):
            raise RecordFieldError(
                f"{where}.response.status.code", f"expected an integer, got {status!r}"
            )
        response_headers = _headers(response.get("headers"))
        response_body = _body(response.get("body"))
    request_headers = _headers(request.get("headers"))
    return Exchange(
        line=line,
        where=where,
        method=method,
        url=uri,
        request_headers=request_headers,
        request_body=_body(request.get("body")),
        status=status,
        response_headers=response_headers,
        response_body=response_body,
        timestamp=http_date(response_headers.get("date")),
    )


def _headers(value: Any) -> dict[str, str]:
    headers: dict[str, str] = {}
    if isinstance(value, dict):
        for name, values in value.items():
            first = values[0] if isinstance(values, list) and values else values
            if isinstance(first, bytes):
                first = first.decode("utf-8", "replace")
            if isinstance(first, str | int):
                headers[str(name).lower()] = str(first)
    return headers


def _body(value: Any) -> Any:
    if isinstance(value, dict):
        if "parsed_body" in value:
            return value["parsed_body"]
        if "string" in value:
            return value["string"]
        return None
    return value
