"""The one interface every cache policy implements, and helpers they share."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections import Counter

from cachecast.logs.types import ObservedUsage
from cachecast.simulator.misses import EVICTED, MissSpan, Sight, add_span, novelty
from cachecast.simulator.types import RequestUsage
from cachecast.tokenizers.types import TokenizedRequest

SELF_HOSTED_WRITE = "kv"
"""Write bucket of self-hosted policies without a contract (writes cost nothing extra)."""


class CachePolicy(ABC):
    """A model of one cache. ``process`` is called once per request in timestamp order.

    Requests are processed one at a time: a request looks up, allocates, and releases
    everything it held before the next one starts (no two requests run concurrently).
    """

    name: str
    # Whether records that only create a cache object (Gemini cachedContents) are billed by
    # this policy; every other policy never sees them (no such call happens under it).
    bills_cache_objects = False

    @abstractmethod
    def process(self, request: TokenizedRequest) -> RequestUsage:
        """Look the request up, update the cache, and say where its prompt tokens went."""

    def explain(
        self, request: TokenizedRequest, usage: RequestUsage, sight: Sight
    ) -> list[MissSpan]:
        """Why the tokens ``usage`` did not read were not read, called right after
        ``process(request)`` (``simulator.misses``); the spans add up to ``input - read``.

        This default serves caches without lifetimes (self-hosted engines): a prefix an
        earlier prompt shared but that was not read was evicted; the rest is new."""
        read = usage.cache_read_tokens
        spans: list[MissSpan] = []
        shared = min(max(sight.shared, read), request.input_tokens)
        add_span(spans, EVICTED, read, shared)
        spans.extend(novelty(request, sight, max(read, shared)))
        return spans

    def learn(self, request: TokenizedRequest, observed: ObservedUsage) -> None:
        """Take in what the provider said it held after ``request``: the prefixes its
        observed reads and writes cover (:func:`observed_prefixes`). Called once the request
        was predicted and reconciled, so only later requests see it (``usecases.reconcile``;
        docs/predictions.md, "Warm caches the log shows"). This default (self-hosted
        engines, which report no usage) learns nothing."""
        return None

    @property
    def notes(self) -> Counter[str]:
        """Assumptions the policy made, and how many requests each concerned."""
        found: Counter[str] | None = self.__dict__.get("_notes")
        if found is None:
            found = self.__dict__["_notes"] = Counter()
        return found

    def note(self, message: str) -> None:
        self.notes[message] += 1


def observed_prefixes(request: TokenizedRequest, observed: ObservedUsage) -> list[int]:
    """The prefix lengths of ``request`` the provider's usage says are cached after it: the
    prefix it read, and the one it read and wrote (a write extends the entry it read), at
    most the prompt; shortest first, empty where it cached nothing, or where it reports no
    read: the prefix its writes extend is then unknown."""
    if observed.cache_read_tokens is None:
        return []
    read = observed.cache_read_tokens
    written = observed.cache_write_tokens or 0
    found = [length for length in (read, read + written) if length > 0]
    return sorted({min(length, request.input_tokens) for length in found})


def empty_usage(request: TokenizedRequest) -> RequestUsage:
    return RequestUsage(
        request_id=request.request_id,
        line=request.line,
        timestamp=request.timestamp,
        scope=request.scope,
        input_tokens=request.input_tokens,
        output_tokens=request.output_tokens,
    )


def make_usage(
    request: TokenizedRequest, read: int, writes: dict[str, int], storage_token_seconds: int = 0
) -> RequestUsage:
    """A usage record with the invariant read + writes + uncached == input checked."""
    usage = empty_usage(request)
    usage.cache_read_tokens = read
    usage.cache_write_tokens = {name: tokens for name, tokens in writes.items() if tokens}
    usage.uncached_input_tokens = request.input_tokens - read - usage.cache_write_total
    usage.storage_token_seconds = storage_token_seconds
    if usage.uncached_input_tokens < 0:
        raise AssertionError(f"request {request.request_id}: read+write exceed the input")
    return usage


def hit_alignment(block_size: int, state_checkpoint_tokens: int | None) -> int:
    """Granularity of a usable hit: the KV block, or for hybrid (recurrent-state) models the
    least common multiple of the block and the state checkpoint interval, since a hit can
    only resume where both a KV block boundary and a saved state exist."""
    if state_checkpoint_tokens is None:
        return block_size
    if state_checkpoint_tokens <= 0:
        raise ValueError("state_checkpoint_tokens must be positive")
    return math.lcm(block_size, state_checkpoint_tokens)
