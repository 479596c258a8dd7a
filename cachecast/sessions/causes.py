"""Why a request's observation differs from its prediction, in words a user acts on.

Each cause has a short code (the report's ``classification``) and a sentence with the
figures that support it. The causes are the ways a session's cache is documented or observed
to behave (docs/clients.md): an idle gap that outlived the TTL, compaction, a model change,
a sub-agent, a changed system prompt or tool list, a best-effort provider, a cache warm
before the log began, and a client leaving the newest tokens after its last breakpoint.
"""

from __future__ import annotations

from cachecast.sessions.predictor import (
    HeldPrefix,
    ObservedSplit,
    Prediction,
    PromptFacts,
    duration,
)
from cachecast.sessions.profiles import ClientProfile, older_version

IDLE_GAP = "idle_gap_outlived_ttl"
COMPACTION = "compaction_rewrote_history"
MODEL_CHANGED = "model_changed"
SUBAGENT = "subagent_started"
PREFIX_CHANGED = "tools_or_system_prompt_changed"
BEST_EFFORT = "provider_best_effort"
WARM_CACHE = "warm_cache_at_log_start"
UNCACHED_TAIL = "tokens_after_last_breakpoint"
DIRECTORY_CHANGED = "working_directory_changed"
CAUSES = (
    IDLE_GAP,
    COMPACTION,
    MODEL_CHANGED,
    SUBAGENT,
    PREFIX_CHANGED,
    BEST_EFFORT,
    WARM_CACHE,
    UNCACHED_TAIL,
    DIRECTORY_CHANGED,
)


