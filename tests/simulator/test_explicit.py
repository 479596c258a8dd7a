"""Hand-computed cases for explicit breakpoints (Anthropic-style)."""

from __future__ import annotations

import dataclasses
from decimal import Decimal

import pytest

from cachecast.contracts.model import TtlOption
from cachecast.core.errors import BadInputError, Location
from cachecast.simulator.policies.explicit import OPENAI_READ_BREAKPOINTS, ExplicitBreakpointCache
from cachecast.tokenizers.types import Breakpoint, CacheControls, Segment, TokenizedRequest

from .helpers import make_request, run

FIVE_MINUTES = TtlOption(
    name="5m", ttl_seconds=300, refresh_on_hit=True, write_multiplier=Decimal("1.25")
)
ONE_HOUR = TtlOption(
    name="1h", ttl_seconds=3600, refresh_on_hit=True, write_multiplier=Decimal("2")
)


def anthropic_like(**overrides: object) -> ExplicitBreakpointCache:
    options: dict[str, object] = {
        "ttl_options": (FIVE_MINUTES, ONE_HOUR),
        "min_tokens": 1024,
        "max_breakpoints": 4,
        "lookback_blocks": 20,
    }
    options.update(overrides)
    return ExplicitBreakpointCache(**options)  # type: ignore[arg-type]


def blocks_of(count: int, size: int = 100) -> tuple[Segment, ...]:
    """``count`` content blocks of ``size`` tokens each."""
    return tuple(Segment("content", f"b{i}", i * size, (i + 1) * size) for i in range(count))


def test_minimum_length_at_the_breakpoint() -> None:
    policy = anthropic_like()
    prompt = run(1100, 0)
    usage = policy.process(make_request(prompt, breakpoints=[Breakpoint(1023)], at=0))
    assert usage.cache_write_total == 0  # 1,023 < 1,024: not cached
    usage = policy.process(make_request(prompt, breakpoints=[Breakpoint(1024)], at=1))
    assert usage.cache_write_tokens == {"5m": 1024}
    usage = policy.process(make_request(prompt, breakpoints=[Breakpoint(1024)], at=2))
    assert (usage.cache_read_tokens, usage.uncached_input_tokens) == (1024, 76)


def test_writes_are_split_by_each_breakpoints_ttl() -> None:
    policy = anthropic_like()
    prompt = run(2500, 0)
    points = [Breakpoint(1100, "1h"), Breakpoint(2000, "5m")]
    usage = policy.process(make_request(prompt, breakpoints=points, at=0))
    # 0..1100 at 1h, 1100..2000 at 5m, 500 tokens after the last breakpoint uncached.
    assert usage.cache_write_tokens == {"1h": 1100, "5m": 900}
    assert usage.uncached_input_tokens == 500
    usage = policy.process(make_request(prompt, breakpoints=points, at=1))
    assert (usage.cache_read_tokens, usage.cache_write_total) == (2000, 0)


def test_lookback_checks_twenty_positions_counting_the_breakpoint() -> None:
    policy = anthropic_like()
    tokens = run(3200, 0)
    # Content blocks of 100 tokens; the first request caches the prefix up to 1,200.
    policy.process(
        make_request(tokens[:1200], segments=blocks_of(12), breakpoints=[Breakpoint(1200)])
    )
    # Breakpoint at 3,100: positions 3100, 3000, ..., 1200 are 20 positions -> hit.
    usage = policy.process(
        make_request(tokens[:3100], segments=blocks_of(31), breakpoints=[Breakpoint(3100)], at=1)
    )
    assert usage.cache_read_tokens == 1200
    assert usage.cache_write_tokens == {"5m": 1900}
    # Breakpoint at 3,200 on a fresh policy: 20 positions reach down to 1,300 only.
    policy = anthropic_like()
    policy.process(
        make_request(tokens[:1200], segments=blocks_of(12), breakpoints=[Breakpoint(1200)])
    )
    usage = policy.process(
        make_request(tokens, segments=blocks_of(32), breakpoints=[Breakpoint(3200)], at=1)
    )
    assert (usage.cache_read_tokens, usage.cache_write_tokens) == (0, {"5m": 3200})


def test_ttl_boundary_with_refresh_on_hit() -> None:
    policy = anthropic_like()
    prompt, points = run(1500, 0), [Breakpoint(1500)]
    policy.process(make_request(prompt, breakpoints=points, at=0.0))  # alive t < 300
    assert policy.process(make_request(prompt, breakpoints=points, at=299.0)).cache_read_tokens
    # Refreshed at 299: alive for t < 599, gone at exactly 599.
    usage = policy.process(make_request(prompt, breakpoints=points, at=599.0))
    assert (usage.cache_read_tokens, usage.cache_write_tokens) == (0, {"5m": 1500})


def test_ttl_boundary_without_refresh() -> None:
    fixed = TtlOption(name="1h", ttl_seconds=3600, refresh_on_hit=False, write_multiplier=2)
    policy = anthropic_like(ttl_options=(fixed,))
    prompt, points = run(1500, 0), [Breakpoint(1500)]
    policy.process(make_request(prompt, breakpoints=points, at=0.0))
    assert policy.process(make_request(prompt, breakpoints=points, at=3000.0)).cache_read_tokens
    # The hit at 3,000 did not extend the lifetime: gone at exactly 3,600.
    assert (
        policy.process(make_request(prompt, breakpoints=points, at=3600.0)).cache_read_tokens == 0
    )


