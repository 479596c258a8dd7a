"""Implicit prefix caching plus explicit cached content billed for storage (Gemini-style).

- Implicit: an ``AutomaticPrefixCache`` (minimum length, no write premium, no storage).
  Its newly cached blocks are not reported as writes: implicit caching costs nothing
  extra, so those tokens are plain uncached input.
- Explicit: the request's last breakpoint names a cached-content object covering the
  prefix up to it. The first request that uses it creates it: those tokens are written
  under the breakpoint's TTL option, and storage of ``tokens x ttl_seconds`` is charged
  to that request (``storage_token_seconds``); the creating request reads nothing from
  it. Later requests read it while it lives (``t < created + ttl``); a refresh (where the
  option refreshes) charges storage for the added lifetime only.
- A request reads the longer of the explicit object and the implicit hit.
"""

from __future__ import annotations

from collections.abc import Sequence

from cachecast.contracts.model import TtlOption
from cachecast.simulator.cache import TtlLruCache
from cachecast.simulator.policies.automatic import AutomaticPrefixCache
from cachecast.simulator.policies.base import CachePolicy, make_usage
from cachecast.simulator.policies.explicit import BreakpointTtls, PrefixKeys, check_offset
from cachecast.simulator.types import RequestUsage
from cachecast.tokenizers.types import TokenizedRequest


class ImplicitPlusCachedContent(CachePolicy):
    """Gemini-style: implicit prefix cache plus explicit, storage-billed cached content."""

    name = "gemini"

    def __init__(
        self,
        *,
        ttl_options: Sequence[TtlOption],
        min_tokens: int = 1024,
        block_size: int = 16,
        implicit_ttl_seconds: int | None = None,
        capacity_blocks: int | None = None,
    ) -> None:
        self.ttls = BreakpointTtls(ttl_options)
        self.implicit = AutomaticPrefixCache(
            block_size=block_size,
            min_tokens=min_tokens,
            ttl_seconds=implicit_ttl_seconds,
            refresh_on_hit=True,
            ttl_name="implicit",
            capacity_blocks=capacity_blocks,
        )
        self.contents = TtlLruCache()

    def process(self, request: TokenizedRequest) -> RequestUsage:
        implicit = self.implicit
        # Every request goes through the implicit cache; its writes are free, so only the read
        # is kept.
        implicit_read = implicit.process(request).cache_read_tokens
        if not request.breakpoints:
            return make_usage(request, implicit_read, {})
        point = max(request.breakpoints, key=lambda p: p.offset)
        check_offset(request, point)
        option = self.ttls.option_for(request, point)
        now = request.timestamp
        key = PrefixKeys(implicit.keyer, request).at(point.offset)
        if self.contents.lookup(key, now) is not None:
            added = self.contents.touch(key, now)
            storage = int(point.offset * added)
            return make_usage(request, max(point.offset, implicit_read), {}, storage)
        self.contents.insert(
            key,
            now,
            tokens=point.offset,
            ttl_seconds=option.ttl_seconds,
            refresh_on_hit=option.refresh_on_hit,
            ttl_name=option.name,
        )
        storage = point.offset * option.ttl_seconds
        return make_usage(request, 0, {option.name: point.offset}, storage)
