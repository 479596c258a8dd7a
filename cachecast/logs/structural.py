"""Recorded HTTP traffic in a dialect no reader here knows by name, read by its shape
(docs/log-formats.md, "Recordings read by their shape").

Every recorder we read by name keeps the same few things per call: the URL, the method, the
request body, the response's status, headers and body, perhaps a time. Recorders we have
not met (a project's own fetch wrapper, a mocking library's fixtures) keep them too, under
names of their own. This reader walks a JSON document (or each JSON line) and takes as one
exchange each object that holds

- a request: an object under a key named like ``request`` / ``req``, or the object itself,
  with a URL under ``url`` / ``uri`` / ``href`` / ``endpoint`` / ``path`` (a path joined to a
  ``host`` / ``origin`` / ``baseUrl`` beside it) that is a model endpoint
  (``cachecast.logs.http.endpoints``), and
- its response: an object under a key named like ``response`` / ``res`` / ``resp``.

A call kept flat with no URL at all (``{request_body, response_body}`` beside an
``endpoint`` that is only a name, as ExLLM's test cache keeps them) is told by its bodies:
the request body's model and messages, and the API the reply's own shape names
(:func:`_reply_api`). A Go txtar archive of a ``request`` file and its replies
(``streaming``, ``non-streaming`` ...) is read as such flat calls, one per reply
(:func:`txtar_document`).

Bodies are read under ``body`` / ``data`` / ``json`` / ``payload`` / ``content`` / ``text``
(one wrapper level such as vcrpy's ``{"string": ...}`` unwrapped), as JSON text, server-sent
events or an already parsed value; a response object that is itself a provider's reply (it
holds ``usage``, ``choices``, ``candidates`` ...) is its own body. An object taken as an
exchange is not searched further, so nothing is counted twice. This format is tried after
every named one, and only where it finds a model call, so it never takes a file another
reader fits; its name in reports (``by-shape``) says the fields were found by their names,
not by a recorder's documented layout.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from cachecast.core.errors import RecordFieldError
from cachecast.logs.decoding import YamlError, load_yaml
from cachecast.logs.errors import LogFileError, LogRecordError
from cachecast.logs.http import Exchange, read_exchanges
from cachecast.logs.http.endpoints import model_endpoint, provider_origin
from cachecast.logs.http.exchange import BadEntry, http_date, joined_url, numbered
from cachecast.logs.sanitize import iso_moment
from cachecast.logs.stream import MAX_YAML_BYTES, Item, LogStream, check_size, documents

FORMAT = "by-shape"

# Key names compared lower-cased with ``_`` and ``-`` removed.
_REQUEST_KEYS = ("request", "req", "httprequest", "requestdata", "call")
_RESPONSE_KEYS = (
    "response",
    "res",
    "resp",
    "httpresponse",
    "responsedata",
    "reply",
    # a call kept flat, its bodies side by side (``{request_body, response_body}``)
    "responsebody",
)
# A flat call's request body (beside ``response_body``): where a call kept without any URL is
# told by its bodies' own shape (:func:`_shaped_url`).
_FLAT_REQUEST_BODY_KEYS = ("requestbody",)
_URL_KEYS = ("url", "uri", "href", "fullurl", "requesturl", "requesturi", "endpoint", "path")
_HOST_KEYS = ("origin", "baseurl", "host", "hostname", "scope", "server")
_METHOD_KEYS = ("method", "verb", "httpmethod", "requestmethod")
_BODY_KEYS = (
    "body",
    "json",
    "data",
    "payload",
    "content",
    "text",
    "bodytext",
    "bodystring",
    "requestbody",
    "responsebody",
    "postdata",
    "raw",
)
_STATUS_KEYS = ("status", "statuscode", "code")
_HEADER_KEYS = ("headers", "header")
_TIME_KEYS = (
    "timestamp",
    "recordedat",
    "time",
    "startedat",
    "createdat",
    "date",
    "startedDateTime",
)
# A body wrapper's keys (vcrpy's ``{"string": ...}``, HAR's ``postData.text``, a recorder's
# ``{kind: "json", value}`` or ``{kind: "sse", chunks: [...]}``): unwrapped once.
_WRAPPER_KEYS = ("string", "text", "json", "data", "content", "body", "value", "chunks")
# Keys naming the provider a recording's calls went to, on an object enclosing the calls or
# one directly under it (``provenance.source``): where a call keeps a path and no host.
_PROVIDER_KEYS = ("provider", "providername", "source", "vendor")
# Keys that mark an object as a provider's reply or request body, not a wrapper of one.
_REPLY_KEYS = frozenset(
    ("usage", "choices", "candidates", "usageMetadata", "stop_reason", "object", "output")
)
_BODY_MARKS = frozenset(("model", "messages", "contents", "input", "prompt", "system", "tools"))
# How deep the walk goes: recorders nest their calls a few levels down, not dozens.
MAX_DEPTH = 12


def _norm(key: str) -> str:
    return key.replace("_", "").replace("-", "").lower()


def _named(value: dict[str, Any], names: tuple[str, ...]) -> tuple[str, Any] | None:
    """The first key of ``value`` (in ``names`` order) whose normalised name is in ``names``."""
    by_norm: dict[str, str] = {}
    for key in value:
        if isinstance(key, str):
            by_norm.setdefault(_norm(key), key)
    for name in names:
        found = by_norm.get(_norm(name))
        if found is not None:
            return found, value[found]
    return None


def _url(request: dict[str, Any], outer: dict[str, Any], named: str | None) -> str | None:
    """The call's URL; a bare path is joined to a host beside it, else to ``named`` (the
    API host of the provider an enclosing object names, see :func:`_named_origin`)."""
    found = _named(request, _URL_KEYS)
    if found is None or not isinstance(found[1], str) or not found[1]:
        return None
    url = found[1]
    if url.startswith("/"):
        for holder in (request, outer):
            host = _named(holder, _HOST_KEYS)
            if host is not None and isinstance(host[1], str) and host[1]:
                origin = host[1] if "://" in host[1] else f"https://{host[1]}"
                return joined_url(origin, url)
        # MockServer keeps ``path`` with the ``socketAddress`` it connected to, where the
        # Host header does not say it, else ``headers.Host`` only (docs/log-formats.md,
        # "Recordings read by their shape")
        address = _named(request, ("socketaddress",))
        if address is not None and isinstance(address[1], dict):
            host = address[1].get("host")
            if isinstance(host, str) and host:
                scheme = address[1].get("scheme")
                scheme = scheme.lower() if isinstance(scheme, str) and scheme else "https"
                return joined_url(f"{scheme}://{host}", url)
        sent_to = _headers(request).get("host")
        if sent_to:
            return joined_url(f"https://{sent_to}", url)
        return joined_url(named, url) if named is not None else None
    if "://" not in url and "/" not in url:
        return None  # a name, not a URL (ExLLM's ``endpoint: "v1_messages"``)
    return url if "://" in url else f"https://{url}"


def _provider_named(holder: dict[str, Any]) -> str | None:
    found = _named(holder, _PROVIDER_KEYS)
    if found is not None and isinstance(found[1], str):
        return provider_origin(found[1])
    return None


def _named_origin(node: dict[str, Any]) -> str | None:
    """The API host of a provider ``node`` names, itself or in an object directly under it
    (a recorder that keeps each call's path without a host names the provider once, as
    PostHog's cassettes do in ``provenance.source``), or None."""
    origin = _provider_named(node)
    if origin is not None:
        return origin
    for value in node.values():
        if isinstance(value, dict):
            origin = _provider_named(value)
            if origin is not None:
                return origin
    return None


# The public API a reply's own shape names, where a call keeps no URL (docs/log-formats.md,
# "Recordings read by their shape"): the path, and the provider whose API has that shape.
_SHAPED_APIS = {
    "anthropic": ("/v1/messages", "anthropic"),
    "chat": ("/v1/chat/completions", "openai"),
    "responses": ("/v1/responses", "openai"),
}


def _reply_api(body: Any) -> str | None:
    """The API a response body's own shape names: an Anthropic Message (``type: message``
    with ``usage``, or the event stream opening with ``message_start``), an OpenAI Chat
    Completion (``object: chat.completion``, or a stream of ``chat.completion.chunk``), an
    OpenAI Response (``object: response``, or a stream of ``response.*`` events); else None."""
    if isinstance(body, str):
        text = body.lstrip()
        if text.startswith(_SSE_FIELDS):
            for line in text.split("\n", 64)[:64]:
                if line.startswith("data:"):
                    try:
                        body = orjson.loads(line[5:].strip())
                    except orjson.JSONDecodeError:
                        return None
                    break
            else:
                return None
            if not isinstance(body, dict):
                return None
            kind = body.get("type")
            if kind == "message_start":
                return "anthropic"
            if body.get("object") == "chat.completion.chunk":
                return "chat"
            if isinstance(kind, str) and kind.startswith("response."):
                return "responses"
            return None
        try:
            body = orjson.loads(text)
        except orjson.JSONDecodeError:
            return None
    if not isinstance(body, dict) or not isinstance(body.get("usage"), dict):
        return None
    if body.get("type") == "message":
        return "anthropic"
    if body.get("object") == "chat.completion":
        return "chat"
    if body.get("object") == "response":
        return "responses"
    return None


def _shaped_url(node: dict[str, Any], response: Any, named: str | None) -> str | None:
    """The URL of a call kept flat with no URL at all (ExLLM's test cache: ``{request_body,
    response_body, endpoint: "v1_messages", provider: "unknown"}``): told by the request body
    (a model and its messages or input) and the API the response body's shape names, on the
    host of the provider named beside it, else of the API's own provider. None where a
    provider is named that has no public host of its own (Azure, Bedrock: where the call
    went is unknown)."""
    found = _named(node, _FLAT_REQUEST_BODY_KEYS)
    body = found[1] if found is not None else None
    if isinstance(body, str):
        try:
            body = orjson.loads(body)
        except orjson.JSONDecodeError:
            return None
    if not isinstance(body, dict) or not isinstance(body.get("model"), str):
        return None
    if not ({"messages", "input"} & body.keys()):
        return None
    api = _reply_api(response)
    if api is None:
        return None
    path, owner = _SHAPED_APIS[api]
    origin = named
    said = _named(node, _PROVIDER_KEYS)
    name = said[1].strip() if said is not None and isinstance(said[1], str) else ""
    if name and name.lower() not in _NO_PROVIDER:
        origin = provider_origin(name)
        if origin is None:
            return None
    return joined_url(origin or f"https://{_OWNER_HOSTS[owner]}", path)


# What a recorder writes under ``provider`` when it does not know it.
_NO_PROVIDER = frozenset(("unknown", "none", "null", "default", "auto"))
_OWNER_HOSTS = {"anthropic": "api.anthropic.com", "openai": "api.openai.com"}


def _method(request: dict[str, Any]) -> str:
    found = _named(request, _METHOD_KEYS)
    if found is not None and isinstance(found[1], str) and found[1].strip():
        return found[1].strip().upper()
    return "POST"  # a recorder that keeps no method kept a call that sent a body


def _call(
    node: dict[str, Any], named: str | None = None
) -> tuple[dict[str, Any], str, str, Any, str] | None:
    """(the request object, its URL, its method, the response, the response's key) when
    ``node`` holds a model call, else None. ``named``: the provider's API host an
    enclosing object names (for a path kept without a host)."""
    response = _named(node, _RESPONSE_KEYS)
    if response is None or not isinstance(response[1], dict | str | list):
        return None
    inner = _named(node, _REQUEST_KEYS)
    request = inner[1] if inner is not None and isinstance(inner[1], dict) else node
    url = _url(request, node, named)
    if url is None and request is node:
        url = _shaped_url(node, response[1], named)
    if url is None:
        return None
    method = _method(request)
    if model_endpoint(method, url) is None:
        return None
    return request, url, method, response[1], response[0]


def _body(holder: Any, where: str, *, reply: bool) -> tuple[Any, str]:
    """The body ``holder`` keeps and its field path: a provider's body object itself, the
    value under a body key, one wrapper level unwrapped."""
    if not isinstance(holder, dict):
        return holder, where
    marks = _REPLY_KEYS if reply else _BODY_MARKS
    if marks & holder.keys():
        return holder, where
    found = _named(holder, _BODY_KEYS)
    if found is None:
        return None, where
    key, value = found
    path = f"{where}.{key}"
    if isinstance(value, dict) and not ((_REPLY_KEYS | _BODY_MARKS) & value.keys()):
        wrapped = _named(value, _WRAPPER_KEYS)
        if wrapped is not None:
            value, path = wrapped[1], f"{path}.{wrapped[0]}"
    return _joined_chunks(value), path


_SSE_FIELDS = ("data:", "event:", "id:", "retry:", ":")


def _joined_chunks(value: Any) -> Any:
    """A streamed body kept as the list of chunks it arrived in (each a piece of the
    server-sent events text, cut anywhere): the text they make, joined as they came. Any
    other value is returned as it is."""
    if (
        isinstance(value, list)
        and value
        and all(isinstance(chunk, str) for chunk in value)
        and value[0].lstrip().startswith(_SSE_FIELDS)
    ):
        return "".join(value)
    return value


def _headers(holder: Any) -> dict[str, str]:
    if not isinstance(holder, dict):
        return {}
    found = _named(holder, _HEADER_KEYS)
    if found is None:
        return {}
    value = found[1]
    headers: dict[str, str] = {}
    if isinstance(value, dict):
        for name, item in value.items():
            first = item[0] if isinstance(item, list) and item else item
            if isinstance(first, str | int) and not isinstance(first, bool):
                headers[str(name).lower()] = str(first)
    elif isinstance(value, list):  # [{name, value}] (HAR-like) or [[name, value]]
        for item in value:
            if isinstance(item, dict) and isinstance(item.get("name"), str):
                value = item.get("value", item.get("values", ""))  # MockServer: ``values``
                first = value[0] if isinstance(value, list) and value else value
                headers[item["name"].lower()] = str(first)
            elif isinstance(item, list) and len(item) == 2 and isinstance(item[0], str):
                headers[item[0].lower()] = str(item[1])
    return headers


def _status(response: Any) -> int | None:
    if not isinstance(response, dict):
        return None
    found = _named(response, _STATUS_KEYS)
    if found is None:
        return None
    value = found[1]
    if isinstance(value, str) and value.isdigit() and len(value) == 3:
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and 100 <= value <= 599:
        return value
    return None


def _time(*holders: Any) -> float | None:
    for holder in holders:
        if not isinstance(holder, dict):
            continue
        found = _named(holder, _TIME_KEYS)
        if found is None:
            continue
        value = found[1]
        if isinstance(value, int | float) and not isinstance(value, bool):
            # epoch seconds or milliseconds (no recording is dated after 2286)
            return float(value) / 1000 if value > 1e11 else float(value)
        if isinstance(value, str):
            stamp = iso_moment(value)
            if stamp is None:
                stamp = http_date(value)
            if stamp is not None:
                return stamp
    return None


def _walk(
    value: Any,
    where: str,
    depth: int,
    budget: list[int] | None = None,
    named: str | None = None,
) -> Iterator[tuple[str, dict[str, Any], str | None]]:
    """The objects under ``value`` that hold a model call, in document order (an object
    taken is not searched further), each with the provider's API host the nearest
    enclosing object names (``named``). ``budget``: how many more objects detection may
    look at (a long list of cachecast's own records is not walked whole to be told apart)."""
    if depth > MAX_DEPTH:
        return
    if budget is not None:
        budget[0] -= 1
        if budget[0] < 0:
            return
    if isinstance(value, dict):
        named = _named_origin(value) or _proxied_origin(value) or named
        stub = _stub_calls(value, where, named)
        if stub is not None:
            yield from stub
            return
        if _call(value, named) is not None:
            yield where, value, named
            return
        for key, item in value.items():
            if isinstance(item, dict | list):
                yield from _walk(item, f"{where}.{key}", depth + 1, budget, named)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, dict | list):
                yield from _walk(item, f"{where}[{index}]", depth + 1, budget, named)