def test_only_the_first_max_breakpoints_count() -> None:
    policy = anthropic_like()
    points = [Breakpoint(offset) for offset in (1100, 1200, 1300, 1400, 1500)]
    usage = policy.process(make_request(run(1600, 0), breakpoints=points))
    # Four breakpoints count: writes up to 1,400; the fifth (1,500) is ignored.
    assert usage.cache_write_tokens == {"5m": 1400}
    assert usage.uncached_input_tokens == 200


def test_implicit_breakpoint_at_the_latest_message() -> None:
    policy = anthropic_like(implicit_last_message=True, lookback_blocks=None)
    segments = (Segment("system", "system", 0, 1500), Segment("message", "messages[0]", 1500, 2000))
    prompt = run(2000, 0)
    usage = policy.process(make_request(prompt, segments=segments, at=0))
    assert usage.cache_write_tokens == {"5m": 2000}
    grown = (*segments, Segment("message", "messages[1]", 2000, 2300))
    usage = policy.process(make_request(run(2300, 0), segments=grown, at=1))
    # The new implicit breakpoint is at 2,300; looking back reaches the entry at 2,000.
    assert (usage.cache_read_tokens, usage.cache_write_tokens) == (2000, {"5m": 300})


THIRTY_MINUTES = TtlOption(
    name="30m", ttl_seconds=1800, refresh_on_hit=True, write_multiplier=Decimal("1.25")
)


def gpt56_like() -> ExplicitBreakpointCache:
    """OpenAI GPT-5.6+ (docs/contracts.md): 1,024-token minimum, 4 writes per request, the
    implicit breakpoint on the latest message, reads over the latest breakpoints."""
    return ExplicitBreakpointCache(
        ttl_options=(THIRTY_MINUTES,),
        min_tokens=1024,
        max_breakpoints=4,
        lookback_blocks=None,
        implicit_last_message=True,
        read_window=OPENAI_READ_BREAKPOINTS,
    )


def system_and_user(
    system: int, shared_user: int, own_user: list[int], at: float
) -> TokenizedRequest:
    """A system message of ``system`` tokens, a user message whose first ``shared_user``
    tokens every such request shares and whose rest is ``own_user``, and 3 reply-priming
    tokens (the chat rendering of docs/predictions.md)."""
    user_end = system + shared_user + len(own_user)
    tokens = [*run(system, 0), *run(shared_user, 100_000), *own_user, *run(3, 200_000)]
    segments = (
        Segment("system", "messages[0]", 0, system),
        Segment("message", "messages[1]", system, user_end),
        Segment("template", "reply_priming", user_end, user_end + 3),
    )
    return make_request(tokens, segments=segments, at=at)


def test_gpt56_reads_at_a_message_end_of_a_written_prefix() -> None:
    # The shape of the GPT-5.6 recording in docs/predictions.md: the same system message, the
    # user messages share their first tokens and then differ.
    policy = gpt56_like()
    first = policy.process(system_and_user(2000, 30, run(70, 300_000), at=0))
    # Nothing cached yet; the implicit breakpoint at the user message's end (2,000 + 100)
    # writes 2,100 tokens; the 3 priming tokens after it are not cached.
    assert (first.cache_read_tokens, first.cache_write_tokens) == (0, {"30m": 2100})
    assert first.uncached_input_tokens == 3
    second = policy.process(system_and_user(2000, 30, run(70, 400_000), at=60))
    # The prompts agree up to token 2,030 (inside the user message); no breakpoint of the
    # first request ends there, but its written prefix holds the system message's end at
    # 2,000: read 2,000, write this request's own implicit prefix less the read, 2,100 - 2,000.
    assert (second.cache_read_tokens, second.cache_write_tokens) == (2000, {"30m": 100})
    assert second.uncached_input_tokens == 3


def test_gpt56_message_end_reads_keep_the_minimum_and_the_explicit_mode() -> None:
    policy = gpt56_like()
    policy.process(system_and_user(1000, 1100, run(50, 300_000), at=0))
    # The system message ends at token 1,000 < 1,024: not readable; nothing else matches.
    usage = policy.process(system_and_user(1000, 0, run(1200, 400_000), at=60))
    assert (usage.cache_read_tokens, usage.cache_write_tokens) == (0, {"30m": 2200})
    policy = gpt56_like()
    policy.process(system_and_user(2000, 30, run(70, 300_000), at=0))
    # prompt_cache_options.mode "explicit" with no marked block: no caching at all, even
    # where an earlier written prefix holds the system message's end.
    explicit = CacheControls(implicit_breakpoint=False)
    request = dataclasses.replace(
        system_and_user(2000, 30, run(70, 400_000), at=60), controls=explicit
    )
    usage = policy.process(request)
    assert (usage.cache_read_tokens, usage.cache_write_total) == (0, 0)


def test_scope_isolation_and_bad_breakpoints() -> None:
    policy = anthropic_like()
    prompt, points = run(1500, 0), [Breakpoint(1500)]
    policy.process(make_request(prompt, breakpoints=points, scope="a"))
    assert (
        policy.process(make_request(prompt, breakpoints=points, scope="b")).cache_read_tokens == 0
    )
    with pytest.raises(BadInputError, match=r"test.jsonl:1: breakpoints.offset: 1501") as raised:
        policy.process(make_request(prompt, breakpoints=[Breakpoint(1501)]))
    assert raised.value.location == Location("test.jsonl", 1, None, "breakpoints.offset")
    with pytest.raises(BadInputError, match=r"breakpoints.ttl: unknown TTL '2h'"):
        policy.process(make_request(prompt, breakpoints=[Breakpoint(1200, "2h")]))
