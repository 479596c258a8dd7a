"""Explicit breakpoints (Anthropic ``cache_control``, Bedrock cache points, Qwen explicit,
OpenAI GPT-5.6+ breakpoints).

An entry is the exact prefix up to a breakpoint; nothing else is ever cached.

- At most ``max_breakpoints`` breakpoints per request count (the first ones by offset;
  the API rejects more, we keep the first). In ``implicit_last_message`` mode (contract
  mode "both", GPT-5.6+) an implicit breakpoint at the end of the latest message takes
  one of those slots.
- Lookback: a *block* is a content block, i.e. a segment boundary of the request
  (``TokenizedRequest.segments`` ends) or a breakpoint. For each breakpoint the lookup
  checks at most ``lookback_blocks`` positions walking back, the breakpoint itself being
  the first (Anthropic: "at most 20 positions per breakpoint, counting the breakpoint
  itself"); the first live entry found wins for that breakpoint, and the request reads
  the longest such prefix over all its breakpoints. ``lookback_blocks=None`` checks
  every boundary.
- Prefixes shorter than ``min_tokens`` are neither written nor read.
- Writes: each breakpoint past the read point writes its prefix with its own TTL
  option; the tokens between the previous cached position and that breakpoint are billed
  under that option's name. The entry read is refreshed if its option refreshes.
- ``capacity`` counts entries (LRU; the current request's entries are never evicted).
"""

from __future__ import annotations

from collections.abc import Sequence

from cachecast.contracts.model import TtlOption
from cachecast.simulator.blocks import BlockKeyer, tail_key, token_bytes
from cachecast.simulator.cache import TtlLruCache
from cachecast.simulator.policies.base import CachePolicy, make_usage
from cachecast.simulator.types import RequestUsage
from cachecast.tokenizers.types import Breakpoint, TokenizedRequest

HASH_BLOCK_TOKENS = 64  # hashing granularity only; entries sit at exact token offsets
MESSAGE_KINDS = frozenset({"message", "content", "prompt"})


class BreakpointTtls:
    """The TTL options a breakpoint may name; a breakpoint naming none takes the first."""

    def __init__(self, options: Sequence[TtlOption]) -> None:
        if not options:
            raise ValueError("at least one TTL option is needed")
        self.by_name = {option.name: option for option in options}
        self.default = options[0]

    def option_for(self, request: TokenizedRequest, breakpoint: Breakpoint) -> TtlOption:
        if breakpoint.ttl is None:
            return self.default
        option = self.by_name.get(breakpoint.ttl)
        if option is None:
            known = ", ".join(self.by_name)
            raise ValueError(
                f"{request.source}:{request.line}: field breakpoints.ttl: unknown TTL"
                f" {breakpoint.ttl!r} (known: {known})"
            )
        return option


def check_offset(request: TokenizedRequest, point: Breakpoint) -> None:
    """A breakpoint must fall inside the prompt (after its first token, at most at its end)."""
    if not 0 < point.offset <= request.input_tokens:
        raise ValueError(
            f"{request.source}:{request.line}: field breakpoints.offset: {point.offset}"
            f" is outside the prompt (1..{request.input_tokens})"
        )


class PrefixKeys:
    """Keys of a request's prefixes at arbitrary token offsets."""

    def __init__(self, keyer: BlockKeyer, request: TokenizedRequest) -> None:
        self.request = request
        self.block_size = keyer.block_size
        self.seed = keyer.seed(request)
        # A compact request carries its prefix keys (``TokenizedRequest.prompt_keys``).
        given = request.prompt_keys
        self._given = None if given is None else given.prefixes.get(keyer.block_size, {})
        self.keys = [] if given is not None else keyer.keys(request)
        self._data = None if request.tokens is None else token_bytes(request.tokens)

    def at(self, offset: int) -> bytes:
        if self._given is not None:
            key = self._given.get(offset)
            if key is None:
                request = self.request
                raise ValueError(
                    f"{request.source}:{request.line}: request {request.request_id} carries"
                    f" no key for its prefix of {offset} tokens"
                )
            return key
        whole, rest = divmod(offset, self.block_size)
        parent = self.keys[whole - 1] if whole else self.seed
        if rest == 0:
            return parent
        if self._data is None:
            request = self.request
            raise ValueError(
                f"{request.source}:{request.line}: breakpoint at token {offset} is not on a"
                f" {self.block_size}-token block boundary of a block-level trace"
            )
        return tail_key(parent, self._data[whole * self.block_size * 4 : offset * 4], offset)


