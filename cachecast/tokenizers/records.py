"""Prompt logs (JSONL, streamed) -> :class:`TokenizedRequest`.

A line is one JSON object, either a bare request body or a wrapper::

    {"timestamp": "2026-01-05T10:00:00Z" | 1767607200 | 1767607200000,
     "scope": "org-1/key-2",            # or org / project / api_key / prompt_cache_key ...
     "session": "s-17", "provider": "openai", "model": "gpt-4o", "request_id": "r-1",
     "request": {...body...},           # also accepted: "body" (OpenAI batch files)
     "response": {"usage": {...}},      # or "usage": {...} at the top level
     "output_tokens": 120}

Bodies: OpenAI Chat Completions (``messages``), Responses (``input``/``instructions``),
Anthropic Messages (``messages`` with ``system``/``cache_control``, or provider anthropic),
Gemini generateContent (``contents``), ``{"prompt": "..."}``, ``{"tokens": [...]}``, and
Mooncake traces (``timestamp`` in ms, ``input_length``, ``output_length``, ``hash_ids`` with
one id per 512-token block -> ``block_keys``, ``block_size`` 512).

Timestamps: ISO 8601 (naive = UTC) or epoch numbers; a number above 1e11 is taken as
milliseconds. A record without a timestamp gets the previous record's (0.0 for the first), so
file order is kept. Scope: ``scope`` if given, else ``key=value`` pairs of the identity fields
present (org, project, api_key, prompt_cache_key, cache_salt, ...), else ``default``.

Model and provider: a record's own (wrapper, then body) model and provider are what it was
logged with: ``TokenizedRequest.logged_model`` and ``provider`` keep them, ``default_model``
and ``default_provider`` standing in for records that name none. The ``model`` argument chooses
the tokenization (a pass that prices the log as gpt-4o tokenizes every record as gpt-4o, and
``TokenizedRequest.model``, the cache's model namespace, is then gpt-4o for every request):
it never replaces the logged model, which observed usage is reconciled against.

Providers without a public tokenizer (approximate tokenizers): the approximate ids are
calibrated (``calibration``): where the record reports its prompt length the text tokens are
scaled so that the request has exactly that many (breakpoints move with them), and records
without usage are scaled by the ratio the log's usage taught for their model; the request
stays ``exact=False``. An exact tokenizer whose rendering guesses (OpenAI tools) takes the
reported count as exact, the difference cut or padded at the end.

Canonical keys (written by the format adapters in ``cachecast.logs``, honoured in any
record): ``observed`` holds usage already normalized (``input_tokens`` including cached,
``cache_read_tokens``, ``cache_write_tokens``, ``cache_write_by_ttl``, ``output_tokens``,
``cost``; see ``cachecast.logs.usage``) and wins over ``usage``; ``"prompt_complete": false``
marks a request whose log omits part of its prompt (agent transcripts: no system prompt or
tool definitions): its tokens are then approximate (``exact`` False, fitted to the observed
input count) and the request says so (``TokenizedRequest.prompt_complete``). Provider names
are normalized to the contract store's ids (``gemini`` -> ``google``, ``aws`` -> ``bedrock``).

Other formats (observability exports, agent transcripts, batch files, recorded HTTP
traffic) are read through ``cachecast.logs.open_log``, which detects them and hands this
reader the same records (``read_log(path, format=..., results=...)``).

Bad lines raise or record :class:`LogError` (file, line, field, reason); nothing is skipped
without being recorded.
"""

from __future__ import annotations

import math
from array import array
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cachecast.core.errors import LimitExceededError, Location, RecordFieldError, UnknownModelError
from cachecast.core.limits import check_tokens
from cachecast.logs.errors import LogError
from cachecast.logs.formats import open_log
from cachecast.logs.providers import normalize_provider_name
from cachecast.logs.stream import READ_BUFFER_BYTES, LogStream
from cachecast.logs.usage import observed_usage
from cachecast.tokenizers.base import (
    NON_TEXT_ID_BASE,
    NON_TEXT_ID_SPAN,
    TiktokenTokenizer,
    Tokenizer,
)
from cachecast.tokenizers.calibration import Calibrator
from cachecast.tokenizers.chat_messages import template_input
from cachecast.tokenizers.encode import BatchEncoder, PendingBatch, SegmentCache
from cachecast.tokenizers.hf import HFTokenizer
from cachecast.tokenizers.registry import get_tokenizer
from cachecast.tokenizers.render import (
    Rendered,
    conversation_field,
    detect_api,
    render,
    render_after,
)
from cachecast.tokenizers.types import (
    NO_CONTROLS,
    CacheControls,
    CacheCreation,
    ObservedUsage,
    Segment,
    TokenizedRequest,
)

