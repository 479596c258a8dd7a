"""VCR cassettes, in every dialect users bring (docs/log-formats.md, "Recorded HTTP"):

- vcrpy / pytest-recording (YAML or JSON): ``interactions: [{request: {method, uri, headers,
  body}, response: {status: {code, message}, headers, body: {string}}}]``, ``version: 1``.
  Bodies are text, ``!!binary`` bytes (gzip or not: un-gzipped by ``cachecast.logs.http``), or
  already parsed: pydantic-ai's serializer writes ``parsed_body`` (a mapping) next to the
  request or response instead of ``body``, and its later one ``body: {type: json, content:
  <mapping>}`` or ``body: {type: text, content: <text>}`` (with ``status: 200`` and the
  interaction's ``recorded_at``).
- Ruby VCR: ``http_interactions: [{request, response, recorded_at}]``, lower-case methods,
  ``body: {encoding, string}`` where ``string`` is ``!binary`` base64 (Ruby's one-``!`` tag)
  for ASCII-8BIT bodies, or ``body: {encoding, base64_string}`` (``preserve_exact_body_bytes``);
  placeholders such as ``<AWS_REGION>`` inside URLs.
- Ruby VCR 1.x (2011-2012, Syck or Psych): the cassette is a top-level *list* of
  ``!ruby/struct:VCR::HTTPInteraction`` mappings, ``request: !ruby/struct:VCR::Request
  {method: :post, uri, body, headers}``, ``response: !ruby/struct:VCR::Response {status:
  !ruby/struct:VCR::ResponseStatus {code, message}, headers, body, http_version}``; URIs keep
  the port (``https://host:443/...``), bodies are plain strings (or ``!binary``). The Ruby tags
  are read as the plain mappings, lists or strings they tag (no object is ever built), the
  ``:post`` symbol as ``post``.
- php-vcr (PHP): a top-level list of ``{request: {method, url, headers, body}, response:
  {status: {code, message}, headers, body, curl_info?}, index?}``, YAML or JSON; headers map
  names to single values.
- LangChain's standard tests (``langchain-tests``: a gzip-compressed ``.yaml.gz``) and other
  custom vcrpy persisters that dump vcrpy's own cassette dict: ``requests: [{method, uri,
  body, headers}]`` beside ``responses: [{status, headers, body: {string}}]``, the two lists
  paired by position (``requests[i]`` / ``responses[i]`` in field paths).
- go-vcr v1 and v2: ``version``, ``interactions[].request: {body, headers, url, method, form,
  proto...}``, ``response: {body, headers, status: "200 OK", code: 200, duration}``;
  headers map names to lists.
- vcrpy's httpx responses as vcrpy 4 and early 5 serialized them: ``response: {content,
  headers, http_version, status_code}``, the body as text under ``content`` (no ``body``).
- One interaction a file, as JSON: ``{request: {method, url, headers, body}, response:
  {status: {code, message}, headers, body}}`` with text bodies (already decoded, whatever
  ``Content-Encoding`` says), as the Datadog APM test agent's proxy records LLM traffic
  (dd-trace-py's ``tests/llmobs/llmobs_cassettes/*.json``). Its fields are read from the top
  (``request.body``).
- ReqLLM's fixtures (Elixir, agentjido/req_llm ``test/support/fixtures/<provider>/<model>/
  *.json``): one interaction a JSON file, ``{request: {method, url, headers, body: {b64},
  canonical_json}, response: {status, headers, body}, streaming, captured_at?}``: the request
  body is the base64 of the bytes sent (``canonical_json`` is the same body re-encoded, for
  matching), the response body the parsed JSON object itself; a streamed response has
  ``body: null`` and the stream in ``chunks: [{b64, decoded}]`` beside ``request`` (the bytes
  of each read, in order: joined here).

The cassette is read whole (YAML through :func:`cachecast.logs.decoding.load_yaml`, which
bounds what aliases expand to), refused above :data:`~cachecast.logs.stream.MAX_YAML_BYTES`
before it is read; ``line`` is the line where the interaction starts (its position in a JSON
cassette). Times: the response's ``Date`` header (one-second resolution), else Ruby VCR's
``recorded_at`` (OkReplay's and Betamax's ``recorded``: their ``!tape`` YAML is a cassette of
``interactions: [{recorded, request: {method, uri, headers, body}, response: {status,
headers, body}}]``); a cassette with neither has none. The exchanges are read by
:mod:`cachecast.logs.http`.

- ExVCR (Elixir, parroty/exvcr: ``fixture/vcr_cassettes/*.json``): a top-level list of
  ``{request: {body, headers, method, options, request_body, url}, response: {binary, body,
  headers, status_code, type}}``, read as php-vcr's list (lower-case method, headers name:
  value, the request body as text). A response body that is not UTF-8 (gzip bytes, as the
  Finch adapter records them) is kept as ``binary: true`` and the base64 of
  ``:erlang.term_to_binary(body)``: Erlang's external term format, version byte 131, tag
  109 (BINARY_EXT), a 4-byte big-endian length, then the bytes (unwrapped here, then
  un-gzipped by the ``Content-Encoding`` header like any other body). A call that failed
  (``type: "error"``) keeps the Elixir error as text and no ``status_code``: no response.
- pydantic-ai's xAI gRPC cassettes (``*.xai.yaml``): ``interactions`` of ``request_sample`` /
  ``response_sample`` (or ``_stream``) protobuf messages with their JSON form, no URI: read
  by :mod:`cachecast.logs.xai_grpc` as the xAI chat completions they stand for.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
from collections.abc import Iterator
from typing import Any

import orjson

from cachecast.core.errors import RecordFieldError
from cachecast.logs import xai_grpc
from cachecast.logs.decoding import YamlError, load_yaml
from cachecast.logs.errors import LogFileError
from cachecast.logs.http import Exchange, exchanges_of, http_date, read_exchanges
from cachecast.logs.http.exchange import decoded_bytes, listed_headers
from cachecast.logs.sanitize import int_text, shown
from cachecast.logs.stream import MAX_YAML_BYTES, Item, LogStream, check_size

KEYS = ("interactions", "http_interactions")  # vcrpy and go-vcr; Ruby VCR
# Ruby's ``!binary`` tag (Psych writes it for ASCII-8BIT strings): the same base64 payload as
# YAML's ``!!binary``.
TAG_ALIASES = {"!binary": "tag:yaml.org,2002:binary"}


PAIRED = ("requests", "responses")  # vcrpy's cassette dict, as custom persisters dump it
PAIRED_WHERE = "requests[{0}]/responses[{0}]"


def _paired(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(value.get(key), list) for key in PAIRED)


def single(value: Any) -> bool:
    """One interaction at the top of the file: ``{request: {method, uri|url}, response}``."""
    if not isinstance(value, dict) or any(key in value for key in KEYS):
        return False
    request, response = value.get("request"), value.get("response")
    return (
        isinstance(request, dict)
        and isinstance(request.get("method"), str)
        and isinstance(request.get("uri", request.get("url")), str)
        and isinstance(response, dict)
    )


def fits(value: Any) -> bool:  # (detection looks at the text: see formats._vcr_fits)
    if single(value):
        return True
    if isinstance(value, list):  # Ruby VCR 1.x, php-vcr: the interactions themselves
        return bool(value) and all(
            isinstance(item, dict) and "request" in item for item in value[:8]
        )
    if _paired(value):
        return True
    return isinstance(value, dict) and any(isinstance(value.get(key), list) for key in KEYS)


def _interactions(data: Any) -> list[Any]:
    if single(data):
        return [data]
    if isinstance(data, list):
        return list(data)
    for key in KEYS:
        if isinstance(data, dict) and isinstance(data.get(key), list):
            return list(data[key])
    if _paired(data):  # a request left without its response keeps None there
        requests, responses = data["requests"], data["responses"]
        return [
            {"request": request, "response": responses[i] if i < len(responses) else None}
            for i, request in enumerate(requests)
        ]
    return []


def load(path: Any) -> tuple[Any, list[int]]:
    """The cassette and the 1-based line where each interaction starts (none for JSON:
    ``read`` then numbers the interactions by position)."""
    check_size(path, MAX_YAML_BYTES, "a YAML cassette")
    text = path.read_text(encoding="utf-8", errors="strict")
    if text.lstrip().startswith(("{", "[")):  # vcrpy's, Ruby VCR's, php-vcr's JSON
        try:
            data = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            raise LogFileError(str(path), f"not a JSON cassette: {exc}") from None
        return data, []
    try:
        document = load_yaml(text, source=str(path), tag_aliases=TAG_ALIASES, local_tags_plain=True)
    except YamlError as exc:
        where = f" (line {exc.line})" if exc.line is not None else ""
        raise LogFileError(str(path), f"not a YAML cassette{where}: {exc.reason}") from None
    data = document.data
    if isinstance(data, list):  # Ruby VCR 1.x: the interactions at the root
        return data, document.item_lines.get("", [])
    key = next((k for k in KEYS if isinstance(data, dict) and isinstance(data.get(k), list)), None)
    if key is None and _paired(data):
        key = "requests"  # each pair starts where its request does
    return data, document.item_lines.get(key, []) if key is not None else []


def read(stream: LogStream) -> Iterator[Item]:
    try:
        data, lines = load(stream.path)
    except UnicodeDecodeError as exc:
        raise LogFileError(stream.source, f"not UTF-8 text: {exc}") from None
    if not fits(data):
        yield 1, stream.error(1, "interactions", "missing: not a VCR cassette")
        return
    if single(data):
        where = ""  # the interaction is the file: its fields are named from the top
    elif isinstance(data, list):
        where = "[{0}]"
    else:
        key = next((k for k in KEYS if isinstance(data.get(k), list)), None)
        where = PAIRED_WHERE if key is None else key + "[{0}]"
    entries = (
        (lines[index] if index < len(lines) else index + 1, where.format(index), entry)
        for index, entry in enumerate(_interactions(data))
    )
    yield from read_exchanges(stream, exchanges_of(stream, entries, _exchange))


def _exchange(interaction: Any, line: int, where: str) -> Exchange:
    if not isinstance(interaction, dict):
        raise RecordFieldError(where, "expected a mapping with request and response")
    if "request" not in interaction and xai_grpc.is_grpc(interaction):
        return xai_grpc.as_exchange(interaction, line, where)  # pydantic-ai's *.xai.yaml
    at = f"{where}." if where else ""
    request = interaction.get("request")
    response = interaction.get("response")
    if not isinstance(request, dict):
        raise RecordFieldError(f"{at}request", "missing or not a mapping")
    method = request.get("method")
    if isinstance(method, str) and method.startswith(":"):
        method = method[1:]  # Ruby VCR 1.x writes the method as a symbol (:post)
    uri = request.get("uri", request.get("url"))
    if not isinstance(method, str) or not isinstance(uri, str):
        raise RecordFieldError(f"{at}request", "needs method and uri")
    status = None
    response_headers: dict[str, str] = {}
    response_body = None
    if isinstance(response, dict) and not _exvcr_error(response):
        status = _status(response, f"{at}response")
        response_headers = listed_headers(response.get("headers"))
        response_body = _body(response, f"{at}response")
    if response_body is None and isinstance(interaction.get("chunks"), list):
        response_body = _chunks(interaction["chunks"], f"{at}chunks")  # ReqLLM's streams
    request_headers = listed_headers(request.get("headers"))
    timestamp = http_date(response_headers.get("date"))
    if timestamp is None:  # Ruby VCR and pydantic-ai: recorded_at; ReqLLM: captured_at;
        # OkReplay / Betamax (Java) tapes: recorded
        kept = interaction.get("recorded_at", interaction.get("captured_at"))
        timestamp = _recorded_at(kept if kept is not None else interaction.get("recorded"))
    return Exchange(
        line=line,
        where=where,
        method=method,
        url=uri,
        request_headers=request_headers,
        request_body=_body(request, f"{at}request"),
        status=status,
        response_headers=response_headers,
        response_body=response_body,
        timestamp=timestamp,
    )


def _recorded_at(value: Any) -> float | None:
    """An interaction's ``recorded_at`` as epoch seconds: Ruby VCR writes RFC 2822 text;
    pydantic-ai's later serializer an ISO 8601 time, which YAML reads as a timestamp (a
    datetime; UTC where it names no zone). None when absent or unreadable."""
    if isinstance(value, dt.datetime):
        return (value if value.tzinfo else value.replace(tzinfo=dt.UTC)).timestamp()
    if not isinstance(value, str):
        return None
    stamp = http_date(value)
    if stamp is None:
        try:
            return _recorded_at(dt.datetime.fromisoformat(value.strip()))
        except ValueError:
            return None
    return stamp


def _status(response: dict[str, Any], where: str) -> int | None:
    """vcrpy and Ruby VCR: ``status: {code, message}``; go-vcr: ``code: 200`` beside
    ``status: "200 OK"`` (v1 and v2); vcrpy's httpx responses of vcrpy 4: ``status_code``."""
    code = response.get("code")
    status = response.get("status")
    if code is None and status is None and "status_code" in response:
        code, field = response["status_code"], f"{where}.status_code"
    elif isinstance(status, dict):
        code, field = status.get("code"), f"{where}.status.code"
    elif code is not None:
        field = f"{where}.code"
    elif isinstance(status, str):
        head = status.strip().split(" ", 1)[0]
        if not head.isdigit():
            raise RecordFieldError(f"{where}.status", f"expected '200 OK', got {shown(status)}")
        return int_text(head, f"{where}.status")
    else:
        code, field = status, f"{where}.status"
    if code is None:
        return None
    if isinstance(code, str) and code.strip().isdigit():
        return int_text(code, field)  # at most 20 digits: never a 5,000-digit conversion
    if not isinstance(code, int) or isinstance(code, bool):
        raise RecordFieldError(field, f"expected an integer, got {shown(code)}")
    return code