# Mountebank's predicate operators that keep the recorded request's fields as they were.
_RECORDED_PREDICATES = ("deepEquals", "equals")


def _proxied_origin(imposter: dict[str, Any]) -> str | None:
    """The host a Mountebank imposter's proxy forwarded to (``stubs[].responses[].proxy.to``,
    kept beside the recorded stubs unless saved with ``removeProxies``), or None."""
    stubs = imposter.get("stubs")
    for stub in stubs if isinstance(stubs, list) else ():
        responses = stub.get("responses") if isinstance(stub, dict) else None
        for response in responses if isinstance(responses, list) else ():
            proxy = response.get("proxy") if isinstance(response, dict) else None
            target = proxy.get("to") if isinstance(proxy, dict) else None
            if isinstance(target, str) and "://" in target:
                return target
    return None


def _stub_calls(
    stub: dict[str, Any], where: str, named: str | None
) -> list[tuple[str, dict[str, Any], str | None]] | None:
    """A Mountebank stub's recorded calls (mbtest.org, "Proxies": ``proxyOnce`` /
    ``proxyAlways`` save each call as a stub whose ``predicates`` keep the request's fields
    under ``deepEquals`` / ``equals`` and whose ``responses`` keep each reply under ``is``
    {statusCode, headers, body}), one call per ``is`` reply, as ``{request, response}``
    objects with the request's URL: its ``path`` on the proxied host (``named``), else,
    where no host is kept, the URL the bodies' shape names (:func:`_shaped_url`). None
    where ``stub`` is no stub; an empty list where it holds no model call."""
    predicates = stub.get("predicates")
    responses = stub.get("responses")
    if not isinstance(predicates, list) or not isinstance(responses, list):
        return None
    request: dict[str, Any] = {}
    for predicate in predicates:
        for operator in _RECORDED_PREDICATES:
            fields = predicate.get(operator) if isinstance(predicate, dict) else None
            if isinstance(fields, dict):
                for key, value in fields.items():
                    request.setdefault(key, value)
    calls: list[tuple[str, dict[str, Any], str | None]] = []
    for index, response in enumerate(responses):
        reply = response.get("is") if isinstance(response, dict) else None
        if not request or not isinstance(reply, dict):
            continue
        url = _url(request, stub, named)
        if url is None:
            flat = {"request_body": request.get("body")}
            url = _shaped_url(flat, reply.get("body"), named)
        if url is None:
            continue
        node = {"request": {**request, "url": url}, "response": reply}
        if _call(node, named) is not None:
            calls.append((f"{where}.responses[{index}].is", node, named))
    return calls


