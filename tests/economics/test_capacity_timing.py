"""Capacity, the decode ceiling, B*, prefill FLOPs and the roofline, on hand numbers."""

from __future__ import annotations

from fractions import Fraction

import pytest

from cachecast.economics.capacity import Deployment, kv_capacity
from cachecast.economics.geometry import from_hf_config, load_model
from cachecast.economics.hardware import (
    Accelerator,
    UnknownAcceleratorError,
    accelerator_names,
    get_accelerator,
)
from cachecast.economics.timing import (
    attention_pairs,
    b_star,
    decode_ceiling,
    fetch_beats_recompute,
    prefill_flops,
    prefill_seconds_many,
    prefill_time,
    tier_fetch_seconds,
)
from cachecast.usecases.capacity import CapacityFacts


def _tiny_accelerator(peak: int, bandwidth: int, link: int = 1) -> Accelerator:
    """A made-up accelerator with round numbers, so that times can be checked by hand."""
    return Accelerator(
        name="toy",
        label="toy",
        vendor="test",
        memory_bytes=10**6,
        memory_bandwidth_bytes_s=bandwidth,
        bf16_dense_flops=Fraction(peak),
        host_link_bytes_s=link,
        host_link="test",
        source="test",
        checked_on="2026-12-02",
        check="test",
    )


def _tiny_model(params: int = 1000, window: int | None = None):
    # 2 layers, 4 query heads of width 8, 1 KV head: 2*1*8 = 16 elements/layer/token.
    config = {
        "hidden_size": 32,
        "num_attention_heads": 4,
        "num_key_value_heads": 1,
        "head_dim": 8,
        "num_hidden_layers": 2,
        "vocab_size": 10,
        "intermediate_size": 8,
    }
    if window is not None:
        config["sliding_window"] = window
    return from_hf_config(config, name="tiny", source="test", params_total=params)


def test_hardware_table_has_the_required_rows_with_source_and_date() -> None:
    for name in ("h100-sxm", "h200", "b200", "a100-80gb", "l40s", "mi300x"):
        accelerator = get_accelerator(name)
        assert accelerator.source.startswith("https://")
        assert accelerator.checked_on == "2026-12-02"
    # H100 SXM: 80 GB, 3.35 TB/s, 989.4 dense BF16 TFLOPS kept exact (not a binary float).
    h100 = get_accelerator("H100")
    assert h100.memory_bytes == 80 * 10**9
    assert h100.memory_bandwidth_bytes_s == 3_350 * 10**9
    assert h100.bf16_dense_flops == 989_400 * 10**9
    with pytest.raises(UnknownAcceleratorError, match="known: a100-80gb"):
        get_accelerator("tpu-v9")
    assert len(accelerator_names()) >= 6


def test_capacity_llama_8b_on_l40s_by_hand() -> None:
    deployment = Deployment(load_model("llama-3.1-8b"), get_accelerator("l40s"))
    result = kv_capacity(deployment, 8192)
    # usable 48e9 * 0.9 = 43,200,000,000; weights 16,060,522,496 -> budget 27,139,477,504.
    assert result.usable_bytes == 43_200_000_000
    assert result.kv_budget_bytes == 27_139_477_504
    # block = 16 tokens * 131,072 = 2,097,152 B; 2,097,152 * 12,941 = 27,139,244,032 and the
    # remainder 233,472 is less than a block -> 12,941 blocks = 207,056 tokens.
    assert result.block_bytes == 2_097_152
    assert result.num_blocks == 12_941
    assert result.kv_capacity_tokens == 207_056
    # One 8,192-token request holds 8,192 * 131,072 = 1,073,741,824 B;
    # 27,139,477,504 / 1,073,741,824 = 25.3 -> 25 at once.
    assert result.max_concurrent_requests == 25
    assert result.fits and result.error is None


def test_model_that_does_not_fit() -> None:
    # 70.55e9 params * 2 B = 141.1 GB of weights against 80 GB * 0.9 = 72 GB usable.
    result = kv_capacity(Deployment(load_model("llama-3.3-70b"), get_accelerator("h100")), 4096)
    assert not result.fits
    assert (result.num_blocks, result.kv_capacity_tokens, result.max_concurrent_requests) == (
        0,
        0,
        0,
    )
    assert result.error is not None
    assert "short by 69.1 GB" in result.error  # 141.107 - 72.0
    assert CapacityFacts.of(result).kv_budget_bytes == 0  # reported as 0, not negative
    # With two GPUs the weights fit (144 GB usable) but a 131,072-token request needs
    # 131,072 * 327,680 = 42.9 GB of KV against a 2.9 GB budget: fits, zero concurrency.
    two = kv_capacity(
        Deployment(load_model("llama-3.3-70b"), get_accelerator("h100"), gpus=2), 131_072
    )
    assert two.fits and two.max_concurrent_requests == 0
    assert two.error is not None and "only 2.89 GB" in two.error


