"""Why it missed: every prompt token not read from cache, attributed to one cause.

For each request and target, the tokens the request did not read from cache (``input -
read``: those it wrote and those billed as plain input) are split into spans, each with one
cause, and the spans add up to exactly that count. The causes:

==========================  =====================================================================
``first_sight``             nothing earlier in the log shared these tokens (new content, or a
                            request extending an earlier prompt: its new part)
``below_minimum``           the prefix is shorter than the contract's minimum cacheable length
                            (the request's own, or the earlier prompt that would have cached it)
``granularity_remainder``   shared, but short of the next cache unit: the increment a hit is
                            rounded to, the block a prefix is cached in
``ttl_expired``             cached by an earlier request, expired before this one (the gap says
                            how long after its last use this request came)
``evicted``                 cached earlier, evicted for capacity
``prefix_diverged``         an earlier prompt shared the prefix up to here and continued
                            differently: the token position, segment and text of both are given
``scope_differs``           the same tokens were seen under another scope (organization, API
                            key, ``prompt_cache_key``...): caches are not shared across scopes
``no_breakpoint``           explicit caching: no breakpoint after these tokens (nothing can cache
                            them), or the earlier prompt marked none the shared prefix ends at
``beyond_lookback``         an entry existed, further back than the lookback window reaches
``over_write_limit``        the breakpoint that would have cached them was over the per-request
                            write limit
``prefix_not_in_log``       the log does not hold the whole prompt (transcripts, rewritten
                            bodies): what these tokens are cannot be known
==========================  =====================================================================

:class:`PromptHistory` knows, for every request, the closest earlier prompt of the same
namespace (model and scope) and how far they agree, token-exactly where that prompt is
still remembered; it is computed once per request for all the targets of a pass. Each policy
then says, from its own state (what it matched, what expired or was evicted, which
breakpoints it wrote), why the shared part was not read (``CachePolicy.explain``).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from itertools import islice

from xxhash import xxh3_128_digest

from cachecast.simulator.blocks import BlockKeyer, common_prefix_length, token_bytes
from cachecast.tokenizers.types import TokenizedRequest

FIRST_SIGHT = "first_sight"
BELOW_MINIMUM = "below_minimum"
GRANULARITY = "granularity_remainder"
TTL_EXPIRED = "ttl_expired"
EVICTED = "evicted"
PREFIX_DIVERGED = "prefix_diverged"
SCOPE_DIFFERS = "scope_differs"
NO_BREAKPOINT = "no_breakpoint"
BEYOND_LOOKBACK = "beyond_lookback"
OVER_WRITE_LIMIT = "over_write_limit"
PREFIX_NOT_IN_LOG = "prefix_not_in_log"
CAUSES = (
    FIRST_SIGHT,
    BELOW_MINIMUM,
    GRANULARITY,
    TTL_EXPIRED,
    EVICTED,
    PREFIX_DIVERGED,
    SCOPE_DIFFERS,
    NO_BREAKPOINT,
    BEYOND_LOOKBACK,
    OVER_WRITE_LIMIT,
    PREFIX_NOT_IN_LOG,
)

HISTORY_BLOCK_TOKENS = 64
MAX_HISTORY_KEYS = 1 << 20  # 64 M tokens of distinct prefixes at 64-token blocks
REMEMBERED_PROMPTS = 256  # whose ids are kept for token-exact divergence and excerpts
EXCERPT_TOKENS = 12
OPENING_PROMPTS = 8  # prompts kept per opening block to look for the same prefix elsewhere


@dataclass(frozen=True, slots=True)
class MissSpan:
    """``tokens`` prompt tokens from ``start`` on, not read from cache, for ``cause``."""

    cause: str
    start: int
    tokens: int
    detail: str | None = None


@dataclass(frozen=True, slots=True)
class Divergence:
    """Where a prompt left the closest earlier one: both sides around that token."""

    position: int
    segment: str  # label of the request's segment holding the position
    earlier: str  # the earlier request (source:line)
    ours: tuple[int, ...]  # our ids from the position on (a few)
    theirs: tuple[int, ...]  # the earlier prompt's ids from the position on


@dataclass(frozen=True, slots=True)
class Sight:
    """What the log held before a request: how far the closest earlier prompt of the same
    namespace agrees with it (``shared`` tokens; ``earlier_length`` is that prompt's length,
    None when no earlier prompt shares anything) and how far one of another scope does."""

    shared: int = 0
    earlier_length: int | None = None
    other_scope_shared: int = 0
    divergence: Divergence | None = None


NOTHING_SEEN = Sight()


@dataclass(slots=True)
class _Prompt:
    data: bytes
    source: str
    line: int


class PromptHistory:
    """The prompts seen so far, by chained 64-token block keys (bounded, oldest dropped)."""

    def __init__(
        self,
        *,
        max_keys: int = MAX_HISTORY_KEYS,
        remembered_prompts: int = REMEMBERED_PROMPTS,
    ) -> None:
        self.keyer = BlockKeyer(HISTORY_BLOCK_TOKENS)
        self._seen: dict[bytes, int] = {}  # block key -> serial of the latest prompt with it
        self._max_keys = max_keys
        self._prompts: OrderedDict[int, _Prompt] = OrderedDict()
        self._remembered = remembered_prompts
        # (model, first block) -> the latest prompts opening with it: (scope, serial)
        self._openings: dict[tuple[str | None, bytes], list[tuple[str, int]]] = {}
        self._trace_keyers: dict[int, BlockKeyer] = {}
        self._serial = 0

    def observe(self, request: TokenizedRequest) -> Sight:
        """How the log before ``request`` relates to it; then remember ``request``."""
        if request.tokens is None:
            return self._observe_trace(request)
        data = token_bytes(request.tokens)
        keys = self.keyer.keys(request)
        seen = self._seen
        matched = _leading_seen(keys, seen)
        serial = self._serial = self._serial + 1
        sight = NOTHING_SEEN
        if matched:
            earlier = self._prompts.get(seen[keys[matched - 1]])
            shared = matched * HISTORY_BLOCK_TOKENS
            earlier_length = None
            divergence = None
            if earlier is not None:
                shared = common_prefix_length(earlier.data, data) // 4
                earlier_length = len(earlier.data) // 4
                if shared < min(earlier_length, len(data) // 4):
                    divergence = _divergence(request, data, earlier, shared)
            else:
                earlier_length = shared + 1  # forgotten: it went on, but not how
            sight = Sight(shared, earlier_length, 0, divergence)
        opening = (request.model, xxh3_128_digest(data[: HISTORY_BLOCK_TOKENS * 4]))
        others = self._openings.setdefault(opening, [])
        across = 0
        for scope, earlier_serial in others:
            previous = self._prompts.get(earlier_serial) if scope != request.scope else None
            if previous is not None:
                across = max(across, common_prefix_length(previous.data, data) // 4)
        if across > sight.shared:
            sight = Sight(sight.shared, sight.earlier_length, across, sight.divergence)
        others.append((request.scope, serial))
        del others[:-OPENING_PROMPTS]
        for key in keys[matched:]:
            seen[key] = serial
        for key in keys[max(0, matched - 1) : matched]:
            seen[key] = serial  # the deepest shared block now points at the newest prompt
        self._prompts[serial] = _Prompt(data, request.source, request.line)
        if len(self._prompts) > self._remembered:
            self._prompts.popitem(last=False)
        if len(seen) > self._max_keys:
            for key in list(islice(seen, len(seen) - self._max_keys * 7 // 8)):
                del seen[key]
            for opening_key in list(islice(self._openings, max(0, len(self._openings) - 65536))):
                del self._openings[opening_key]
        return sight

    def _observe_trace(self, request: TokenizedRequest) -> Sight:
        """Block-level traces (no ids): sharing in whole trace blocks, no divergence text."""
        size = request.block_size or 1
        keyer = self._trace_keyers.get(size)
        if keyer is None:
            keyer = self._trace_keyers[size] = BlockKeyer(size)
        keys = keyer.keys(request)
        matched = _leading_seen(keys, self._seen)
        self._serial += 1
        for key in keys[matched:]:
            self._seen[key] = self._serial
        if not matched:
            return NOTHING_SEEN
        shared = matched * (request.block_size or 1)
        return Sight(shared, shared + 1 if matched < len(keys) else shared)


def _leading_seen(keys: list[bytes], seen: dict[bytes, int]) -> int:
    """How many leading keys are in ``seen``: a binary search (chained keys: a block is only
    ever seen after its parent), checked by a step back where forgetting broke the chain."""
    low, high = 0, len(keys)
    while low < high:
        middle = (low + high + 1) // 2
        if keys[middle - 1] in seen:
            low = middle
        else:
            high = middle - 1
    while low and keys[low - 1] not in seen:
        low -= 1
    return low


def _divergence(
    request: TokenizedRequest, data: bytes, earlier: _Prompt, position: int
) -> Divergence:
    segment = next(
        (s.label for s in request.segments if s.start <= position < s.end),
        request.segments[-1].label if request.segments else "prompt",
    )
    end = (position + EXCERPT_TOKENS) * 4
    ours = tuple(memoryview(data[position * 4 : end]).cast("I"))
    theirs = tuple(memoryview(earlier.data[position * 4 : end]).cast("I"))
    return Divergence(position, segment, f"{earlier.source}:{earlier.line}", ours, theirs)


def novelty(
    request: TokenizedRequest, sight: Sight, start: int, end: int | None = None
) -> list[MissSpan]:
    """Spans for the tokens from ``start`` to ``end`` (default: the prompt's end) that no
    earlier prompt of the request's namespace shared (see the module docstring)."""
    end = request.input_tokens if end is None else end
    if start >= end:
        return []
    if not request.prompt_complete:
        return [MissSpan(PREFIX_NOT_IN_LOG, start, end - start)]
    spans: list[MissSpan] = []
    across = min(sight.other_scope_shared, end)
    if across > start:
        spans.append(MissSpan(SCOPE_DIFFERS, start, across - start, f"scope {request.scope!r}"))
        start = across
        if start >= end:
            return spans
    if sight.earlier_length is None or sight.earlier_length <= start or sight.shared < start:
        spans.append(MissSpan(FIRST_SIGHT, start, end - start))
    else:
        found = sight.divergence
        detail = f"diverged at token {start}"
        if found is not None and found.position == start:
            detail = f"diverged at token {start} in {found.segment} from {found.earlier}"
        spans.append(MissSpan(PREFIX_DIVERGED, start, end - start, detail))
    return spans


def spans_total(spans: list[MissSpan]) -> int:
    return sum(span.tokens for span in spans)


def after(spans: list[MissSpan], start: int) -> list[MissSpan]:
    """The part of ``spans`` (in position order) from token ``start`` on."""
    kept = []
    for span in spans:
        end = span.start + span.tokens
        if end <= start:
            continue
        if span.start < start:
            span = MissSpan(span.cause, start, end - start, span.detail)
        kept.append(span)
    return kept


def gap_detail(now: float, last_used: float, ttl_seconds: int) -> str:
    """'1,804 s (30.1 min) after its last use; TTL 300 s'."""
    gap = now - last_used
    if gap >= 2 * 86400:
        human = f" ({gap / 86400:,.1f} days)"
    elif gap >= 2 * 3600:
        human = f" ({gap / 3600:.1f} h)"
    elif gap >= 120:
        human = f" ({gap / 60:.1f} min)"
    else:
        human = ""
    return f"{gap:,.0f} s{human} after its last use; TTL {ttl_seconds} s"


def add_span(
    spans: list[MissSpan], cause: str, start: int, end: int, detail: str | None = None
) -> None:
    """Append the span [start, end) (nothing when empty)."""
    if end > start:
        spans.append(MissSpan(cause, start, end - start, detail))