# Objects and lists detection looks at before it gives up on a document.
DETECTION_BUDGET = 20_000


def unanswered_call(value: Any) -> str | None:
    """Why a JSON value that no format fits is a recorded call with nothing to reconcile: a
    call kept flat (a ``request_body`` naming a model and its messages or input, beside a
    response) whose reply is no provider's response with usage (an error, or a stream
    recorded without it; ExLLM's cache keeps failed calls so), or None. Looked for among the
    first :data:`DETECTION_BUDGET` objects."""
    budget = [DETECTION_BUDGET]
    stack: list[Any] = [value]
    while stack and budget[0] > 0:
        node = stack.pop()
        budget[0] -= 1
        if isinstance(node, list):
            stack.extend(reversed(node))
            continue
        if not isinstance(node, dict):
            continue
        body = _named(node, _FLAT_REQUEST_BODY_KEYS)
        response = _named(node, _RESPONSE_KEYS)
        if (
            body is not None
            and response is not None
            and isinstance(body[1], dict)
            and isinstance(body[1].get("model"), str)
            and {"messages", "input"} & body[1].keys()
            and _reply_api(response[1]) is None
        ):
            status = _status(node)
            failed = f" (status {status})" if status is not None and status >= 400 else ""
            return (
                f"a recorded call to {body[1]['model']}{failed} whose reply ({response[0]}) is"
                " no provider's response with usage (an error, or a stream recorded without"
                " its usage): there is nothing to reconcile"
            )
        stack.extend(
            item for item in reversed(list(node.values())) if isinstance(item, dict | list)
        )
    return None