MOONCAKE_BLOCK_SIZE = 512
BATCH_SIZE = 256
# Conversations whose latest request is kept for the next one to take its leading parts over
# (least recently used dropped first): bounds memory on logs with many interleaved sessions.
MAX_OPEN_CONVERSATIONS = 512
# A conversation whose latest request is older than this (in the log's time) is dropped too,
# so that memory follows the conversations still going on, not every one the log has held.
CONVERSATION_IDLE_SECONDS = 3600.0
SCOPE_FIELDS = (
    "org",
    "organization",
    "project",
    "api_key",
    "prompt_cache_key",
    "cache_salt",
    "user",
)
WRAPPER_KEYS = ("request", "body")


__all__ = ["LogError", "count_lines", "read_log", "read_records"]


@dataclass(slots=True)
class _Parsed:
    line: int
    record: dict[str, Any]
    body: dict[str, Any]
    model: str | None  # the model whose tokenization is used
    logged_model: str | None  # the model the record was logged with (or the default)
    tokenizer: Tokenizer | None  # the model's, looked up once per line
    provider: str | None
    timestamp: float | None
    rendered: Rendered | None


def read_log(
    path: str | Path | LogStream,
    *,
    name: str | None = None,
    model: str | None = None,
    default_model: str | None = None,
    default_provider: str | None = None,
    strict: bool = False,
    errors: list[LogError] | None = None,
    cache: SegmentCache | None = None,
    format: str | None = None,
    results: str | Path | None = None,
    calibrator: Calibrator | None = None,
    first_timestamp: float = 0.0,
) -> Iterator[TokenizedRequest]:
    """Stream a log of any format ``cachecast.logs`` reads (detected, or ``format``; a batch
    file's ``results`` joined to it). A :class:`LogStream` already opened may be passed
    instead of a path: its counts then tell the caller whether any record was readable.
    ``name`` is what errors and requests call the file (default: its path).
    ``first_timestamp`` is what records without a timestamp get before any record with one
    (a part of a file read on its own passes NaN, to learn which inherit it from before)."""
    if isinstance(path, LogStream):
        stream = path
    else:
        stream = open_log(path, format=format, results=results, name=name)
    # The parsed records are ours alone, so a conversation's earlier bodies stay as they were
    # and later requests may take their rendering over (see ``render.render_after``).
    reader = _Reader(
        name or stream.source,
        model,
        default_model,
        default_provider,
        strict,
        errors,
        cache,
        reuse=True,
        calibrator=calibrator,
    )
    reader.last_timestamp = first_timestamp
    yield from reader.read(iter(stream))


def count_lines(paths: Iterable[str | Path]) -> int:
    """Lines in the logs: an upper bound on their requests, for a progress bar's total."""
    count = 0
    for path in paths:
        with open(path, "rb") as handle:
            while chunk := handle.read(READ_BUFFER_BYTES):
                count += chunk.count(b"\n")
    return count


def read_records(
    records: Iterable[dict[str, Any]],
    source: str,
    *,
    model: str | None = None,
    default_model: str | None = None,
    default_provider: str | None = None,
    strict: bool = False,
    errors: list[LogError] | None = None,
    cache: SegmentCache | None = None,
    settled: bool = False,
    calibrator: Calibrator | None = None,
) -> Iterator[TokenizedRequest]:
    """Like :func:`read_log` for records already in memory (line = 1-based position).
    ``settled``: the records are all built and nobody changes them while they are read (a
    list held for the whole read), so later requests may take a conversation's earlier
    rendering over, as for a file."""

    def numbered() -> Iterator[tuple[int, dict[str, Any] | LogError]]:
        for number, record in enumerate(records, start=1):
            if isinstance(record, dict):
                yield number, record
            else:
                yield number, LogError(source, number, "<record>", "expected a JSON object")

    # No reuse across records unless settled: the caller owns them and may change one after
    # handing it over (a history list appended to in place), which would make an earlier body
    # unreliable.
    reader = _Reader(
        source,
        model,
        default_model,
        default_provider,
        strict,
        errors,
        cache,
        reuse=settled,
        calibrator=calibrator,
    )
    yield from reader.read(numbered())