class ExplicitBreakpointCache(CachePolicy):
    """Entries only at breakpoints, with per-breakpoint TTL and lookback."""

    name = "explicit"

    def __init__(
        self,
        *,
        ttl_options: Sequence[TtlOption],
        min_tokens: int = 1024,
        max_breakpoints: int | None = 4,
        lookback_blocks: int | None = 20,
        implicit_last_message: bool = False,
        capacity: int | None = None,
        hash_block_tokens: int = HASH_BLOCK_TOKENS,
    ) -> None:
        self.ttls = BreakpointTtls(ttl_options)
        if lookback_blocks is not None and lookback_blocks <= 0:
            raise ValueError("lookback_blocks must be positive")
        self.min_tokens = min_tokens
        self.max_breakpoints = max_breakpoints
        self.lookback_blocks = lookback_blocks
        self.implicit_last_message = implicit_last_message
        self.keyer = BlockKeyer(hash_block_tokens)
        self.cache = TtlLruCache(capacity)

    def breakpoints(self, request: TokenizedRequest) -> list[Breakpoint]:
        """The breakpoints that count, in offset order."""
        length = request.input_tokens
        for point in request.breakpoints:
            check_offset(request, point)
        explicit: dict[int, Breakpoint] = {}
        for point in sorted(request.breakpoints, key=lambda p: p.offset):
            explicit.setdefault(point.offset, point)
        chosen = list(explicit.values())
        slots = self.max_breakpoints
        if self.implicit_last_message and length > 0:
            implicit = Breakpoint(latest_message_end(request))
            if slots is not None:
                slots -= 1
            chosen = chosen[:slots] if slots is not None else chosen
            if implicit.offset not in {point.offset for point in chosen}:
                chosen.append(implicit)
            return sorted(chosen, key=lambda p: p.offset)
        return chosen[:slots] if slots is not None else chosen

    def process(self, request: TokenizedRequest) -> RequestUsage:
        points = self.breakpoints(request)
        if not points:
            return make_usage(request, 0, {})
        now = request.timestamp
        prefixes = PrefixKeys(self.keyer, request)
        boundaries = sorted(
            {s.end for s in request.segments if 0 < s.end <= request.input_tokens}
            | {point.offset for point in points}
        )
        read, read_key = self._longest_hit(points, boundaries, prefixes, now)
        cache = self.cache
        if read_key is not None:
            cache.touch(read_key, now)
        writes: dict[str, int] = {}
        held: set[bytes] = set() if read_key is None else {read_key}
        cached_up_to = read
        for point in points:
            if point.offset <= read or point.offset < self.min_tokens:
                continue
            option = self.ttls.option_for(request, point)
            key = prefixes.at(point.offset)
            if not cache.insert(
                key,
                now,
                tokens=point.offset,
                ttl_seconds=option.ttl_seconds,
                refresh_on_hit=option.refresh_on_hit,
                ttl_name=option.name,
                held=held,
            ):
                continue  # no room: these tokens stay uncached
            held.add(key)
            writes[option.name] = writes.get(option.name, 0) + point.offset - cached_up_to
            cached_up_to = point.offset
        return make_usage(request, read, writes)

    def _longest_hit(
        self,
        points: list[Breakpoint],
        boundaries: list[int],
        prefixes: PrefixKeys,
        now: float,
    ) -> tuple[int, bytes | None]:
        best, best_key = 0, None
        for point in points:
            position = boundaries.index(point.offset)
            first = 0
            if self.lookback_blocks is not None:
                first = max(0, position - self.lookback_blocks + 1)
            for candidate in reversed(boundaries[first : position + 1]):
                if candidate <= best or candidate < self.min_tokens:
                    break  # earlier candidates are shorter still
                key = prefixes.at(candidate)
                if self.cache.lookup(key, now) is not None:
                    best, best_key = candidate, key
                    break
        return best, best_key


def latest_message_end(request: TokenizedRequest) -> int:
    """End of the latest message-like segment, or of the prompt if there are none."""
    ends = [segment.end for segment in request.segments if segment.kind in MESSAGE_KINDS]
    return max(ends) if ends else request.input_tokens
