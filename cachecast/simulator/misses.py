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
``no_caching_offered``      the contract in force offers no prompt caching (mode ``none``):
                            the whole prompt, whatever earlier prompts shared
==========================  =====================================================================

:class:`PromptHistory` knows, for every request, the closest earlier prompt of the same
namespace (model and scope) among the recent ones and how far they agree, token-exactly;
it is computed once per request for all the targets of a pass. Each policy
then says, from its own state (what it matched, what expired or was evicted, which
breakpoints it wrote), why the shared part was not read (``CachePolicy.explain``).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from cachecast.simulator.blocks import REMEMBERED_IDLE_SECONDS, common_prefix_length, token_bytes
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
NO_CACHING_OFFERED = "no_caching_offered"
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
    NO_CACHING_OFFERED,
)

# Each cause in a reader's words, with what would recover the tokens (reports show these
# beside the figures; docs/predictions.md has the table).
CAUSE_MEANINGS: dict[str, str] = {
    FIRST_SIGHT: "new content: nothing earlier in the log shared these tokens (unavoidable"
    " the first time a prompt is sent)",
    BELOW_MINIMUM: "the shared prefix is shorter than the provider's minimum cacheable length",
    GRANULARITY: "shared, but short of the next cache unit (hits are rounded to the"
    " provider's increment or block)",
    TTL_EXPIRED: "cached earlier but expired before this request came: requests too far"
    " apart for the cache lifetime (a longer TTL option may pay off)",
    EVICTED: "cached earlier, evicted for capacity",
    PREFIX_DIVERGED: "an earlier prompt was the same up to here and then went on differently:"
    " something early in the prompt changes (a timestamp, an id, the tool order); `cachecast"
    " suggest` finds it",
    SCOPE_DIFFERS: "the same tokens were sent under another cache scope (organization, API"
    " key, prompt_cache_key): caches are not shared across scopes",
    NO_BREAKPOINT: "explicit caching: no cache breakpoint after these tokens, so nothing"
    " could cache them (add cache_control breakpoints)",
    BEYOND_LOOKBACK: "an entry existed, further back than the provider's lookback reaches",
    OVER_WRITE_LIMIT: "the breakpoint that would have cached them was over the per-request"
    " write limit",
    PREFIX_NOT_IN_LOG: "the log does not hold the whole prompt (a transcript or a rewritten"
    " body): what these tokens are cannot be known",
    NO_CACHING_OFFERED: "no prompt caching offered: the contract in force caches nothing, so"
    " every prompt token is billed at the input price (a model or day with caching would"
    " recover them)",
}

HISTORY_BLOCK_TOKENS = 64  # the opening a candidate earlier prompt must share, by default
HISTORY_BYTES = 256 << 20  # ids of remembered prompts (least recently used dropped first)
OPENING_PROMPTS = 8  # latest prompts kept per opening
EXCERPT_TOKENS = 12


@dataclass(frozen=True, slots=True)
class MissSpan:
    """``tokens`` prompt tokens from ``start`` on, not read from cache, for ``cause``."""

    cause: str
    start: int
    tokens: int
    detail: str | None = None


@dataclass(frozen=True, slots=True)
class PrefixDivergence:
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
    divergence: PrefixDivergence | None = None


NOTHING_SEEN = Sight()


@dataclass(frozen=True, slots=True)
class _Prompt:
    data: bytes | tuple[int, ...]  # token ids as uint32 bytes; a trace's block ids
    opening: tuple[str | None, bytes]
    scope: str
    source: str
    line: int
    timestamp: float = 0.0

    @property
    def size(self) -> int:
        return len(self.data) if isinstance(self.data, bytes) else 8 * len(self.data)