_Item = _Parsed | TokenizedRequest | LogError


@dataclass(slots=True)
class _Started:
    """A batch whose tiktoken encoding has begun (see ``_Reader.start``)."""

    items: list[_Item]
    pending: list[tuple[BatchEncoder, list[_Parsed], PendingBatch]]


class _Reader:
    def __init__(
        self,
        source: str,
        model: str | None,
        default_model: str | None,
        default_provider: str | None,
        strict: bool,
        errors: list[LogError] | None,
        cache: SegmentCache | None,
        reuse: bool,
        calibrator: Calibrator | None = None,
    ) -> None:
        self.source = source
        self.calibrator = calibrator if calibrator is not None else Calibrator(model)
        self.model = model
        self.default_model = default_model
        self.default_provider = default_provider
        self.strict = strict
        self.errors = errors
        self.cache = cache if cache is not None else SegmentCache()
        self.encoders: dict[str, BatchEncoder] = {}
        self.last_timestamp = 0.0
        self.reuse = reuse
        # Latest rendered request per conversation key (see ``_render``).
        self.conversations: OrderedDict[tuple[Any, ...], tuple[Rendered, float]] = OrderedDict()
        self.newest = 0.0  # the latest timestamp read: the log's "now"

    def read(
        self, numbered: Iterator[tuple[int, dict[str, Any] | LogError]]
    ) -> Iterator[TokenizedRequest]:
        """The requests of ``numbered`` (line number, record or the line's error) in order."""
        # Pipelined by batches: batch k's new texts are encoded on a background thread while
        # batch k is handed out and batch k+1 is parsed and rendered. Bad lines travel in their
        # batch and are reported (or raised, strict) in line order between the requests.
        try:
            batch: list[_Item] = []
            started: _Started | None = None
            for number, record in numbered:
                batch.append(record if isinstance(record, LogError) else self.parse(number, record))
                if len(batch) >= BATCH_SIZE:
                    done = self.complete(started) if started is not None else []
                    started = self.start(batch)
                    batch = []
                    yield from self.emit(done)
            done = self.complete(started) if started is not None else []
            started = self.start(batch)
            yield from self.emit(done)
            yield from self.emit(self.complete(started))
        finally:
            self.close()

    def close(self) -> None:
        for encoder in self.encoders.values():
            encoder.close()

    def fail(self, error: LogError) -> None:
        if self.strict:
            raise error
        if self.errors is not None:
            self.errors.append(error)

    def parse(self, number: int, record: dict[str, Any]) -> _Parsed | TokenizedRequest | LogError:
        try:
            return self._parse(number, record)
        except RecordFieldError as exc:
            return LogError(self.source, number, exc.field, exc.reason)
        except UnknownModelError as exc:
            return LogError(self.source, number, "model", str(exc))
        except LimitExceededError as exc:
            raise self.at_line(exc, number) from None

    def _parse(self, number: int, record: dict[str, Any]) -> _Parsed | TokenizedRequest:
        body = record
        for key in WRAPPER_KEYS:
            if key in record:
                if not isinstance(record[key], dict):
                    raise RecordFieldError(
                        key, f"expected an object, got {type(record[key]).__name__}"
                    )
                body = record[key]
                break
        timestamp = _timestamp(record, body)
        if "hash_ids" in body or "input_length" in body:
            return self._mooncake(number, record, body)
        provider = _provider(record) or self.default_provider
        logged_model = (
            _optional_str(record, "model") or _optional_str(body, "model") or self.default_model
        )
        model = self.model or logged_model
        if model is None and "tokens" not in body:
            raise RecordFieldError("model", "no model in the record and none given (--model)")
        # Raises UnknownModelError early, with this line's number.
        tokenizer = get_tokenizer(model) if model is not None else None
        api = detect_api(body, provider)
        if timestamp is not None and timestamp > self.newest:
            self.newest = timestamp
        rendered = self._render(body, api, model, tokenizer, record)
        if "cache_creation" in record:
            rendered.reply_priming = False  # a cache's content: no reply follows it
        return _Parsed(
            number,
            record,
            body,
            model,
            logged_model,
            tokenizer,
            provider,
            timestamp,
            rendered,
        )

    def _render(
        self,
        body: dict[str, Any],
        api: str,
        model: str | None,
        tokenizer: Tokenizer | None,
        record: dict[str, Any],
    ) -> Rendered:
        """Render, taking over the leading parts of the conversation's previous request
        where they are equal (tiktoken models: their parts are encoded one by one; an HF chat
        template is applied to the whole conversation instead)."""
        field = conversation_field(api)
        if not self.reuse or field is None or not isinstance(tokenizer, TiktokenTokenizer):
            return render(body, api)
        # The key only picks the candidate; correctness comes from comparing the bodies.
        messages = body.get(field)
        opening = None
        if isinstance(messages, list) and messages:
            first = messages[min(1, len(messages) - 1)]
            if isinstance(first, dict) and isinstance(first.get("content"), str):
                opening = first["content"]
        key = (model, api, record.get("session"), opening)
        if not isinstance(key[2], str | int | None):
            return render(body, api)
        conversations = self.conversations
        previous = conversations.get(key)
        rendered = render_after(body, api, previous[0]) if previous is not None else None
        if rendered is None:
            rendered = render(body, api)
        if rendered.body is not None:
            conversations[key] = (rendered, self.newest)
            conversations.move_to_end(key)
            if len(conversations) > MAX_OPEN_CONVERSATIONS:
                conversations.popitem(last=False)
            idle_before = self.newest - CONVERSATION_IDLE_SECONDS
            while conversations[next(iter(conversations))][1] < idle_before:
                conversations.popitem(last=False)  # stops at this one, the newest
        return rendered

    def _mooncake(
        self, number: int, record: dict[str, Any], body: dict[str, Any]
    ) -> TokenizedRequest:
        logged_model = _optional_str(record, "model") or self.default_model
        input_length = _count(body, "input_length")
        output_length = _count(body, "output_length")
        hash_ids = body.get("hash_ids")
        if not isinstance(hash_ids, list):
            raise RecordFieldError("hash_ids", "missing or not a list")
        for index, value in enumerate(hash_ids):
            if not isinstance(value, int) or isinstance(value, bool):
                raise RecordFieldError(f"hash_ids[{index}]", f"expected an integer, got {value!r}")
        expected_blocks = math.ceil(input_length / MOONCAKE_BLOCK_SIZE)
        if len(hash_ids) != expected_blocks:
            raise RecordFieldError(
                "hash_ids",
                f"{len(hash_ids)} ids for input_length {input_length}: expected "
                f"ceil({input_length}/{MOONCAKE_BLOCK_SIZE}) = {expected_blocks}",
            )
        raw = body.get("timestamp")
        if raw is None:
            timestamp = self.last_timestamp
        elif isinstance(raw, int | float) and not isinstance(raw, bool) and raw >= 0:
            timestamp = raw / 1000.0  # Mooncake timestamps are milliseconds
        else:
            raise RecordFieldError("timestamp", f"expected non-negative milliseconds, got {raw!r}")
        self.last_timestamp = timestamp
        return TokenizedRequest(
            source=self.source,
            line=number,
            request_id=_request_id(record, self.source, number),
            timestamp=timestamp,
            scope=_scope(record, body),
            provider=_provider(record) or self.default_provider,
            model=self.model or logged_model,
            logged_model=logged_model,
            input_tokens=input_length,
            output_tokens=output_length,
            block_keys=hash_ids,
            block_size=MOONCAKE_BLOCK_SIZE,
            exact=True,
            tokenizer="mooncake-hash-ids",
            session=_optional_str(record, "session"),
        )

    def start(self, items: list[_Item]) -> _Started:
        """Begin encoding a batch's tiktoken requests (their new texts on a thread)."""
        self.cache.now = self.newest  # the segment cache forgets parts idle in log time
        by_model: dict[str, list[_Parsed]] = {}
        for item in items:
            if isinstance(item, _Parsed) and item.model is not None:
                by_model.setdefault(item.model, []).append(item)
        pending: list[tuple[BatchEncoder, list[_Parsed], PendingBatch]] = []
        for parsed in by_model.values():
            tokenizer = parsed[0].tokenizer
            if not isinstance(tokenizer, TiktokenTokenizer):
                continue
            todo = [p for p in parsed if p.rendered is not None and p.rendered.tokens is None]
            encoder = self.encoders.get(tokenizer.key)
            if encoder is None:
                encoder = self.encoders[tokenizer.key] = BatchEncoder(tokenizer, self.cache)
            started = encoder.begin_batch([p.rendered for p in todo if p.rendered is not None])
            pending.append((encoder, todo, started))
        return _Started(items, pending)

    def complete(self, started: _Started) -> list[TokenizedRequest | LogError]:
        """Finish a started batch: its requests and bad lines, in line order.

        Requests that report their prompt length are built first, so that the calibration
        of approximate tokenizations has learned from the batch's usage before it sizes the
        batch's requests without usage (``calibration``)."""
        # By the parsed item itself: records of one line (a HAR or JSON document written on a
        # single line) share their line number.
        encoded: dict[int, _Ids] = {}
        for encoder, todo, pending in started.pending:
            for parsed, ids in zip(todo, encoder.end_batch(pending), strict=True):
                encoded[id(parsed)] = (
                    ids.tokens,
                    ids.segments,
                    ids.breakpoints,
                    ids.implicit_offset,
                )
        done: list[TokenizedRequest | LogError | None] = [None] * len(started.items)
        later: list[tuple[int, _Parsed, ObservedUsage | None]] = []
        for index, item in enumerate(started.items):
            if isinstance(item, TokenizedRequest | LogError):
                done[index] = item
                continue
            assert isinstance(item, _Parsed) and item.rendered is not None
            try:
                observed = observed_usage(item.record, item.rendered.api)
            except RecordFieldError as exc:
                done[index] = LogError(self.source, item.line, exc.field, exc.reason)
                continue
            except LimitExceededError as exc:
                raise self.at_line(exc, item.line) from None
            if observed is not None and observed.input_tokens is not None:
                done[index] = self._built(item, encoded.get(id(item)), observed)
            else:
                later.append((index, item, observed))
        for index, item, observed in later:
            done[index] = self._built(item, encoded.get(id(item)), observed)
        return [item for item in done if item is not None]

    def _built(
        self,
        item: _Parsed,
        result: _Ids | None,
        observed: ObservedUsage | None,
    ) -> TokenizedRequest | LogError:
        try:
            rendered = item.rendered
            if (
                result is None
                and isinstance(item.tokenizer, HFTokenizer)
                and rendered is not None
                and rendered.tokens is None
            ):
                result = _encode_hf(item.tokenizer, rendered, item.body)
            return self._request(item, result, observed)
        except RecordFieldError as exc:
            return LogError(self.source, item.line, exc.field, exc.reason)
        except LimitExceededError as exc:
            raise self.at_line(exc, item.line) from None

    def at_line(self, error: LimitExceededError, line: int) -> LimitExceededError:
        """A size over its limit is never a line to skip: the read stops there, the error
        naming this log's line (docs/limits.md)."""
        error.location = Location(source=self.source, line=line, field=error.location.field)
        error.args = (error.one_line(),)
        return error

    def emit(self, done: list[TokenizedRequest | LogError]) -> Iterator[TokenizedRequest]:
        for item in done:
            if isinstance(item, LogError):
                self.fail(item)
            else:
                yield item

    def _request(
        self,
        item: _Parsed,
        encoded: _Ids | None,
        observed: ObservedUsage | None,
    ) -> TokenizedRequest:
        rendered = item.rendered
        assert rendered is not None
        complete = _prompt_complete(item.record)
        output_tokens = _output_tokens(item.record, observed)
        timestamp = self.last_timestamp if item.timestamp is None else item.timestamp
        self.last_timestamp = timestamp
        tokenizer = item.tokenizer
        if rendered.tokens is not None:
            tokens: Any = rendered.tokens
            segments: tuple[Segment, ...] = (Segment("prompt", "tokens", 0, len(tokens)),)
            breakpoints: tuple[Any, ...] = ()
            implicit: int | None = None
            exact = True
            name = "pre-tokenized"
        else:
            assert encoded is not None and tokenizer is not None
            tokens, segments, breakpoints, implicit = encoded
            exact = tokenizer.exact and rendered.exact and complete
            name = tokenizer.name
        count = observed.input_tokens if observed is not None else None
        if (
            rendered.tokens is None
            and isinstance(tokenizer, TiktokenTokenizer)
            and not tokenizer.exact
        ):
            # No public tokenizer: scale the approximation to the provider's count.
            if not self.calibrator.compatible(item.logged_model, item.model):
                count = None
            framing = tokenizer.framing
            fitted = self.calibrator.fit(
                tokens,
                segments,
                breakpoints,
                model=item.logged_model or item.model,
                observed_count=count,
                complete=complete,
                framing=(framing.start[1], framing.message[1], framing.end[1]),
                offsets=() if implicit is None else (implicit,),
            )
            tokens, segments, breakpoints = fitted.tokens, fitted.segments, fitted.breakpoints
            if implicit is not None:
                implicit = fitted.offsets[0]
            name += f", {fitted.how}"
        elif not exact and count is not None:
            # An exact tokenizer whose rendering guesses (tools) or whose prompt the log does
            # not hold whole: the count is the provider's, the difference sits at the end.
            tokens, segments, breakpoints = _fit_to_observed(tokens, segments, breakpoints, count)
            if implicit is not None:
                implicit = min(implicit, count)
            exact = True
            name += ", count from usage"
        return TokenizedRequest(
            source=self.source,
            line=item.line,
            request_id=_request_id(item.record, self.source, item.line),
            timestamp=timestamp,
            scope=_scope(item.record, item.body),
            provider=item.provider,
            model=item.model,
            logged_model=item.logged_model,
            input_tokens=len(tokens),
            output_tokens=output_tokens,
            tokens=tokens,
            segments=segments,
            breakpoints=breakpoints,
            observed=observed,
            exact=exact,
            tokenizer=name,
            session=_optional_str(item.record, "session"),
            prompt_complete=complete,
            controls=_controls(item.record, rendered, implicit),
        )