def _body(message: dict[str, Any], where: str) -> Any:
    """A request's or response's body: ``parsed_body`` (pydantic-ai) wins; else ``body`` as
    a string, bytes, ``{string}`` (vcrpy, Ruby VCR), ``{base64_string}`` (Ruby VCR), ``{b64}``
    (ReqLLM), ``{type, content}`` (pydantic-ai's later serializer) or, any other mapping
    without ``encoding``, the JSON body itself (ReqLLM's responses); else ``content`` (vcrpy
    4's httpx responses)."""
    if "parsed_body" in message:
        return message["parsed_body"]
    if "body" not in message and "content" in message:
        return message["content"]
    value = message.get("body")
    if message.get("binary") is True and isinstance(value, str):
        return _erlang_binary(value, f"{where}.body")  # ExVCR: bytes that are not UTF-8
    if not isinstance(value, dict):
        return value
    if "parsed_body" in value:
        return value["parsed_body"]
    if _typed(value):
        return _typed_body(value, where)
    if isinstance(value.get("base64_string"), str):
        try:
            return base64.b64decode(value["base64_string"])
        except binascii.Error:
            raise RecordFieldError(f"{where}.body.base64_string", "not base64") from None
    if set(value) == {"b64"} and isinstance(value["b64"], str):  # ReqLLM: the bytes sent
        return decoded_bytes(value["b64"], "base64", f"{where}.body.b64")
    if "string" in value:
        return value["string"]
    if "encoding" in value:  # Ruby VCR's body with no string: none
        return None
    return value  # ReqLLM's responses: the JSON object as the server sent it


