"""Chained block keys: equal prefixes give equal keys, any difference changes the rest."""

from __future__ import annotations

import struct

import pytest
from xxhash import xxh3_128_digest

from cachecast.simulator import blocks
from cachecast.simulator.blocks import (
    BlockKeyer,
    chain_keys,
    namespace_seed,
    trace_keys,
)

from .helpers import make_request, make_trace_request, run

SEED = namespace_seed("m", "org")


def test_one_key_per_full_block_and_none_for_the_partial_tail() -> None:
    # 40 tokens in 16-token blocks: 2 full blocks (32 tokens), 8 tokens left over.
    assert len(chain_keys(run(40, 0), 16, SEED)) == 2
    assert len(chain_keys(run(15, 0), 16, SEED)) == 0


def test_a_difference_changes_its_block_and_every_later_one() -> None:
    base = run(64, 0)
    changed = list(base)
    changed[20] = 999_999  # inside block 1 (tokens 16..31)
    left, right = chain_keys(base, 16, SEED), chain_keys(changed, 16, SEED)
    assert left[0] == right[0]
    assert all(a != b for a, b in zip(left[1:], right[1:], strict=True))


def test_the_chain_covers_the_parent_not_just_the_block() -> None:
    # Block 1 holds the same tokens in both prompts, but block 0 differs.
    first = run(16, 0) + run(16, 500)
    second = run(16, 100) + run(16, 500)
    assert chain_keys(first, 16, SEED)[1] != chain_keys(second, 16, SEED)[1]


def test_model_and_scope_separate_namespaces() -> None:
    tokens = run(32, 0)
    keys = chain_keys(tokens, 16, SEED)
    assert chain_keys(tokens, 16, namespace_seed("other-model", "org"))[0] != keys[0]
    assert chain_keys(tokens, 16, namespace_seed("m", "other-org"))[0] != keys[0]


def test_session_reuse_gives_the_keys_of_hashing_from_scratch() -> None:
    keyer = BlockKeyer(16)
    first = run(100, 0)
    grown = [*first, *run(50, 1000)]  # the session resends its prompt and grows
    diverged = first[:37] + run(80, 2000)  # then changes inside block 2
    for tokens in (first, grown, diverged, first):
        request = make_request(tokens, session="s")
        assert keyer.keys(request) == chain_keys(tokens, 16, keyer.seed(request))


def test_trace_ids_are_keys_inside_a_namespace() -> None:
    assert trace_keys([1, 2], SEED) == trace_keys([1, 2], SEED)
    assert trace_keys([1], SEED) != trace_keys([1], namespace_seed("m", "other-org"))
    # A trace request of 1,100 tokens in 512-token blocks has 2 full blocks: the third id
    # stands for a partial block and gets no key.
    keyer = BlockKeyer(512)
    assert len(keyer.keys(make_trace_request([7, 8, 9], 1100))) == 2


def test_keys_are_xxh3_128_over_the_parent_key_and_the_token_ids() -> None:
    """The construction the module documents, computed here independently."""
    tokens = run(40, 7)
    first = xxh3_128_digest(SEED + struct.pack("<16I", *tokens[:16]))
    second = xxh3_128_digest(first + struct.pack("<16I", *tokens[16:32]))
    assert chain_keys(tokens, 16, SEED) == [first, second]


def test_a_new_session_reuses_the_keys_of_a_prompt_with_the_same_opening(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Sessions without history start hashing where they part from the latest prompt
    that opened with the same block; the keys equal hashing from scratch."""
    keyer = BlockKeyer(16)
    system = run(40, 0)  # 2 full blocks and 8 tokens of a third
    prompts = [
        ("a", system + run(30, 1000)),
        ("b", system + run(30, 2000)),  # parts inside block 2: blocks 0-1 reused
        ("c", system[:20] + run(50, 3000)),  # parts inside block 1: block 0 reused
        ("d", run(16, 9) + system[16:]),  # another opening block: nothing to reuse
        (None, system + run(5, 4000)),  # no session id at all
    ]
    requests = [make_request(tokens, session=session) for session, tokens in prompts]
    from_scratch = [chain_keys(r.tokens or [], 16, keyer.seed(r)) for r in requests]
    starts: list[int] = []
    hash_from = blocks.chain_keys_from_bytes

    def recording(
        data: bytes, size: int, seed: bytes, start: int = 0, parent: bytes | None = None
    ) -> list[bytes]:
        starts.append(start)
        return hash_from(data, size, seed, start, parent)

    monkeypatch.setattr(blocks, "chain_keys_from_bytes", recording)
    assert [keyer.keys(request) for request in requests] == from_scratch
    assert starts == [0, 2, 1, 0, 1]