def _controls(record: dict[str, Any], rendered: Rendered, implicit: int | None) -> CacheControls:
    """The request-level caching controls of a record (see ``CacheControls``)."""
    cached = _optional_str(record, "cached_content")
    creates = _cache_creation(record)
    if (
        implicit is None
        and rendered.implicit_breakpoint
        and rendered.cache_ttl is None
        and cached is None
        and creates is None
    ):
        return NO_CONTROLS
    return CacheControls(
        implicit_breakpoint=rendered.implicit_breakpoint,
        implicit_offset=implicit,
        ttl=rendered.cache_ttl,
        cached_content=cached,
        creates=creates,
    )


def _cache_creation(record: dict[str, Any]) -> CacheCreation | None:
    """The canonical ``cache_creation`` key: this record creates a named cache object."""
    value = record.get("cache_creation")
    if value is None:
        return None
    if not isinstance(value, dict):
        raise RecordFieldError("cache_creation", "expected an object")
    name = value.get("name")
    lifetime = value.get("lifetime_seconds")
    if not isinstance(name, str) or not name:
        raise RecordFieldError("cache_creation.name", "expected the cache's name")
    if not isinstance(lifetime, int) or isinstance(lifetime, bool) or lifetime < 0:
        raise RecordFieldError("cache_creation.lifetime_seconds", "expected whole seconds >= 0")
    ttl = value.get("ttl")
    if ttl is not None and not isinstance(ttl, str):
        raise RecordFieldError("cache_creation.ttl", "expected a TTL name such as '1h'")
    return CacheCreation(name, lifetime, ttl, value.get("deleted") is True)