def replies_only(value: Any) -> str | None:
    """Why a recording no format fits keeps model calls' replies without their requests, or
    None: Python ``responses``' recorder (``responses._recorder``, getsentry/responses) writes
    ``{responses: [{response: {method, url, body, status, content_type, headers}}]}``, the
    reply's body and no request body, so the prompt is not recorded and there is nothing to
    reconcile (docs/log-formats.md, "Recordings read by their shape")."""
    if not isinstance(value, dict):
        return None
    found = _named(value, ("responses",))
    if found is None or not isinstance(found[1], list):
        return None
    for index, entry in enumerate(found[1]):
        reply = entry.get("response") if isinstance(entry, dict) else None
        if not isinstance(reply, dict):
            continue
        url = reply.get("url")
        if isinstance(url, str) and model_endpoint(_method(reply), url) is not None:
            return (
                f"a recording of replies alone ({found[0]}[{index}].response: {url}; Python"
                " responses' recorder keeps each reply's body and no request body): the"
                " prompts are not recorded, there is nothing to reconcile"
            )
    return None


def fits(value: Any) -> bool:
    """Whether a JSON value holds a model call this reader can take among its first
    :data:`DETECTION_BUDGET` objects."""
    return next(_walk(value, "", 0, [DETECTION_BUDGET]), None) is not None


