"""Our vllm policy against vLLM 0.32's own KVCacheManager, driven standalone.

Random request streams (shared prefixes, divergence inside a block, eviction pressure
from a small pool, prompts too long to admit) go through both; after every request the
hit in tokens and the whole free-block queue (eviction order) must be identical.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cachecast.simulator.policies.vllm import VllmPrefixCache

from .helpers import make_request

pytestmark = pytest.mark.vllm

BLOCK = 32


@pytest.fixture(scope="module")
def oracle_class() -> type:
    pytest.importorskip("vllm", reason="the vLLM CPU build is not installed")
    from tests.oracles.vllm_oracle import VllmKvManagerOracle

    return VllmKvManagerOracle


@st.composite
def streams(
    draw: st.DrawFn, max_blocks: int = 14, max_requests: int = 25
) -> tuple[int, list[tuple[str, list[int]]]]:
    """(pool size, [(session, prompt)]). vLLM ignores sessions; the policy uses them for
    a shortcut (a session's previous run), so sessions interleave and grow, and other
    sessions' requests touch or evict what a session left in the meantime."""
    num_blocks = draw(st.integers(min_value=3, max_value=max_blocks))
    # A few base documents; each request takes a prefix of one (cut anywhere, so inside a
    # block too) and appends its own tail, some of which repeat to create exact re-sends.
    bases = [draw(st.lists(st.integers(0, 3), min_size=0, max_size=6 * BLOCK)) for _ in range(3)]
    count = draw(st.integers(min_value=1, max_value=max_requests))
    requests: list[tuple[str, list[int]]] = []
    for _ in range(count):
        kind = draw(st.integers(0, 3)) if requests else 3
        if kind == 0:  # exact re-send, from the same session
            session, tokens = draw(st.sampled_from(requests))
            requests.append((session, list(tokens)))
            continue
        if kind == 1:  # the session's next turn: its prompt plus a reply and a message
            session, tokens = draw(st.sampled_from(requests))
            grown = draw(st.lists(st.integers(0, 3), min_size=1, max_size=2 * BLOCK))
            requests.append((session, tokens + grown))
            continue
        base = draw(st.sampled_from(bases))
        cut = draw(st.integers(0, len(base)))
        tail_size = draw(st.integers(1, 3 * BLOCK))
        if draw(st.booleans()):  # end exactly on a block boundary (the len - 1 rule bites)
            tail_size += -(cut + tail_size) % BLOCK
        tail = draw(st.lists(st.integers(0, 3), min_size=tail_size, max_size=tail_size))
        requests.append((f"s{draw(st.integers(0, 2))}", base[:cut] + tail))
    return num_blocks, requests


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stream=streams())
def test_hits_and_free_queue_equal_vllm(
    oracle_class: type, stream: tuple[int, list[tuple[str, list[int]]]]
) -> None:
    _replay_against_vllm(oracle_class, *stream)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stream=streams(max_blocks=80, max_requests=40))
def test_hits_and_free_queue_equal_vllm_with_room(
    oracle_class: type, stream: tuple[int, list[tuple[str, list[int]]]]
) -> None:
    """Pools large enough that sessions often find their previous blocks untouched by
    eviction while other sessions move the prefixes they share: the shortcuts' case."""
    _replay_against_vllm(oracle_class, *stream)


def _replay_against_vllm(
    oracle_class: type, num_blocks: int, requests: list[tuple[str, list[int]]]
) -> None:
    oracle = oracle_class(BLOCK, num_blocks, max_model_len=32 * BLOCK)
    ours = VllmPrefixCache(BLOCK, num_blocks)
    for index, (session, tokens) in enumerate(requests):
        expected_hit = oracle.process(tokens)
        usage = ours.process(make_request(tokens, at=float(index), line=index + 1, session=session))
        # A request vLLM does not admit (None) is all uncached for us and changes nothing.
        assert usage.cache_read_tokens == (expected_hit or 0), f"request {index}"
        assert ours.free_block_order() == oracle.free_block_order(), f"after request {index}"


