"""A parsed log record and its token ids -> :class:`TokenizedRequest`.

:class:`RequestBuilder` makes the request a record stands for: its ids (encoded by the
reader's batch encoder, or here through an HF chat template), fitted to the prompt length the
provider reported where our tokenization is approximate (``calibration``) or our rendering
guesses, its fields and its caching controls. Mooncake traces, which carry block hash ids
instead of a prompt, become requests here as well. The builder keeps the log's clock: a
record without a timestamp gets the previous request's.
"""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass
from typing import Any

from cachecast.core.errors import RecordFieldError
from cachecast.logs.canonical import optional_str
from cachecast.tokenizers.base import (
    NON_TEXT_ID_BASE,
    NON_TEXT_ID_SPAN,
    TiktokenTokenizer,
    Tokenizer,
)
from cachecast.tokenizers.calibration import Calibrator
from cachecast.tokenizers.chat_messages import template_input
from cachecast.tokenizers.hf import HFTokenizer
from cachecast.tokenizers.record_fields import (
    cache_controls,
    count_field,
    output_tokens,
    prompt_complete,
    provider_of,
    request_id_of,
    scope_of,
    service_tier_of,
)
from cachecast.tokenizers.render import Rendered
from cachecast.tokenizers.types import ObservedUsage, Segment, TokenizedRequest

MOONCAKE_BLOCK_SIZE = 512

# A request's ids, segments, breakpoints and implicit breakpoint offset, as encoded.
EncodedIds = tuple[Any, tuple[Segment, ...], tuple[Any, ...], int | None]


@dataclass(frozen=True, slots=True)
class ModelChoice:
    """The models a log is read with: ``model`` chooses the tokenization of every record
    (None: each record's own model); ``default_model`` and ``default_provider`` stand in for
    records that name none."""

    model: str | None
    default_model: str | None
    default_provider: str | None


@dataclass(slots=True)
class ParsedRecord:
    """A record read and rendered, waiting for its ids."""

    line: int
    record: dict[str, Any]
    body: dict[str, Any]
    model: str | None  # the model whose tokenization is used
    logged_model: str | None  # the model the record was logged with (or the default)
    tokenizer: Tokenizer | None  # the model's, looked up once per line
    provider: str | None
    timestamp: float | None
    rendered: Rendered | None


class RequestBuilder:
    """Builds the requests of one log, in its order (the clock runs from request to request:
    ``last_timestamp`` is what a record without a timestamp gets). ``calibrator`` may be
    None until the log's first record is read (``log_reader.CalibratorChoice``)."""

    def __init__(self, source: str, models: ModelChoice, calibrator: Calibrator | None) -> None:
        self.source = source
        self.models = models
        self.calibrator = calibrator
        self.last_timestamp = 0.0

    def build(
        self,
        item: ParsedRecord,
        encoded: EncodedIds | None,
        observed: ObservedUsage | None,
    ) -> TokenizedRequest:
        """The request of ``item``, whose tiktoken ids are ``encoded`` (None: an HF model's,
        encoded here, or a pre-tokenized body)."""
        rendered = item.rendered
        if (
            encoded is None
            and isinstance(item.tokenizer, HFTokenizer)
            and rendered is not None
            and rendered.tokens is None
        ):
            encoded = _encode_hf(item.tokenizer, rendered, item.body)
        return self._request(item, encoded, observed)

    def _request(
        self,
        item: ParsedRecord,
        encoded: EncodedIds | None,
        observed: ObservedUsage | None,
    ) -> TokenizedRequest:
        rendered = item.rendered
        assert rendered is not None
        complete = prompt_complete(item.record)
        output_count = output_tokens(item.record, observed)
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
            assert self.calibrator is not None  # chosen when the log's first record was read
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
            request_id=request_id_of(item.record, self.source, item.line),
            timestamp=timestamp,
            scope=scope_of(item.record, item.body),
            provider=item.provider,
            model=item.model,
            logged_model=item.logged_model,
            input_tokens=len(tokens),
            output_tokens=output_count,
            tokens=tokens,
            segments=segments,
            breakpoints=breakpoints,
            observed=observed,
            exact=exact,
            tokenizer=name,
            session=optional_str(item.record, "session"),
            prompt_complete=complete,
            gateway=optional_str(item.record, "gateway"),
            service_tier=service_tier_of(item.record),
            controls=cache_controls(item.record, rendered, implicit),
        )

    def mooncake(
        self, number: int, record: dict[str, Any], body: dict[str, Any]
    ) -> TokenizedRequest:
        """A Mooncake trace record (``input_length``, ``output_length``, one hash id per
        512-token block, ``timestamp`` in milliseconds) as a request of block keys."""
        models = self.models
        logged_model = optional_str(record, "model") or models.default_model
        input_length = count_field(body, "input_length")
        output_length = count_field(body, "output_length")
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
            request_id=request_id_of(record, self.source, number),
            timestamp=timestamp,
            scope=scope_of(record, body),
            provider=provider_of(record) or models.default_provider,
            model=models.model or logged_model,
            logged_model=logged_model,
            input_tokens=input_length,
            output_tokens=output_length,
            block_keys=hash_ids,
            block_size=MOONCAKE_BLOCK_SIZE,
            exact=True,
            tokenizer="mooncake-hash-ids",
            session=optional_str(record, "session"),
        )


def _encode_hf(tokenizer: HFTokenizer, rendered: Rendered, body: dict[str, Any]) -> EncodedIds:
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