def _exchange(
    node: dict[str, Any], line: int, where: str, named: str | None, recorded: float | None
) -> Exchange:
    call = _call(node, named)
    if call is None:  # the walk took it as one: cannot happen
        raise RecordFieldError(where or "<document>", "not a model call")
    request, url, method, response, response_key = call
    request_where = where if request is node else f"{where}.request"
    request_body, _ = _body(request, request_where, reply=False)
    response_body, _ = _body(response, f"{where}.{response_key}", reply=True)
    response_headers = _headers(response)
    return Exchange(
        line=line,
        where=where.lstrip("."),  # "" for a line that is itself the call
        method=method,
        url=url,
        request_headers=_headers(request),
        request_body=request_body,
        status=_status(response) or (_status(node) if request is node else None),
        response_headers=response_headers,
        response_body=response_body,
        timestamp=_time(node, request, response) or http_date(response_headers.get("date")),
        recorded_at=recorded,
    )


def _recorded_at(document: dict[str, Any]) -> float | None:
    """A time the document states for all its calls: under a time key at its top or in an
    object directly under it (``provenance.recordedAt``). Used for a call that states none
    of its own (nor its response body): a recording's time, not each call's."""
    found = _time(document)
    if found is not None:
        return found
    for value in document.values():
        if isinstance(value, dict):
            found = _time(value)
            if found is not None:
                return found
    return None