def tolerance(facts: PromptFacts) -> int:
    """max(8 tokens, 1% of the prompt), in whole tokens."""
    return max(8, facts.prompt_tokens // 100)


def within(facts: PromptFacts, predicted: Prediction, observed: ObservedSplit) -> bool:
    allowed = tolerance(facts)
    if abs(predicted.read - observed.read) > allowed:
        return False
    return not observed.writes_reported or abs(predicted.write - observed.write) <= allowed


def explain(
    facts: PromptFacts,
    predicted: Prediction,
    observed: ObservedSplit,
    profile: ClientProfile,
    held: HeldPrefix | None = None,
    client_version: str | None = None,
) -> tuple[str, str]:
    """The cause of a request predicted outside tolerance, and a sentence with its figures;
    ``held`` names what a request that read less than predicted did read
    (``SessionPredictor.held_prefix``); ``client_version`` is the version of the client
    that wrote the log, where it says (a best-effort miss of a version older than the
    profile's ``turn_routing_since`` names it)."""
    cause, words = _explain(facts, predicted, observed, profile, held)
    if cause == BEST_EFFORT and observed.read < predicted.read:
        words += _turn_routing(facts, client_version, profile)
    return cause, words + _off_steps(observed.read, profile)


def _turn_routing(facts: PromptFacts, version: str | None, profile: ClientProfile) -> str:
    """A best-effort miss within a user turn, in a log written by a client version that does
    not yet pin a turn's requests to the machine holding its prefix (Codex CLI before 0.88.0
    sends no ``x-codex-turn-state``; docs/clients.md), in words a user acts on. Nothing for
    the request that opens a user turn (the token is the turn's own: it has none yet), nor
    where the version is newer, not given or not a numbered version."""
    since = profile.turn_routing_since
    if since is None or facts.user_turn or not older_version(version, since):
        return ""
    return (
        f"; {profile.title} {version} wrote this log: versions before {since} do not send"
        " back within a user turn the routing token the server gives the turn's first"
        f" response ({profile.turn_routing_token}), which keeps the turn's requests on the"
        " machine that holds its prefix, so more of their requests land on machines holding"
        " less of it;"
        f" updating {profile.title} to {since} or later may avoid such misses"
    )


def _off_steps(read: int, profile: ClientProfile) -> str:
    """Where the profile's cache reads whole steps (OpenAI before GPT-5.6: 1,024 tokens, then
    128 at a time; docs/clients.md) and the usage reports a read no step gives, no prediction
    in those steps can match it: said, with the steps (every read of the shared rollouts is
    on them; the hand-written ccusage fixture's 250 and 500 are not)."""
    minimum, step = profile.min_cached_tokens, profile.increment_tokens
    if not read or step <= 1 or (read >= minimum and (read - minimum) % step == 0):
        return ""
    return (
        f"; {read:,} cached tokens is off the steps the profile's cache reads in (0, or"
        f" {minimum:,} and more by {step}, as {profile.provider} documents): no prediction in"
        " those steps matches it (usage the documented cache does not report: a hand-written"
        " or altered log?)"
    )


def _explain(
    facts: PromptFacts,
    predicted: Prediction,
    observed: ObservedSplit,
    profile: ClientProfile,
    held: HeldPrefix | None,
) -> tuple[str, str]:
    read, expected = observed.read, predicted.read
    gap, ttl = predicted.gap_seconds, predicted.ttl_seconds
    if abs(read - expected) <= tolerance(facts):
        return UNCACHED_TAIL, (
            f"the client sent {observed.uncached:,} tokens after its last cache breakpoint"
            f" (neither read nor written; {predicted.uncached:,} expected): its newest message"
            " was not marked for caching"
        )
    if read > expected:
        if facts.event == "compacted":
            return COMPACTION, (
                f"compaction rewrote the history; the provider still read {read:,} tokens"
                " (the system prompt and tools, and what the summary kept) where the log"
                f" shows {expected:,} cached"
            )
        if predicted.new_lineage and facts.parent is not None:
            # Claude Code's compaction agent resends its session's conversation: what it
            # read, that session cached, and the log does not hold the session's requests.
            return WARM_CACHE, (
                f"the cache was warm before the log began: a compaction of a session whose"
                f" requests the log does not hold; the provider read {read:,} tokens of the"
                " conversation that session cached"
            )
        if predicted.new_lineage and facts.subagent:
            return SUBAGENT, (
                f"a sub-agent started with a prompt of its own; the provider read {read:,}"
                " tokens of its system prompt and tools, cached by an earlier sub-agent this"
                " log does not show"
            )
        if gap is not None and ttl is not None and gap > ttl:
            longest = profile.longest_ttl_seconds
            if longest is not None and gap <= longest:
                return BEST_EFFORT, (
                    f"after an idle gap of {duration(gap)}, beyond the {duration(ttl)}"
                    f" lifetime assumed, the provider still read {read:,} tokens: it kept the"
                    f" prefix longer, as it may (it documents up to {duration(longest)} when"
                    " lightly loaded; best effort, not to be counted on)"
                )
            return BEST_EFFORT, (
                f"after an idle gap of {duration(gap)}, beyond the {duration(ttl)} lifetime,"
                f" the provider still read {read:,} tokens: it kept the prefix longer than"
                " documented"
            )
        if predicted.new_lineage or facts.event == "restarted":
            return WARM_CACHE, (
                f"the cache was warm before the log began: the provider read {read:,} tokens"
                f" (the client's system prompt and tools, cached by an earlier session) where"
                f" the log shows {expected:,} cached"
            )
        return BEST_EFFORT if profile.best_effort else WARM_CACHE, (
            f"the provider read {read:,} tokens where the log shows {expected:,} cached: a"
            " prefix cached outside this log"
        )
    missed = expected - read
    if facts.event == "compacted":
        return COMPACTION, (
            f"compaction rewrote the history: the provider read {read:,} tokens, not the"
            f" {expected:,} expected"
        )
    if predicted.previous_model not in (None, facts.model):
        return MODEL_CHANGED, (
            f"the model changed from {predicted.previous_model} to {facts.model}: the cache"
            f" is kept per model ({missed:,} tokens not read)"
        )
    if facts.directory_change is not None and profile.environment_per_directory:
        return DIRECTORY_CHANGED, directory_words(facts.directory_change, read, expected)
    if profile.best_effort:
        words = _best_effort_miss(read, expected, gap, profile)
        return BEST_EFFORT, words + _routing(facts, predicted, held, profile)
    return PREFIX_CHANGED, (
        f"the tools or system prompt changed: the provider read only {read:,} of the"
        f" {expected:,} tokens the previous request cached ({missed:,} written again)"
    )


def directory_words(change: tuple[str, str], read: int, expected: int) -> str:
    """A turn started in another working directory, in words a user acts on."""
    was, now = change
    return (
        f"the working directory changed from {was} to {now} before this prompt: Claude Code"
        " rebuilt its environment context (working directory, git status, CLAUDE.md), so the"
        f" provider read only {read:,} of the {expected:,} tokens cached before it"
        f" ({expected - read:,} written again); starting Claude Code in the directory you"
        " work in, and changing directory inside a command (cd dir && ...) rather than"
        " between prompts, keeps the cache"
    )


def _best_effort_miss(read: int, expected: int, gap: float | None, profile: ClientProfile) -> str:
    """A best-effort provider read less than the prefix the log shows it holding: both
    figures, when it was last used, and the idle time where it passed the shortest lifetime
    the provider documents (a pause the user can shorten)."""
    since = f" last used {duration(gap)} before" if gap is not None else ""
    words = (
        f"the provider missed {expected - read:,} of the {expected:,} tokens the log shows"
        f" cached,{since} (it read {read:,}; the rest is billed as uncached input):"
        f" {profile.provider}'s automatic cache is best effort and can miss a prefix it holds"
    )
    floor = profile.shortest_ttl_seconds
    if gap is not None and floor is not None and gap > floor:
        words += (
            f"; the prefix had been idle {duration(gap)}, longer than the"
            f" {duration(floor)} to {duration(profile.default_ttl_seconds)} the provider"
            " documents for an idle prefix: shorter pauses keep it"
        )
    return words


def _routing(
    facts: PromptFacts, predicted: Prediction, held: HeldPrefix | None, profile: ClientProfile
) -> str:
    """Where the read came from, in the log's terms, and whether the documented overflow rate
    held: a provider that routes a conversation's requests to the machine holding its prefix
    serves a miss from a machine that holds less of it (docs/clients.md, Codex CLI)."""
    words = ""
    if held is not None and held.line is None:
        part = "" if held.tokens == held.common else f"{held.tokens:,} of "
        words = (
            f"; it read only {part}the {held.common:,}-token prefix common to this client's"
            " sessions (its system prompt and tools), as a machine that never saw this"
            " conversation holds it"
        )
    elif held is not None and held.timestamp is not None:
        what = "prompt plus output" if held.with_output else "prompt (not its output)"
        words = (
            f"; it read exactly the {what} of the request at line {held.line}"
            f" ({duration(facts.timestamp - held.timestamp)} before), as a machine that last"
            " served the conversation then holds it"
        )
    rate, count = profile.overflow_per_minute, predicted.recent_requests
    if rate is None or not count:  # no request in the minute before: no rate to speak of
        return words
    if count >= rate:
        return words + (
            f"; {count} requests of this conversation in the minute before: over the about"
            f" {rate} a minute past which {profile.provider} documents that requests for one"
            " prefix and cache key overflow to other machines, which do not hold it (fewer a"
            " minute keep it on one)"
        )
    return words + (
        f"; {count} request{'' if count == 1 else 's'} of this conversation in the minute"
        f" before, under the about {rate} a minute past which {profile.provider} documents"
        " that requests overflow to other machines"
    )
