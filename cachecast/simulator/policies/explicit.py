"""Explicit breakpoints (Anthropic ``cache_control``, Bedrock cache points, Qwen explicit,
OpenAI GPT-5.6+ breakpoints).

An entry is the exact prefix up to a breakpoint; nothing else is ever cached.

- At most ``max_breakpoints`` breakpoints per request write (Anthropic: the first ones by
  offset; the API rejects more, we keep the first). In ``implicit_last_message`` mode
  (contract mode "both", GPT-5.6+) an implicit breakpoint takes one of those slots: at the
  end of the newest message that may carry one (``CacheControls.implicit_offset``, else the
  latest message), and none where the request sets ``prompt_cache_options.mode`` to
  ``explicit``.
- GPT-5.6+ (``read_window``, chosen for contracts of mode "both" without a content-block
  lookback): the *latest* marks are written ("writes up to the latest three explicit
  breakpoints" beside the implicit one, four in explicit mode), and reads consider the
  latest 50 breakpoints of the conversation (the request's marks and, in implicit mode, its
  message ends, system and developer messages included), with no lookback over content
  blocks. A written breakpoint holds the whole prefix up to it: every message end of the
  writing request inside that prefix is readable later as if a breakpoint sat there
  (observed: a later request with the same system message and another user message read up
  to the system message's end and wrote the rest up to its own implicit breakpoint;
  docs/predictions.md, "GPT-5.6+: reads at message ends of a written prefix").
- Lookback: a *block* is a content block, i.e. a segment boundary of the request
  (``TokenizedRequest.segments`` ends) or a breakpoint. For each breakpoint the lookup
  checks at most ``lookback_blocks`` positions walking back, the breakpoint itself being
  the first (Anthropic: "at most 20 positions per breakpoint, counting the breakpoint
  itself"); the first live entry found wins for that breakpoint, and the request reads
  the longest such prefix over all its breakpoints. ``lookback_blocks=None`` checks
  every boundary.
- Prefixes shorter than ``min_tokens`` are neither written nor read.
- Writes: each breakpoint past the read point writes its prefix with its own TTL
  option (a breakpoint naming none: the request's ``prompt_cache_options.ttl``, else the
  contract's default); the tokens between the previous cached position and that breakpoint
  are billed under that option's name. The entry read is refreshed if its option refreshes.
- ``capacity`` counts entries (LRU; the current request's entries are never evicted).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from cachecast.contracts.model import TtlOption
from cachecast.core.errors import BadInputError, Location
from cachecast.logs.types import ObservedUsage
from cachecast.simulator.blocks import BlockKeyer, tail_key, token_bytes
from cachecast.simulator.cache import EXPIRED, TtlLruCache
from cachecast.simulator.misses import (
    BELOW_MINIMUM,
    BEYOND_LOOKBACK,
    EVICTED,
    NO_BREAKPOINT,
    OVER_WRITE_LIMIT,
    TTL_EXPIRED,
    MissSpan,
    Sight,
    add_span,
    gap_detail,
    novelty,
)
from cachecast.simulator.policies.base import CachePolicy, make_usage, observed_prefixes
from cachecast.simulator.types import TOLERANCE_TOKENS, RequestUsage
from cachecast.tokenizers.types import Breakpoint, TokenizedRequest

HASH_BLOCK_TOKENS = 64  # hashing granularity only; entries sit at exact token offsets
REMEMBERED_DROPS = 1 << 16  # prefixes not written for the write limit (for ``explain``)
MESSAGE_KINDS = frozenset({"message", "content", "prompt"})
# GPT-5.6+ reads (implicit mode) may stop at the end of any message, system and developer
# messages included (docs/predictions.md, "GPT-5.6+: reads at message ends of a written prefix").
READ_KINDS = MESSAGE_KINDS | {"system"}


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
            raise BadInputError(
                f"unknown TTL {breakpoint.ttl!r} (known: {known})",
                location=Location(
                    source=request.source, line=request.line, field="breakpoints.ttl"
                ),
            )
        return option


def check_offset(request: TokenizedRequest, point: Breakpoint) -> None:
    """A breakpoint must fall inside the prompt (after its first token, at most at its end)."""
    if not 0 < point.offset <= request.input_tokens:
        raise BadInputError(
            f"{point.offset} is outside the prompt (1..{request.input_tokens})",
            location=Location(source=request.source, line=request.line, field="breakpoints.offset"),
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
            raise BadInputError(
                f"breakpoint at token {offset} is not on a {self.block_size}-token block"
                " boundary of a block-level trace",
                location=Location(source=request.source, line=request.line, field="breakpoints"),
            )
        return tail_key(parent, self._data[whole * self.block_size * 4 : offset * 4], offset)


OPENAI_READ_BREAKPOINTS = 50
"""GPT-5.6+: "for cache matching, OpenAI considers up to the latest 50 breakpoints" (the
prompt caching guide; its API reference says 80, a conflict: we take the guide's 50)."""
EXPLAIN_PROBES = 64  # boundaries probed, deepest first, to say why a shared prefix missed


@dataclass(slots=True)
class _Last:
    """What ``process`` decided for the latest request (for ``explain``)."""

    request: TokenizedRequest
    prefixes: PrefixKeys
    written: list[Breakpoint]
    dropped: list[Breakpoint]
    candidates: list[int]
    stored: set[bytes] | None = None  # entries this request wrote itself


class ExplicitBreakpointCache(CachePolicy):
    """Entries only at breakpoints, with per-breakpoint TTL and lookback.

    ``read_window`` (OpenAI GPT-5.6+ style): reads consider the latest ``read_window``
    breakpoints of the conversation (the request's marks, and in implicit mode the message
    ends earlier requests' implicit breakpoints sat at) with no content-block lookback, and
    writes keep the *latest* ``max_breakpoints`` marks (the implicit breakpoint taking one
    slot). Without it (Anthropic style) each breakpoint looks back ``lookback_blocks``
    boundaries and the first ``max_breakpoints`` marks count.
    """

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
        read_window: int | None = None,
    ) -> None:
        self.ttls = BreakpointTtls(ttl_options)
        if lookback_blocks is not None and lookback_blocks <= 0:
            raise ValueError("lookback_blocks must be positive")
        if read_window is not None and read_window <= 0:
            raise ValueError("read_window must be positive")
        self.min_tokens = min_tokens
        self.max_breakpoints = max_breakpoints
        self.lookback_blocks = lookback_blocks
        self.implicit_last_message = implicit_last_message
        self.read_window = read_window
        self.keyer = BlockKeyer(hash_block_tokens)
        self.cache = TtlLruCache(capacity)
        self._dropped: OrderedDict[bytes, None] = OrderedDict()
        self._last: _Last | None = None

    def _implicit(self, request: TokenizedRequest) -> Breakpoint | None:
        if not self.implicit_last_message or request.input_tokens <= 0:
            return None
        controls = request.controls
        if not controls.implicit_breakpoint:
            return None  # prompt_cache_options.mode "explicit": marked blocks only
        offset = controls.implicit_offset
        if offset is None or not 0 < offset <= request.input_tokens:
            offset = latest_message_end(request)
        return Breakpoint(offset)

    def select(self, request: TokenizedRequest) -> tuple[list[Breakpoint], list[Breakpoint]]:
        """The breakpoints that write (offset order) and those over the write limit."""
        for point in request.breakpoints:
            check_offset(request, point)
        explicit: dict[int, Breakpoint] = {}
        for point in sorted(request.breakpoints, key=lambda p: p.offset):
            explicit.setdefault(point.offset, point)
        marks = list(explicit.values())
        implicit = self._implicit(request)
        slots = self.max_breakpoints
        if implicit is not None and slots is not None:
            slots -= 1
        if slots is None:
            kept, dropped = marks, []
        elif self.read_window is not None:  # OpenAI: the latest marks are written
            kept = marks[-slots:] if slots > 0 else []
            dropped = marks[: len(marks) - len(kept)]
        else:  # Anthropic rejects more than 4; keep the first
            kept, dropped = marks[:slots], marks[slots:]
        if implicit is not None and implicit.offset not in {point.offset for point in kept}:
            kept = sorted([*kept, implicit], key=lambda p: p.offset)
        return kept, dropped

    def breakpoints(self, request: TokenizedRequest) -> list[Breakpoint]:
        """The breakpoints that count for writing, in offset order."""
        return self.select(request)[0]

    def _candidates(
        self, request: TokenizedRequest, written: list[Breakpoint], dropped: list[Breakpoint]
    ) -> list[int]:
        """Read positions, OpenAI style: every breakpoint, and in implicit mode the message
        ends; the latest ``read_window`` of them."""
        assert self.read_window is not None
        positions = {point.offset for point in written} | {point.offset for point in dropped}
        if self.implicit_last_message and request.controls.implicit_breakpoint:
            positions |= set(message_ends(request))
        return sorted(positions)[-self.read_window :]

    def process(self, request: TokenizedRequest) -> RequestUsage:
        written, dropped = self.select(request)
        prefixes = PrefixKeys(self.keyer, request)
        if not written and not dropped:
            self._last = _Last(request, prefixes, [], [], [])
            return make_usage(request, 0, {})
        now = request.timestamp
        if self.read_window is not None:
            candidates = self._candidates(request, written, dropped)
            read, read_key = self._latest_hit(candidates, prefixes, now)
        else:
            boundaries = sorted(
                {s.end for s in request.segments if 0 < s.end <= request.input_tokens}
                | {point.offset for point in written}
            )
            candidates = boundaries
            read, read_key = self._longest_hit(written, boundaries, prefixes, now)
        self._last = _Last(request, prefixes, written, dropped, candidates)
        cache = self.cache
        if read_key is not None:
            cache.touch(read_key, now)
        writes: dict[str, int] = {}
        held: set[bytes] = set() if read_key is None else {read_key}
        cached_up_to = read
        for point in written:
            if point.offset <= read or point.offset < self.min_tokens:
                continue
            option = self._option(request, point)
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
            if self.read_window is not None:
                self._hold_message_ends(request, prefixes, point.offset, read, option, held)
            cached_up_to = point.offset
        self._last.stored = held
        for point in dropped:
            if point.offset > read and point.offset >= self.min_tokens:
                self._dropped[prefixes.at(point.offset)] = None
                if len(self._dropped) > REMEMBERED_DROPS:
                    self._dropped.popitem(last=False)
        return make_usage(request, read, writes)

    def learn(self, request: TokenizedRequest, observed: ObservedUsage) -> None:
        """The provider held the prefixes its usage covers (the read, and the read plus the
        write: the breakpoint it wrote). Each is an entry at the request's boundary or
        breakpoint nearest to it, within the approximation's tolerance (max(8 tokens, 1%):
        an approximated tokenizer places boundaries a few tokens off the provider's), kept
        under that breakpoint's TTL option (a boundary without one: the default), from now
        on. A prefix no boundary is near (the provider's own layout) is not learned."""
        lengths = observed_prefixes(request, observed)
        if not lengths:
            return
        last = self._last
        prefixes = last.prefixes if last is not None and last.request is request else None
        if prefixes is None:
            prefixes = PrefixKeys(self.keyer, request)
        marks = {point.offset: point for point in request.breakpoints}
        boundaries = sorted(
            {s.end for s in request.segments if 0 < s.end <= request.input_tokens} | set(marks)
        )
        for length in lengths:
            near = nearest_boundary(boundaries, length)
            if near is None:
                continue
            point = marks.get(near)
            option = self.ttls.default if point is None else self._option(request, point)
            rule = (option.ttl_seconds, option.refresh_on_hit, option.name)
            # (an entry our replay holds already, read or written now, is left as it is)
            self.cache.hold(prefixes.at(near), request.timestamp, near, rule)

    def _hold_message_ends(
        self,
        request: TokenizedRequest,
        prefixes: PrefixKeys,
        end: int,
        read: int,
        option: TtlOption,
        held: set[bytes],
    ) -> None:
        """GPT-5.6+: a prefix written up to ``end`` is readable at each message end inside it
        (module docstring). The ends past the read point are written now, under the
        breakpoint's TTL option; those within the read prefix were read with it (touched), or
        are held from now where our replay has none (the provider held the whole prefix it
        read). They bill nothing: the breakpoint's write covers their tokens."""
        cache = self.cache
        now = request.timestamp
        for boundary in message_ends(request):
            if boundary >= end or boundary < self.min_tokens:
                continue
            key = prefixes.at(boundary)
            if key in held:
                continue
            if boundary <= read:
                if cache.lookup(key, now) is not None:
                    cache.touch(key, now)  # read with the prefix it lies in
                else:
                    rule = (option.ttl_seconds, option.refresh_on_hit, option.name)
                    cache.hold(key, now, boundary, rule, held=held)
                held.add(key)
                continue
            if cache.insert(
                key,
                now,
                tokens=boundary,
                ttl_seconds=option.ttl_seconds,
                refresh_on_hit=option.refresh_on_hit,
                ttl_name=option.name,
                held=held,
            ):
                held.add(key)

    def _option(self, request: TokenizedRequest, point: Breakpoint) -> TtlOption:
        """The TTL option of a breakpoint: its own, else the request's (OpenAI's
        ``prompt_cache_options.ttl``), else the contract's default."""
        if point.ttl is None and request.controls.ttl is not None:
            option = self.ttls.by_name.get(request.controls.ttl)
            if option is None:
                self.note(
                    f"request TTL {request.controls.ttl!r} is not an option of the contract:"
                    f" written as {self.ttls.default.name!r}"
                )
                return self.ttls.default
            return option
        return self.ttls.option_for(request, point)

    def _latest_hit(
        self, candidates: list[int], prefixes: PrefixKeys, now: float
    ) -> tuple[int, bytes | None]:
        for candidate in reversed(candidates):
            if candidate < self.min_tokens:
                break
            key = prefixes.at(candidate)
            if self.cache.lookup(key, now) is not None:
                return candidate, key
        return 0, None

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

    def explain(
        self, request: TokenizedRequest, usage: RequestUsage, sight: Sight
    ) -> list[MissSpan]:
        """Why the tokens after the read point were not read (see ``simulator.misses``)."""
        last = self._last
        assert last is not None and last.request is request, "explain follows process"
        read, end = usage.cache_read_tokens, request.input_tokens
        spans: list[MissSpan] = []
        points = [*last.written, *last.dropped]
        if not points:
            add_span(spans, NO_BREAKPOINT, read, end, "the request marks no cache breakpoint")
            return spans
        last_point = max(point.offset for point in points)
        shared_end = min(max(sight.shared, read), last_point)
        if shared_end > read:
            cause, detail = self._shared_cause(last, read, shared_end)
            add_span(spans, cause, read, shared_end, detail)
        start = max(read, shared_end)
        if last_point > start:
            spans.extend(novelty(request, sight, start, last_point))
        add_span(spans, NO_BREAKPOINT, max(read, last_point), end, "after the last breakpoint")
        return spans

    def _shared_cause(self, last: _Last, read: int, shared_end: int) -> tuple[str, str | None]:
        """Why a prefix an earlier prompt shared, up to ``shared_end``, was not read past
        ``read``: the deepest position of the request with evidence decides."""
        request = last.request
        now = request.timestamp
        positions = sorted(
            {s.end for s in request.segments if read < s.end <= shared_end}
            | {p.offset for p in (*last.written, *last.dropped) if read < p.offset <= shared_end}
        )
        for position in reversed(positions[-EXPLAIN_PROBES:]):
            if position < self.min_tokens:
                break
            key = last.prefixes.at(position)
            gone = self.cache.gone(key)
            if gone is not None:
                if gone.reason == EXPIRED:
                    return TTL_EXPIRED, gap_detail(now, gone.last_used, gone.ttl_seconds)
                return EVICTED, None
            own = last.stored is not None and key in last.stored
            if not own and self.cache.lookup(key, now) is not None:
                reach = "latest breakpoints" if self.read_window else "lookback window"
                return BEYOND_LOOKBACK, f"an entry at token {position} is outside the {reach}"
            if key in self._dropped:
                return OVER_WRITE_LIMIT, f"the breakpoint at token {position} was not written"
        marked = [p.offset for p in (*last.written, *last.dropped) if read < p.offset <= shared_end]
        if marked and all(offset < self.min_tokens for offset in marked):
            return BELOW_MINIMUM, f"breakpoint at token {max(marked)} < {self.min_tokens}"
        if shared_end < self.min_tokens:
            return BELOW_MINIMUM, f"the shared prefix ends at token {shared_end}"
        if self.read_window is not None and request.controls.implicit_breakpoint:
            # GPT-5.6+ implicit mode reads at message ends too: none lies past the read point.
            return NO_BREAKPOINT, (
                f"no breakpoint or message end between the read point (token {read}) and the"
                f" end of the shared prefix (token {shared_end})"
            )
        return NO_BREAKPOINT, "no breakpoint of an earlier request ends inside the shared prefix"


def nearest_boundary(boundaries: Sequence[int], length: int) -> int | None:
    """The boundary nearest to ``length`` within the reconciliation's tolerance
    (:data:`~cachecast.simulator.types.TOLERANCE_TOKENS` or 1% of it), else None (ties: the
    shorter)."""
    allowed = max(TOLERANCE_TOKENS, length // 100)
    best: int | None = None
    for boundary in boundaries:
        gap = abs(boundary - length)
        if gap <= allowed and (best is None or gap < abs(best - length)):
            best = boundary
    return best


def message_ends(request: TokenizedRequest) -> list[int]:
    """The ends of the request's messages (``READ_KINDS``) inside the prompt, in order."""
    return sorted(
        {
            segment.end
            for segment in request.segments
            if segment.kind in READ_KINDS and 0 < segment.end <= request.input_tokens
        }
    )


def latest_message_end(request: TokenizedRequest) -> int:
    """End of the latest message-like segment, or of the prompt if there are none."""
    ends = [segment.end for segment in request.segments if segment.kind in MESSAGE_KINDS]
    return max(ends) if ends else request.input_tokens