def is_json(path: Path) -> bool:
    """Whether the file opens as JSON (a document or JSON lines) rather than YAML."""
    with open(path, "rb") as handle:
        return handle.read(4096).lstrip()[:1] in (b"{", b"[")


# A Go txtar archive's file marker line (golang.org/x/tools/txtar: "-- FILENAME --", the name
# stripped of the white space around it).
_TXTAR_MARKER = re.compile(r"^-- +(\S(?:.*\S)?) +--$")
# A txtar file holding the request body, and those holding a reply to it (Go test fixtures
# of a proxy: coder/aibridge keeps ``request``, ``streaming``, ``non-streaming``). Compared as
# :func:`_norm` compares keys.
_TXTAR_REQUEST = "request"
_TXTAR_REPLIES = frozenset(
    ("response", "reply", "streaming", "nonstreaming", "stream", "nonstream", "blocking")
)
# The document key under which :func:`txtar_document` lists the files it could not pair.
TXTAR_UNPAIRED = "txtar_unpaired"


def txtar_files(text: str) -> list[tuple[str, str, int]] | None:
    """A Go txtar archive's files as (name, data, line of its marker), or None when no line
    of ``text`` is a file marker. The comment before the first marker is dropped; a file's
    data runs to the next marker (golang.org/x/tools/txtar)."""
    files: list[tuple[str, list[str], int]] = []
    for number, line in enumerate(text.splitlines(keepends=True), start=1):
        marker = _TXTAR_MARKER.match(line.rstrip("\r\n"))
        if marker is not None:
            files.append((marker.group(1), [], number))
        elif files:
            files[-1][1].append(line)
    if not files:
        return None
    return [(name, "".join(lines), number) for name, lines, number in files]


def opens_txtar_request(text: str) -> bool:
    """Whether ``text`` (a file's head) is a txtar archive with a ``request`` file: its
    compact JSON lines are that archive's files, not JSON lines of a log."""
    files = txtar_files(text)
    return files is not None and any(_norm(name) == _TXTAR_REQUEST for name, _, _ in files)


