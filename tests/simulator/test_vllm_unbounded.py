"""The never-evicting vLLM pool: the same usage as VllmPrefixCache(block, None), and its
key set exact for every key width."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cachecast.simulator.blocks import KEY_BYTES, BlockKeyer
from cachecast.simulator.policies.vllm import UNBOUNDED_BLOCKS, VllmPrefixCache
from cachecast.simulator.policies.vllm_unbounded import KeySet, NeverEvictingVllmCache
from cachecast.tokenizers.types import TokenizedRequest

from .helpers import make_request, make_trace_request, run

Stream = list[TokenizedRequest]


@st.composite
def streams(draw: st.DrawFn, block: int) -> Stream:
    """Sessions that grow and re-send, prefixes of a few shared documents cut anywhere,
    lengths on block boundaries (the len - 1 rule), two scopes, empty prompts, and
    block-level trace requests (32-byte keys) among token requests (16-byte keys)."""
    bases = [draw(st.lists(st.integers(0, 3), min_size=0, max_size=6 * block)) for _ in range(3)]
    count = draw(st.integers(min_value=1, max_value=40))
    sent: list[tuple[str, str, list[int]]] = []
    trace_ids: dict[tuple[int, ...], int] = {}
    stream: Stream = []
    for index in range(count):
        at, line = float(index), index + 1
        kind = draw(st.integers(0, 5)) if sent else 3
        if kind == 5:  # a trace request: chained ids, a partial last block or not
            # A trace's id stands for its block and every block before it (the format's
            # chain, simulator/blocks.py): one id per distinct prefix of choices.
            choices = draw(st.lists(st.integers(0, 2), min_size=0, max_size=6))
            prefixes = [tuple(choices[: depth + 1]) for depth in range(len(choices))]
            ids = [trace_ids.setdefault(prefix, len(trace_ids)) for prefix in prefixes]
            extra = draw(st.integers(0, block - 1)) if ids else 0
            length = max(0, len(ids) * block - extra)
            stream.append(make_trace_request(ids, length, block_size=block, at=at, line=line))
            continue
        if kind == 0:  # an exact re-send
            session, scope, tokens = draw(st.sampled_from(sent))
        elif kind == 1:  # the session's next turn
            session, scope, tokens = draw(st.sampled_from(sent))
            tokens = tokens + draw(st.lists(st.integers(0, 3), min_size=1, max_size=2 * block))
        elif kind == 2:  # an empty prompt
            session, scope, tokens = "empty", "org", []
        else:
            base = draw(st.sampled_from(bases))
            cut = draw(st.integers(0, len(base)))
            tail_size = draw(st.integers(1, 3 * block))
            if draw(st.booleans()):
                tail_size += -(cut + tail_size) % block
            tail = draw(st.lists(st.integers(0, 3), min_size=tail_size, max_size=tail_size))
            session = f"s{draw(st.integers(0, 2))}"
            scope = draw(st.sampled_from(["org", "other"]))
            tokens = base[:cut] + tail
        sent.append((session, scope, tokens))
        stream.append(make_request(tokens, at=at, line=line, session=session, scope=scope))
    return stream


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(),
    block=st.sampled_from([1, 2, 4, 8]),
    checkpoint=st.sampled_from([None, 3, 8, 12]),
    recent_keys=st.integers(1, 6),
)
def test_every_usage_equals_the_unbounded_vllm_pool(
    data: st.DataObject, block: int, checkpoint: int | None, recent_keys: int
) -> None:
    """A tiny recent set makes nearly every request flush and merge arrays."""
    stream = data.draw(streams(block))
    reference = VllmPrefixCache(block, None, state_checkpoint_tokens=checkpoint)
    compact = NeverEvictingVllmCache(
        block, state_checkpoint_tokens=checkpoint, recent_keys=recent_keys
    )
    for request in stream:
        peeked = compact.peek_hit_tokens(request)
        assert peeked == reference.peek_hit_tokens(request), request.line
        expected = reference.process(request)
        got = compact.process(request)
        assert got == expected, request.line
        assert got.cache_read_tokens == peeked, request.line
        assert compact.cached_block_count() == reference.cached_block_count(), request.line
    assert compact.num_blocks == reference.num_blocks == UNBOUNDED_BLOCKS


def test_a_hand_computed_stream() -> None:
    """Blocks of 4 tokens, hybrid checkpoints every 8 tokens (alignment lcm(4, 8) = 8)."""
    policy = NeverEvictingVllmCache(4, state_checkpoint_tokens=8, recent_keys=2)
    a = run(10, 0)  # blocks [0-3] [4-7], a partial [8-9]
    first = policy.process(make_request(a))
    # Nothing cached: 2 full blocks written (8 tokens), 2 partial tokens uncached.
    assert (first.cache_read_tokens, first.cache_write_tokens) == (0, {"kv": 8})
    assert first.uncached_input_tokens == 2
    # Re-send: lookups cover floor(9/4) = 2 blocks, both cached: 8 tokens, a multiple of 8.
    again = policy.process(make_request(a, at=1.0))
    assert (again.cache_read_tokens, again.cache_write_tokens) == (8, {})
    # a + 2 tokens = 12: lookups floor(11/4) = 2 blocks hit; block 3 [8-11] is new.
    grown = policy.process(make_request([*a, 10, 11], at=2.0))
    assert (grown.cache_read_tokens, grown.cache_write_tokens) == (8, {"kv": 4})
    # 13 tokens: floor(12/4) = 3 blocks cached = 12 tokens, trimmed to 8 by the alignment;
    # vLLM recomputes block 3 and caches it again: writes = 3 full blocks - 2 = 4 tokens.
    longer = policy.process(make_request([*a, 10, 11, 12], at=3.0))
    assert (longer.cache_read_tokens, longer.cache_write_tokens) == (8, {"kv": 4})
    assert longer.uncached_input_tokens == 1
    # Keyed blocks, duplicates counted as vLLM counts them: 2 + 0 + 1 + 1.
    assert policy.cached_block_count() == 4
    # Another scope shares nothing.
    other = policy.process(make_request(a, at=4.0, scope="elsewhere"))
    assert (other.cache_read_tokens, other.cache_write_tokens) == (0, {"kv": 8})
    # A divergence inside the first block: no hit.
    assert policy.peek_hit_tokens(make_request([9, *a[1:]], at=5.0)) == 0


def test_block_keys_are_16_bytes_and_trace_keys_32() -> None:
    """The widths the key set meets (simulator/blocks.py): XXH3-128 digests for token
    prompts, namespace seed + 16-byte id for block-level traces."""
    keyer = BlockKeyer(4)
    assert {len(key) for key in keyer.keys(make_request(run(12, 0)))} == {KEY_BYTES} == {16}
    trace = make_trace_request([1, 2], 8, block_size=4)
    assert {len(key) for key in keyer.keys(trace)} == {32}


def test_the_key_set_is_exact_for_any_width_and_trailing_nul_bytes() -> None:
    """numpy's bytes arrays pad with NUL bytes: keys that differ only there, or in width,
    must stay apart."""
    keys = KeySet(recent_keys=1)
    stored = [b"a" * 16, b"a" * 15 + b"\x00", b"\x00" * 16, b"b" * 32, b"c" * 7, b""]
    for key in stored:
        keys.add([key])
    probes = [
        b"a" * 16,
        b"a" * 15 + b"\x00",
        b"a" * 15,  # 15 wide: never added
        b"\x00" * 16,
        b"\x00" * 15 + b"\x01",
        b"b" * 32,
        b"b" * 31 + b"\x00",
        b"c" * 7,
        b"c" * 7 + b"\x00",
        b"",
        b"d" * 16,
    ]
    expected = [probe in stored for probe in probes]
    assert keys.contains(probes).tolist() == expected
    for probe, present in zip(probes, expected, strict=True):
        assert keys.contains([probe]).tolist() == [present]
    assert len(keys) == len(stored)


@settings(max_examples=80, deadline=None)
@given(
    batches=st.lists(st.lists(st.binary(min_size=2, max_size=2), max_size=8), max_size=30),
    recent_keys=st.integers(1, 5),
)
def test_the_key_set_holds_exactly_what_was_added(
    batches: list[list[bytes]], recent_keys: int
) -> None:
    keys = KeySet(recent_keys=recent_keys)
    added: set[bytes] = set()
    universe = [bytes([high, low]) for high in (0, 1) for low in range(4)]
    for batch in batches:
        assert keys.contains(universe).tolist() == [key in added for key in universe]
        keys.add(batch)
        added.update(batch)
    assert len(keys) == len(added)
