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

from collections.abc import Sequence

from cachecast.contracts.model import TtlOption
from cachecast.logs.types import ObservedUsage
from cachecast.simulator.blocks import BlockKeyer
from cachecast.simulator.cache import EXPIRED, TtlLruCache
from cachecast.simulator.misses import (
    BELOW_MINIMUM,
    EVICTED,
    GRANULARITY,
    TTL_EXPIRED,
    MissSpan,
    Sight,
    add_span,
    gap_detail,
    novelty,
)
from cachecast.simulator.policies.base import CachePolicy, make_usage, observed_prefixes
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
        ttl_options: Sequence[TtlOption] = (),
        caches_replies: bool = False,
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
        # Other lifetimes a request may ask for (OpenAI's prompt_cache_retention).
        self.ttl_options = {option.name: option for option in ttl_options}
        self._last: tuple[TokenizedRequest, list[bytes], int] | None = None
        # The provider caches its replies (contracts.mechanics): a request carrying the
        # previous one's reply verbatim finds that prompt and reply cached.
        self.caches_replies = caches_replies

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
        return self._live_run(keys, request.timestamp) * self.unit(request), keys

    def _live_run(self, keys: list[bytes], now: float) -> int:
        """The blocks of ``keys`` live in the cache at ``now``, counted from the first."""
        matched = 0
        for key in keys:
            if self.cache.lookup(key, now) is None:
                break
            matched += 1
        return matched

    def process(self, request: TokenizedRequest) -> RequestUsage:
        if request.input_tokens < max(self.min_tokens, 1):
            self._last = None
            return make_usage(request, 0, {})  # too short to be cached or read
        keys = self._keyer_for(request).keys(request)
        unit = self.unit(request)
        label = request.controls.carries_reply
        if self.caches_replies and label is not None:
            # The previous request and its reply, which this one opens with up to the end of
            # the message ``label``: cached as the provider left them (contracts.mechanics).
            end = max((s.end for s in request.segments if s.label == label), default=0)
            self._hold(request, keys[: end // unit])
        matched = self._live_run(keys, request.timestamp) * unit
        self._last = (request, keys, matched)
        read = round_hit(matched, self.min_tokens, self.increment)
        ttl_seconds, ttl_name = self.ttl_seconds, self.ttl_name
        asked = request.controls.ttl
        if asked is not None and asked != ttl_name:
            option = self.ttl_options.get(asked)
            if option is None:
                self.note(
                    f"requested retention {asked!r} is not an option of the contract:"
                    f" cached as {ttl_name!r}"
                )
            else:
                ttl_seconds, ttl_name = option.ttl_seconds, option.name
        written = self.store(request, keys, matched // unit, ttl_seconds, ttl_name)
        return make_usage(request, read, {ttl_name: written})

    def learn(self, request: TokenizedRequest, observed: ObservedUsage) -> None:
        """The provider held the request's first N tokens (its observed read and write):
        their whole blocks are cached from now on under the default TTL, whether or not our
        replay cached them (a prompt under the minimum, an entry we had let expire)."""
        lengths = observed_prefixes(request, observed)
        if not lengths:
            return
        unit = self.unit(request)
        blocks = lengths[-1] // unit
        if blocks == 0:
            return
        last = self._last
        keys = last[1] if last is not None and last[0] is request else None
        if keys is None:
            keys = self._keyer_for(request).keys(request)
        self._hold(request, keys[:blocks])

    def _hold(self, request: TokenizedRequest, keys: list[bytes]) -> None:
        """``keys``, a run of ``request``'s blocks from its start, cached from the request's
        time under the default TTL, whatever our replay had cached."""
        unit = self.unit(request)
        rule = (self.ttl_seconds, self.refresh_on_hit, self.ttl_name)
        held: set[bytes] = set()  # the blocks before this one: never evicted for it
        for key in keys:
            self.cache.hold(key, request.timestamp, unit, rule, held)
            held.add(key)

    def explain(
        self, request: TokenizedRequest, usage: RequestUsage, sight: Sight
    ) -> list[MissSpan]:
        """Why the tokens after the read point were not read (``simulator.misses``)."""
        read, end = usage.cache_read_tokens, request.input_tokens
        spans: list[MissSpan] = []
        last = self._last
        if last is None or last[0] is not request:  # shorter than the minimum
            add_span(spans, BELOW_MINIMUM, read, end, f"prompt of {end} < {self.min_tokens}")
            return spans
        _, keys, matched = last
        unit = self.unit(request)
        if matched > read:  # live, but not billed as read: short of the minimum or a step
            cause = BELOW_MINIMUM if read == 0 else GRANULARITY
            add_span(spans, cause, read, matched)
        full = len(keys) * unit
        if matched >= full:
            add_span(spans, GRANULARITY, matched, end, f"shorter than a {unit}-token block")
            return spans
        shared = min(max(sight.shared, matched), end)
        shared_blocks = min(shared // unit * unit, full)
        if shared_blocks > matched:
            gone = self.cache.gone(keys[matched // unit])
            if gone is not None and gone.reason == EXPIRED:
                detail = gap_detail(request.timestamp, gone.last_used, gone.ttl_seconds)
                add_span(spans, TTL_EXPIRED, matched, shared_blocks, detail)
            elif gone is not None:
                add_span(spans, EVICTED, matched, shared_blocks)
            elif sight.earlier_length is not None and sight.earlier_length < self.min_tokens:
                detail = f"the earlier prompt of {sight.earlier_length} < {self.min_tokens}"
                add_span(spans, BELOW_MINIMUM, matched, shared_blocks, detail)
            else:  # removed long ago: no record of how is kept any more
                cause = EVICTED if self.cache.capacity is not None else TTL_EXPIRED
                add_span(spans, cause, matched, shared_blocks)
        start = max(matched, shared_blocks)
        add_span(spans, GRANULARITY, start, shared, f"shorter than a {unit}-token block")
        spans.extend(novelty(request, sight, max(start, shared)))
        return spans

    def store(
        self,
        request: TokenizedRequest,
        keys: list[bytes],
        matched_blocks: int,
        ttl_seconds: int | None = None,
        ttl_name: str | None = None,
    ) -> int:
        """Refresh the matched blocks and insert the rest; returns tokens newly written."""
        now = request.timestamp
        unit = self.unit(request)
        cache = self.cache
        ttl_seconds = self.ttl_seconds if ttl_seconds is None else ttl_seconds
        ttl_name = self.ttl_name if ttl_name is None else ttl_name
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
                ttl_seconds=ttl_seconds,
                refresh_on_hit=self.refresh_on_hit,
                ttl_name=ttl_name,
                held=held,
            ):
                break
            written_blocks += 1
        for key in reversed(keys[: matched_blocks + written_blocks]):
            cache.touch_order(key)
        return written_blocks * unit