def _chunks(chunks: list[Any], where: str) -> bytes:
    """ReqLLM's streamed response: the bytes of each read, base64 under ``b64``, joined."""
    parts: list[bytes] = []
    for index, chunk in enumerate(chunks):
        field = f"{where}[{index}].b64"
        if not isinstance(chunk, dict) or not isinstance(chunk.get("b64"), str):
            raise RecordFieldError(field, "missing: expected a chunk {b64}")
        parts.append(decoded_bytes(chunk["b64"], "base64", field))
    return b"".join(parts)


def _typed(value: dict[str, Any]) -> bool:
    """pydantic-ai's ``{type: json|text, content}`` wrapper, not a JSON body that happens to
    carry both keys (an Anthropic message: ``type: message``, ``content``, ``id``...)."""
    if "type" not in value or "content" not in value:
        return False
    return value["type"] in ("json", "text") or set(value) == {"type", "content"}


def _typed_body(value: dict[str, Any], where: str) -> Any:
    """pydantic-ai's later serializer: ``body: {type: json, content: <the parsed body>}`` or
    ``{type: text, content: <the text>}`` (an SSE stream, a non-JSON body)."""
    kind = value["type"]
    if kind == "json":
        return value["content"]
    if kind == "text":
        content = value["content"]
        if not isinstance(content, str):
            raise RecordFieldError(f"{where}.body.content", f"expected text, got {shown(content)}")
        return content
    raise RecordFieldError(f"{where}.body.type", f"expected 'json' or 'text', got {shown(kind)}")


