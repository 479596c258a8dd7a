"""Replay a log on an engine and compare with the simulator: ``measure_layout``.

The order of a run: read the engine's identity and cache geometry back from the engine,
warm it up (same prompt shapes, a private cache salt, so nothing it caches can be hit),
reset the prefix cache, read the counters, replay the requests in log order, read the
counters again, and run the simulator's ``vllm`` policy with exactly the engine's block
size and block count over the same token sequences.
"""

from __future__ import annotations

import json
import random
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import chain, islice
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypedDict, TypeVar, Unpack

from cachecast.core.errors import LogRecordError
from cachecast.gpu_backend.backend import EngineBackend, Progress
from cachecast.gpu_backend.report import MeasurementReport, RequestComparison
from cachecast.gpu_backend.types import (
    EngineError,
    EngineInfo,
    MetricsSnapshot,
    ReplayOptions,
    ReplayRequest,
)
from cachecast.tokenizers.types import TokenizedRequest

if TYPE_CHECKING:
    from cachecast.simulator.policies.base import CachePolicy

Item = TypeVar("Item")
Source = TypeVar("Source")

SYNTHETIC_VOCAB = 1000
"""Token ids drawn for block-key traces lie in [3, SYNTHETIC_VOCAB): valid for any model
with at least that many ids, and clear of the usual special ids 0-2."""

METRICS_SETTLE_S = 10.0
"""How long to wait for a server's counters to include the last requests (they are
published asynchronously, after the response)."""


class LogFormatError(LogRecordError):
    """A bad record in a token log, or a prompt the engine cannot take: file, line, field."""


def read_token_log(path: Path) -> Iterator[TokenizedRequest]:
    """Records ``{"tokens": [ids...]}`` (optional: id, timestamp, scope, model,
    output_tokens), one JSON object per line; the first bad record raises LogFormatError."""
    source = str(path)
    with path.open(encoding="utf-8") as handle:
        for number, text in enumerate(handle, start=1):
            if not text.strip():
                continue
            try:
                record = json.loads(text)
            except json.JSONDecodeError as error:
                raise LogFormatError(source, number, "(line)", f"not JSON: {error}") from error
            if not isinstance(record, dict):
                raise LogFormatError(source, number, "(line)", "not a JSON object")
            yield token_record(record, source, number)


def token_record(record: dict[str, Any], source: str, line: int) -> TokenizedRequest:
    tokens = record.get("tokens")
    if not isinstance(tokens, list) or not tokens:
        raise LogFormatError(source, line, "tokens", "must be a non-empty list of token ids")
    for position, token in enumerate(tokens):
        if not isinstance(token, int) or isinstance(token, bool) or token < 0:
            raise LogFormatError(source, line, f"tokens[{position}]", f"not a token id: {token!r}")
    timestamp = record.get("timestamp", float(line))
    if not isinstance(timestamp, int | float) or isinstance(timestamp, bool):
        raise LogFormatError(source, line, "timestamp", f"not a number: {timestamp!r}")
    output_tokens = record.get("output_tokens", 1)
    if not isinstance(output_tokens, int) or output_tokens < 0:
        raise LogFormatError(source, line, "output_tokens", f"not a count: {output_tokens!r}")
    for name in ("id", "scope", "model"):
        if name in record and not isinstance(record[name], str):
            raise LogFormatError(source, line, name, "must be a string")
    return TokenizedRequest(
        source=source,
        line=line,
        request_id=record.get("id", f"line-{line}"),
        timestamp=float(timestamp),
        scope=record.get("scope", ""),
        provider=None,
        model=record.get("model"),
        input_tokens=len(tokens),
        output_tokens=output_tokens,
        tokens=tuple(tokens),
        tokenizer="token-ids",
    )


def is_token_log(path: Path) -> bool:
    """Whether the log's first record is a token-id record (``{"tokens": [...]}``)."""
    with path.open(encoding="utf-8") as handle:
        first = next((line for line in handle if line.strip()), None)
    if first is None:
        raise LogFormatError(str(path), 1, "(file)", "the log is empty")
    try:
        probe = json.loads(first)
    except json.JSONDecodeError:
        probe = None
    return isinstance(probe, dict) and "tokens" in probe


def log_requests(
    path: Path, *, model: str | None = None, limit: int | None = None
) -> Iterator[TokenizedRequest]:
    """The first ``limit`` requests (None: all) of a token-id log, else of any log
    ``read_log`` reads, as they are read: one request held at a time (the general reader
    holds a batch ahead), the first bad record raised when it is reached."""
    if is_token_log(path):
        stream = read_token_log(path)
    else:
        from cachecast.tokenizers import read_log  # the general reader (provider log formats)

        stream = read_log(path, model=model, strict=True)
    return stream if limit is None else islice(stream, limit)


