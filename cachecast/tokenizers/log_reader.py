"""The reading pipeline behind ``records.read_log`` and ``records.read_records``: numbered
records -> :class:`TokenizedRequest`, in order, with every bad line reported.

Pipelined by batches of :data:`BATCH_SIZE`: batch k's new texts are encoded on a background
thread (``encode.BatchEncoder``) while batch k is handed out and batch k+1 is parsed and
rendered. Bad lines travel in their batch and are reported (or raised, strict) in line order
between the requests. Parsing a record's wrapper is ``record_fields``; keeping conversations
open for the next request to take over is ``conversations``; making the request from its ids
is ``request_build``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from cachecast.core.errors import LimitExceededError, Location, RecordFieldError, UnknownModelError
from cachecast.logs.canonical import optional_str
from cachecast.logs.errors import LogRecordError
from cachecast.logs.usage import observed_usage
from cachecast.tokenizers.base import TiktokenTokenizer, Tokenizer
from cachecast.tokenizers.calibration import Calibrator
from cachecast.tokenizers.conversations import OpenConversations
from cachecast.tokenizers.encode import BatchEncoder, PendingBatch, SegmentCache
from cachecast.tokenizers.record_fields import (
    provider_of,
    served_model,
    timestamp_of,
    wrapped_body,
)
from cachecast.tokenizers.registry import (
    LocalTokenizerRefused,
    get_tokenizer,
    tokenizer_for_key,
)
from cachecast.tokenizers.render import detect_api, render
from cachecast.tokenizers.request_build import (
    EncodedIds,
    ModelChoice,
    ParsedRecord,
    RequestBuilder,
)
from cachecast.tokenizers.types import ObservedUsage, TokenizedRequest

BATCH_SIZE = 256
APPROXIMATING_TOKENIZER = "approx:o200k_base"
"""How a provider's record is tokenized where no tokenizer is known for its model (the body
names none, or a model no registry pattern matches): an approximation, as for every model
without a public tokenizer (its count comes from the usage it carries)."""
# A batch is cut earlier where its requests' prompts add up to this many characters: a batch
# holds each request's ids whole, and requests that each extend the one before (a Responses
# chain: request k holds all k-1 before it) would otherwise hold a batch of N-token prompts.
BATCH_CHARACTERS = 8_000_000

_Item = ParsedRecord | TokenizedRequest | LogRecordError

CalibratorChoice = Callable[[float], Calibrator]
"""The calibrator of a log, chosen once its first record is read, from that record's
timestamp (``first_timestamp`` where it has none of its own): whether the log shares a
calibration with the other logs of its run depends on it (``passes.log_input``)."""


@dataclass(slots=True)
class _Started:
    """A batch whose tiktoken encoding has begun (see ``LogReader.start``)."""

    items: list[_Item]
    pending: list[tuple[BatchEncoder, list[ParsedRecord], PendingBatch]]


class LogReader:
    """Reads one log's numbered records. ``reuse``: the records are ours alone (nobody
    changes one after handing it over), so a conversation's later requests may take its
    earlier rendering over. ``first_timestamp`` is what records without a timestamp get
    before any record with one. ``calibrator``: the calibration of approximate
    tokenizations (None: one of the log's own), or a :data:`CalibratorChoice` made when
    the first record is read, before any request is calibrated."""

    def __init__(
        self,
        source: str,
        models: ModelChoice,
        strict: bool,
        errors: list[LogRecordError] | None,
        cache: SegmentCache | None,
        reuse: bool,
        calibrator: Calibrator | CalibratorChoice | None = None,
        first_timestamp: float = 0.0,
    ) -> None:
        self.source = source
        self.models = models
        self.strict = strict
        self.errors = errors
        self.cache = cache if cache is not None else SegmentCache()
        self.encoders: dict[str, BatchEncoder] = {}
        self.choose: CalibratorChoice | None = None
        if calibrator is None:
            calibrator = Calibrator(models.model)
        elif not isinstance(calibrator, Calibrator):
            self.choose, calibrator = calibrator, None
        self.builder = RequestBuilder(source, models, calibrator)
        self.builder.last_timestamp = first_timestamp
        # Latest rendered request per conversation (None: no reuse).
        self.conversations = OpenConversations() if reuse else None
        self.newest = 0.0  # the latest timestamp read: the log's "now"

    def read(
        self, numbered: Iterator[tuple[int, dict[str, Any] | LogRecordError]]
    ) -> Iterator[TokenizedRequest]:
        """The requests of ``numbered`` (line number, record or the line's error) in order."""
        try:
            batch: list[_Item] = []
            characters = 0
            started: _Started | None = None
            for number, record in numbered:
                item = record if isinstance(record, LogRecordError) else self.parse(number, record)
                batch.append(item)
                if isinstance(item, ParsedRecord) and item.rendered is not None:
                    characters += item.rendered.size()
                if len(batch) >= BATCH_SIZE or characters >= BATCH_CHARACTERS:
                    done = self.complete(started) if started is not None else []
                    started = self.start(batch)
                    batch = []
                    characters = 0
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

    def fail(self, error: LogRecordError) -> None:
        if self.strict:
            raise error
        if self.errors is not None:
            self.errors.append(error)

    def parse(self, number: int, record: dict[str, Any]) -> _Item:
        try:
            item = self._parse(number, record)
            if self.choose is not None:  # the first record read: before any is calibrated
                timestamp = item.timestamp
                first = self.builder.last_timestamp if timestamp is None else timestamp
                self.builder.calibrator = self.choose(first)
                self.choose = None
            return item
        except RecordFieldError as exc:
            return LogRecordError(self.source, number, exc.field, exc.reason)
        except UnknownModelError as exc:
            return LogRecordError(self.source, number, "model", str(exc))
        except LimitExceededError as exc:
            raise self.at_line(exc, number) from None

    def _parse(self, number: int, record: dict[str, Any]) -> ParsedRecord | TokenizedRequest:
        body = wrapped_body(record)
        timestamp = timestamp_of(record, body)
        if "hash_ids" in body or "input_length" in body:
            return self.builder.mooncake(number, record, body)
        models = self.models
        provider = provider_of(record) or models.default_provider
        logged_model = (
            optional_str(record, "model")
            or optional_str(body, "model")
            or served_model(record)
            or models.default_model
        )
        model = models.model or logged_model
        if model is None and "tokens" not in body and provider is None:
            raise RecordFieldError("model", "no model in the record and none given (--model)")
        tokenizer = self._tokenizer(model, provider)
        if tokenizer is None and "tokens" not in body:
            # A provider's API that serves its default model when the body names none
            # (Cohere's v1 chat): the request is read, approximated, with no model, and
            # whoever prices it says it could not (docs/log-formats.md).
            tokenizer = tokenizer_for_key(APPROXIMATING_TOKENIZER)
        api = detect_api(body, provider)
        if timestamp is not None and timestamp > self.newest:
            self.newest = timestamp
        if self.conversations is None:
            rendered = render(body, api)
        else:
            rendered = self.conversations.render(body, api, model, tokenizer, record, self.newest)
        if "cache_creation" in record:
            rendered.reply_priming = False  # a cache's content: no reply follows it
        return ParsedRecord(
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

    def _tokenizer(self, model: str | None, provider: str | None) -> Tokenizer | None:
        """The tokenizer of ``model``. An unknown model raises UnknownModelError (early, with
        the line's number) where it was given (``--model``) or the record names no provider;
        a provider's record of a model no pattern matches (Azure's ``gpt-35-turbo`` before
        its pattern, a Bedrock id of a new vendor) is read approximated instead, calibrated
        to its usage like every model without a public tokenizer, so that one unknown model
        does not drop the file; whoever prices it names the model (docs/log-formats.md)."""
        if model is None:
            return None
        try:
            return get_tokenizer(model)
        except LocalTokenizerRefused:
            raise
        except UnknownModelError:
            if self.models.model is not None or provider is None:
                raise
            return tokenizer_for_key(APPROXIMATING_TOKENIZER)

    def start(self, items: list[_Item]) -> _Started:
        """Begin encoding a batch's tiktoken requests (their new texts on a thread)."""
        self.cache.now = self.newest  # the segment cache forgets parts idle in log time
        by_model: dict[str, list[ParsedRecord]] = {}
        for item in items:
            if isinstance(item, ParsedRecord) and item.tokenizer is not None:
                by_model.setdefault(item.model or "", []).append(item)
        pending: list[tuple[BatchEncoder, list[ParsedRecord], PendingBatch]] = []
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

    def complete(self, started: _Started) -> list[TokenizedRequest | LogRecordError]:
        """Finish a started batch: its requests and bad lines, in line order.

        Requests that report their prompt length are built first, so that the calibration
        of approximate tokenizations has learned from the batch's usage before it sizes the
        batch's requests without usage (``calibration``)."""
        # By the parsed item itself: records of one line (a HAR or JSON document written on a
        # single line) share their line number.
        encoded: dict[int, EncodedIds] = {}
        for encoder, todo, pending in started.pending:
            for parsed, ids in zip(todo, encoder.end_batch(pending), strict=True):
                encoded[id(parsed)] = (
                    ids.tokens,
                    ids.segments,
                    ids.breakpoints,
                    ids.implicit_offset,
                )
        done: list[TokenizedRequest | LogRecordError | None] = [None] * len(started.items)
        later: list[tuple[int, ParsedRecord, ObservedUsage | None]] = []
        for index, item in enumerate(started.items):
            if isinstance(item, TokenizedRequest | LogRecordError):
                done[index] = item
                continue
            assert isinstance(item, ParsedRecord) and item.rendered is not None
            try:
                observed = observed_usage(item.record, item.rendered.api)
            except RecordFieldError as exc:
                done[index] = LogRecordError(self.source, item.line, exc.field, exc.reason)
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
        item: ParsedRecord,
        encoded: EncodedIds | None,
        observed: ObservedUsage | None,
    ) -> TokenizedRequest | LogRecordError:
        try:
            return self.builder.build(item, encoded, observed)
        except RecordFieldError as exc:
            return LogRecordError(self.source, item.line, exc.field, exc.reason)
        except LimitExceededError as exc:
            raise self.at_line(exc, item.line) from None

    def at_line(self, error: LimitExceededError, line: int) -> LimitExceededError:
        """A size over its limit is never a line to skip: the read stops there, the error
        naming this log's line (docs/limits.md)."""
        error.location = Location(source=self.source, line=line, field=error.location.field)
        error.args = (error.one_line(),)
        return error

    def emit(self, done: list[TokenizedRequest | LogRecordError]) -> Iterator[TokenizedRequest]:
        for item in done:
            if isinstance(item, LogRecordError):
                self.fail(item)
            else:
                yield item
