"""Request streams with their expected per-request cached tokens, derived by hand.

Rules used (vLLM v1 automatic prefix caching, block size 32, read from vllm/v1/core):
- only full 32-token blocks are cached, keyed by a hash chained over the whole prefix;
- a lookup takes the longest run of cached blocks from the start, at most
  floor((len - 1) / 32) blocks (the last prompt token is always recomputed);
- a finished request's blocks are freed tail first; keyed blocks go to the back of the
  free queue, the partial (unkeyed) tail block to the front; new blocks come off the front.
Different seeds give sequences that differ at their first token (see ``token_ids``).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, replace

from cachecast.gpu_backend.report import MeasurementReport
from cachecast.tokenizers.types import TokenizedRequest
from tests.gpu_backend.conftest import NUM_BLOCKS, as_requests, token_ids


@dataclass(frozen=True)
class Stream:
    name: str
    prompts: list[list[int]]
    expected_cached: list[int]


def shared_prefix() -> Stream:
    prefix = token_ids(1, 96)  # exactly 3 blocks
    return Stream(
        "shared-prefix",
        [prefix + token_ids(2, 10), prefix + token_ids(3, 10), prefix + token_ids(4, 40)],
        # 1st: cold. 2nd (106 tokens): cap floor(105/32)=3 blocks, the 3 prefix blocks are
        # cached -> 96. 3rd (136): cap 4 blocks, 4th block (tokens 96..127) is new -> 96.
        [0, 96, 96],
    )


def diverging_prefix() -> Stream:
    base = token_ids(5, 128)  # 4 blocks
    assert token_ids(7, 1)[0] != base[0] and token_ids(6, 1)[0] != base[64]
    return Stream(
        "diverging-prefix",
        [base, base[:64] + token_ids(6, 64), token_ids(7, 1) + base[1:], [*base, 9]],
        # 1st: cold, caches blocks 0-3. 2nd diverges at token 64 -> blocks 0,1 -> 64.
        # 3rd differs at token 0; the chain breaks at block 0 -> 0 (later blocks equal
        # in tokens but not in chained hash). 4th (129 tokens): cap floor(128/32)=4 blocks,
        # all four cached by the 1st -> 128.
        [0, 64, 0, 128],
    )


def non_block_aligned() -> Stream:
    prefix = token_ids(8, 70)  # 2 full blocks + 6 tokens
    assert token_ids(9, 1) != token_ids(10, 1)
    exact = token_ids(11, 64)
    return Stream(
        "non-block-aligned",
        [prefix + token_ids(9, 10), prefix + token_ids(10, 10), exact, exact],
        # 1st: cold. 2nd (80): only the 2 full blocks of the 70-token prefix match (block 2
        # holds tokens 64..79, which differ after 70) -> 64. 3rd: cold. 4th: identical
        # 64 tokens, cap floor(63/32)=1 block -> 32.
        [0, 64, 0, 32],
    )


def eviction_pressure() -> Stream:
    # Two 100-block prompts against 199 usable blocks (NUM_BLOCKS minus the null block).
    assert NUM_BLOCKS - 1 == 199
    first = token_ids(12, 3200)
    second = token_ids(13, 3200)
    return Stream(
        "eviction-pressure",
        [first, second, [*first, 1], [*second, 2]],
        # 1st: cold, 100 blocks cached, then freed to the back (deepest first).
        # 2nd: cold; needs 100 blocks, 99 never-used ones are left, so the 100th is the
        #   front of the freed ones: 1st's deepest block (index 99) is evicted.
        # 3rd (3201 tokens): cap floor(3200/32)=100 blocks; blocks 0-98 of the 1st are
        #   still cached, block 99 is gone -> 99*32 = 3168. It needs 101-99 = 2 new
        #   blocks: the front of the queue is the 2nd's blocks 99 then 98 -> both evicted.
        # 4th (3201 tokens): the 2nd's blocks 0-97 remain -> 98*32 = 3136.
        [0, 0, 3168, 3136],
    )


CORRECTNESS_STREAMS = [shared_prefix, diverging_prefix, non_block_aligned, eviction_pressure]

LONG_PREFIX = 1984  # 62 blocks


def cold_and_warm(trials: int) -> tuple[list[list[int]], list[bool]]:
    """A 2,000-token prompt cold, then alternately a fresh 2,000-token prompt (cold) and the
    shared 1,984-token prefix plus 16 new tokens (warm: 62 blocks = 1,984 cached tokens).
    One cold prompt plus the shared prefix need 63 + 62 blocks < 199, and the warm request
    after each cold one refreshes the prefix, so LRU never evicts it."""
    prefix = token_ids(20, LONG_PREFIX)
    prompts = [prefix + token_ids(300, 16)]
    warm = [False]
    for trial in range(trials):
        prompts.append(token_ids(100 + trial, 2000))
        warm.append(False)
        prompts.append(prefix + token_ids(200 + trial, 16))
        warm.append(True)
    return prompts, warm


def check_exact_report(report: MeasurementReport, stream: Stream) -> None:
    """A sequential replay of ``stream``: per-request hits equal the hand-derived values and
    the simulator's, and the engine's counters moved by exactly those amounts."""
    assert report.cache_isolation == "reset"
    assert [r.measured_cached_tokens for r in report.requests] == stream.expected_cached
    assert [r.predicted_cached_tokens for r in report.requests] == stream.expected_cached
    assert report.exact_match_share == 1.0
    delta = report.metrics_delta
    assert delta.prefix_cache_queries == sum(len(prompt) for prompt in stream.prompts)
    assert delta.prefix_cache_hits == sum(stream.expected_cached)
    assert delta.ttft_count == len(stream.prompts)
    assert delta.ttft_buckets[-1][1] == len(stream.prompts)  # the +Inf bucket counts them all
    assert report.counters_agree
    assert all(r.ttft_s > 0 and r.latency_s >= r.ttft_s for r in report.requests)
    assert all(r.output_tokens == 1 for r in report.requests)


def check_warm_faster(report: MeasurementReport, warm: list[bool]) -> None:
    """A replay of ``cold_and_warm``: exactly the warm requests hit the long prefix, and
    they start faster (relative, within one run; the first of each kind is a warm-up)."""
    assert [r.measured_cached_tokens for r in report.requests] == [
        LONG_PREFIX if is_warm else 0 for is_warm in warm
    ]
    cold_ttft = [r.ttft_s for r, is_warm in zip(report.requests, warm, strict=True) if not is_warm]
    warm_ttft = [r.ttft_s for r, is_warm in zip(report.requests, warm, strict=True) if is_warm]
    assert statistics.median(warm_ttft[1:]) < statistics.median(cold_ttft[1:])
    assert report.metrics_delta.ttft_count == len(warm)


PACED_GAP_S = 0.1  # log time between two paced requests
PACED_SCALE = 2.0  # the replay stretches the log's gaps by this factor


def paced_requests(stream: Stream, start: float) -> list[TokenizedRequest]:
    """``stream``'s prompts PACED_GAP_S apart in the log, from ``start``."""
    return [
        replace(request, timestamp=start + PACED_GAP_S * index)
        for index, request in enumerate(as_requests(stream.prompts, "paced"))
    ]


def check_paced_report(
    report: MeasurementReport, requests: list[TokenizedRequest], stream: Stream
) -> None:
    """A concurrent replay at PACED_SCALE: one result per request in log order, not sent
    before its scaled arrival, and the engine's counters agree with its own per-request
    figures (batched neighbours may hit one another's blocks, so no prediction is checked)."""
    assert [r.request_id for r in report.requests] == [r.request_id for r in requests]
    # The last of 4 requests may not be sent before its scaled arrival: 3 gaps * 0.1 s * 2.
    assert len(requests) == 4
    assert report.wall_s >= 0.6
    assert report.metrics_delta.prefix_cache_queries == sum(len(p) for p in stream.prompts)
    assert report.counters_agree
