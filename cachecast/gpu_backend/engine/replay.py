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
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from cachecast.errors import LogRecordError
from cachecast.gpu_backend.engine.backend import EngineBackend, Progress
from cachecast.gpu_backend.engine.report import MeasurementReport, RequestComparison
from cachecast.gpu_backend.engine.types import (
    EngineError,
    EngineInfo,
    MetricsSnapshot,
    ReplayOptions,
    ReplayRequest,
)
from cachecast.tokenizers.types import TokenizedRequest

SYNTHETIC_VOCAB = 1000
"""Token ids drawn for block-key traces lie in [3, SYNTHETIC_VOCAB): valid for any model
with at least that many ids, and clear of the usual special ids 0-2."""

METRICS_SETTLE_S = 10.0
"""How long to wait for a server's counters to include the last requests (they are
published asynchronously, after the response)."""


class LogFormatError(LogRecordError, ValueError):
    """A bad record in a token log, or a prompt the engine cannot take: bad input naming file,
    line and field (``file``, ``line``, ``field`` and ``reason`` as before). Still a
    ValueError for callers that catch one."""


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


def load_log(path: Path, *, model: str | None = None) -> list[TokenizedRequest]:
    """A token-id log (``{"tokens": [...]}`` records), else any log ``read_log`` reads."""
    with path.open(encoding="utf-8") as handle:
        first = next((line for line in handle if line.strip()), None)
    if first is None:
        raise LogFormatError(str(path), 1, "(file)", "the log is empty")
    try:
        probe = json.loads(first)
    except json.JSONDecodeError:
        probe = None
    if isinstance(probe, dict) and "tokens" in probe:
        return list(read_token_log(path))
    from cachecast.tokenizers import read_log  # the general reader (provider log formats)

    return list(read_log(path, model=model, strict=True))


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


def with_token_ids(requests: Iterable[TokenizedRequest]) -> list[TokenizedRequest]:
    """Every request with explicit token ids (block-key traces synthesised), ready for
    both the engine and the simulator, so both see exactly the same sequences."""
    ready: list[TokenizedRequest] = []
    for request in requests:
        if request.tokens is not None:
            if len(request.tokens) != request.input_tokens:
                raise EngineError(
                    f"request {request.request_id} (line {request.line}): {len(request.tokens)}"
                    f" token ids but input_tokens={request.input_tokens}"
                )
            ready.append(request)
        else:
            ready.append(
                replace(
                    request, tokens=synthesize_tokens(request), block_keys=None, block_size=None
                )
            )
    return ready


def to_replay_requests(
    requests: Sequence[TokenizedRequest], chats: Sequence[Mapping[str, Any]] | None = None
) -> list[ReplayRequest]:
    """Engine requests in log order. Caches are separated by (model, scope), as the
    simulator separates them: where a log mixes several, each gets its own cache salt.
    ``chats`` (one per request) are the chat payloads for a backend in chat mode."""
    if chats is not None and len(chats) != len(requests):
        raise ValueError(f"{len(chats)} chat payloads for {len(requests)} requests")
    namespaces = {(request.model, request.scope) for request in requests}
    salted = len(namespaces) > 1
    start = requests[0].timestamp if requests else 0.0
    replay: list[ReplayRequest] = []
    for index, request in enumerate(requests):
        assert request.tokens is not None
        replay.append(
            ReplayRequest(
                request_id=request.request_id,
                line=request.line,
                prompt_token_ids=tuple(request.tokens),
                arrival_s=max(0.0, request.timestamp - start),
                cache_salt=f"{request.model or ''}\x1f{request.scope}" if salted else None,
                chat=None if chats is None else chats[index],
            )
        )
    return replay


def check_fits_engine(requests: Sequence[TokenizedRequest], info: EngineInfo) -> None:
    """Reject, before anything is sent, a prompt the engine would refuse mid-run (bad input:
    the request names its file, line and field, the message the engine)."""
    engine = info.endpoint or f"the {info.kind} engine"
    for request in requests:
        assert request.tokens is not None
        if info.max_model_len is not None and len(request.tokens) >= info.max_model_len:
            raise LogFormatError(
                request.source,
                request.line,
                "tokens",
                f"{len(request.tokens)} tokens leave no room for one generated token within"
                f" the max_model_len of {info.max_model_len} of {engine}",
            )
        if info.vocab_size is not None:
            for position, token in enumerate(request.tokens):
                if not 0 <= token < info.vocab_size:
                    raise LogFormatError(
                        request.source,
                        request.line,
                        f"tokens[{position}]",
                        f"token id {token} is outside the vocabulary of {engine}'s model"
                        f" (size {info.vocab_size})",
                    )


def predict_cached_tokens(
    requests: Sequence[TokenizedRequest], block_size: int, num_blocks: int
) -> list[int]:
    """The simulator's vLLM policy with the engine's own geometry, one request at a time."""
    from cachecast.simulator import build_policy

    # The simulator's ``capacity_blocks`` for vllm is the engine's num_gpu_blocks, null block
    # included (VllmPrefixCache keeps block 0 aside exactly as vLLM does).
    policy = build_policy("vllm", block_size=block_size, capacity_blocks=num_blocks)
    return [policy.process(request).cache_read_tokens for request in requests]


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


def measure_layout(
    requests: Iterable[TokenizedRequest],
    backend: EngineBackend,
    *,
    options: ReplayOptions | None = None,
    compare_simulator: bool = True,
    source: str = "",
    progress: Progress | None = None,
    chats: Sequence[Mapping[str, Any]] | None = None,
) -> MeasurementReport:
    """Replay ``requests`` (log order) on ``backend`` and report measured against predicted.

    This is the hook for ``suggest --validate-on-engine``: call it once with the original
    layout and once with the suggested one, on the same backend. ``chats`` gives each
    request's chat payload, for a backend that lets the engine apply its chat template.
    """
    options = options or ReplayOptions()
    if options.concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    prepared = with_token_ids(requests)
    if not prepared:
        raise EngineError("nothing to replay: the log has no requests")
    info = backend.info()
    check_fits_engine(prepared, info)
    replay = to_replay_requests(prepared, chats)
    if options.warmup_requests > 0:
        sequential = replace(options, concurrency=1, arrival_scale=None)
        backend.run(warmup_requests(replay, options.warmup_requests), sequential)
    isolation = backend.reset_prefix_cache() if options.reset_cache else "none"
    before = backend.metrics()
    started = time.perf_counter()
    results = backend.run(replay, options, progress)
    wall_s = time.perf_counter() - started
    after = settled_metrics(backend, before, len(results))
    predicted: list[int | None] = [None] * len(prepared)
    policy_name: str | None = None
    if compare_simulator:
        predicted = list(predict_cached_tokens(prepared, info.block_size, info.num_blocks))
        policy_name = f"vllm(block_size={info.block_size}, num_blocks={info.num_blocks})"
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
        source=source,
        options=options,
        cache_isolation=isolation,
        requests=rows,
        metrics_delta=after.minus(before),
        wall_s=wall_s,
        simulator_policy=policy_name,
    )