# Erlang's external term format (erts "External Term Format"): every term opens with the
# version byte 131; a binary is tag 109 (BINARY_EXT) and a 4-byte big-endian length.
_ETF_VERSION = 131
_ETF_BINARY = 109


def _erlang_binary(text: str, field: str) -> bytes:
    """ExVCR's ``binary: true`` body: the base64 of ``:erlang.term_to_binary(body)`` for a
    body that is not UTF-8 (parroty/exvcr ``ExVCR.JSON``): the bytes inside that one Erlang
    binary term, else an error naming the field."""
    raw = decoded_bytes(text, "base64", field)
    if len(raw) < 6 or raw[0] != _ETF_VERSION or raw[1] != _ETF_BINARY:
        raise RecordFieldError(
            field, "binary: true but not an Erlang binary term (version 131, tag 109)"
        )
    size = int.from_bytes(raw[2:6], "big")
    if len(raw) != 6 + size:
        raise RecordFieldError(field, f"Erlang binary term says {size} bytes, holds {len(raw) - 6}")
    return raw[6:]


def _exvcr_error(response: dict[str, Any]) -> bool:
    """ExVCR's record of a call that failed before any response: ``type: "error"``, the
    Elixir error as text in ``body``, no ``status_code``."""
    return response.get("type") == "error" and "status_code" not in response