def test_recipe_trace_from_the_cpu_notes(oracle_class: type) -> None:
    """A 9-request eviction trace (A96, B96, A[:64]+40, C128, A+5, B+5, D200, C+1, A+1 over
    9 blocks of 32) with the hits vLLM 0.32's CPU engine gave for it when run here
    (0,0,64,0,64,0,0,0,0) and the free queue it listed after A[:64]+40 (docs/testing.md)."""
    a, b, c, d = (
        list(range(base, base + n))
        for base, n in ((1000, 96), (2000, 96), (3000, 128), (4000, 200))
    )
    trace = [
        a,
        b,
        a[:64] + list(range(5000, 5040)),
        c,
        [*a, 1, 2, 3, 4, 5],
        [*b, 1, 2, 3, 4, 5],
        d,
        [*c, 7],
        [*a, 9],
    ]
    ours = VllmPrefixCache(BLOCK, 9)
    hits = [
        ours.process(make_request(t, at=float(i))).cache_read_tokens
        for i, t in enumerate(trace[:3])
    ]
    assert hits == [0, 0, 64]
    assert ours.free_block_order() == [8, 3, 6, 5, 4, 7, 2, 1]
    hits += [
        ours.process(make_request(t, at=float(i))).cache_read_tokens
        for i, t in enumerate(trace[3:], 3)
    ]
    assert hits == [0, 0, 64, 0, 64, 0, 0, 0, 0]


def test_a_duplicate_key_is_found_in_its_oldest_block(oracle_class: type) -> None:
    """vLLM keeps equal keys in several blocks and a lookup takes the earliest cached.

    Two blocks of A (block size 32): the first request caches A0, A1 in blocks 1, 2.
    The resend may look up only (64 - 1) // 32 = 1 block, so A1 is cached again, in
    block 3 (a duplicate). A + 1 token then hits A0 and A1 from block 2 (the oldest),
    not block 3: the free queue shows which block was touched and moved to the back.
    """
    a = list(range(100, 164))
    trace = [a, a, [*a, 7]]
    oracle = oracle_class(BLOCK, 8, max_model_len=32 * BLOCK)
    ours = VllmPrefixCache(BLOCK, 8)
    for index, tokens in enumerate(trace):
        expected_hit = oracle.process(tokens)
        usage = ours.process(make_request(tokens, at=float(index), line=index + 1))
        assert usage.cache_read_tokens == expected_hit
        assert ours.free_block_order() == oracle.free_block_order()
    # By hand: after the third request the touched blocks 1 (A0) and 2 (A1) are freed
    # last, deepest first, behind the duplicate 3 and the unused tail blocks.
    assert ours.free_block_order()[-2:] == [2, 1]


def test_a_session_resumes_after_another_session_touched_its_blocks(
    oracle_class: type,
) -> None:
    """Session s1 sends P = A + 1 token (A: 3 blocks of 32), s2 then hits A's first
    block only, and s1 sends P + 1 token. The second request takes block A0 out of what
    s1 left; the third must still find A0, A1, A2 in their own blocks. Hits by hand:
    0, then 32 (A0; limit (96 - 1) // 32 = 2 blocks, and Q's second block is new), then
    96 (limit (98 - 1) // 32 = 3 blocks, all cached)."""
    a = list(range(200, 296))
    trace = [("s1", [*a, 1]), ("s2", a[:32] + list(range(500, 564))), ("s1", [*a, 1, 2])]
    oracle = oracle_class(BLOCK, 10, max_model_len=32 * BLOCK)
    ours = VllmPrefixCache(BLOCK, 10)
    hits = []
    for index, (session, tokens) in enumerate(trace):
        oracle.process(tokens)
        request = make_request(tokens, at=float(index), line=index + 1, session=session)
        hits.append(ours.process(request).cache_read_tokens)
        assert ours.free_block_order() == oracle.free_block_order(), f"after request {index}"
    assert hits == [0, 32, 96]
