"""The observed usage of agent sessions, read fast: one :class:`SessionCall` per API request.

The usage report (``cachecast usage``) needs, per request, only what the provider billed:
model, time, the prompt's total, cache reads, cache writes per TTL and output. This module
reads exactly that from Claude Code transcripts and Codex CLI rollouts, one line at a time,
without rebuilding prompts (the full readers, ``logs.claude_code`` and ``logs.codex``, rebuild
each request's conversation for the predictions; the bill does not need it):

* Claude Code: a line is parsed only when it holds ``"usage"``; one API response is split
  over several assistant lines repeating its ``message.id``: it is counted once, with the
  usage of its last line (the final output count), and once across every file read (a
  resumed session repeats earlier responses in its new file). The prompt total is
  ``input_tokens + cache_read_input_tokens + cache_creation_input_tokens`` (Anthropic's
  ``input_tokens`` counts only what follows the last breakpoint, docs/log-formats.md); the
  writes are split by ``cache_creation.ephemeral_5m_input_tokens`` / ``..._1h_...``, and
  written tokens the split does not account for are 5-minute writes (the API's default).
  Claude Code's own ``<synthetic>`` messages are not requests.
* Codex CLI: ``token_count`` events' ``info.last_token_usage`` (``cached_input_tokens`` is a
  subset of ``input_tokens``); an event whose running ``total_token_usage`` did not move
  repeats the previous one; ``info: null`` carries rate limits only. The model is
  ``info.model`` where the event names one, else the latest ``turn_context``'s.

A line that cannot be read is a :class:`LogRecordError` (file, line, field, reason) handed to
the caller, which skips or stops on it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from cachecast.core.errors import LogRecordError, RecordFieldError
from cachecast.logs.canonical import iso_seconds, require_dict

CLAUDE_CODE = "claude_code"
CODEX = "codex"
SYNTHETIC_MODEL = "<synthetic>"
TTL_5M = "5m"
TTL_1H = "1h"

OnError = Callable[[LogRecordError], None]


@dataclass(slots=True)
class SessionCall:
    """One billed API request of an agent session, as its usage reported it."""

    client: str  # CLAUDE_CODE or CODEX
    source: str  # the file, as the user named it
    line: int  # the line of its (last) usage
    request_id: str
    session: str  # the session id (a Claude Code subagent shares its parent's)
    lineage: str  # the cache lineage: the session, or one of its subagents or sidechains
    project: str
    provider: str
    model: str
    timestamp: float | None
    input_tokens: int  # the whole prompt: uncached + read + written
    cache_read_tokens: int
    cache_write_5m_tokens: int
    cache_write_1h_tokens: int
    output_tokens: int

    @property
    def cache_write_tokens(self) -> int:
        return self.cache_write_5m_tokens + self.cache_write_1h_tokens

    @property
    def uncached_input_tokens(self) -> int:
        return self.input_tokens - self.cache_read_tokens - self.cache_write_tokens


def client_of(path: Path) -> str | None:
    """Which client wrote ``path``, from its first line that says (None: neither)."""
    with path.open("rb") as handle:
        for number, raw in enumerate(handle):
            if number >= 50:
                return None
            try:
                event = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
            if not isinstance(event, dict):
                continue
            if isinstance(event.get("payload"), dict) and "type" in event:
                return CODEX
            if "sessionId" in event or event.get("type") in ("summary", "file-history-snapshot"):
                return CLAUDE_CODE
    return None


def read_calls(
    files: Iterable[tuple[Path, str]], on_error: OnError, *, seen: set[str] | None = None
) -> Iterator[SessionCall]:
    """Every request of ``files`` (path, name shown), in file order; ``seen`` holds the
    Claude Code message ids counted so far (shared across calls to count each once)."""
    seen = set() if seen is None else seen
    for path, name in files:
        client = client_of(path)
        if client == CODEX:
            yield from _codex_calls(path, name, on_error)
        elif client == CLAUDE_CODE:
            yield from _claude_calls(path, name, on_error, seen)
        else:
            on_error(
                LogRecordError(
                    name, 1, "<format>", "neither a Claude Code transcript nor a Codex rollout"
                )
            )


def _count(usage: dict[str, Any], key: str, path: str) -> int:
    value = usage.get(key)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise RecordFieldError(f"{path}.{key}", f"expected a non-negative integer, got {value!r}")
    return value


def _text(value: Any, path: str) -> str:
    if not isinstance(value, str) or not value:
        raise RecordFieldError(path, f"expected a string, got {value!r}")
    return value


def _moment(value: Any) -> float | None:
    return None if value is None else iso_seconds(value, "timestamp")


def _claude_project(path: Path) -> str:
    """The project folder under ``projects/`` (Claude Code names it after the working
    directory); a subagent file's is its session's."""
    parts = path.parts
    if "projects" in parts:
        index = len(parts) - 1 - parts[::-1].index("projects")
        if index + 2 < len(parts):
            return parts[index + 1]
    parent = path.parent
    if parent.name == "subagents":
        parent = parent.parent.parent
    return parent.name


def _claude_calls(
    path: Path, name: str, on_error: OnError, seen: set[str]
) -> Iterator[SessionCall]:
    project = _claude_project(path)
    calls: dict[str, SessionCall] = {}  # message id -> its call, in order of first line
    with path.open("rb") as handle:
        for line, raw in enumerate(handle, 1):
            if b'"usage"' not in raw:
                continue  # user lines, progress, snapshots: nothing billed
            try:
                event = orjson.loads(raw)
            except orjson.JSONDecodeError as error:
                on_error(LogRecordError(name, line, "<json>", f"not JSON: {error}"))
                continue
            if not isinstance(event, dict) or event.get("type") != "assistant":
                continue
            try:
                call = _claude_call(event, name, line, project)
            except RecordFieldError as error:
                on_error(LogRecordError(name, line, error.field, error.reason))
                continue
            if call is None:
                continue
            earlier = calls.get(call.request_id)
            if earlier is not None:
                # A later line of the same response: its usage holds the final output.
                earlier.output_tokens = call.output_tokens
                earlier.line = line
            elif call.request_id not in seen:
                seen.add(call.request_id)
                calls[call.request_id] = call
    yield from calls.values()


def _claude_call(event: dict[str, Any], name: str, line: int, project: str) -> SessionCall | None:
    message = require_dict(event.get("message"), "message")
    usage = message.get("usage")
    if usage is None:
        return None
    model = message.get("model")
    if model == SYNTHETIC_MODEL:
        return None  # Claude Code's own error text: no API call
    usage = require_dict(usage, "message.usage")
    message_id = _text(message.get("id"), "message.id")
    model = _text(model, "message.model")
    session = _text(event.get("sessionId"), "sessionId")
    agent = event.get("agentId")
    if isinstance(agent, str) and agent:
        lineage = f"{session}/agent-{agent}"
    elif event.get("isSidechain") is True:
        lineage = f"{session}/sidechain"
    else:
        lineage = session
    path = "message.usage"
    uncached = _count(usage, "input_tokens", path)
    read = _count(usage, "cache_read_input_tokens", path)
    written = _count(usage, "cache_creation_input_tokens", path)
    split = usage.get("cache_creation")
    hour = 0
    five = written
    if split is not None:
        split = require_dict(split, f"{path}.cache_creation")
        hour = _count(split, "ephemeral_1h_input_tokens", f"{path}.cache_creation")
        five = _count(split, "ephemeral_5m_input_tokens", f"{path}.cache_creation")
        if five + hour > written:
            raise RecordFieldError(
                f"{path}.cache_creation",
                f"5m {five} + 1h {hour} written exceed cache_creation_input_tokens {written}",
            )
        five = written - hour  # what the split leaves unsaid: the API's default, 5 minutes
    return SessionCall(
        client=CLAUDE_CODE,
        source=name,
        line=line,
        request_id=message_id,
        session=session,
        lineage=lineage,
        project=project,
        provider="anthropic",
        model=model,
        timestamp=_moment(event.get("timestamp")),
        input_tokens=uncached + read + written,
        cache_read_tokens=read,
        cache_write_5m_tokens=five,
        cache_write_1h_tokens=hour,
        output_tokens=_count(usage, "output_tokens", path),
    )


def _or(value: Any, otherwise: str) -> str:
    return value if isinstance(value, str) and value else otherwise


_CODEX_MARKS = (b'"token_count"', b'"turn_context"', b'"session_meta"')


def _codex_calls(path: Path, name: str, on_error: OnError) -> Iterator[SessionCall]:
    session = path.stem
    project = ""
    provider = "openai"
    model: str | None = None
    total: Any = None
    count = 0
    with path.open("rb") as handle:
        for line, raw in enumerate(handle, 1):
            if not any(mark in raw for mark in _CODEX_MARKS):
                continue
            try:
                event = orjson.loads(raw)
            except orjson.JSONDecodeError as error:
                on_error(LogRecordError(name, line, "<json>", f"not JSON: {error}"))
                continue
            if not isinstance(event, dict):
                continue
            payload = event.get("payload")
            if not isinstance(payload, dict):
                continue
            kind = event.get("type")
            if kind == "session_meta":
                session = _or(payload.get("id"), session)
                project = _or(payload.get("cwd"), project)
                named = payload.get("model_provider")
                provider = named if isinstance(named, str) and named else provider
                continue
            if kind == "turn_context":
                named = payload.get("model")
                model = named if isinstance(named, str) and named else model
                project = _or(payload.get("cwd"), project)
                continue
            if kind != "event_msg" or payload.get("type") != "token_count":
                continue
            info = payload.get("info")
            if info is None:
                continue  # rate limits only
            try:
                info = require_dict(info, "payload.info")
                running = info.get("total_token_usage")
                if running is not None and running == total:
                    continue  # the same event written again before the next turn
                total = running
                path_ = "payload.info.last_token_usage"
                last = require_dict(info.get("last_token_usage"), path_)
                named = info.get("model")
                request_model = named if isinstance(named, str) and named else model
                if request_model is None:
                    raise RecordFieldError("model", "no turn_context names the model before it")
                input_tokens = _count(last, "input_tokens", path_)
                cached = _count(last, "cached_input_tokens", path_)
                if cached > input_tokens:
                    raise RecordFieldError(
                        f"{path_}.cached_input_tokens",
                        f"{cached} exceeds input_tokens {input_tokens} (it is a subset)",
                    )
                count += 1
                yield SessionCall(
                    client=CODEX,
                    source=name,
                    line=line,
                    request_id=f"{session}:{count}",
                    session=session,
                    lineage=session,
                    project=project,
                    provider=provider,
                    model=request_model,
                    timestamp=_moment(event.get("timestamp")),
                    input_tokens=input_tokens,
                    cache_read_tokens=cached,
                    cache_write_5m_tokens=0,
                    cache_write_1h_tokens=0,
                    output_tokens=_count(last, "output_tokens", path_),
                )
            except RecordFieldError as error:
                on_error(LogRecordError(name, line, error.field, error.reason))
