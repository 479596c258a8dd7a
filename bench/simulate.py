"""Speed of the vllm policy against vLLM's own KV-cache manager on agent-shaped traffic.

Generates a deterministic stream shaped like agent traffic: a few long shared system
prompts (Zipf popularity), many concurrent sessions whose prompt grows every turn (the
previous prompt + the model's reply + a tool result or user message), sessions that end
or overflow the context and restart. Then:

1. cachecast's vllm policy and vLLM 0.32's ``KVCacheManager`` (driven directly: a
   ``Request`` with vLLM's sha256 block hasher, get_computed_blocks, allocate_slots,
   free) both replay the first ``--vllm-requests`` requests of the stream, cold, with the
   same block size and number of blocks, side by side request by request. The
   per-request hit counts must be equal; both are timed from token ids to hit counts, and
   blocks/s and the ratio are printed.
   (vLLM runs on this prefix of the stream only: at its speed the full stream would take
   hours. Say so when quoting the figure.)
2. cachecast alone replays the whole stream (default one million requests) and prints
   its blocks/s and hit rate there.

Blocks counted per request: ceil(prompt tokens / block size), the same for both sides.
Times are CPU time of this process (``time.process_time``), so other work on a shared
machine does not skew the ratio; stream generation is outside the timed sections.
Run: ``.venv/bin/python bench/simulate.py [--requests N] [--vllm-requests M]``.
"""

from __future__ import annotations

import sys

# bench/ holds a tokenize.py that would shadow the standard library's `tokenize` (imported
# by inspect, linecache, ...) when this script's folder leads sys.path.
if sys.path and sys.path[0].endswith("bench"):
    sys.path.pop(0)

import argparse
import itertools
import time
from array import array
from collections.abc import Iterator

import numpy as np

from cachecast.simulator.policies.vllm import VllmPrefixCache
from cachecast.tokenizers.types import TokenizedRequest


def agent_stream(
    requests: int,
    seed: int,
    *,
    system_prompts: int = 32,
    active_sessions: int = 48,
    max_context: int = 8192,
    vocab: int = 100_000,
) -> Iterator[tuple[str, array[int]]]:
    """(session id, prompt token ids); the array is reused: consume it before the next."""
    rng = np.random.default_rng(seed)
    prompts = [
        rng.integers(0, vocab, size=int(rng.integers(500, 3000)), dtype=np.uint32).tobytes()
        for _ in range(system_prompts)
    ]
    popularity = 1.0 / np.arange(1, system_prompts + 1)
    popularity /= popularity.sum()
    slots: list[array[int] | None] = [None] * active_sessions
    names = [""] * active_sessions
    started = 0
    for _ in range(requests):
        slot = int(rng.integers(active_sessions))
        prompt = slots[slot]
        if prompt is None or len(prompt) > max_context or rng.random() < 0.04:
            prompt = array("I")
            prompt.frombytes(prompts[int(rng.choice(system_prompts, p=popularity))])
            started += 1
            names[slot] = f"s{started}"
            slots[slot] = prompt
        else:  # the model's previous reply, then a tool result or user message
            prompt.frombytes(
                rng.integers(0, vocab, size=int(rng.integers(20, 200)), dtype=np.uint32).tobytes()
            )
        prompt.frombytes(
            rng.integers(0, vocab, size=int(rng.integers(20, 400)), dtype=np.uint32).tobytes()
        )
        yield names[slot], prompt


def as_request(index: int, session: str, tokens: array[int]) -> TokenizedRequest:
    return TokenizedRequest(
        source="bench",
        line=index + 1,
        request_id=str(index),
        timestamp=float(index),
        scope="org",
        provider=None,
        model="m",
        input_tokens=len(tokens),
        output_tokens=1,
        tokens=tokens,
        session=session,
    )