def load_log(path: Path, *, model: str | None = None) -> list[TokenizedRequest]:
    """Every request of the log in a list (small logs, tests); a replay streams
    :func:`log_requests` instead."""
    return list(log_requests(path, model=model))


class Rereadable(Generic[Item]):
    """An iterable that is read anew each time it is iterated (a log file opened again), so
    that a replay can check a whole log before it sends anything without holding it."""

    def __init__(self, open_stream: Callable[[], Iterator[Item]]) -> None:
        self._open = open_stream

    def __iter__(self) -> Iterator[Item]:
        return self._open()


def can_reread(items: Iterable[Any]) -> bool:
    """Whether ``items`` gives a fresh iterator each time (a list, a :class:`Rereadable`);
    an iterator or generator is its own iterator and can be read only once."""
    return iter(items) is not items


def mapped(items: Iterable[Source], function: Callable[[Source], Item]) -> Iterable[Item]:
    """``function`` over ``items``, as rereadable as ``items`` is."""
    if can_reread(items):
        return Rereadable(lambda: map(function, items))
    return map(function, items)


def synthesize_tokens(request: TokenizedRequest) -> tuple[int, ...]:
    """Token ids for a block-key trace (Mooncake): each key becomes ``block_size`` ids drawn
    from a generator seeded by the key, so equal keys give equal blocks and different keys
    different ones; the last block is cut to the prompt length."""
    if request.block_keys is None or request.block_size is None:
        raise EngineError(f"request {request.request_id} has neither tokens nor block keys")
    tokens: list[int] = []
    for key in request.block_keys:
        generator = random.Random(f"cachecast-block:{key}")
        tokens.extend(generator.randrange(3, SYNTHETIC_VOCAB) for _ in range(request.block_size))
    if len(tokens) < request.input_tokens:
        raise EngineError(
            f"request {request.request_id} (line {request.line}): {len(request.block_keys)}"
            f" block keys of {request.block_size} tokens cover fewer than its"
            f" {request.input_tokens} input tokens"
        )
    return tuple(tokens[: request.input_tokens])


def with_ids(request: TokenizedRequest) -> TokenizedRequest:
    """``request`` with explicit token ids (a block-key trace's synthesised), ready for both
    the engine and the simulator, so both see exactly the same sequence."""
    if request.tokens is not None:
        if len(request.tokens) != request.input_tokens:
            raise EngineError(
                f"request {request.request_id} (line {request.line}): {len(request.tokens)}"
                f" token ids but input_tokens={request.input_tokens}"
            )
        return request
    return replace(request, tokens=synthesize_tokens(request), block_keys=None, block_size=None)


def with_token_ids(requests: Iterable[TokenizedRequest]) -> list[TokenizedRequest]:
    """Every request :func:`with_ids` (a list: small logs, tests)."""
    return [with_ids(request) for request in requests]


class ReplayBuilder:
    """Engine requests in log order, built one at a time from the log's requests.

    Caches are separated by (model, scope), as the simulator separates them: the first
    namespace met is sent unsalted and every other one under a cache salt of its own, so two
    namespaces never share blocks while a log of one namespace is sent exactly as logged
    (which namespaces a log holds is not known before it has been read)."""

    def __init__(self) -> None:
        self._first_namespace: tuple[str | None, str] | None = None
        self._start: float | None = None

    def build(
        self, request: TokenizedRequest, chat: Mapping[str, Any] | None = None
    ) -> ReplayRequest:
        assert request.tokens is not None
        namespace = (request.model, request.scope)
        if self._first_namespace is None:
            self._first_namespace = namespace
        if self._start is None:
            self._start = request.timestamp
        salted = namespace != self._first_namespace
        return ReplayRequest(
            request_id=request.request_id,
            line=request.line,
            prompt_token_ids=tuple(request.tokens),
            arrival_s=max(0.0, request.timestamp - self._start),
            cache_salt=f"{request.model or ''}\x1f{request.scope}" if salted else None,
            chat=chat,
        )


def to_replay_requests(
    requests: Sequence[TokenizedRequest], chats: Sequence[Mapping[str, Any]] | None = None
) -> list[ReplayRequest]:
    """Engine requests in log order (:class:`ReplayBuilder`); ``chats`` (one per request)
    are the chat payloads for a backend in chat mode."""
    if chats is not None and len(chats) != len(requests):
        raise ValueError(f"{len(chats)} chat payloads for {len(requests)} requests")
    builder = ReplayBuilder()
    return [
        builder.build(request, None if chats is None else chats[index])
        for index, request in enumerate(requests)
    ]


