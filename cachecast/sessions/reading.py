"""The one reader of agent session logs: every request of a Claude Code transcript or a Codex
CLI rollout as a :class:`SessionRequest`, for the usage report (``usecases.usage``), session
reconcile (``usecases.session_reconcile``) and ``inspect``.

A request is what its usage states, split apart: the :class:`PromptFacts` a prediction may
see (where it sits, when, which model and lineage, the prompt's *length*), the
:class:`ObservedSplit` only the predictor's ``learn`` sees, and the bill's fields (session,
project, provider, client version, usage per TTL, output). No tokenizer runs and no prompt
is built: what the reading keeps per session is a few integers, whatever the prompts' length.

The two native formats are read line by line (``sessions.native``; each line bounded by
``max_line_bytes``, docs/limits.md) and a line is parsed only when it can matter
(docs/usage-report.md):

* Claude Code: lines holding ``"usage"`` (responses), compaction boundaries, sidechain lines
  (their parent links make a sidechain's lineage) and user lines that start a conversation
  (no parent). One API response is split over several assistant lines repeating its
  ``message.id``: it is one request, timed by its first line, with the usage of its last
  (the final output count), and counted once across every file read (a resumed session
  repeats earlier responses in its new file). ``<synthetic>`` messages are not requests. A
  sub-agent (``agentId``) or sidechain is a lineage of its own; the fingerprint of its first
  user message (``root``) lets two lineages with the same history share a prefix.
* Codex CLI: ``token_count`` events' ``info.last_token_usage``; an event whose running
  ``total_token_usage`` did not move repeats the previous one; ``info: null`` carries rate
  limits only; the model is ``info.model`` or the latest ``turn_context``'s.
* Gemini CLI (``sessions.gemini_cli``): each ``gemini`` message with ``tokens``, once per
  message id (the recording writes a message again each time it changes; a legacy
  ``.json`` and the ``.jsonl`` it was migrated to hold the same ids: counted once across
  the files read).

Every other format (a canonical log named with ``--client``, inline records, a compressed
session file) is read through ``logs.open_log`` with ``usage_only`` set, from the records'
``observed`` usage. A line that cannot be read is a :class:`LogRecordError` (file, line,
field, reason) yielded in place of its request.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cachecast.core.errors import LogRecordError, RecordFieldError
from cachecast.logs.canonical import iso_seconds
from cachecast.logs.codex import LEGACY_LINE, TYPESCRIPT_ROLLOUT
from cachecast.logs.headless_names import HEADLESS_FORMATS
from cachecast.logs.types import ObservedUsage
from cachecast.logs.usage import canonical_observed
from cachecast.sessions.gemini_cli import GEMINI_CLI, gemini_requests
from cachecast.sessions.native import (
    CLAUDE_CODE,
    CODEX,
    NATIVE_FORMATS,
    NO_DEFAULTS,
    TTL_1H,
    TTL_5M,
    ModelDefaults,
    SessionRequest,
    claude_project,
    claude_requests,
    compressed,
    fingerprint,
    make_request,
    native_format,
)
from cachecast.sessions.native_codex import TURN_COMPLETED, codex_requests

if TYPE_CHECKING:
    from cachecast.logs.stream import LogStream

__all__ = [
    "CLAUDE_CODE",
    "CODEX",
    "GEMINI_CLI",
    "HEADLESS_FORMATS",
    "NATIVE_FORMATS",
    "NO_DEFAULTS",
    "SESSION_FORMATS",
    "TTL_1H",
    "TTL_5M",
    "ModelDefaults",
    "SessionRecord",
    "SessionRequest",
    "log_format",
    "native_format",
    "no_request_reason",
    "record_requests",
    "session_client",
    "session_format",
    "session_records",
    "session_requests",
]

# Every format read as agent sessions: the clients' own logs and their headless output.
SESSION_FORMATS = (*NATIVE_FORMATS, GEMINI_CLI, *HEADLESS_FORMATS)


def session_format(path: Path) -> str | None:
    """The session format of a file (a client's own log, else its headless output told by
    content), None where it is neither. A compressed file is told by its inflated head."""
    found = native_format(path)
    if found is not None:
        return found
    from cachecast.logs.errors import LogFileError
    from cachecast.logs.formats import detect_format

    try:
        name = detect_format(path)[0].name
    except LogFileError:
        return None
    return name if name in HEADLESS_FORMATS or name == GEMINI_CLI else None


def session_client(format: str) -> str:
    """The client (and profile) whose session format ``format`` is."""
    if format not in HEADLESS_FORMATS:
        return format
    # The headless reader (and its parser) is imported for headless output only.
    from cachecast.sessions.headless import client_of

    return client_of(format)


def log_format(path: Path, format: str | None = None) -> str:
    """The format name a file is read as: forced, or detected from its first bytes (the
    file is not parsed here; LogFileError where no format fits); a compressed file's from its
    inflated head, or else inflated whole (bounded) as ``open_log`` reads it."""
    if format is not None:
        return format
    from cachecast.logs.formats import detect_format, open_log  # every format: only here

    if compressed(path):  # told by its inflated content
        return native_format(path) or open_log(path).format
    return detect_format(path)[0].name


def session_requests(
    path: Path,
    source: str,
    format: str | None = None,
    *,
    seen: set[str] | None = None,
    skipped: Counter[str] | None = None,
    defaults: ModelDefaults = NO_DEFAULTS,
) -> Iterator[SessionRequest | LogRecordError]:
    """Every request of a session file with usage, errors as they come; ``seen`` holds the
    Claude Code message ids counted so far (share it across files to count each once);
    ``skipped`` counts, by reason, the lines read that are no request (``inspect``);
    ``defaults`` name the model and provider of the requests whose lines name none."""
    skipped = Counter() if skipped is None else skipped
    name = format or native_format(path) or log_format(path)
    native = name in NATIVE_FORMATS and not compressed(path)
    if name in HEADLESS_FORMATS and not compressed(path):
        from cachecast.sessions.headless import headless_requests

        yield from headless_requests(path, source, name, skipped, defaults)
    elif name == GEMINI_CLI and not compressed(path):
        yield from gemini_requests(path, source, skipped, set() if seen is None else seen, defaults)
    elif native and name == CLAUDE_CODE:
        yield from claude_requests(path, source, set() if seen is None else seen, skipped, defaults)
    elif native and name == CODEX:
        yield from codex_requests(path, source, skipped, set() if seen is None else seen, defaults)
    elif name in NATIVE_FORMATS:
        # A compressed transcript or rollout (Codex itself may keep them as .jsonl.zst) is
        # inflated and read by the same reader: the record reader lacks the rules across
        # files (a resumed session's or a fork's copied history counted once) and Codex's
        # running-total and no-token rules (docs/clients.md, "Format variants").
        yield from _inflated(path, source, name, skipped, set() if seen is None else seen, defaults)
    else:
        from cachecast.logs.formats import open_log

        stream = open_log(path, format=format, name=source)
        stream.usage_only = True
        client = name if name in NATIVE_FORMATS else None
        for line, item in stream:
            if isinstance(item, LogRecordError):
                yield item
                continue
            try:
                built = _request(source, line, item, client)
            except RecordFieldError as exc:
                yield stream.error(line, exc.field, exc.reason)
                continue
            if built is not None:
                yield built


def _inflated(
    path: Path,
    source: str,
    name: str,
    skipped: Counter[str],
    seen: set[str],
    defaults: ModelDefaults,
) -> Iterator[SessionRequest | LogRecordError]:
    """A compressed session file's requests, read from its inflated copy (bounded by
    ``max_decompressed_bytes``) by its client's reader, named by the file's own path."""
    from cachecast.logs.compressed import compression_of, decompressed_copy, inner_name, remove

    kind = compression_of(path)
    assert kind is not None  # called for compressed files only
    copy = decompressed_copy(path, kind, source)
    try:
        if name == CODEX:
            # The session's name where no session_meta gives one: the file's, not the copy's.
            stem = Path(inner_name(path)).stem
            yield from codex_requests(copy, source, skipped, seen, defaults, stem=stem)
        else:
            project = claude_project(path.with_name(inner_name(path)))
            yield from claude_requests(copy, source, seen, skipped, defaults, project=project)
    finally:
        remove(str(copy))


def no_request_reason(format: str, skipped: Counter[str]) -> str:
    """Why a session file read without a bad line gave no request, from what its reader
    passed over (``skipped``): said where a run refuses the file (``check_reading``)."""
    passed = "; ".join(f"{count} {why}" for why, count in skipped.most_common(3))
    seen = f" (read past: {passed})" if passed else ""
    if format == CODEX and skipped.get(TURN_COMPLETED):
        return (
            "a Codex log whose usage is in turn.completed events (as codex exec --json reports"
            " a turn: its requests summed), which are not read; no token_count event states"
            f" a request's usage{seen}"
        )
    if format == CODEX and skipped.get(TYPESCRIPT_ROLLOUT):
        return (
            "a rollout of the TypeScript Codex CLI ({session, items}, before codex-rs): it"
            " records the conversation's items but no token usage, so no request is known"
        )
    if format == CODEX and skipped.get(LEGACY_LINE):
        return (
            "a Codex rollout of the format before session_meta (no {timestamp, type, payload}"
            " envelope): it records no token usage, so no request is known"
        )
    if format == CODEX:
        return (
            "a Codex rollout with no token_count event stating usage: no billed request is"
            f" recorded (the session stops before its first response, or the file was cut){seen}"
        )
    if format == CLAUDE_CODE:
        return f"a Claude Code transcript with no response line stating usage{seen}"
    if format == GEMINI_CLI:
        return f"a Gemini CLI recording with no reply stating tokens{seen}"
    return f"no record states usage{seen}"


def record_requests(
    records: Iterable[dict[str, Any]], source: str
) -> Iterator[SessionRequest | LogRecordError]:
    """The same for records given inline (canonical wrapper records with ``observed``)."""
    for index, record in enumerate(records):
        try:
            built = _request(source, index + 1, record, None)
        except RecordFieldError as exc:
            yield LogRecordError(source, None, exc.field, exc.reason, record=index)
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
    dated: bool = True  # False: the log gives no time (headless output)
    # What the usage covers (``SessionRequest.unit``): one request, or a headless turn or
    # run whose usage sums requests not counted.
    unit: str = "request"


def session_records(
    stream: LogStream,
    errors: list[LogRecordError],
    versions: set[str],
    defaults: ModelDefaults = NO_DEFAULTS,
) -> Iterator[SessionRecord]:
    """Every request record of an open session log, its prompt left unread (no tokenizer, no
    token list: a claim of millions of tokens stays a number); bad lines go to ``errors``
    and the client versions the records name to ``versions``; ``defaults`` name the model of
    the requests whose lines name none (``--model``). A native session file is
    read by :func:`session_requests` (the stream is not read then); its prompts are never
    complete (the client adds its system prompt and tools)."""
    if stream.format in SESSION_FORMATS and (
        not compressed(stream.path) or stream.format in NATIVE_FORMATS
    ):
        found: Iterable[SessionRequest | LogRecordError]
        if stream.format in HEADLESS_FORMATS:  # no --model needed to say what it holds
            from cachecast.sessions.headless import headless_requests

            found = headless_requests(
                stream.path,
                stream.source,
                stream.format,
                stream.skipped,
                defaults,
                need_model=False,
            )
        elif stream.format == GEMINI_CLI:
            found = gemini_requests(
                stream.path, stream.source, stream.skipped, set(), defaults, need_model=False
            )
        else:
            found = session_requests(
                stream.path,
                stream.source,
                stream.format,
                skipped=stream.skipped,
                defaults=defaults,
            )
        for item in found:
            if isinstance(item, LogRecordError):
                errors.append(item)
                continue
            if item.client_version is not None:
                versions.add(item.client_version)
            facts = item.facts
            yield SessionRecord(
                facts.model or None,
                item.provider,
                facts.timestamp,
                False,
                item.usage,
                facts.line,
                item.dated,
                item.unit,
            )
        return
    stream.usage_only = True
    for line, raw in stream:
        if isinstance(raw, LogRecordError):
            errors.append(raw)
            continue
        try:
            observed_raw = raw.get("observed")
            observed = None if observed_raw is None else canonical_observed(observed_raw)
            when = _seconds(raw.get("timestamp"))
        except RecordFieldError as exc:
            errors.append(stream.error(line, exc.field, exc.reason))
            continue
        version = raw.get("client_version")
        if isinstance(version, str):
            versions.add(version)
        model, provider = raw.get("model"), raw.get("provider")
        yield SessionRecord(
            model if isinstance(model, str) else None,
            provider if isinstance(provider, str) else None,
            when,
            raw.get("prompt_complete", True) is not False,
            observed,
            line,
        )


def _request(
    source: str, line: int, record: dict[str, Any], client: str | None
) -> SessionRequest | None:
    """A canonical record's request (None: it carries no usage)."""
    raw = record.get("observed")
    if raw is None:
        return None
    lineage = str(record.get("session") or source)
    event = record.get("session_event")
    version = record.get("client_version")
    provider = record.get("provider")
    timestamp = record.get("timestamp")
    return make_request(
        source,
        line,
        str(record.get("request_id") or f"{source}:{line}"),
        lineage,
        str(record.get("model") or ""),
        None if timestamp is None else iso_seconds(timestamp, "timestamp"),
        canonical_observed(raw),
        root=_root(record.get("request")),
        event=event if isinstance(event, str) else None,
        provider=provider if isinstance(provider, str) else None,
        client_version=version if isinstance(version, str) else None,
        client=client,
        session=lineage,
        user_turn=record.get("user_turn") is True,
        reasoning=_count(record.get("reasoning_tokens")),
        thought=record.get("thought") is True,
    )


def _count(value: Any) -> int:
    """A non-negative token count a record may carry beside its usage (0 where absent)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _seconds(value: Any) -> float:
    """A record's time as epoch seconds (the readers give numbers; inline records may give
    ISO 8601); 0 where it has none."""
    return 0.0 if value is None else iso_seconds(value, "timestamp")


def _root(body: Any) -> str | None:
    """A fingerprint of a canonical prompt's first visible message."""
    if not isinstance(body, dict):
        return None
    items = body.get("messages", body.get("input"))
    if not isinstance(items, list) or not items:
        return None
    return fingerprint(items[0])
