"""Codex CLI rollouts read line by line, for ``sessions.reading`` (docs/clients.md, "Format
variants" says which shapes of which versions are read, and why).

A request is a ``token_count`` event's ``info.last_token_usage`` (or, where an event states
only the running ``total_token_usage``, what that total grew by since the one before). An
event whose running total did not move repeats the previous one. A rollout that Codex wrote
for a fork or a sub-agent starts with the parent's history copied in, its ``token_count``
events included: those are counted once across every file read (``seen``). A rollout of the
format before ``session_meta`` (no envelope; ``logs.codex.legacy_line`` tells it), or of the
TypeScript CLI (one ``{session, items}`` document), records no usage: it is read as no
request, and the reason is counted among the skipped lines.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TypeGuard

import orjson

from cachecast.core.errors import LimitExceededError, LogRecordError, RecordFieldError
from cachecast.logs.canonical import iso_seconds, require_dict
from cachecast.logs.codex import (
    BILLED_COUNTERS,
    LEGACY_LINE,
    TYPESCRIPT_ROLLOUT,
    legacy_line,
    typescript_file,
)
from cachecast.logs.usage import normalize_usage
from cachecast.sessions.native import (
    CODEX,
    NO_DEFAULTS,
    NO_MODEL,
    ModelDefaults,
    SessionRequest,
    _events,
    make_request,
)

_CODEX_MARKS = (
    b'"token_count"',
    b'"turn_context"',
    b'"session_meta"',
    b'"compacted"',
    b'"user_message"',
    b'"turn.completed"',
)
# The counters of a Codex usage object (a running total less the previous one per counter).
_COUNTERS = (
    "input_tokens",
    "cached_input_tokens",
    "output_tokens",
    "reasoning_output_tokens",
    "total_tokens",
)
# ``codex exec --json`` reports a turn's usage as ``turn.completed`` (every request of the turn
# summed); a rollout holding such events instead of token_count is not read (docs/clients.md).
TURN_COMPLETED = "Codex turn.completed event (a turn's usage summed over its requests; not read)"
REPLAYED = "Codex token_count copied from the parent session into a fork (counted once)"


@dataclass(slots=True)
class _Rollout:
    session: str
    skipped: Counter[str]
    seen: set[str]
    defaults: ModelDefaults = NO_DEFAULTS
    project: str = ""
    provider: str | None = None  # session_meta's model_provider
    version: str | None = None
    model: str | None = None
    total: Any = None  # the running total of the last token_count counted
    count: int = 0
    event: str | None = None  # "compacted" until the next request
    user_turn: bool = False  # a user message opened a new turn since the previous request
    meta: bool = False  # the rollout's own session_meta was read (a later one is its parent's)
    fork: bool = False  # a fork or sub-agent's rollout: it starts with its parent's history


def codex_requests(
    path: Path,
    name: str,
    skipped: Counter[str],
    seen: set[str],
    defaults: ModelDefaults = NO_DEFAULTS,
    *,
    stem: str | None = None,
) -> Iterator[SessionRequest | LogRecordError]:
    """Every request of a rollout; ``seen`` holds the keys of the token counts counted so
    far in other files (share it to count a fork's copied history once); ``defaults`` name
    the model (and provider) of requests no ``turn_context`` names; ``stem`` names the
    session where no ``session_meta`` does (else the file's name: an inflated copy's differs)."""
    if typescript_file(path):
        skipped[TYPESCRIPT_ROLLOUT] += 1  # the TypeScript CLI recorded no usage
        return
    state = _Rollout(stem or path.stem, skipped, seen, defaults)
    for line, event in _events(path, name, _wanted):
        if isinstance(event, LogRecordError):
            yield event
            continue
        if line == 1 and legacy_line(event):
            skipped[LEGACY_LINE] += 1  # no token counts follow in this format
            continue
        built = _located(name, line, partial(_codex_event, event, line, name, state))
        if built is not None:
            yield built


def _wanted(line: int, raw: bytes) -> bool:
    """Whether a line may matter: one with a Codex event, or the first (a rollout of the
    format before the envelope is told by it)."""
    return line == 1 or any(mark in raw for mark in _CODEX_MARKS)


def _located(
    name: str, line: int, read: Callable[[], SessionRequest | None]
) -> SessionRequest | LogRecordError | None:
    """What reading one line gives: its request (None: no request), or the line's error
    naming its file, line and field; a claimed count over its limit stops the read."""
    try:
        return read()
    except RecordFieldError as error:
        return LogRecordError(name, line, error.field, error.reason)
    except LimitExceededError as error:
        raise error.located(name, line) from None


def _or(value: Any, otherwise: str) -> str:
    return value if isinstance(value, str) and value else otherwise


def _session_meta(payload: dict[str, Any], state: _Rollout) -> None:
    if state.meta:
        # A second session_meta is the parent's, copied in with its history (a fork or a
        # sub-agent): the rollout stays its own session.
        state.fork = state.fork or payload.get("id") != state.session
        return
    state.meta = True
    state.session = _or(payload.get("id"), state.session)
    state.project = _or(payload.get("cwd"), state.project)
    named = payload.get("model_provider")
    state.provider = named if isinstance(named, str) and named else state.provider
    version = payload.get("cli_version")
    state.version = version[:40] if isinstance(version, str) else state.version
    state.fork = bool(payload.get("forked_from_id"))


def _codex_event(
    event: dict[str, Any], line: int, name: str, state: _Rollout
) -> SessionRequest | None:
    payload = event.get("payload")
    if not isinstance(payload, dict):
        return None
    kind = event.get("type")
    if kind == "session_meta":
        _session_meta(payload, state)
        return None
    if kind == "turn_context":
        named = payload.get("model")
        state.model = named if isinstance(named, str) and named else state.model
        state.project = _or(payload.get("cwd"), state.project)
        return None
    if kind == "compacted":
        state.event = "compacted"
        return None
    if kind == "event_msg" and payload.get("type") == "turn.completed":
        state.skipped[TURN_COMPLETED] += 1
        return None
    if kind == "event_msg" and payload.get("type") == "user_message":
        # A new turn: the previous turn's reasoning is no longer sent (docs/clients.md).
        state.user_turn = True
        return None
    if kind != "event_msg" or payload.get("type") != "token_count":
        return None
    info = payload.get("info")
    if info is None:
        reason = (
            "Codex token_count with its counts outside info (an older shape, not counted)"
            if "input_tokens" in payload
            else "Codex token_count without usage (rate limits only)"
        )
        state.skipped[reason] += 1
        return None
    info = require_dict(info, "payload.info")
    running = info.get("total_token_usage")
    if running is not None and running == state.total:
        # The same event written again before the next turn.
        state.skipped["Codex token_count repeating the previous one (counted once)"] += 1
        return None
    last, where = _last_usage(info, state.total)
    state.total = running
    if _replayed(running, last, state):
        state.skipped[REPLAYED] += 1
        return None
    if not any(last.get(key) for key in BILLED_COUNTERS):
        # An event of no tokens (an aborted turn; or, after a compaction, Codex's estimate of
        # the new history, stated as total_tokens alone: ``recompute_token_usage``): no
        # request was billed.
        state.skipped["Codex token_count of no tokens (no request)"] += 1
        return None
    usage = normalize_usage(last, convention="codex", path=where)
    if (usage.cache_read_tokens or 0) > (usage.input_tokens or 0):
        raise RecordFieldError(
            f"{where}.cached_input_tokens",
            f"{usage.cache_read_tokens} exceeds input_tokens {usage.input_tokens} (a subset)",
        )
    named = info.get("model")
    model = named if isinstance(named, str) and named else state.model
    if model is None:
        if state.defaults.model is None:
            raise RecordFieldError("model", f"{NO_MODEL} (no turn_context names one before it)")
        model = state.defaults.model
    provider = state.provider or state.defaults.provider or "openai"
    state.count += 1
    event_before, state.event = state.event, None
    user_turn, state.user_turn = state.user_turn, False
    reasoning = last.get("reasoning_output_tokens")
    timestamp = event.get("timestamp")
    return make_request(
        name,
        line,
        f"{state.session}:{state.count}",
        state.session,
        model,
        None if timestamp is None else iso_seconds(timestamp, "timestamp"),
        usage,
        event=event_before,
        provider=provider,
        client_version=state.version,
        client=CODEX,
        session=state.session,
        project=state.project,
        user_turn=user_turn,
        reasoning=reasoning if _count(reasoning) and reasoning > 0 else 0,
    )


def _last_usage(info: dict[str, Any], previous: Any) -> tuple[dict[str, Any], str]:
    """The request's usage: ``last_token_usage``, or what the running total grew by since
    the previous event counted (versions that write the total alone)."""
    last = info.get("last_token_usage")
    if last is not None or info.get("total_token_usage") is None:
        where = "payload.info.last_token_usage"
        return require_dict(last, where), where
    where = "payload.info.total_token_usage"
    running = require_dict(info["total_token_usage"], where)
    before = previous if isinstance(previous, dict) else {}
    grown = {}
    for key in _COUNTERS:
        now, then = running.get(key), before.get(key, 0)
        if key in running:
            grown[key] = now - then if _count(now) and _count(then) and now >= then else now
    return grown, where


def _count(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _replayed(running: Any, last: dict[str, Any], state: _Rollout) -> bool:
    """Whether this token count was counted in another file already: a fork's copy of its
    parent's, or (a fork read first) the parent's original. A running total past the first
    request is unique to its conversation; a first request's (total = last) is matched only
    where a fork's rollout holds it, so two sessions that began alike stay two."""
    if running is None:
        return False
    key = "codex:" + orjson.dumps([running, last], option=orjson.OPT_SORT_KEYS).decode()
    copied = "codex-fork:" + key[6:]
    if key in state.seen:
        return state.fork or running != last or copied in state.seen
    state.seen.add(key)
    if state.fork:
        state.seen.add(copied)
    return False
