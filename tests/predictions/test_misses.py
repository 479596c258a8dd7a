"""Why it missed (``cachecast.simulator.misses``): hand-built streams with one cause each,
and the rule every request obeys: its spans tile the tokens it did not read, in order."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from cachecast.contracts.model import TtlOption
from cachecast.simulator.misses import (
    BELOW_MINIMUM,
    BEYOND_LOOKBACK,
    EVICTED,
    FIRST_SIGHT,
    GRANULARITY,
    NO_BREAKPOINT,
    PREFIX_DIVERGED,
    SCOPE_DIFFERS,
    TTL_EXPIRED,
    MissSpan,
    PromptHistory,
)
from cachecast.simulator.policies import CachePolicy
from cachecast.simulator.policies.automatic import AutomaticPrefixCache
from cachecast.simulator.policies.explicit import ExplicitBreakpointCache
from cachecast.tokenizers.types import Breakpoint, Segment, TokenizedRequest
from tests.simulator.helpers import make_request, run

FIVE_MINUTES = TtlOption(
    name="5m", ttl_seconds=300, refresh_on_hit=True, write_multiplier=Decimal("1.25")
)


def openai_like(**options: object) -> AutomaticPrefixCache:
    """1,024-token minimum, 128-token steps, 300 s in memory (OpenAI before GPT-5.6)."""
    settings: dict[str, object] = {
        "block_size": 128,
        "min_tokens": 1024,
        "increment": 128,
        "ttl_seconds": 300,
    }
    settings.update(options)
    return AutomaticPrefixCache(**settings)  # type: ignore[arg-type]


def anthropic_like() -> ExplicitBreakpointCache:
    return ExplicitBreakpointCache(
        ttl_options=(FIVE_MINUTES,), min_tokens=1024, max_breakpoints=4, lookback_blocks=20
    )


def replay(policy: CachePolicy, requests: Sequence[TokenizedRequest]) -> list[list[MissSpan]]:
    history = PromptHistory()
    explained = []
    for request in requests:
        sight = history.observe(request)
        usage = policy.process(request)
        spans = policy.explain(request, usage, sight)
        check_tiling(spans, usage.cache_read_tokens, request.input_tokens)
        explained.append(spans)
    return explained


def check_tiling(spans: list[MissSpan], read: int, length: int) -> None:
    """The spans cover [read, length) exactly, in order, without gaps or overlaps."""
    position = read
    for span in spans:
        assert span.start == position and span.tokens > 0, spans
        position += span.tokens
    assert position == length, spans


def causes(spans: list[MissSpan]) -> list[tuple[str, int]]:
    return [(span.cause, span.tokens) for span in spans]


def test_automatic_causes() -> None:
    policy = openai_like()
    prompt = run(1300, 0)  # 10 whole 128-token blocks and 20 tokens
    short = run(900, 50_000)
    grown = [*prompt, *run(200, 90_000)]
    diverged = [*prompt[:700], *run(800, 70_000)]
    spans = replay(
        policy,
        [
            make_request(short, at=0, line=1),
            make_request(prompt, at=1, line=2),
            make_request(prompt, at=2, line=3),
            make_request(prompt, at=1000, line=4),  # 998 s after its last use
            make_request(grown, at=1001, line=5),
            make_request(diverged, at=1002, line=6),
            make_request(prompt, at=1003, line=7, scope="other"),
        ],
    )
    assert causes(spans[0]) == [(BELOW_MINIMUM, 900)]
    assert causes(spans[1]) == [(FIRST_SIGHT, 1300)]
    # Read 1,280 of 1,300: the 20 tokens past the last whole block cannot be cached.
    assert causes(spans[2]) == [(GRANULARITY, 20)]
    assert causes(spans[3]) == [(TTL_EXPIRED, 1280), (GRANULARITY, 20)]
    assert spans[3][0].detail == "998 s (16.6 min) after its last use; TTL 300 s"
    # The grown prompt reads 1,280; the 20 tail tokens of the old prompt sit in a block
    # now, but that block was never cached; then the new 200 tokens are seen first here.
    assert causes(spans[4]) == [(GRANULARITY, 20), (FIRST_SIGHT, 200)]
    # Diverged at token 700: 640 tokens live but under the minimum, 60 shared in a partial
    # block, then the rest differs from the earlier prompt from token 700 on.
    assert causes(spans[5]) == [(BELOW_MINIMUM, 640), (GRANULARITY, 60), (PREFIX_DIVERGED, 800)]
    assert spans[5][2].detail is not None and "diverged at token 700" in spans[5][2].detail
    assert causes(spans[6]) == [(SCOPE_DIFFERS, 1300)]


def test_eviction_by_capacity() -> None:
    policy = openai_like(capacity_blocks=10)
    first, second = run(1280, 0), run(1280, 10_000)
    spans = replay(
        policy,
        [make_request(first, at=0), make_request(second, at=1), make_request(first, at=2)],
    )
    assert causes(spans[2]) == [(EVICTED, 1280)]


def test_explicit_causes() -> None:
    policy = anthropic_like()
    blocks = tuple(Segment("content", f"b{i}", i * 50, (i + 1) * 50) for i in range(60))
    prompt = run(3000, 0)
    early = [Breakpoint(900)]  # under the 1,024 minimum
    spans = replay(
        policy,
        [
            make_request(prompt, at=0, line=1, segments=blocks),  # no breakpoint at all
            make_request(prompt, at=1, line=2, segments=blocks, breakpoints=early),
            make_request(prompt, at=2, line=3, segments=blocks, breakpoints=early),
            make_request(prompt, at=3, line=4, segments=blocks, breakpoints=[Breakpoint(1200)]),
            # 36 blocks past the entry at 1,200: out of the 20-position lookback.
            make_request(prompt, at=4, line=5, segments=blocks, breakpoints=[Breakpoint(3000)]),
            make_request(prompt, at=900, line=6, segments=blocks, breakpoints=[Breakpoint(1200)]),
        ],
    )
    assert causes(spans[0]) == [(NO_BREAKPOINT, 3000)]
    # Shared with the earlier prompt, but a breakpoint under the minimum reads nothing.
    assert causes(spans[1]) == [(BELOW_MINIMUM, 900), (NO_BREAKPOINT, 2100)]
    assert causes(spans[2]) == [(BELOW_MINIMUM, 900), (NO_BREAKPOINT, 2100)]
    assert causes(spans[3]) == [(NO_BREAKPOINT, 1200), (NO_BREAKPOINT, 1800)]
    assert causes(spans[4]) == [(BEYOND_LOOKBACK, 3000)]
    assert spans[4][0].detail == "an entry at token 1200 is outside the lookback window"
    assert causes(spans[5])[0] == (TTL_EXPIRED, 1200)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 3),  # which of four base prompts
            st.integers(0, 2000),  # its length
            st.integers(0, 400),  # seconds since the previous request
            st.sampled_from(["a", "b"]),  # scope
            st.booleans(),  # a breakpoint at the end
        ),
        min_size=1,
        max_size=25,
    )
)
def test_spans_tile_the_unread_tokens(stream: list[tuple[int, int, int, str, bool]]) -> None:
    bases = [run(2000, base * 100_000) for base in range(4)]
    requests = []
    now = 0.0
    for line, (base, length, gap, scope, marked) in enumerate(stream, start=1):
        now += gap
        tokens = bases[base][:length] or [base]
        segments = (Segment("content", "b", 0, len(tokens)),)
        points = [Breakpoint(len(tokens))] if marked else []
        requests.append(
            make_request(
                tokens, at=now, line=line, scope=scope, segments=segments, breakpoints=points
            )
        )
    for policy in (openai_like(), openai_like(capacity_blocks=12), anthropic_like()):
        replay(policy, requests)  # every request's spans checked by check_tiling
