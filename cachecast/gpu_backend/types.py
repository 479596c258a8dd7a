"""The data every engine backend exchanges with the replay driver and the report."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from cachecast.core.errors import UnavailableError


class EngineError(UnavailableError):
    """The engine could not be started, reached or read; the message says which and why."""


class PromptMismatchError(EngineError):
    """The engine computed other prompt ids for a chat request than cachecast's tokenization:
    its measured hits are not comparable with the prediction. ``position`` is the first token
    that differs; ``engine_token`` / ``our_token`` are the ids there (None: that side ended)."""

    def __init__(
        self,
        message: str,
        *,
        request_id: str,
        line: int,
        position: int,
        engine_token: int | None,
        our_token: int | None,
    ) -> None:
        super().__init__(message)
        self.request_id = request_id
        self.line = line
        self.position = position
        self.engine_token = engine_token
        self.our_token = our_token


@dataclass(frozen=True, slots=True)
class ReplayRequest:
    """One prompt to send to the engine, in log order.

    ``arrival_s`` is the offset from the log's first request (used only when the replay
    follows the log's inter-arrival times). ``cache_salt`` isolates cache scopes: two
    requests share KV only when their salts are equal, as with separate API keys.
    ``chat`` is the request's chat payload (``messages`` and ``tools`` as logged) for a
    backend that lets the engine apply its own chat template; ``prompt_token_ids`` is then
    cachecast's tokenization of it, which the engine's prompt must equal.
    """

    request_id: str
    line: int
    prompt_token_ids: Sequence[int]
    arrival_s: float = 0.0
    cache_salt: str | None = None
    chat: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class RequestResult:
    """What the engine reported for one request.

    ``cached_tokens`` is the engine's own per-request prefix-cache hit (None where the
    engine does not report it, e.g. a server started without --enable-prompt-tokens-details).
    ``ttft_s`` runs from submission to the first streamed token.
    """

    request_id: str
    line: int
    prompt_tokens: int
    cached_tokens: int | None
    output_tokens: int
    ttft_s: float
    latency_s: float


@dataclass(frozen=True, slots=True)
class EngineInfo:
    """The engine's identity and cache geometry, read back from the engine itself."""

    kind: str  # "offline" or "http"
    engine_version: str
    model: str
    device: str
    block_size: int
    num_blocks: int
    endpoint: str | None = None  # the URL for a remote engine
    max_model_len: int | None = None  # a prompt must be strictly shorter (room for 1 token)
    vocab_size: int | None = None  # token ids must lie in [0, vocab_size)
    dtype: str | None = None  # the weights' dtype (None: the engine does not say)
    kv_cache_dtype: str | None = None  # "auto": the weights' dtype


@dataclass(frozen=True, slots=True)
class MetricsSnapshot:
    """Cumulative engine counters at one instant (summed over engines and label sets)."""

    prefix_cache_queries: int
    prefix_cache_hits: int
    ttft_count: int
    ttft_sum_s: float
    ttft_buckets: tuple[tuple[float, int], ...] = ()  # (upper bound, cumulative count)

    def minus(self, earlier: MetricsSnapshot) -> MetricsSnapshot:
        """What happened between ``earlier`` and this snapshot."""
        earlier_buckets = dict(earlier.ttft_buckets)
        return MetricsSnapshot(
            prefix_cache_queries=self.prefix_cache_queries - earlier.prefix_cache_queries,
            prefix_cache_hits=self.prefix_cache_hits - earlier.prefix_cache_hits,
            ttft_count=self.ttft_count - earlier.ttft_count,
            ttft_sum_s=self.ttft_sum_s - earlier.ttft_sum_s,
            ttft_buckets=tuple(
                (bound, count - earlier_buckets.get(bound, 0)) for bound, count in self.ttft_buckets
            ),
        )


@dataclass(frozen=True, slots=True)
class ReplayOptions:
    """How to replay: arrival pacing, concurrency, warm-up and output length.

    ``arrival_scale`` None sends each request as soon as the concurrency limit allows;
    a number replays the log's inter-arrival gaps multiplied by it (0.5 = twice as fast).
    Exact agreement with the simulator is only expected at ``concurrency == 1``: requests
    batched together can hit blocks their neighbours allocated in the same step.
    ``max_tokens`` is 1 by default because generated tokens fill KV blocks the simulator
    does not model (they would add eviction pressure the log does not describe).
    """

    concurrency: int = 1
    arrival_scale: float | None = None
    warmup_requests: int = 2
    max_tokens: int = 1
    reset_cache: bool = True


class EngineKind(StrEnum):
    """Where ``measure`` replays a log: vLLM in this process, or a server over HTTP."""

    offline = "offline"
    http = "http"
