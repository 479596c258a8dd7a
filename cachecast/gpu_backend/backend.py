"""The one interface every engine mode implements (in-process ``vllm.LLM``, remote server)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

from cachecast.gpu_backend.types import (
    EngineInfo,
    MetricsSnapshot,
    ReplayOptions,
    ReplayRequest,
    RequestResult,
)

Progress = Callable[[int], None]
"""Called with the number of requests that just finished (for a progress bar)."""


class EngineBackend(Protocol):
    """A vLLM engine with automatic prefix caching that cachecast can replay a log on."""

    def info(self) -> EngineInfo:
        """Version, model, device and the cache geometry, read back from the engine."""
        ...

    def reset_prefix_cache(self) -> str:
        """Forget every cached block; returns how ("reset", or "salt" where the engine
        cannot reset and later requests are isolated by a fresh cache salt instead)."""
        ...

    def metrics(self) -> MetricsSnapshot:
        """The engine's cumulative prefix-cache counters and TTFT histogram now."""
        ...

    def run(
        self,
        requests: Iterable[ReplayRequest],
        options: ReplayOptions,
        progress: Progress | None = None,
    ) -> list[RequestResult]:
        """Send ``requests`` in order under ``options``; one result per request, same order.

        ``requests`` is read as the requests are sent: the next one is taken only when a
        slot is free (``options.concurrency``), so the backend holds the requests in flight,
        never the whole log, and keeps of each answered request only its result."""
        ...


def pacing_delay(request: ReplayRequest, options: ReplayOptions, elapsed_s: float) -> float:
    """Seconds to wait before ``request`` may be sent (0 when not following arrival times)."""
    if options.arrival_scale is None:
        return 0.0
    return max(0.0, request.arrival_s * options.arrival_scale - elapsed_s)