_Ids = tuple[Any, tuple[Segment, ...], tuple[Any, ...], int | None]


def _encode_hf(tokenizer: HFTokenizer, rendered: Rendered, body: dict[str, Any]) -> _Ids:
    if rendered.api == "prompt":
        ids = tokenizer.encode_prompt(rendered.parts[0].text())
        return ids, (Segment("prompt", "prompt", 0, len(ids)),), (), None
    parts = [part for part in rendered.parts if part.kind != "tool"]
    if rendered.api == "chat":
        # The template gets the messages and tools as an engine hands them over (tool calls
        # as objects, tool definitions normalized), so it renders exactly the engine's prompt.
        given = template_input(body)
        rendered.exact = given.exact
        ids, segments = tokenizer.encode_chat(
            given.messages, [p.label for p in parts], [p.kind for p in parts], given.tools
        )
        return ids, tuple(segments), (), None
    messages: list[dict[str, Any]] = [{"role": p.role, "content": p.text()} for p in parts]
    labels = [part.label for part in parts]
    kinds = [part.kind for part in parts]
    ids, segments = tokenizer.encode_chat(messages, labels, kinds, rendered.chat_tools)
    return ids, tuple(segments), (), None


def _fit_to_observed(
    tokens: Any, segments: tuple[Segment, ...], breakpoints: tuple[Any, ...], count: int
) -> tuple[Any, tuple[Segment, ...], tuple[Any, ...]]:
    """Cut or pad the approximate ids at the end so that there are exactly ``count``."""
    fitted = array("I", tokens[:count])
    if len(fitted) < count:
        seed = tokens[-1] if len(tokens) else 0
        fitted.extend(
            NON_TEXT_ID_BASE + (seed + i) % NON_TEXT_ID_SPAN for i in range(count - len(fitted))
        )
    kept = [
        Segment(s.kind, s.label, s.start, min(s.end, count)) for s in segments if s.start < count
    ]
    if kept and kept[-1].end < count:
        last = kept[-1]
        kept[-1] = Segment(last.kind, last.label, last.start, count)
    fitted_breakpoints = tuple(bp for bp in breakpoints if bp.offset <= count)
    return fitted, tuple(kept), fitted_breakpoints