class PromptHistory:
    """The recent prompts the closest earlier one is looked for among: the latest
    :data:`OPENING_PROMPTS` prompts of the model opening with the same first
    ``opening_tokens`` tokens (any scope), and the session's previous prompt where it opens
    the same way and came less than ``REMEMBERED_IDLE_SECONDS`` of log time before (a
    session idle longer is forgotten: memory for the live sessions, not for every session
    of the log). Agreement is measured on the ids themselves (one C-level comparison per
    candidate, no hashing), so it is token-exact.

    Only prompts sharing the opening are related, and ``opening_tokens`` is the replay's
    partition unit (``simulator.distributed.partition``): prompts that share it always land
    in one partition, so a partitioned replay explains every request as one process does
    (scope is not part of the partition key, for this). What is remembered is bounded
    (:data:`HISTORY_BYTES` of ids, least recently used openings and sessions dropped
    first); a prompt older than the candidates kept is not found: its tokens count as new,
    unless the cache itself still knows them (which the policy says)."""

    def __init__(
        self, *, opening_tokens: int = HISTORY_BLOCK_TOKENS, budget_bytes: int = HISTORY_BYTES
    ) -> None:
        self.opening_tokens = max(1, opening_tokens)
        self._sessions: OrderedDict[tuple[str | None, str, str], _Prompt] = OrderedDict()
        self._openings: OrderedDict[tuple[str | None, bytes], list[_Prompt]] = OrderedDict()
        self._budget = budget_bytes
        self._held = 0  # bytes of the prompts in the openings lists and the sessions

    def observe(self, request: TokenizedRequest) -> Sight:
        """How the log before ``request`` relates to it; then remember ``request``."""
        unit = 1
        data: bytes | tuple[int, ...]
        if request.tokens is not None:
            data = token_bytes(request.tokens)
            width = 4
            opening_key = data[: self.opening_tokens * 4]
        else:
            data = tuple(request.block_keys or ())
            unit = request.block_size or 1
            width = 1
            opening_key = repr(data[:1]).encode()
        opening = (request.model, bytes(opening_key))
        prompt = _Prompt(
            data, opening, request.scope, request.source, request.line, request.timestamp
        )
        session_key = None
        previous = None
        if request.session is not None:
            session_key = (request.model, request.scope, request.session)
            previous = self._sessions.get(session_key)
            if previous is not None and previous.opening != opening:
                previous = None  # another partition's: not comparable
            elif previous is not None and previous.timestamp < idle_before(request.timestamp):
                # Forgotten, whether or not a sweep dropped it yet: what is found must not
                # depend on which other requests came in between (a partitioned replay
                # sees fewer of them).
                previous = None
        best: _Prompt | None = None
        shared = across = 0
        if previous is not None:
            best, shared = previous, common_prefix_length(previous.data, data) // width
        # A session's previous prompt that the request extends is the closest there is in
        # agent traffic: the others are only compared when it is not.
        extended = best is not None and shared * width == len(best.data)
        for candidate in reversed(self._openings.get(opening, ())):
            if candidate.scope != request.scope:
                across = max(across, common_prefix_length(candidate.data, data) // width)
            elif not extended and candidate is not previous:
                common = common_prefix_length(candidate.data, data) // width
                if best is None or common > shared:
                    best, shared = candidate, common
                    extended = shared * width == len(candidate.data)
        self._remember(opening, session_key, prompt)
        if best is None or shared == 0:
            return Sight(0, None, across * unit) if across else NOTHING_SEEN
        earlier_length = len(best.data) // width
        divergence = None
        if width == 4 and shared < min(earlier_length, len(data) // 4):
            divergence = _divergence(request, data, best, shared)  # type: ignore[arg-type]
        return Sight(shared * unit, earlier_length * unit, across * unit, divergence)

    def _remember(
        self,
        opening: tuple[str | None, bytes],
        session_key: tuple[str | None, str, str] | None,
        prompt: _Prompt,
    ) -> None:
        openings = self._openings
        kept = openings.get(opening)
        if kept is None:
            kept = openings[opening] = []
        else:
            openings.move_to_end(opening)
        kept.append(prompt)
        self._held += prompt.size
        if len(kept) > OPENING_PROMPTS:
            self._held -= kept.pop(0).size
        if session_key is not None:
            sessions = self._sessions
            old = sessions.pop(session_key, None)
            if old is not None:
                self._held -= old.size
            sessions[session_key] = prompt
            self._held += prompt.size
            self._forget_idle_sessions(prompt.timestamp)
        while self._held > self._budget and (openings or self._sessions):
            if openings:
                _, dropped = openings.popitem(last=False)
                self._held -= sum(item.size for item in dropped)
            if self._held > self._budget and self._sessions:
                self._held -= self._sessions.popitem(last=False)[1].size

    def _forget_idle_sessions(self, now: float) -> None:
        """Drop the sessions idle for ``REMEMBERED_IDLE_SECONDS`` of log time (the order of
        ``_sessions`` is the order of last use): one prompt per live session, not per
        session ever seen. A forgotten session's last prompt is still found among its
        opening's latest prompts while they keep it."""
        sessions = self._sessions
        before = idle_before(now)
        while sessions:
            oldest = next(iter(sessions.values()))
            if not oldest.timestamp < before:
                break
            sessions.popitem(last=False)
            self._held -= oldest.size


def idle_before(now: float) -> float:
    """A session last seen before this is forgotten."""
    return now - REMEMBERED_IDLE_SECONDS


def _divergence(
    request: TokenizedRequest, data: bytes, earlier: _Prompt, position: int
) -> PrefixDivergence:
    assert isinstance(earlier.data, bytes)
    segment = next(
        (s.label for s in request.segments if s.start <= position < s.end),
        request.segments[-1].label if request.segments else "prompt",
    )
    end = (position + EXCERPT_TOKENS) * 4
    ours = tuple(memoryview(data[position * 4 : end]).cast("I"))
    theirs = tuple(memoryview(earlier.data[position * 4 : end]).cast("I"))
    return PrefixDivergence(position, segment, f"{earlier.source}:{earlier.line}", ours, theirs)


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