def test_kv_dtype_scales_capacity_exactly() -> None:
    bf16 = kv_capacity(Deployment(load_model("llama-3.1-8b"), get_accelerator("l40s")), 8192)
    int4 = kv_capacity(
        Deployment(load_model("llama-3.1-8b"), get_accelerator("l40s"), kv_dtype="int4"), 8192
    )
    # int4 blocks are a quarter of bf16 ones: 2,097,152 / 4 = 524,288 B.
    assert int4.block_bytes == 524_288
    # 27,139,477,504 / 524,288 = 51,764.7 -> 51,764 blocks (bf16 gave 12,941).
    assert int4.num_blocks == 51_764
    assert bf16.num_blocks == 12_941


def test_decode_ceiling_and_b_star_by_hand() -> None:
    deployment = Deployment(load_model("llama-3.1-8b"), get_accelerator("h100"))
    # W = 16,060,522,496; kv(1,024) = 1,024 * 131,072 = 134,217,728; B = 8:
    # W + 8 * kv = 16,060,522,496 + 1,073,741,824 = 17,134,264,320;
    # Q = 8 * 3.35e12 / 17,134,264,320 = 1,564.1... tokens/s.
    q = decode_ceiling(deployment, 8, 1024)
    assert q == Fraction(8 * 3_350_000_000_000, 17_134_264_320)
    assert round(float(q), 1) == 1564.1
    # B* = W / kv(N) = 16,060,522,496 / 134,217,728 = 119.66...
    assert b_star(deployment, 1024) == Fraction(16_060_522_496, 134_217_728)
    # At B = B* the KV traffic equals the weights: Q = B*BW/(2W).
    knee = b_star(deployment, 1024)
    moved_at_knee = deployment.weight_bytes + knee * deployment.request_bytes(1024)
    assert moved_at_knee == 2 * deployment.weight_bytes


def test_prefill_flops_small_hand_case() -> None:
    model = _tiny_model(params=1000)
    # P=1000, L=2, H_q=4, d_h=8, C=3, S=2:
    # 2*P*S = 4,000; 2*L*H_q*d_h*((C+S)(C+S+1) - C(C+1)) = 2*2*4*8*(30 - 12) = 128*18 = 2,304.
    assert prefill_flops(model, 3, 2) == 6_304
    # Pair counting: queries 4 and 5 attend to 4 + 5 = 9 keys.
    assert attention_pairs(3, 2) == 9
    # With a window of 4 they attend to min(4,4) + min(5,4) = 8 keys: 2*2*4*8*8... = 4*4*8*2*8.
    windowed = _tiny_model(params=1000, window=4)
    assert attention_pairs(3, 2, 4) == 8
    assert prefill_flops(windowed, 3, 2) == 4_000 + 4 * 4 * 8 * 2 * 8


def test_prefill_roofline_by_hand() -> None:
    model = _tiny_model(params=1000)
    deployment = Deployment(model, _tiny_accelerator(peak=1000, bandwidth=100))
    result = prefill_time(deployment, 3, 2)
    # Compute: 6,304 FLOPs / 1,000 FLOP/s = 6.304 s.
    assert result.compute_seconds == Fraction(6304, 1000)
    # Bytes: weights 1000 * 2 = 2,000; KV per token 2 layers * 16 * 2 B = 64;
    # read 3 * 64 = 192, write 2 * 64 = 128 -> 2,320 B / 100 B/s = 23.2 s: memory-bound.
    assert result.bytes_moved == 2_320
    assert result.seconds == Fraction(2320, 100)
    assert result.bound == "memory"
    # The vectorized float version agrees with the exact one.
    many = prefill_seconds_many(deployment, [3, 0], [2, 5])
    assert many[0] == pytest.approx(23.2)
    assert many[1] == pytest.approx(float(prefill_time(deployment, 0, 5).seconds))


def test_vectorized_prefill_matches_exact_for_sliding_and_hybrid_models() -> None:
    for name, gpu in (("mistral-7b-v0.1", "h100"), ("jamba-v0.1", "mi300x")):
        deployment = Deployment(load_model(name), get_accelerator(gpu), kv_dtype="fp8")
        for cached, new in ((0, 10), (3000, 2000), (9000, 50), (100_000, 8192)):
            exact = float(prefill_time(deployment, cached, new).seconds)
            assert prefill_seconds_many(deployment, [cached], [new])[0] == pytest.approx(
                exact, rel=1e-12
            )


def test_host_tier_fetch_versus_recompute() -> None:
    deployment = Deployment(
        _tiny_model(params=1000), _tiny_accelerator(peak=1000, bandwidth=10**6, link=64)
    )
    # 10 tokens * 64 B / 64 B/s = 10 s to fetch.
    assert tier_fetch_seconds(deployment, 10, 64) == 10
    # Recomputing those 10 tokens (compute-bound here, bandwidth is huge): FLOPs of
    # prefill(0, 12) - prefill(10, 2) = (2*1000*12 + 128*(12*13)) - (2*1000*2 + 128*(12*13 - 110))
    # = 43,968 - 9,888 = 34,080 FLOPs = 34.08 s > 10 s: fetching pays.
    assert fetch_beats_recompute(deployment, 0, 10, 2, 64)
    # Over a link 10x slower the fetch takes 100 s > 34.08 s: recompute.
    assert not fetch_beats_recompute(deployment, 0, 10, 2, 6)