# --- record fields -----------------------------------------------------------------------


def _optional_str(record: dict[str, Any], key: str) -> str | None:
    value = record.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise RecordFieldError(key, f"expected a string, got {type(value).__name__}")
    return value


def _count(record: dict[str, Any], key: str) -> int:
    if key not in record:
        raise RecordFieldError(key, "missing")
    value = record[key]
    if not isinstance(value, int) or isinstance(value, bool):
        raise RecordFieldError(key, f"expected an integer, got {value!r}")
    if value < 0:
        raise RecordFieldError(key, f"negative length {value}")
    check_tokens(value, key)
    return value


def _timestamp(record: dict[str, Any], body: dict[str, Any]) -> float | None:
    raw = record.get("timestamp", record.get("created_at", body.get("timestamp")))
    if raw is None:
        return None
    if isinstance(raw, bool):
        raise RecordFieldError("timestamp", "expected ISO 8601 or epoch seconds, got a boolean")
    if isinstance(raw, int | float):
        if not math.isfinite(raw) or raw < 0:
            raise RecordFieldError("timestamp", f"expected a non-negative epoch, got {raw!r}")
        return raw / 1000.0 if raw > 1e11 else float(raw)
    if isinstance(raw, str):
        try:
            moment = datetime.fromisoformat(raw)
        except ValueError as exc:
            raise RecordFieldError("timestamp", f"not ISO 8601: {raw!r}") from exc
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return moment.timestamp()
    raise RecordFieldError("timestamp", f"expected ISO 8601 or epoch, got {type(raw).__name__}")