def txtar_without_request(text: str) -> str | None:
    """Why ``text`` (a file's head), a txtar archive of replies, holds no call: it has no
    ``request`` file to pair them with (a request body left above the first marker is the
    archive's comment, not a file). None when it is no txtar archive, or has one."""
    files = txtar_files(text)
    if files is None or any(_norm(name) == _TXTAR_REQUEST for name, _, _ in files):
        return None
    if not any(_norm(name) in _TXTAR_REPLIES for name, _, _ in files):
        return None
    names = ", ".join(name for name, _, _ in files)
    return (
        f"a txtar archive of replies ({names}) with no 'request' file to pair them with"
        " (text above the first '-- NAME --' marker is the archive's comment)"
    )


def txtar_document(text: str) -> dict[str, Any] | None:
    """A txtar archive holding a request body (file ``request``) and replies to it (files
    ``response``, ``streaming``, ``non-streaming`` ...) as the calls it records: one flat call
    (``{request_body, response_body}``, told by the bodies' shape: :func:`_shaped_url`) per
    reply, numbered by the line of the reply's marker. A file of another name (a reply to a
    later request the archive does not hold, such as aibridge's ``streaming/tool-call``) is
    listed under :data:`TXTAR_UNPAIRED`, not paired with a request it did not answer. None
    when ``text`` is no such archive."""
    files = txtar_files(text)
    if files is None:
        return None
    requests = [data for name, data, _ in files if _norm(name) == _TXTAR_REQUEST]
    if len(requests) != 1:
        return None
    calls: list[dict[str, Any]] = []
    unpaired: list[str] = []
    for name, data, line in files:
        if _norm(name) == _TXTAR_REQUEST:
            continue
        if _norm(name) in _TXTAR_REPLIES:
            calls.append(
                {
                    "txtar_file": name,
                    "line": line,
                    "request_body": requests[0],
                    "response_body": data.strip(),
                }
            )
        else:
            unpaired.append(name)
    if not calls:
        return None
    return {"calls": calls, TXTAR_UNPAIRED: unpaired}


def text_document(path: Path) -> Any:
    """A recording that is not JSON as plain values: a Go txtar archive of a request and its
    replies (:func:`txtar_document`), else YAML (bounded as a VCR cassette is,
    ``cachecast.logs.vcr``: local tags read as the values they tag, nothing constructed)."""
    check_size(path, MAX_YAML_BYTES, "a YAML recording")
    try:
        text = path.read_text(encoding="utf-8", errors="strict")
        archive = txtar_document(text)
        if archive is not None:
            return archive
        return load_yaml(text, source=str(path), local_tags_plain=True).data
    except UnicodeDecodeError as exc:
        raise LogFileError(str(path), f"not UTF-8 text: {exc}") from None
    except YamlError as exc:
        where = f" (line {exc.line})" if exc.line is not None else ""
        raise LogFileError(str(path), f"not JSON nor YAML{where}: {exc.reason}") from None


def read(stream: LogStream) -> Iterator[Item]:
    if is_json(stream.path):
        loaded: Iterator[tuple[int, Any]] = documents(stream)
    else:
        stream.whole_document = True  # one YAML document: calls numbered by position
        loaded = iter([(1, text_document(stream.path))])
    exchanges: list[Exchange | BadEntry] = []
    calls = 0
    for line, document in loaded:
        if isinstance(document, LogRecordError):  # a line that is not JSON: its error, in order
            yield line, document
            continue
        found = list(_walk(document, "", 0))
        if not found:
            # a line of the log about something else (a tool call, a note): not a model call
            stream.skip("a line holding no model call")
            continue
        recorded = _recorded_at(document) if isinstance(document, dict) else None
        unpaired = document.get(TXTAR_UNPAIRED) if isinstance(document, dict) else None
        for name in unpaired if isinstance(unpaired, list) else ():
            stream.skip(f"a txtar file ({name}) answering a request the archive does not hold")
        for where, node, named in found:
            calls += 1
            at = calls if stream.whole_document else line
            if isinstance(node.get("line"), int) and "txtar_file" in node:
                at = node["line"]  # a txtar reply: the line of its file marker
            try:
                exchanges.append(_exchange(node, at, where, named, recorded))
            except RecordFieldError as exc:
                exchanges.append(BadEntry(at, exc.field, exc.reason))
    yield from read_exchanges(stream, numbered(exchanges))
