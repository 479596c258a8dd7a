"""What each request of an agent session should have read and written, predicted from what
the log says before it (docs/predictions.md).

The rule, enforced by the types: :meth:`SessionPredictor.predict` receives request k's
:class:`PromptFacts` only (where it sits, when, which model, and the *length* of its prompt)
and returns k's :class:`Prediction`; k's observed split into reads, writes and uncached
tokens (:class:`ObservedSplit`) is handed over afterwards, to :meth:`SessionPredictor.learn`,
which is the only way an observation enters the predictor's state. So a prediction for k
uses everything the log says about the requests before k and k's prompt length, never k's
own split.

The transcripts omit the system prompt and tools the client adds; they are not guessed with
a tokenizer. What a request can read is the prefix an earlier request of the same lineage
left cached: its end is that request's observed read + write (breakpoint clients), or its
prompt plus output (automatic caches whose next prompt embeds the output), so the hidden
part is inside it, counted by the provider itself.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import NamedTuple

from cachecast.sessions.profiles import FIVE_MINUTES, ONE_HOUR, ClientProfile

TTL_SECONDS = {"5m": FIVE_MINUTES, "1h": ONE_HOUR}
# Share of a prompt below which a shortfall on a continuing automatic-cache lineage is taken
# as a systematic lag (the end of every prompt re-sent differently) rather than a miss.
LAG_SHARE = 0.05
DEFAULT_TAIL = 3  # tokens a breakpoint client leaves after its last breakpoint, until seen
RATE_WINDOW = 60.0  # seconds: a provider's overflow rate is documented per minute
RECENT_KEPT = 64  # request times kept per lineage: enough to count past any documented rate
ENDS_KEPT = 256  # earlier prefixes kept per lineage, to name the one a miss read instead


@dataclass(frozen=True, slots=True)
class PromptFacts:
    """What a prediction for a request may know about the request itself: never its split."""

    source: str
    line: int
    request_id: str
    lineage: str  # the session, sub-agent or sidechain whose cache the request continues
    model: str
    timestamp: float
    prompt_tokens: int  # the length of the prompt: input + cache read + cache write
    root: str | None = (
        None  # fingerprint of the first visible message (shared roots, shared prefix)
    )
    event: str | None = None  # "compacted", "restarted": what the log says happened before it
    subagent: bool = False  # a sub-agent or sidechain lineage (its own system prompt)
    parent: str | None = None  # the lineage a compaction agent summarises (it shares its cache)
    user_turn: bool = False  # a user message opened a new turn just before this request
    # (before, now): the prompt that opened this request's turn ran in another working
    # directory than the lineage's previous turn (Claude Code; docs/clients.md).
    directory_change: tuple[str, str] | None = None
    # The shortest prompt the provider caches for the request's model, from the contract in
    # force (0: not known). A shorter prompt is neither written nor read, even where the
    # client marks a breakpoint (docs/clients.md, "Minimum cacheable length").
    minimum_prefix: int = 0


@dataclass(frozen=True, slots=True)
class ObservedSplit:
    """What the provider reported for the request: only :meth:`SessionPredictor.learn` sees it."""

    read: int
    write: int
    uncached: int
    output: int = 0
    write_by_ttl: dict[str, int] = field(default_factory=dict)
    writes_reported: bool = True
    reasoning: int = 0  # reasoning tokens the request produced (part of ``output``)
    # The response carried thinking blocks (Claude Code transcripts show them, not their
    # count): the API stops sending them at the next user turn (docs/clients.md).
    thought: bool = False


@dataclass(frozen=True, slots=True)
class Prediction:
    read: int
    write: int
    uncached: int
    ttl: str | None  # the TTL option the write is predicted under ("5m", "1h")
    basis: str  # in words: what the prediction rests on
    # What the log said before the request, for the explanation of a miss:
    gap_seconds: float | None = None  # since the lineage's cached prefix was last used
    ttl_seconds: float | None = None  # that prefix's lifetime
    previous_model: str | None = None  # the model of the lineage's previous request
    new_lineage: bool = True  # no earlier request of this lineage in the log
    # Requests of the lineage (one conversation: one prompt cache key) in the minute before,
    # for the provider's documented overflow rate (``ClientProfile.overflow_per_minute``).
    recent_requests: int = 0
    # At a prompt whose working directory changed (a profile with
    # ``environment_per_directory``): the prefix the previous request cached, of which only
    # the stable part (``read``) is predicted read (None: no such change, or its part unknown).
    before_directory_change: int | None = None


@dataclass(frozen=True, slots=True)
class HeldPrefix:
    """What a request that read less than predicted did read, in the log's terms: the prefix
    common to the client's sessions (``line`` None), or exactly where an earlier request of
    its lineage ended, its prompt or its prompt plus output, in the cache's steps: the state
    of the conversation a machine that last served that request holds (docs/clients.md,
    Codex CLI, "Best effort")."""

    tokens: int
    common: int = 0  # the prefix common to the client's sessions, as the log has shown it
    line: int | None = None  # the earlier request's line in the log
    timestamp: float | None = None
    with_output: bool = False


class _End(NamedTuple):
    """Where an earlier request of a lineage ended: its prompt, and its prompt plus output
    (a tuple: a lineage keeps up to ``ENDS_KEPT`` of them)."""

    prompt: int
    end: int
    line: int
    timestamp: float


@dataclass(slots=True)
class _Entry:
    """A cached prefix: where it ends, when it was last used, and its lifetime."""

    end: int
    used: float
    ttl: float


@dataclass(slots=True)
class _Lineage:
    model: str
    entry: _Entry | None = None
    tail: int = DEFAULT_TAIL
    lag: int = 0
    last_short: int | None = 0  # None: the previous request missed (no run to extend)
    last_prompt: int = 0
    last_time: float = 0.0
    requests: int = 0
    # Where the current turn's first reasoning begins: the prompt length of the turn's first
    # request that reasoned. The next user turn no longer sends that reasoning, so its
    # cached prefix ends there (docs/clients.md, Codex CLI); None: nothing reasoned yet.
    turn_kept: int | None = None
    # Breakpoint clients: the prefix cached before the current turn's first thinking block,
    # i.e. by the turn's first request whose response thought. At the next user turn the API
    # no longer sends that thinking, so the cache holds the prompt only up to there
    # (docs/clients.md, Claude Code, "Thinking of earlier turns"); None: nothing thought.
    thinking_from: _Entry | None = None
    times: deque[float] = field(default_factory=lambda: deque(maxlen=RECENT_KEPT))
    ends: deque[_End] = field(default_factory=lambda: deque(maxlen=ENDS_KEPT))


class SessionPredictor:
    """Predicts requests in log order for one client (module docstring)."""

    def __init__(self, profile: ClientProfile) -> None:
        self.profile = profile
        self.lineages: dict[str, _Lineage] = {}
        self.roots: dict[tuple[str, str], _Entry] = {}  # (model, root) -> longest prefix
        # (model, sub-agent?) -> the prefix the last new lineage of that kind read at its
        # start: the system prompt and tools an earlier one cached (docs/clients.md).
        self.starts: dict[tuple[str, bool], _Entry] = {}
        self.session_start: dict[str, int] = {}  # model -> prefix common to sessions
        # model -> the stable part of the hidden prefix (tools and the static system prompt):
        # where an earlier main-conversation read stopped short of the prefix before it, at
        # its session's start or at a change of working directory (docs/clients.md).
        self.stable: dict[str, _Entry] = {}
        # The TTL option the client's writes last used, for sub-agents (True) and the main
        # conversation (False) apart: Claude Code lets each have its own (docs/clients.md).
        self.ttl_seen: dict[bool, str] = {}

    # --- prediction: k's facts only ---------------------------------------------------------

    def predict(self, facts: PromptFacts) -> Prediction:
        if self.profile.caching == "automatic":
            return self._predict_automatic(facts)
        return self._predict_breakpoint(facts)

    def _alive(self, entry: _Entry | None, now: float, total: int) -> bool:
        return entry is not None and now - entry.used <= entry.ttl and entry.end <= total

    def _lifetime(self, entry: _Entry, facts: PromptFacts) -> float:
        """How long ``entry`` lives for request ``facts``: within one user turn, where the
        profile keeps a turn's prefix longer (Codex pins a turn's requests to one machine,
        docs/clients.md), that lifetime; at a new user turn, the entry's own."""
        turn = self.profile.turn_ttl_seconds
        if turn is not None and not facts.user_turn and facts.event is None:
            return max(entry.ttl, turn)
        return entry.ttl

    def _context(self, facts: PromptFacts) -> dict[str, object]:
        lineage = self.lineages.get(facts.lineage)
        if lineage is None:
            return {"new_lineage": True}
        entry = lineage.entry
        now = facts.timestamp
        return {
            "new_lineage": False,
            "previous_model": lineage.model,
            "gap_seconds": None if entry is None else now - entry.used,
            "ttl_seconds": None if entry is None else self._lifetime(entry, facts),
            "recent_requests": self._recent(lineage, now),
        }

    @staticmethod
    def _recent(lineage: _Lineage, now: float) -> int:
        """The lineage's requests in the minute before ``now`` (kept only where the profile
        documents an overflow rate; ``learn`` drops the older ones)."""
        return sum(1 for t in lineage.times if 0 <= now - t <= RATE_WINDOW)

    def _cold_basis(self, facts: PromptFacts, context: dict[str, object]) -> str:
        """Why no cached prefix is predicted, in words."""
        if facts.event == "compacted":
            return "compaction rewrote the history: the prompt is written anew"
        if facts.event == "restarted":
            return "the conversation started again: the prompt is written anew"
        if context["new_lineage"]:
            if facts.subagent:
                return "a sub-agent started with a prompt of its own: written anew"
            return "the first request of its session in the log: written anew"
        if context.get("previous_model") != facts.model:
            return (
                f"the model changed from {context.get('previous_model')} to {facts.model}:"
                " the cache is kept per model, the prompt is written anew"
            )
        gap, ttl = context.get("gap_seconds"), context.get("ttl_seconds")
        if isinstance(gap, float) and isinstance(ttl, float) and gap > ttl:
            return (
                f"the idle gap of {duration(gap)} outlived the cache's {duration(ttl)}"
                " lifetime: the prompt is written anew"
            )
        return "no cached prefix of this prompt is known: the prompt is written anew"

    def _predict_breakpoint(self, facts: PromptFacts) -> Prediction:
        total = facts.prompt_tokens
        context = self._context(facts)
        lineage = self.lineages.get(facts.lineage)
        read, basis = 0, ""
        if (
            lineage is not None
            and lineage.model == facts.model
            and facts.event is None
            and self._alive(lineage.entry, facts.timestamp, total)
        ):
            assert lineage.entry is not None
            read, basis = lineage.entry.end, "reads the prefix its previous request cached"
        if not read and lineage is not None:
            read, basis = self._before_thinking(facts, lineage, total)
        if not read and facts.parent is not None:
            parent = self.lineages.get(facts.parent)
            if (
                parent is not None
                and parent.model == facts.model
                and self._alive(parent.entry, facts.timestamp, total)
            ):
                assert parent.entry is not None
                read = parent.entry.end
                basis = "a compaction of its session: reads the prefix the session cached"
        if not read and facts.root is not None:
            entry = self.roots.get((facts.model, facts.root))
            if self._alive(entry, facts.timestamp, total):
                assert entry is not None
                read = entry.end
                basis = "reads the prefix another lineage with the same history cached"
        if not read and lineage is None and facts.parent is None:
            start = self.starts.get((facts.model, facts.subagent))
            # (Never a start the log shows later in time: files are read in name order.)
            if (
                start is not None
                and self._alive(start, facts.timestamp, total)
                and start.used <= facts.timestamp
            ):
                read = start.end
                kind = "sub-agent" if facts.subagent else "session"
                basis = f"a new {kind} reads the system prompt and tools an earlier one cached"
        if not read:
            basis = self._cold_basis(facts, context)
        before = None
        if read and facts.directory_change is not None and self.profile.environment_per_directory:
            read, basis, before = self._environment_rebuilt(facts, read, basis)
        tail = lineage.tail if lineage is not None else DEFAULT_TAIL
        uncached = min(tail, total - read)
        if total - uncached < facts.minimum_prefix:
            # The breakpoint sits before the provider's minimum: nothing is cached, and no
            # earlier prefix of this prompt can have been either.
            read, uncached = 0, total
            basis = (
                f"a prompt of {total:,} tokens, shorter than the {facts.minimum_prefix:,} the"
                " provider caches at least: nothing is written or read"
            )
        ttl = self._ttl_name(facts)
        return Prediction(
            read,
            total - read - uncached,
            uncached,
            ttl,
            basis,
            before_directory_change=before,
            **context,  # type: ignore[arg-type]
        )

    def _before_thinking(
        self, facts: PromptFacts, lineage: _Lineage, total: int
    ) -> tuple[int, str]:
        """At a new user turn whose prompt is shorter than the prefix its lineage cached, where
        the previous turn's responses carried thinking blocks: the API no longer sends those
        blocks, so the prompt matches the cache only up to where the previous turn's thinking
        began, and the provider reads the prefix cached there (read, words; 0: not this case).
        The shorter prompt is the log's own sign that the thinking was dropped; a model that
        keeps earlier turns' thinking never sends a shorter prompt at a new turn
        (docs/clients.md, Claude Code, "Thinking of earlier turns")."""
        before, entry = lineage.thinking_from, lineage.entry
        if (
            not facts.user_turn
            or facts.event is not None
            or lineage.model != facts.model
            or before is None
            or entry is None
            or entry.end <= total
            or not self._alive(before, facts.timestamp, total)
        ):
            return 0, ""
        return before.end, (
            "a new user turn: the previous turn's thinking blocks are no longer sent, so the"
            f" prompt ({total:,} tokens, shorter than the {entry.end:,} cached) reads the"
            f" {before.end:,} cached before that turn's first thinking"
        )

    def _environment_rebuilt(
        self, facts: PromptFacts, read: int, basis: str
    ) -> tuple[int, str, int | None]:
        """A turn whose prompt ran in another working directory: the client rebuilds its
        environment context, and the provider reads only the stable part before it, where an
        earlier request showed its size (read, words, the prefix it no longer reads); else
        the prefix as it was, saying that the part is not known (docs/clients.md)."""
        assert facts.directory_change is not None
        was, now = facts.directory_change
        stable = self.stable.get(facts.model)
        if stable is not None and self._alive(stable, facts.timestamp, read) and stable.end < read:
            return (
                stable.end,
                f"the working directory changed from {was} to {now} at this prompt: the"
                " client rebuilt its environment context (working directory, git status,"
                f" CLAUDE.md), so only the {stable.end:,} tokens before it (tools and system"
                " prompt, as an earlier request read them) are read and the rest is written",
                read,
            )
        return (
            read,
            f"{basis}; the working directory changed from {was} to {now} at this prompt: the"
            " client rebuilds its environment context, and the provider reads only the part"
            " before it, whose size no earlier request in this log shows (none read exactly"
            " to it): the whole prefix is predicted",
            None,
        )

    def _ttl_name(self, facts: PromptFacts) -> str:
        """The TTL a request's writes are assumed to use: what its kind of request (sub-agent
        or main conversation) wrote last, else what the other kind did, else the default."""
        seen = self.ttl_seen.get(facts.subagent) or self.ttl_seen.get(not facts.subagent)
        return seen or _ttl_name(self.profile.default_ttl_seconds)

    def _step(self, tokens: int) -> int:
        """The longest cacheable length within ``tokens`` (minimum, then increments)."""
        minimum, step = self.profile.min_cached_tokens, self.profile.increment_tokens
        if tokens < minimum:
            return 0
        return minimum + (tokens - minimum) // step * step

    def _predict_automatic(self, facts: PromptFacts) -> Prediction:
        total = facts.prompt_tokens
        context = self._context(facts)
        lineage = self.lineages.get(facts.lineage)
        start = self.session_start.get(facts.model, 0)
        read, basis = 0, self._cold_basis(facts, context)
        if start:
            read = start
            basis = f"{basis}; reads the prefix common to this client's sessions"
        if (
            lineage is not None
            and lineage.model == facts.model
            and facts.event is None
            and lineage.entry is not None
            and facts.timestamp - lineage.entry.used <= self._lifetime(lineage.entry, facts)
        ):
            end, kept = _continued_end(lineage, facts)
            continued = end - lineage.lag
            if continued > read:
                read, basis = continued, "reads the prefix its previous request left cached"
                if kept:
                    basis = (
                        "a new user turn: the previous turn's reasoning is no longer sent, so"
                        " it reads the prefix up to where that reasoning began"
                    )
        read = min(self._step(read), self._step(total))
        return Prediction(read, 0, total - read, None, basis, **context)  # type: ignore[arg-type]

    # --- explanation: k's observed read, after k's prediction -------------------------------

    def held_prefix(self, facts: PromptFacts, read: int) -> HeldPrefix | None:
        """What ``read`` tokens of request k are, in the log's terms, for explaining a miss (it
        takes k's observed read, so nothing is predicted from it; call it before ``learn(k)``):
        at most the prefix common to the client's sessions, or exactly the cached length of an
        earlier request of the lineage's prompt plus output, or prompt, within the provider's
        longest documented lifetime (the newest such request). None: neither."""
        if not read:
            return None
        common = self.session_start.get(facts.model, 0)
        if common and read <= common:
            return HeldPrefix(read, common)
        lineage = self.lineages.get(facts.lineage)
        if lineage is None or lineage.model != facts.model or facts.event is not None:
            return None
        horizon = self.profile.longest_ttl_seconds or self.profile.default_ttl_seconds
        for end in reversed(lineage.ends):
            if facts.timestamp - end.timestamp > horizon:
                break
            for tokens, with_output in ((end.end, True), (end.prompt, False)):
                if self._step(tokens) == read:
                    return HeldPrefix(read, common, end.line, end.timestamp, with_output)
        return None

    # --- learning: k's observation, after k's prediction ---------------------------------------

    def learn(self, facts: PromptFacts, predicted: Prediction, observed: ObservedSplit) -> None:
        lineage = self.lineages.get(facts.lineage)
        first = lineage is None or lineage.model != facts.model or facts.event is not None
        if lineage is None or lineage.model != facts.model:
            lineage = self.lineages[facts.lineage] = _Lineage(facts.model)
        lineage.requests += 1
        if self.profile.overflow_per_minute is not None:
            times = lineage.times  # the lineage's requests in the last minute, oldest first
            times.append(facts.timestamp)
            while times and facts.timestamp - times[0] > RATE_WINDOW:
                times.popleft()
        if self.profile.caching == "automatic":
            if first:
                lineage.ends.clear()  # a rewritten history shares no earlier request's end
            self._learn_automatic(facts, lineage, first, predicted, observed)
            end = facts.prompt_tokens + (observed.output if self.profile.output_cached else 0)
            lineage.ends.append(_End(facts.prompt_tokens, end, facts.line, facts.timestamp))
        else:
            self._learn_breakpoint(facts, lineage, observed)
        lineage.last_prompt = facts.prompt_tokens
        lineage.last_time = facts.timestamp

    def _learn_breakpoint(
        self, facts: PromptFacts, lineage: _Lineage, observed: ObservedSplit
    ) -> None:
        ttl_name = _dominant_ttl(observed.write_by_ttl)
        if ttl_name is not None:
            self.ttl_seen[facts.subagent] = ttl_name
        ttl = TTL_SECONDS.get(self._ttl_name(facts), self.profile.default_ttl_seconds)
        end = observed.read + observed.write
        if end:
            lineage.entry = _Entry(end, facts.timestamp, ttl)
            if facts.root is not None:
                key = (facts.model, facts.root)
                known = self.roots.get(key)
                if known is None or known.end <= end or facts.timestamp - known.used > known.ttl:
                    self.roots[key] = _Entry(end, facts.timestamp, ttl)
        if observed.uncached <= max(16, facts.prompt_tokens // 100):
            lineage.tail = observed.uncached
        self._learn_thinking(facts, lineage, observed, ttl)
        self._learn_stable(facts, lineage, observed, ttl)
        kind = (facts.model, facts.subagent)
        start = self.starts.get(kind)
        if lineage.requests == 1 and facts.parent is None and facts.event is None:
            # A new lineage's start: what it read is the prefix of its kind (none: its kind's
            # prompts differ, e.g. another type of sub-agent, and nothing is assumed).
            if observed.read:
                self.starts[kind] = _Entry(observed.read, facts.timestamp, ttl)
            else:
                self.starts.pop(kind, None)
        elif start is not None and observed.read >= start.end:
            start.used = facts.timestamp  # read again: refreshed

    @staticmethod
    def _learn_thinking(
        facts: PromptFacts, lineage: _Lineage, observed: ObservedSplit, ttl: float
    ) -> None:
        """Where the current turn's first thinking begins: the prefix cached by the turn's
        first request whose response thought (read + write: its prompt, without its own
        response); refreshed by every later request that reads through it."""
        if facts.user_turn or facts.event is not None or lineage.requests == 1:
            lineage.thinking_from = None
        before = lineage.thinking_from
        if before is not None and observed.read >= before.end:
            before.used = facts.timestamp
        elif before is None and observed.thought and observed.read + observed.write:
            lineage.thinking_from = _Entry(observed.read + observed.write, facts.timestamp, ttl)

    def _learn_stable(
        self, facts: PromptFacts, lineage: _Lineage, observed: ObservedSplit, ttl: float
    ) -> None:
        """The stable part of the hidden prefix, where the log shows it: a main conversation's
        read that stopped short of its prompt at the session's start (the part an earlier
        session left cached) or at a change of working directory; refreshed by every request
        that reads through it."""
        if facts.subagent or facts.parent is not None:
            return
        start = lineage.requests == 1 and facts.event is None
        if (start or facts.directory_change is not None) and observed.read > 0:
            self.stable[facts.model] = _Entry(observed.read, facts.timestamp, ttl)
            return
        known = self.stable.get(facts.model)
        if known is not None and observed.read >= known.end:
            known.used = facts.timestamp

    def _learn_automatic(
        self,
        facts: PromptFacts,
        lineage: _Lineage,
        first: bool,
        predicted: Prediction,
        observed: ObservedSplit,
    ) -> None:
        entry = lineage.entry
        continuing = (
            not first
            and entry is not None
            and facts.timestamp - entry.used <= self._lifetime(entry, facts)
        )
        # A prompt shorter than the prefix it continues was rewritten at its end (a hosted
        # tool's results not re-sent): its shortfall says nothing of a lag, nor of a miss.
        rewritten = entry is not None and entry.end > facts.prompt_tokens and not facts.user_turn
        if continuing and not rewritten:
            assert entry is not None
            # How far short of the prefix it could read this one read: where it is small
            # the end of each prompt is re-sent differently (a systematic lag, kept for the
            # next prediction); a large shortfall is a miss, which leaves the lag as it was.
            short = max(0, _continued_end(lineage, facts)[0] - observed.read)
            if short <= LAG_SHARE * facts.prompt_tokens:
                # Only a shortfall seen on two requests in a row is taken as systematic; a
                # miss between them breaks the run (two partial misses are not a lag).
                if lineage.last_short is not None:
                    lineage.lag = min(short, lineage.last_short)
                lineage.last_short = short
            else:
                lineage.last_short = None
        elif self.profile.shared_session_start and lineage.requests == 1 and observed.read:
            self.session_start[facts.model] = observed.read
        if rewritten and lineage.turn_kept is not None and lineage.turn_kept == lineage.last_prompt:
            # The turn's reasoning began in the previous request, whose count overstated its
            # prompt: its reasoning sits at most this prompt less that request's output in.
            assert entry is not None
            output = entry.end - lineage.last_prompt
            lineage.turn_kept = max(0, facts.prompt_tokens - output)
        if first or facts.user_turn:
            lineage.turn_kept = None
        if observed.reasoning and lineage.turn_kept is None:
            lineage.turn_kept = facts.prompt_tokens
        end = facts.prompt_tokens + (observed.output if self.profile.output_cached else 0)
        lineage.entry = _Entry(end, facts.timestamp, self.profile.default_ttl_seconds)


def _continued_end(lineage: _Lineage, facts: PromptFacts) -> tuple[int, bool]:
    """Where the prefix a continuing request of an automatic-cache lineage can read ends, and
    whether a new user turn cut it: the previous request's prompt plus output, or at a new
    user turn the start of the previous turn's reasoning, which is no longer sent; never past
    the request's own prompt (one shorter than the previous holds less of it). The lag is
    counted from there."""
    assert lineage.entry is not None
    end, cut = lineage.entry.end, False
    if facts.user_turn and lineage.turn_kept is not None and lineage.turn_kept < end:
        end, cut = lineage.turn_kept, True
    return min(end, facts.prompt_tokens), cut


def _dominant_ttl(by_ttl: dict[str, int]) -> str | None:
    """The TTL option most of a request's writes used (None: no split reported)."""
    written = {name: tokens for name, tokens in by_ttl.items() if tokens}
    if not written:
        return None
    return max(written, key=lambda name: written[name])


def _ttl_name(seconds: float) -> str:
    return "1h" if seconds >= ONE_HOUR else "5m"


def duration(seconds: float) -> str:
    """``4m 36s``, ``1h 02m``: a gap or lifetime as a user reads it."""
    whole = int(seconds)
    if whole >= 3600:
        return f"{whole // 3600}h {whole % 3600 // 60:02d}m"
    return f"{whole // 60}m {whole % 60:02d}s"