def _scope(record: dict[str, Any], body: dict[str, Any]) -> str:
    explicit = record.get("scope")
    if explicit is not None:
        if isinstance(explicit, bool) or not isinstance(explicit, str | int):
            raise RecordFieldError("scope", f"expected a string, got {type(explicit).__name__}")
        return str(explicit)
    pairs = []
    for key in SCOPE_FIELDS:
        value = record.get(key, body.get(key))
        if value is not None:
            pairs.append(f"{key}={value}")
    return ";".join(pairs) if pairs else "default"


def _request_id(record: dict[str, Any], source: str, line: int) -> str:
    for key in ("request_id", "id", "custom_id"):
        value = record.get(key)
        if isinstance(value, str | int) and not isinstance(value, bool):
            return str(value)
    return f"{Path(source).name}:{line}"


def _provider(record: dict[str, Any]) -> str | None:
    name = _optional_str(record, "provider")
    return None if name is None else normalize_provider_name(name)


def _prompt_complete(record: dict[str, Any]) -> bool:
    value = record.get("prompt_complete", True)
    if value is not True and value is not False:
        raise RecordFieldError("prompt_complete", f"expected true or false, got {value!r}")
    return value


def _output_tokens(record: dict[str, Any], observed: ObservedUsage | None) -> int:
    if "output_tokens" in record:
        return _count(record, "output_tokens")
    if observed is not None and observed.output_tokens is not None:
        return observed.output_tokens
    return 0