def run_cachecast(
    requests: int, seed: int, block_size: int, num_blocks: int, keep_hits: bool
) -> tuple[float, int, int, int, list[int]]:
    """(seconds, blocks, hit tokens, input tokens, per-request hits if kept)."""
    policy = VllmPrefixCache(block_size, num_blocks)
    hits: list[int] = []
    blocks = hit_tokens = input_tokens = 0
    elapsed = 0.0
    report_every = max(1, requests // 20)
    for index, (session, tokens) in enumerate(agent_stream(requests, seed)):
        request = as_request(index, session, tokens)
        started = time.process_time()
        usage = policy.process(request)
        elapsed += time.process_time() - started
        blocks += -(-len(tokens) // block_size)
        hit_tokens += usage.cache_read_tokens
        input_tokens += usage.input_tokens
        if keep_hits:
            hits.append(usage.cache_read_tokens)
        if sys.stderr.isatty() and index % report_every == 0:
            print(f"\r  cachecast {index:,}/{requests:,}", end="", file=sys.stderr)
    if sys.stderr.isatty():
        print("\r" + " " * 40 + "\r", end="", file=sys.stderr)
    return elapsed, blocks, hit_tokens, input_tokens, hits


CHUNK = 500


def run_paired(
    requests: int, seed: int, block_size: int, num_blocks: int, max_context: int
) -> dict[str, float]:
    """Both engines on the same stream in alternating chunks of ``CHUNK`` requests.

    Machine load varies on a shared host; alternating chunks (and which engine goes first)
    spreads it over both alike, while each engine keeps its own working set hot within a
    chunk (interleaving single requests would make each flush the other's CPU caches).
    """
    from cachecast.simulator.vllm_oracle import VllmKvManagerOracle

    ours = VllmPrefixCache(block_size, num_blocks)
    oracle = VllmKvManagerOracle(block_size, num_blocks, max_model_len=2 * max_context + 4096)
    manager = oracle.manager
    request_class = oracle._request_class
    clock = time.process_time
    totals = dict.fromkeys(
        ("ours_s", "vllm_s", "vllm_hash_s", "blocks", "hit_tokens", "input", "mismatches"), 0.0
    )

    def run_ours(chunk: list[TokenizedRequest]) -> list[int]:
        started = clock()
        hits = [ours.process(request).cache_read_tokens for request in chunk]
        totals["ours_s"] += clock() - started
        return hits

    def run_vllm(chunk: list[TokenizedRequest]) -> list[int]:
        hits = []
        token_lists = [list(request.tokens or ()) for request in chunk]
        for request, token_list in zip(chunk, token_lists, strict=True):
            started = clock()
            vllm_request = request_class(
                request.request_id,
                token_list,
                oracle._sampling,
                None,
                block_hasher=oracle._hasher,
            )
            hashed = clock()
            computed, hit, _ = manager.get_computed_blocks(vllm_request)
            length = len(token_list)
            if manager.allocate_slots(vllm_request, length - hit, hit, computed) is None:
                raise RuntimeError(f"request {request.request_id} did not fit the pool")
            vllm_request.num_computed_tokens = length
            manager.free(vllm_request)
            finished = clock()
            totals["vllm_s"] += finished - started
            totals["vllm_hash_s"] += hashed - started
            hits.append(int(hit))
        return hits

    stream = agent_stream(requests, seed)
    for chunk_number in itertools.count():
        chunk = [
            as_request(index, session, array("I", tokens))  # a snapshot: the stream reuses it
            for index, (session, tokens) in zip(range(CHUNK), stream, strict=False)
        ]
        if not chunk:
            break
        if chunk_number % 2:
            ours_hits, vllm_hits = run_ours(chunk), run_vllm(chunk)
        else:
            vllm_hits, ours_hits = run_vllm(chunk), run_ours(chunk)
        totals["mismatches"] += sum(a != b for a, b in zip(ours_hits, vllm_hits, strict=True))
        totals["blocks"] += sum(-(-request.input_tokens // block_size) for request in chunk)
        totals["hit_tokens"] += sum(ours_hits)
        totals["input"] += sum(request.input_tokens for request in chunk)
    return totals


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1_000_000)
    parser.add_argument("--vllm-requests", type=int, default=10_000)
    parser.add_argument("--block-size", type=int, default=16)
    parser.add_argument("--num-blocks", type=int, default=16_384)
    parser.add_argument("--seed", type=int, default=20261202)
    args = parser.parse_args()
    size, pool, seed = args.block_size, args.num_blocks, args.seed
    head = min(args.vllm_requests, args.requests)

    print(f"stream: agent-shaped, seed {seed}, block size {size}, {pool:,} blocks")
    print(f"[1] same stream, first {head:,} requests, cold start, both engines")
    paired = run_paired(head, seed, size, pool, 8192)
    blocks, mismatches = int(paired["blocks"]), int(paired["mismatches"])
    print(
        f"    blocks {blocks:,}; hit tokens {int(paired['hit_tokens']):,}"
        f" of {int(paired['input']):,}"
    )
    print(f"    per-request hits equal: {mismatches == 0} ({mismatches} differ)")
    ours_s, vllm_s, vllm_hash_s = paired["ours_s"], paired["vllm_s"], paired["vllm_hash_s"]
    ours_rate, vllm_rate = blocks / ours_s, blocks / vllm_s
    print(f"    cachecast vllm policy: {ours_s:8.2f} s  {ours_rate:12,.0f} blocks/s")
    print(
        f"    vLLM KVCacheManager:   {vllm_s:8.2f} s  {vllm_rate:12,.0f} blocks/s"
        f"  ({vllm_hash_s:.2f} s of it hashing in Request(); manager calls alone"
        f" {blocks / (vllm_s - vllm_hash_s):,.0f} blocks/s)"
    )
    print(f"    ratio cachecast / vLLM: {ours_rate / vllm_rate:.1f}x (target >= 20x)")

    print(f"[2] cachecast alone, whole stream: {args.requests:,} requests")
    full_s, full_blocks, full_hit, full_input, _ = run_cachecast(
        args.requests, seed, size, pool, keep_hits=False
    )
    print(f"    blocks {full_blocks:,}; hit rate {full_hit / full_input:.4f} (tokens, cold)")
    print(f"    cachecast vllm policy: {full_s:8.2f} s  {full_blocks / full_s:12,.0f} blocks/s")
    return 0 if mismatches == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
