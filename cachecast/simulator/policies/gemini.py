"""Implicit prefix caching plus explicit cached content billed for storage (Gemini-style).

- Implicit: an ``AutomaticPrefixCache`` (minimum length, no write premium, no storage).
  Its newly cached blocks are not reported as writes: implicit caching costs nothing
  extra, so those tokens are plain uncached input. Google documents no lifetime for
  implicit entries (docs/contracts.md): they are assumed to live for the whole log, an upper
  bound that reconciliation shows up as provider misses where Google dropped them sooner.
- Explicit, as the log shows it (``cachecast.logs.http``): a ``cachedContents`` creation is
  a record of its own (``CacheControls.creates``): its whole prompt is written under the TTL
  option it names (creation is billed at the input price: write multiplier 1) and storage
  of ``tokens x lifetime`` is charged to it, the lifetime being what the log shows: until
  the TTL ran out, or the cache was deleted or its TTL updated (the cache's actual
  lifetime). A request naming that cache (``cached_content``, its content merged in front
  with a breakpoint at its end) reads it while it lives; it is never refreshed by use
  (Gemini's TTL only changes when updated). A request naming a cache the log does not
  show alive reads nothing from it (a note says so).
- Explicit without a creation in the log (cachecast's own logs mark a cached-content end
  with ``cache_control``): the first request using the prefix creates it: those tokens are
  written under the breakpoint's TTL option, and storage of ``tokens x ttl_seconds`` is
  charged to that request; it reads nothing from it. Later requests read it while it lives
  (``t < created + ttl``); a refresh (where the option refreshes) charges storage for the
  added lifetime only.
- A request reads the longer of the explicit object and the implicit hit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cachecast.contracts.model import TtlOption
from cachecast.logs.types import ObservedUsage
from cachecast.simulator.cache import TtlLruCache
from cachecast.simulator.misses import MissSpan, Sight, after, novelty
from cachecast.simulator.policies.automatic import AutomaticPrefixCache, round_hit
from cachecast.simulator.policies.base import CachePolicy, make_usage
from cachecast.simulator.policies.explicit import BreakpointTtls, PrefixKeys, check_offset
from cachecast.simulator.types import RequestUsage
from cachecast.tokenizers.types import TokenizedRequest


@dataclass(slots=True)
class _Named:
    tokens: int
    expires_at: float


class ImplicitPlusCachedContent(CachePolicy):
    """Gemini-style: implicit prefix cache plus explicit, storage-billed cached content."""

    name = "gemini"
    bills_cache_objects = True

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
        self.named: dict[str, _Named] = {}

    def process(self, request: TokenizedRequest) -> RequestUsage:
        controls = request.controls
        if controls.creates is not None:
            return self._create(request)
        implicit = self.implicit
        # Every request goes through the implicit cache; its writes are free, so only the read
        # is kept.
        implicit_read = implicit.process(request).cache_read_tokens
        if not request.breakpoints:
            if controls.cached_content is not None:
                self.note("a request names a cachedContent the log does not hold")
            return make_usage(request, implicit_read, {})
        point = max(request.breakpoints, key=lambda p: p.offset)
        check_offset(request, point)
        now = request.timestamp
        if controls.cached_content is not None:
            named = self.named.get(controls.cached_content)
            # A recorded request that names the object and got an answer shows the object was
            # still there: recorders time calls to the whole second (an HTTP Date header), so a
            # use in the second the object expired or was deleted is one the log puts before
            # that end (docs/log-formats.md, "Gemini"). Only a later second has it gone.
            if named is None or now > named.expires_at:
                self.note("a request names a cachedContent that the log shows expired or deleted")
                return make_usage(request, implicit_read, {})
            return make_usage(request, max(min(named.tokens, point.offset), implicit_read), {})
        option = self.ttls.option_for(request, point)
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

    def _create(self, request: TokenizedRequest) -> RequestUsage:
        creation = request.controls.creates
        assert creation is not None
        option = self.ttls.default
        if creation.ttl is not None:
            option = self.ttls.by_name.get(creation.ttl, option)
            if option.name != creation.ttl:
                self.note(
                    f"cachedContents TTL {creation.ttl!r} is not an option of the contract:"
                    f" its creation is billed as {option.name!r} (storage by its real lifetime)"
                )
        tokens = request.input_tokens
        self.named[creation.name] = _Named(tokens, request.timestamp + creation.lifetime_seconds)
        return make_usage(request, 0, {option.name: tokens}, tokens * creation.lifetime_seconds)

    def learn(self, request: TokenizedRequest, observed: ObservedUsage) -> None:
        """A read of a request naming no cached content came from the implicit cache, which
        holds that prefix from now on; a request naming one read (part of) that object,
        which the log already shows, and teaches the implicit cache nothing."""
        if request.controls.creates is None and not request.breakpoints:
            self.implicit.learn(request, observed)

    def explain(
        self, request: TokenizedRequest, usage: RequestUsage, sight: Sight
    ) -> list[MissSpan]:
        if request.controls.creates is not None:
            return novelty(request, sight, 0)  # a creation reads nothing: its tokens are new
        implicit = make_usage(request, self.implicit_read(request), {})
        spans = self.implicit.explain(request, implicit, sight)
        return after(spans, usage.cache_read_tokens)

    def implicit_read(self, request: TokenizedRequest) -> int:
        last = self.implicit._last
        if last is None or last[0] is not request:
            return 0
        return round_hit(last[2], self.implicit.min_tokens, self.implicit.increment)
