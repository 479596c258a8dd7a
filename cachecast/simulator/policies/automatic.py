"""Automatic prefix caching as API providers sell it (OpenAI-style, DeepSeek, Gemini implicit).

Every prompt of at least ``min_tokens`` tokens is cached block by block (``block_size``
tokens per block; the contract's ``increment_tokens`` where it has one). A later request
reads the longest cached run of blocks from its start; the hit counts only if it reaches
``min_tokens`` and is then rounded down to ``min_tokens + k * increment`` (OpenAI: 1024,
then 128-token steps). Blocks the request adds are its writes, under the default TTL.
The whole prompt may be read when it is a whole number of blocks (providers do not
document vLLM's recompute-the-last-token rule for their billing).

Block-level traces (Mooncake: one id per 512-token block, no token ids) are matched in the
trace's own blocks: equal ids are the only evidence of an equal prefix, so a hit is a whole
number of trace blocks, then rounded by ``min_tokens`` and ``increment`` as above. Where the
trace block is coarser than ``block_size`` this is a lower bound (a partial-block match
cannot be seen in the trace).
"""

from __future__ import annotations

from cachecast.simulator.blocks import BlockKeyer
from cachecast.simulator.cache import TtlLruCache
from cachecast.simulator.policies.base import CachePolicy, make_usage
from cachecast.simulator.types import RequestUsage
from cachecast.tokenizers.types import TokenizedRequest

NEVER_EXPIRES = 1 << 62


def round_hit(matched_tokens: int, min_tokens: int, increment: int | None) -> int:
    """The billable hit for a matched prefix: 0 below the minimum, else stepped."""
    if matched_tokens < max(min_tokens, 1):
        return 0
    if increment is None:
        return matched_tokens
    return min_tokens + (matched_tokens - min_tokens) // increment * increment


class AutomaticPrefixCache(CachePolicy):
    """Implicit block-prefix cache with a minimum, increments, TTL and LRU capacity."""

    name = "automatic"

    def __init__(
        self,
        *,
        block_size: int = 128,
        min_tokens: int = 1024,
        increment: int | None = None,
        ttl_seconds: int | None = None,
        refresh_on_hit: bool = True,
        ttl_name: str = "default",
        capacity_blocks: int | None = None,
    ) -> None:
        if block_size <= 0:
            raise ValueError("block_size must be positive")
        if min_tokens < 0:
            raise ValueError("min_tokens must not be negative")
        if increment is not None and increment <= 0:
            raise ValueError("increment must be positive")
        self.block_size = block_size
        self.min_tokens = min_tokens
        self.increment = increment
        self.ttl_seconds = NEVER_EXPIRES if ttl_seconds is None else ttl_seconds
        self.refresh_on_hit = refresh_on_hit
        self.ttl_name = ttl_name
        self.keyer = BlockKeyer(block_size)
        self._trace_keyers: dict[int, BlockKeyer] = {}
        self.cache = TtlLruCache(capacity_blocks)

    def unit(self, request: TokenizedRequest) -> int:
        """Tokens per cached block for ``request``: the trace's block for block-level traces."""
        if request.tokens is None and request.block_size is not None:
            return request.block_size
        return self.block_size

    def _keyer_for(self, request: TokenizedRequest) -> BlockKeyer:
        unit = self.unit(request)
        if unit == self.block_size:
            return self.keyer
        keyer = self._trace_keyers.get(unit)
        if keyer is None:
            keyer = self._trace_keyers[unit] = BlockKeyer(unit)
        return keyer

    def matched_tokens(self, request: TokenizedRequest) -> tuple[int, list[bytes]]:
        """Tokens of the longest live cached block run from the start, and all block keys."""
        keys = self._keyer_for(request).keys(request)
        now = request.timestamp
        matched = 0
        for key in keys:
            if self.cache.lookup(key, now) is None:
                break
            matched += 1
        return matched * self.unit(request), keys

    def process(self, request: TokenizedRequest) -> RequestUsage:
        if request.input_tokens < max(self.min_tokens, 1):
            return make_usage(request, 0, {})  # too short to be cached or read
        matched, keys = self.matched_tokens(request)
        read = round_hit(matched, self.min_tokens, self.increment)
        written = self.store(request, keys, matched // self.unit(request))
        return make_usage(request, read, {self.ttl_name: written})

    def store(self, request: TokenizedRequest, keys: list[bytes], matched_blocks: int) -> int:
        """Refresh the matched blocks and insert the rest; returns tokens newly written."""
        now = request.timestamp
        unit = self.unit(request)
        cache = self.cache
        held = set(keys) if cache.capacity is not None else ()
        for key in reversed(keys[:matched_blocks]):  # deepest first: shallow ends up MRU
            cache.touch(key, now)
        written_blocks = 0
        new_keys = keys[matched_blocks:]
        # Insert shallow first (a block is useless without its parent), then reorder so
        # that the deepest is the least recently used of this request's blocks.
        for key in new_keys:
            if not cache.insert(
                key,
                now,
                tokens=unit,
                ttl_seconds=self.ttl_seconds,
                refresh_on_hit=self.refresh_on_hit,
                ttl_name=self.ttl_name,
                held=held,
            ):
                break
            written_blocks += 1
        for key in reversed(keys[: matched_blocks + written_blocks]):
            cache.touch_order(key)
        return written_blocks * unit