def check_fits(request: TokenizedRequest, info: EngineInfo) -> None:
    """Reject a prompt the engine would refuse (too long, or ids outside its vocabulary)."""
    tokens = request.tokens
    assert tokens is not None
    if info.max_model_len is not None and len(tokens) >= info.max_model_len:
        raise LogFormatError(
            request.source,
            request.line,
            "tokens",
            f"{len(tokens)} tokens leave no room for one generated token within"
            f" the engine's max_model_len of {info.max_model_len}",
        )
    vocab_size = info.vocab_size
    if vocab_size is None or not tokens or (min(tokens) >= 0 and max(tokens) < vocab_size):
        return
    for position, token in enumerate(tokens):
        if not 0 <= token < vocab_size:
            raise LogFormatError(
                request.source,
                request.line,
                f"tokens[{position}]",
                f"token id {token} is outside the model's vocabulary (size {vocab_size})",
            )


def check_fits_engine(requests: Iterable[TokenizedRequest], info: EngineInfo) -> None:
    """Reject, before anything is sent, a prompt the engine would refuse mid-run."""
    for request in requests:
        check_fits(request, info)


@dataclass(slots=True)
class LogSurvey:
    """What one pass over a log's requests found, in constant memory: how many there are,
    and the longest prompt and the largest token id (whether every prompt fits an engine)."""

    requests: int = 0
    longest_prompt: int = 0
    smallest_token_id: int = 0
    largest_token_id: int = 0

    def add(self, request: TokenizedRequest) -> None:
        tokens = request.tokens
        assert tokens is not None
        self.requests += 1
        self.longest_prompt = max(self.longest_prompt, len(tokens))
        if tokens:
            self.smallest_token_id = min(self.smallest_token_id, min(tokens))
            self.largest_token_id = max(self.largest_token_id, max(tokens))

    def fits(self, info: EngineInfo) -> bool:
        """Whether every prompt surveyed fits ``info`` (else :func:`check_fits_engine` on
        the same requests names the first that does not)."""
        if info.max_model_len is not None and self.longest_prompt >= info.max_model_len:
            return False
        return info.vocab_size is None or (
            self.smallest_token_id >= 0 and self.largest_token_id < info.vocab_size
        )


def survey_log(requests: Iterable[TokenizedRequest]) -> LogSurvey:
    """One pass over ``requests`` (token ids made explicit; the first bad one raised)."""
    survey = LogSurvey()
    for request in requests:
        survey.add(with_ids(request))
    return survey


def predict_cached_tokens(
    requests: Iterable[TokenizedRequest], block_size: int, num_blocks: int
) -> list[int]:
    """The simulator's vLLM policy with the engine's own geometry, one request at a time."""
    policy = vllm_policy(block_size, num_blocks)
    return [policy.process(request).cache_read_tokens for request in requests]


def vllm_policy(block_size: int, num_blocks: int) -> CachePolicy:
    from cachecast.simulator import build_policy

    # The simulator's ``capacity_blocks`` for vllm is the engine's num_gpu_blocks, null block
    # included (VllmPrefixCache keeps block 0 aside exactly as vLLM does).
    return build_policy("vllm", block_size=block_size, capacity_blocks=num_blocks)


def warmup_requests(requests: Sequence[ReplayRequest], count: int) -> list[ReplayRequest]:
    """The first ``count`` prompt shapes under a private salt (nothing they cache is reused)."""
    salt = f"cachecast-warmup-{uuid.uuid4().hex}"
    return [
        replace(request, request_id=f"warmup-{index}", cache_salt=salt, arrival_s=0.0)
        for index, request in enumerate(requests[:count])
    ]


def settled_metrics(
    backend: EngineBackend, before: MetricsSnapshot, expected_requests: int
) -> MetricsSnapshot:
    """The counters once they include all ``expected_requests`` TTFT observations."""
    deadline = time.monotonic() + METRICS_SETTLE_S
    while True:
        after = backend.metrics()
        if after.ttft_count - before.ttft_count >= expected_requests:
            return after
        if time.monotonic() > deadline:
            return after  # reported as is; the report says the counters disagree
        time.sleep(0.05)


LoggedRequest = tuple[TokenizedRequest, Mapping[str, Any] | None]
"""A request of the log and its chat payload (None: sent as token ids)."""


class _Feed:
    """The measured run's requests as the backend takes them, each prepared only then.

    Preparing a request (reading and tokenizing it, the simulator's prediction) while no
    request is in flight keeps the engine waiting on cachecast: that time is counted in
    ``idle_s`` and left out of the run's wall time, which therefore measures the engine as it
    did when the log was read before the run. Under arrival pacing it is not left out: the
    waits for the log's arrival times absorb it."""

    def __init__(
        self, requests: Iterator[ReplayRequest], pacing: bool, progress: Progress | None
    ) -> None:
        self._requests = requests
        self._pacing = pacing
        self._progress = progress
        self.sent = 0
        self.finished = 0
        self.idle_s = 0.0

    def __iter__(self) -> Iterator[ReplayRequest]:
        while True:
            started = time.perf_counter()
            request = next(self._requests, None)
            if request is None:
                return
            if not self._pacing and self.sent == self.finished:
                self.idle_s += time.perf_counter() - started
            self.sent += 1
            yield request

    def done(self, count: int) -> None:
        """The backend's progress callback: ``count`` more requests finished."""
        self.finished += count
        if self._progress is not None:
            self._progress(count)


