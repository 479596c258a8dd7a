"""Codex CLI rollouts read line by line, for ``sessions.reading`` (docs/clients.md, "Format
variants" says which shapes of which versions are read, and why).

Which ``token_count`` events are requests, and each one's usage, is the rule of
``logs.codex.TokenCounts``, the one the record reader (``logs.codex``) follows too: a
request is a ``token_count`` event's ``info.last_token_usage`` (or, where an event states
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
from typing import Any

from cachecast.core.errors import LimitExceededError, LogRecordError, RecordFieldError
from cachecast.logs.canonical import iso_seconds
from cachecast.logs.codex import (
    LEGACY_LINE,
    TYPESCRIPT_ROLLOUT,
    TokenCounts,
    is_count,
    legacy_line,
    opens_turn,
    typescript_file,
)
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
    b'"UserMessage"',  # an item_completed event of a user's message (``opens_turn``)
    b'"turn.completed"',
)
# ``codex exec --json`` reports a turn's usage as ``turn.completed`` (every request of the turn
# summed); a rollout holding such events instead of token_count is not read (docs/clients.md).
TURN_COMPLETED = "Codex turn.completed event (a turn's usage summed over its requests; not read)"


@dataclass(slots=True)
class _Rollout:
    session: str
    skipped: Counter[str]
    counts: TokenCounts  # which token counts are requests (shares the read's ``seen``)
    defaults: ModelDefaults = NO_DEFAULTS
    project: str = ""
    provider: str | None = None  # session_meta's model_provider
    version: str | None = None
    model: str | None = None
    count: int = 0
    event: str | None = None  # "compacted" until the next request
    user_turn: bool = False  # a user message opened a new turn since the previous request


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
    state = _Rollout(stem or path.stem, skipped, TokenCounts(seen), defaults)
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
    if not state.counts.own_meta(payload, state.session):
        return  # the parent's, copied in with its history: the rollout stays its own session
    state.session = _or(payload.get("id"), state.session)
    state.project = _or(payload.get("cwd"), state.project)
    named = payload.get("model_provider")
    state.provider = named if isinstance(named, str) and named else state.provider
    version = payload.get("cli_version")
    state.version = version[:40] if isinstance(version, str) else state.version


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
    if kind == "event_msg" and opens_turn(payload):
        # A new turn: the previous turn's reasoning is no longer sent (docs/clients.md).
        state.user_turn = True
        return None
    if kind != "event_msg" or payload.get("type") != "token_count":
        return None
    found = state.counts.request(payload)
    if isinstance(found, str):
        state.skipped[found] += 1
        return None
    last, usage = found
    named = payload["info"].get("model")
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
        reasoning=reasoning if is_count(reasoning) and reasoning > 0 else 0,
    )
