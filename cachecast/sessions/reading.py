"""Session logs read as the predictor needs them: per request its facts (where, when, which
model and lineage, the prompt's length) and, apart, the split the provider reported.

No tokenizer runs here and no token list is built: a request is the counts its usage states,
so what the reading keeps per session is a few integers, whatever the prompt's length.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from cachecast.core.errors import LogRecordError, RecordFieldError
from cachecast.logs.canonical import iso_seconds
from cachecast.logs.formats import detect_format, open_log
from cachecast.logs.stream import LogStream
from cachecast.logs.types import ObservedUsage
from cachecast.logs.usage import canonical_observed
from cachecast.sessions.predictor import ObservedSplit, PromptFacts

SUBAGENT_MARKS = ("/agent-", "/sidechain-")
# Claude Code names the agent that compacts a session ``acompact-*``: it sends the session's
# history (docs/clients.md), so it can read what the session cached.
COMPACTION_MARK = "/agent-acompact"


@dataclass(frozen=True, slots=True)
class SessionRequest:
    facts: PromptFacts
    observed: ObservedSplit  # never handed to a prediction: SessionPredictor.learn only
    usage: ObservedUsage  # the usage as reported (for the bill)
    provider: str | None
    client_version: str | None


def session_requests(
    path: Path, source: str, format: str | None = None
) -> Iterator[SessionRequest | LogRecordError]:
    """Every request of a session file with usage, in file order; errors as they come."""
    stream = open_log(path, format=format, name=source)
    stream.usage_only = True
    for line, item in stream:
        if isinstance(item, LogRecordError):
            yield item
            continue
        try:
            built = _request(source, line, item)
        except RecordFieldError as exc:
            yield stream.error(line, exc.field, exc.reason)
            continue
        if built is not None:
            yield built


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """What a session log's record says of its request, without its prompt (``inspect``)."""

    model: str | None
    provider: str | None
    timestamp: float
    prompt_complete: bool
    observed: ObservedUsage | None
    line: int


def session_records(
    stream: LogStream, errors: list[LogRecordError], versions: set[str]
) -> Iterator[SessionRecord]:
    """Every request record of an open session log, its prompt left unread (no tokenizer, no
    token list: a claim of millions of tokens stays a number); bad lines go to ``errors``
    and the client versions the records name to ``versions``."""
    for line, item in stream:
        if isinstance(item, LogRecordError):
            errors.append(item)
            continue
        try:
            raw = item.get("observed")
            observed = None if raw is None else canonical_observed(raw)
            when = _seconds(item.get("timestamp"))
        except RecordFieldError as exc:
            errors.append(stream.error(line, exc.field, exc.reason))
            continue
        version = item.get("client_version")
        if isinstance(version, str):
            versions.add(version)
        model, provider = item.get("model"), item.get("provider")
        yield SessionRecord(
            model if isinstance(model, str) else None,
            provider if isinstance(provider, str) else None,
            when,
            item.get("prompt_complete", True) is not False,
            observed,
            line,
        )


def record_requests(
    records: Iterable[dict[str, Any]], source: str
) -> Iterator[SessionRequest | LogRecordError]:
    """The same for records given inline (canonical wrapper records with ``observed``)."""
    for index, record in enumerate(records):
        try:
            built = _request(source, index + 1, record)
        except RecordFieldError as exc:
            yield LogRecordError(source, None, exc.field, exc.reason, record=index)
            continue
        if built is not None:
            yield built


def log_format(path: Path, format: str | None = None) -> str:
    """The format name a file is read as: forced, or detected from its first bytes (the
    file is not parsed here)."""
    if format is not None:
        return format
    return detect_format(path)[0].name


def _request(source: str, line: int, record: dict[str, Any]) -> SessionRequest | None:
    raw = record.get("observed")
    if raw is None:
        return None
    usage = canonical_observed(raw)
    if usage.input_tokens is None:
        raise RecordFieldError("usage", "the request's usage states no input token count")
    read = usage.cache_read_tokens or 0
    by_ttl = dict(usage.cache_write_by_ttl)
    write = (
        usage.cache_write_tokens if usage.cache_write_tokens is not None else sum(by_ttl.values())
    )
    reported = usage.cache_write_tokens is not None or bool(by_ttl)
    total = usage.input_tokens
    lineage = str(record.get("session") or source)
    facts = PromptFacts(
        source=source,
        line=line,
        request_id=str(record.get("request_id") or f"{source}:{line}"),
        lineage=lineage,
        model=str(record.get("model") or ""),
        timestamp=_seconds(record.get("timestamp")),
        prompt_tokens=total,
        root=_root(record.get("request")),
        event=record.get("session_event") if isinstance(record.get("session_event"), str) else None,
        subagent=any(mark in lineage for mark in SUBAGENT_MARKS),
        parent=lineage.split(COMPACTION_MARK, 1)[0] if COMPACTION_MARK in lineage else None,
        user_turn=record.get("user_turn") is True,
    )
    observed = ObservedSplit(
        read=read,
        write=write,
        uncached=total - read - write,
        output=usage.output_tokens or 0,
        write_by_ttl=by_ttl,
        writes_reported=reported,
        reasoning=_count(record.get("reasoning_tokens")),
    )
    version = record.get("client_version")
    provider = record.get("provider")
    return SessionRequest(
        facts,
        observed,
        usage,
        provider if isinstance(provider, str) else None,
        version if isinstance(version, str) else None,
    )


def _count(value: Any) -> int:
    """A non-negative token count a record may carry beside its usage (0 where absent)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _seconds(value: Any) -> float:
    """A record's time as epoch seconds (the readers give numbers; inline records may give
    ISO 8601); 0 where it has none."""
    return 0.0 if value is None else iso_seconds(value, "timestamp")


def _root(body: Any) -> str | None:
    """A fingerprint of the prompt's first visible message: requests whose histories start
    alike (a compaction agent and the session it compacts) can share a cached prefix."""
    if not isinstance(body, dict):
        return None
    items = body.get("messages", body.get("input"))
    if not isinstance(items, list) or not items:
        return None
    return hashlib.blake2b(orjson.dumps(items[0]), digest_size=12).hexdigest()