class ReplayKeywords(TypedDict, total=False):
    """The keywords of :func:`measure_layout` and :func:`replay_logged`."""

    options: ReplayOptions | None  # default ReplayOptions()
    compare_simulator: bool  # default True
    source: str
    progress: Progress | None
    survey: LogSurvey | None  # a pass over the same requests the caller already made


def measure_layout(
    requests: Iterable[TokenizedRequest],
    backend: EngineBackend,
    **settings: Unpack[ReplayKeywords],
) -> MeasurementReport:
    """Replay ``requests`` (log order) on ``backend`` and report measured against predicted.

    This is the hook for ``suggest --validate-on-engine``: call it once with the original
    layout and once with the suggested one, on the same backend. See :func:`replay_logged`
    for how ``requests`` is read.
    """
    logged: Iterable[LoggedRequest] = mapped(requests, lambda request: (request, None))
    return replay_logged(logged, backend, **settings)


def replay_logged(
    requests: Iterable[LoggedRequest],
    backend: EngineBackend,
    **settings: Unpack[ReplayKeywords],
) -> MeasurementReport:
    """Replay ``requests`` (log order, each with its chat payload or None) on ``backend``.

    The requests are read as they are sent: only those in flight (``options.concurrency``)
    and the warm-up's first prompt shapes are held, and of each answered request only its
    figures. A log that can be read again (a list, a :class:`Rereadable`) is first read once
    to check that every prompt fits the engine before anything is sent, unless ``survey``
    (a pass the caller made) shows they all fit; a log that can be read once is checked
    request by request, each before it is sent. The simulator's prediction is made as each
    request is sent, in log order, with the engine's geometry."""
    options = settings.get("options") or ReplayOptions()
    compare_simulator = settings.get("compare_simulator", True)
    survey = settings.get("survey")
    if options.concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    tokenized = mapped(requests, lambda item: with_ids(item[0]))
    if survey is None and can_reread(tokenized):
        survey = survey_log(tokenized)
    if survey is not None and survey.requests == 0:
        raise EngineError("nothing to replay: the log has no requests")
    info = backend.info()
    if survey is not None and not survey.fits(info) and can_reread(tokenized):
        check_fits_engine(tokenized, info)  # names the first prompt that does not fit
    policy = vllm_policy(info.block_size, info.num_blocks) if compare_simulator else None
    predicted: list[int | None] = []
    builder = ReplayBuilder()

    def prepared() -> Iterator[ReplayRequest]:
        for request, chat in requests:
            ready = with_ids(request)
            check_fits(ready, info)
            predicted.append(None if policy is None else policy.process(ready).cache_read_tokens)
            yield builder.build(ready, chat)

    stream = prepared()
    head = list(islice(stream, max(options.warmup_requests, 1)))
    if not head:
        raise EngineError("nothing to replay: the log has no requests")
    if options.warmup_requests > 0:
        sequential = replace(options, concurrency=1, arrival_scale=None)
        backend.run(warmup_requests(head, options.warmup_requests), sequential)
    isolation = backend.reset_prefix_cache() if options.reset_cache else "none"
    pacing = options.arrival_scale is not None
    feed = _Feed(chain(head, stream), pacing, settings.get("progress"))
    del head  # the feed holds the warm-up's prompts only until they are sent
    before = backend.metrics()
    started = time.perf_counter()
    results = backend.run(feed, options, feed.done)
    wall_s = time.perf_counter() - started - feed.idle_s
    after = settled_metrics(backend, before, len(results))
    rows = [
        RequestComparison(
            request_id=result.request_id,
            line=result.line,
            prompt_tokens=result.prompt_tokens,
            measured_cached_tokens=result.cached_tokens,
            predicted_cached_tokens=prediction,
            output_tokens=result.output_tokens,
            ttft_s=result.ttft_s,
            latency_s=result.latency_s,
        )
        for result, prediction in zip(results, predicted, strict=True)
    ]
    return MeasurementReport(
        engine=info,
        source=settings.get("source", ""),
        options=options,
        cache_isolation=isolation,
        requests=rows,
        metrics_delta=after.minus(before),
        wall_s=wall_s,
        simulator_policy=(
            f"vllm(block_size={info.block_size}, num_blocks={info.num_blocks})"
            if policy is not None
            else None
        ),
    )
