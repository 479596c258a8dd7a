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
    from cachecast.simulator.vllm_oracle import VllmKvManagerOracle

    return VllmKvManagerOracle


@st.composite
def streams(draw: st.DrawFn) -> tuple[int, list[list[int]]]:
    num_blocks = draw(st.integers(min_value=3, max_value=14))
    # A few base documents; each request takes a prefix of one (cut anywhere, so inside a
    # block too) and appends its own tail, some of which repeat to create exact re-sends.
    bases = [draw(st.lists(st.integers(0, 3), min_size=0, max_size=6 * BLOCK)) for _ in range(3)]
    count = draw(st.integers(min_value=1, max_value=25))
    requests: list[list[int]] = []
    for _ in range(count):
        if requests and draw(st.integers(0, 3)) == 0:
            requests.append(list(draw(st.sampled_from(requests))))  # exact re-send
            continue
        base = draw(st.sampled_from(bases))
        cut = draw(st.integers(0, len(base)))
        tail_size = draw(st.integers(1, 3 * BLOCK))
        if draw(st.booleans()):  # end exactly on a block boundary (the len - 1 rule bites)
            tail_size += -(cut + tail_size) % BLOCK
        tail = draw(st.lists(st.integers(0, 3), min_size=tail_size, max_size=tail_size))
        requests.append(base[:cut] + tail)
    return num_blocks, requests


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stream=streams())
def test_hits_and_free_queue_equal_vllm(oracle_class: type, stream: tuple[int, list[list[int]]]):
    num_blocks, requests = stream
    oracle = oracle_class(BLOCK, num_blocks, max_model_len=32 * BLOCK)
    ours = VllmPrefixCache(BLOCK, num_blocks)
    for index, tokens in enumerate(requests):
        expected_hit = oracle.process(tokens)
        usage = ours.process(make_request(tokens, at=float(index), line=index + 1))
        # A request vLLM does not admit (None) is all uncached for us and changes nothing.
        assert usage.cache_read_tokens == (expected_hit or 0), f"request {index}"
        assert ours.free_block_order() == oracle.free_block_order(), f"after request {index}"


def test_recipe_trace_from_the_cpu_notes(oracle_class: type) -> None:
    """The 9-request trace of vllm-cpu-notes.md section 5, with the hits the real engine
    gave there (0,0,64,0,64,0,0,0,0) and the free queue it listed after A[:64]+40."""
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
