"""Conversation state the APIs keep between calls, followed within a recording.

A Responses request with ``previous_response_id`` gets the earlier input and output in front
of its own; each response is remembered as a :class:`Turn` holding only what it added, so a
long chain costs what its new items cost (the newest histories are kept built, so the next
request's input is one list put together, not a walk). A Gemini ``cachedContents`` creation
becomes a record of its own (its content is its prompt), with the lifetime the recording
shows (its TTL, moved by later updates, cut by a deletion); a request naming that
``cachedContent`` gets the cached system instruction, tools and contents in front, with a
cache breakpoint at their end (the ``cache_control`` mark the renderer reads on a Gemini
content). A reference to state the recording does not
hold leaves the request's prompt incomplete.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

from cachecast.core.errors import RecordFieldError
from cachecast.logs.canonical import make_record
from cachecast.logs.http.bodies import decode_body, decode_json
from cachecast.logs.http.conversations import Agent, Conversation
from cachecast.logs.http.exchange import Exchange
from cachecast.logs.sanitize import iso_moment
from cachecast.logs.types import ObservedUsage
from cachecast.logs.usage_fields import ttl_marks

# Whole histories kept built for the next request to extend (the newest responses; an older
# one named again is rebuilt from its turns).
HISTORIES_KEPT = 8


@dataclass(frozen=True, slots=True)
class Turn:
    """One response's place in a Responses conversation: the turn it continued (None: the
    first), the items it added (its request's own input, then its output), the number of
    items of the whole history up to it, and the TTLs of the cache marks in that history.
    A turn holds only its own items, so a chain of N turns holds N turns' items, not N
    histories (issue 28: a 3,000-request chain held and walked each history again)."""

    parent: Turn | None
    added: tuple[Any, ...]
    length: int
    ttls: frozenset[str]

    def history(self) -> list[Any]:
        """Every item of the conversation up to this turn, oldest first."""
        pieces: list[tuple[Any, ...]] = []
        turn: Turn | None = self
        while turn is not None:
            pieces.append(turn.added)
            turn = turn.parent
        return [item for piece in reversed(pieces) for item in piece]


@dataclass(slots=True)
class Chain:
    """A Responses request with its conversation state followed: ``body`` has the earlier
    items in front of its own input where ``parent`` (the turn it continues) is known;
    ``complete`` is False where it names a response the recording does not hold. ``own``:
    the request's own input items; ``earlier``: the parent request's input list, whose
    items (the very objects) open ``body``'s input, where it was at hand."""

    body: dict[str, Any]
    complete: bool
    parent: Turn | None
    own: list[Any]
    earlier: list[Any] | None = None


@dataclass(slots=True)
class ApiState:
    """What the API keeps between calls, as far as the recording shows it."""

    responses: dict[str, Turn] = field(default_factory=dict)
    # The newest responses' request input (the list in their record) and output: the next
    # request's input is these, then its own, put together once without walking the turns.
    histories: OrderedDict[str, tuple[list[Any], tuple[Any, ...]]] = field(
        default_factory=OrderedDict
    )
    # The latest Responses record: a record continuing it has that record's input checked
    # already (``LogStream.continues``).
    latest: dict[str, Any] | None = None
    caches: dict[str, tuple[dict[str, Any], str | None]] = field(default_factory=dict)
    # Mistral conversation_id -> the conversation so far (cachecast.logs.http.conversations)
    conversations: dict[str, Conversation] = field(default_factory=dict)
    # Mistral agent id -> the agent its creation or latest update answered with
    agents: dict[str, Agent] = field(default_factory=dict)
    # cachedContents name -> (created, lifetime seconds, deleted before its TTL ran out)
    lifetimes: dict[str, tuple[float | None, int, bool]] = field(default_factory=dict)
    # The latest Chat Completions exchange: its body without ``messages``, its messages and
    # its reply as a request carries it (None: a reply the recording does not hold whole).
    chat_turn: tuple[dict[str, Any], list[Any], dict[str, Any]] | None = None
    # The first organization the recording's responses name (``organization_of``).
    organization: str | None = None


GEMINI_DEFAULT_TTL_SECONDS = 3600  # "If not set, the TTL defaults to 1 hour" (Gemini docs)

# The keys of a Chat Completions message a reply and the request carrying it back share.
_SENT_MESSAGE_KEYS = ("role", "content", "reasoning_content", "tool_calls")


def _as_sent(message: Any) -> dict[str, Any] | None:
    """A Chat Completions message as a request carries it: its role, content, reasoning and
    tool calls (id, type, function), with the response-only keys (a call's ``index``,
    ``refusal``, ``annotations``) and null values left out."""
    if not isinstance(message, dict):
        return None
    sent = {k: message[k] for k in _SENT_MESSAGE_KEYS if message.get(k) is not None}
    calls = sent.get("tool_calls")
    if isinstance(calls, list):
        sent["tool_calls"] = [
            {k: call[k] for k in ("id", "type", "function") if k in call}
            if isinstance(call, dict)
            else call
            for call in calls
        ]
    return sent


def carried_reply(body: dict[str, Any], response: Any, state: ApiState) -> int | None:
    """Where this Chat Completions request carries the previous exchange's reply verbatim:
    the index of that message, when the request is the previous one (every body key but
    ``messages`` equal, its messages first) followed by the reply exactly as it came back
    (the same content, reasoning and tool calls, arguments byte for byte). Then remember
    this exchange and its reply for the next request: the one choice of a response object,
    or the message a stream's chunks assemble (:func:`streamed_message`)."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        state.chat_turn = None
        return None
    rest = {k: v for k, v in body.items() if k != "messages"}
    found = None
    turn = state.chat_turn
    if turn is not None:
        earlier_rest, earlier, reply = turn
        count = len(earlier)
        if (
            len(messages) > count
            and _as_sent(messages[count]) == reply
            and messages[:count] == earlier
            and rest == earlier_rest
        ):
            found = count
    state.chat_turn = None
    message: Any = None
    if isinstance(response, list):
        message = streamed_message(response)
    elif isinstance(response, dict):
        choices = response.get("choices")
        if isinstance(choices, list) and len(choices) == 1 and isinstance(choices[0], dict):
            message = choices[0].get("message")
    sent = _as_sent(message)
    if sent:
        state.chat_turn = (rest, messages, sent)
    return found


def streamed_message(events: Sequence[Any]) -> dict[str, Any] | None:
    """The message a Chat Completions stream delivers, put together from its chunks'
    ``delta``s the way the API documents a stream: ``content`` and ``reasoning_content``
    pieces concatenated, tool calls merged by their ``index`` (id, type and name from the
    chunk that opens a call, the ``arguments`` pieces concatenated; a call whose chunks name
    no type is a ``function`` call, the only type a chat tool call has). None for a stream
    of several choices (``n`` > 1) or without any delta."""
    message: dict[str, Any] = {}
    calls: dict[int, dict[str, Any]] = {}
    for event in events:
        choices = event.get("choices") if isinstance(event, dict) else None
        for choice in choices if isinstance(choices, list) else ():
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                return None
            delta = choice.get("delta")
            if not isinstance(delta, dict):
                continue
            if isinstance(delta.get("role"), str):
                message["role"] = delta["role"]
            for key in ("content", "reasoning_content"):
                piece = delta.get(key)
                if isinstance(piece, str):
                    message[key] = message.get(key, "") + piece
            pieces = delta.get("tool_calls")
            for piece in pieces if isinstance(pieces, list) else ():
                if not isinstance(piece, dict) or not isinstance(piece.get("index", 0), int):
                    return None
                _merge_call(calls.setdefault(piece.get("index", 0), {}), piece)
    if calls:
        message["tool_calls"] = [
            {"type": "function", **calls[index]} if "function" in calls[index] else calls[index]
            for index in sorted(calls)
        ]
    return message or None


def _merge_call(call: dict[str, Any], piece: dict[str, Any]) -> None:
    """One streamed piece of a tool call into the call assembled so far."""
    for key in ("id", "type"):
        if isinstance(piece.get(key), str):
            call[key] = piece[key]
    function = piece.get("function")
    if isinstance(function, dict):
        merged = call.setdefault("function", {})
        if isinstance(function.get("name"), str):
            merged["name"] = function["name"]
        if isinstance(function.get("arguments"), str):
            merged["arguments"] = merged.get("arguments", "") + function["arguments"]


def _own_items(body: dict[str, Any]) -> list[Any]:
    current = body.get("input", [])
    if isinstance(current, str):
        return [{"type": "message", "role": "user", "content": current}]
    return list(current) if isinstance(current, list) else []


def chain_response(body: dict[str, Any], state: ApiState) -> Chain:
    previous = body.get("previous_response_id")
    own = _own_items(body)
    if previous is None:
        return Chain(body, True, None, own)
    turn = state.responses.get(previous) if isinstance(previous, str) else None
    if turn is None:
        return Chain(body, False, None, own)  # the earlier turns are not in the recording
    chained = {k: v for k, v in body.items() if k != "previous_response_id"}
    kept = state.histories.get(previous)
    if kept is None:
        chained["input"] = [*turn.history(), *own]
        return Chain(chained, True, turn, own)
    earlier, output = kept
    chained["input"] = [*earlier, *output, *own]
    return Chain(chained, True, turn, own, earlier)


def remember_response(chain: Chain, final: dict[str, Any], state: ApiState) -> None:
    response_id = final.get("id")
    output = final.get("output")
    if not isinstance(response_id, str) or not isinstance(output, list):
        return
    produced = tuple(i for i in output if isinstance(i, dict))
    added = (*chain.own, *produced)
    parent = chain.parent
    state.responses[response_id] = Turn(
        parent,
        added,
        (parent.length if parent is not None else 0) + len(added),
        (parent.ttls if parent is not None else frozenset()) | ttl_marks(list(added)),
    )
    current = chain.body.get("input")
    if isinstance(current, list):
        state.histories[response_id] = (current, produced)
    else:  # a string input: the one message it stands for
        state.histories[response_id] = (list(chain.own), produced)
    state.histories.move_to_end(response_id)
    while len(state.histories) > HISTORIES_KEPT:
        state.histories.popitem(last=False)


def _ttl_name(ttl: Any) -> str | None:
    """Gemini's ``ttl`` (``"3600s"``) as a TTL option name (``1h``, ``5m``, ``90s``)."""
    if not isinstance(ttl, str) or not ttl.endswith("s"):
        return None
    try:
        seconds = float(ttl[:-1])
    except ValueError:
        return None
    if not math.isfinite(seconds):  # "1e400s", "nans": no TTL a cache can have
        return None
    whole = int(seconds)
    if whole != seconds or whole <= 0:
        return f"{ttl}"
    if whole % 3600 == 0:
        return f"{whole // 3600}h"
    if whole % 60 == 0:
        return f"{whole // 60}m"
    return f"{whole}s"


CACHE_KEYS = ("contents", "systemInstruction", "system_instruction", "tools")


def gemini_listed(body: dict[str, Any]) -> dict[str, Any]:
    """A Gemini body with its one-object lists as lists: ``contents`` sent as one Content
    object, and a Content's or the system instruction's ``parts`` as one Part, are what the
    API received as a list of one (it answers them as such: a Ruby client's
    ``{"contents": {"role": "user", "parts": {"text": ...}}}`` recorded with a 200 reply;
    docs/log-formats.md, "Gemini"). Anything else is left as it is, for the renderer to
    name."""
    contents = body.get("contents")
    if isinstance(contents, dict):
        contents = [contents]
    if isinstance(contents, list):
        contents = [_parts_listed(content) for content in contents]
    listed = {**body, "contents": contents} if "contents" in body else dict(body)
    for key in ("systemInstruction", "system_instruction"):
        if isinstance(body.get(key), dict):
            listed[key] = _parts_listed(body[key])
    return listed


def _parts_listed(content: Any) -> Any:
    if isinstance(content, dict) and isinstance(content.get("parts"), dict):
        return {**content, "parts": [content["parts"]]}
    return content


def cache_creation_record(
    exchange: Exchange, body: dict[str, Any], response: Any, state: ApiState
) -> dict[str, Any] | None:
    """A ``cachedContents`` creation as a record of its own: its content is its prompt
    (billed at the input price when created), its lifetime what the recording shows."""
    name = response.get("name") if isinstance(response, dict) else None
    if not isinstance(name, str):
        raise RecordFieldError("response.body.name", "a cachedContents creation names no cache")
    cached: dict[str, Any] = {k: body[k] for k in CACHE_KEYS if k in body}
    ttl = _ttl_name(body.get("ttl"))
    state.caches[name] = (cached, ttl)
    _, lifetime, deleted = state.lifetimes.get(
        name, (exchange.timestamp, GEMINI_DEFAULT_TTL_SECONDS, False)
    )
    count = None
    usage = response.get("usageMetadata") if isinstance(response, dict) else None
    if isinstance(usage, dict) and isinstance(usage.get("totalTokenCount"), int):
        count = usage["totalTokenCount"]
    model = body.get("model")
    record = make_record(
        request={**cached, "contents": cached.get("contents", [])},
        model=model.removeprefix("models/") if isinstance(model, str) else None,
        provider="google",
        timestamp=exchange.timestamp,
        request_id=name,
        observed=(
            # A cache's creation reads nothing: its read is 0, not "not reported".
            ObservedUsage(
                input_tokens=count, cache_read_tokens=0, cache_write_tokens=count, output_tokens=0
            )
            if count is not None
            else None
        ),
    )
    record["cache_creation"] = {
        "name": name,
        "lifetime_seconds": lifetime,
        "ttl": ttl,
        "deleted": deleted,
    }
    return record


def _seconds(ttl: Any) -> int | None:
    if isinstance(ttl, str) and ttl.endswith("s"):
        try:
            seconds = float(ttl[:-1])
        except ValueError:
            return None
        return max(0, round(seconds)) if math.isfinite(seconds) else None
    return None


def cache_lifetimes(
    exchanges: Sequence[object],
) -> dict[str, tuple[float | None, int, bool]]:
    """Every cache the recording creates: (created, lifetime in seconds, deleted early).

    The lifetime runs from the creation to the expiry its TTL (or ``expireTime``) sets, as
    moved by later updates (``PATCH .../cachedContents/NAME``), or to its deletion
    (``DELETE``) where that comes first; a recording without times keeps the TTL."""
    lifetimes: dict[str, tuple[float | None, int, bool]] = {}
    expiries: dict[str, float | None] = {}
    for exchange in exchanges:
        if not isinstance(exchange, Exchange) or not _is_success(exchange.status):
            continue
        path = unquote(urlsplit(exchange.url).path).rstrip("/")
        if "/cachedContents" not in path:
            continue
        method = exchange.method.upper()
        now = exchange.timestamp
        try:
            body = decode_json(exchange.request_body, exchange.request_headers, "request.body")
        except RecordFieldError:
            body = {}
        body = body if isinstance(body, dict) else {}
        if method == "POST" and path.endswith("/cachedContents"):
            try:
                response = decode_body(
                    exchange.response_body, exchange.response_headers, "response.body"
                )
            except RecordFieldError:
                continue
            name = response.get("name") if isinstance(response, dict) else None
            if not isinstance(name, str):
                continue
            ttl = _seconds(body.get("ttl"))
            expiry = iso_moment(body.get("expireTime", body.get("expire_time")))
            if expiry is None and now is not None:
                expiry = now + (ttl if ttl is not None else GEMINI_DEFAULT_TTL_SECONDS)
            lifetime = ttl if ttl is not None else GEMINI_DEFAULT_TTL_SECONDS
            if expiry is not None and now is not None:
                lifetime = max(0, round(expiry - now))
            lifetimes[name] = (now, lifetime, False)
            expiries[name] = expiry
            continue
        name = "cachedContents/" + path.rsplit("/cachedContents/", 1)[-1]
        if name not in lifetimes or "/cachedContents/" not in path:
            continue
        created = lifetimes[name][0]
        if method == "PATCH" and now is not None and created is not None:
            ttl = _seconds(body.get("ttl"))
            expiry = iso_moment(body.get("expireTime", body.get("expire_time"))) or (
                now + ttl if ttl is not None else None
            )
            if expiry is not None:
                expiries[name] = expiry
                lifetimes[name] = (created, max(0, round(expiry - created)), False)
        elif method == "DELETE":
            expiry = expiries.get(name)
            if now is not None and created is not None and (expiry is None or now < expiry):
                lifetimes[name] = (created, max(0, round(now - created)), True)
    return lifetimes


def _is_success(status: int | None) -> bool:
    return status is None or 200 <= status < 300


CACHED_CONTENT = ("cachedContent", "cached_content")  # the REST API takes either spelling


def cached_content_name(body: dict[str, Any]) -> str | None:
    """The ``cachedContents`` name a Gemini request reads, in either spelling."""
    name = next((body[key] for key in CACHED_CONTENT if key in body), None)
    return name if isinstance(name, str) else None


def with_cache(body: dict[str, Any], state: ApiState) -> tuple[dict[str, Any], bool]:
    name = cached_content_name(body)
    merged = {k: v for k, v in body.items() if k not in CACHED_CONTENT}
    found = state.caches.get(name) if name is not None else None
    if found is None:
        return merged, False  # created outside the recording: its content is unknown
    cached, ttl = found
    marker: dict[str, Any] = {"type": "ephemeral"}
    if ttl is not None:
        marker["ttl"] = ttl
    contents = [dict(c) if isinstance(c, dict) else c for c in cached.get("contents", [])]
    for key in ("systemInstruction", "system_instruction", "tools"):
        if key in cached:
            merged[key] = cached[key]
    if contents and isinstance(contents[-1], dict):
        contents[-1]["cache_control"] = marker
    else:
        system = next((k for k in ("systemInstruction", "system_instruction") if k in merged), "")
        if isinstance(merged.get(system), dict):
            merged[system] = {**merged[system], "cache_control": marker}
    merged["contents"] = [*contents, *body.get("contents", [])]
    return merged, True
