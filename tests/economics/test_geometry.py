"""KV bytes per token and weight bytes, every expected value worked out by hand below."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

from cachecast.economics.geometry import (
    GeometryError,
    from_hf_config,
    load_model,
    preset_names,
)


def test_worked_figure_llama_3_3_70b() -> None:
    # docs/economics.md: 2 * 80 layers * 8 KV heads * 128 head_dim * 2 bytes = 327,680 B = 320 KiB.
    model = load_model("llama-3.3-70b")
    assert model.kv_bytes_per_token("bf16") == 327_680
    assert model.kv_bytes_per_token("bf16") == 320 * 1024
    assert model.attention_kind == "gqa"


def test_fp8_and_int4_halve_and_quarter_exactly() -> None:
    model = load_model("llama-3.3-70b")
    # fp8: 2*80*8*128*1 = 163,840; int4: 2*80*8*128*(1/2) = 81,920.
    assert model.kv_bytes_per_token("fp8") == 163_840
    assert model.kv_bytes_per_token("int4") == 81_920
    # A single int4 element is half a byte, kept exact (not 0 and not a float).
    one_layer = from_hf_config(
        {
            "hidden_size": 2,
            "num_attention_heads": 1,
            "num_key_value_heads": 1,
            "head_dim": 1,
            "num_hidden_layers": 1,
            "vocab_size": 1,
            "intermediate_size": 1,
        },
        name="tiny",
        source="test",
    )
    # 2 (K and V) * 1 layer * 1 head * 1 dim * 1/2 byte = 1 byte; per token per element: 1/2.
    assert one_layer.kv_bytes_per_token("int4") == 1
    assert one_layer.kv_bytes_for_context(3, "int4") == 3
    assert one_layer.kv_elements_per_token_per_layer * Fraction(1, 2) == 1


def test_mla_deepseek_v3() -> None:
    # MLA stores the latent and the rope key once per layer, for all heads:
    # 61 layers * (kv_lora_rank 512 + qk_rope_head_dim 64) * 2 bytes
    # = 61 * 576 * 2 = 61 * 1,152 = 69,120 + 1,152 = 70,272 B/token.
    model = load_model("deepseek-v3")
    assert model.attention_kind == "mla"
    assert model.kv_bytes_per_token("bf16") == 70_272
    assert model.kv_bytes_per_token("fp8") == 35_136  # 61 * 576
    assert model.kv_bytes_per_token("int4") == 17_568  # 61 * 576 / 2
    # Prefill attention width: (QK 128 + 64 rope, V 128) / 2 = 160.
    assert model.attention_flops_dim == 160
    # Weights shipped in FP8: 671e9 parameters * 1 byte.
    assert model.weight_bytes() == 671_000_000_000


def test_hybrid_jamba_recurrent_state_plus_attention_kv() -> None:
    # Jamba-v0.1: attention where layer % 8 == 4, i.e. layers 4, 12, 20, 28 -> 4 layers;
    # the other 28 are Mamba. KV: 2 * 4 layers * 8 KV heads * 128 * 2 B = 16,384 B/token.
    # Mamba state per layer: d_inner = 2 * 4096 = 8192; SSM 8192 * 16 = 131,072 and conv
    # 8192 * (4 - 1) = 24,576 -> 155,648 elements; * 28 layers = 4,358,144; * 2 B = 8,716,288.
    model = load_model("jamba-v0.1")
    assert (model.full_attention_layers, model.recurrent_layers) == (4, 28)
    assert model.kv_bytes_per_token("bf16") == 16_384
    assert model.recurrent_state_bytes("bf16") == 8_716_288
    # A request of 1,000 tokens: 16,384,000 KV + 8,716,288 state = 25,100,288.
    assert model.request_bytes(1000) == 25_100_288
    # The state does not grow with length: 2,000 tokens add exactly 16,384,000 more.
    assert model.request_bytes(2000) - model.request_bytes(1000) == 16_384_000


def test_hybrid_gated_deltanet_small_config_by_hand() -> None:
    # Qwen3-Next style: full attention every 2nd layer of 4 -> layers 1 and 3 attention,
    # 0 and 2 Gated DeltaNet.
    config = {
        "hidden_size": 64,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
        "num_hidden_layers": 4,
        "full_attention_interval": 2,
        "vocab_size": 100,
        "linear_num_value_heads": 2,
        "linear_num_key_heads": 1,
        "linear_key_head_dim": 8,
        "linear_value_head_dim": 8,
        "linear_conv_kernel_dim": 4,
    }
    model = from_hf_config(config, name="mini-next", source="test", params_total=1000)
    # KV: 2 layers * (2 * 2 heads * 16) = 128 elements * 2 B = 256 B/token.
    assert model.kv_bytes_per_token() == 256
    # State per linear layer: 2 heads * 8 * 8 = 128, conv (2*1*8 + 2*8) * (4-1) = 96 -> 224;
    # 2 layers * 224 = 448 elements * 2 B = 896 B per request.
    assert model.recurrent_state_bytes() == 896
    assert model.request_bytes(10) == 10 * 256 + 896


def test_sliding_window_caps_per_request_kv() -> None:
    # Mistral-7B-v0.1: 2 * 32 * 8 * 128 * 2 = 131,072 B/token, every layer windowed at 4,096.
    model = load_model("mistral-7b-v0.1")
    assert model.sliding_attention_layers == 32 and model.full_attention_layers == 0
    assert model.kv_bytes_per_token() == 131_072
    assert model.kv_bytes_for_context(1000) == 131_072_000
    # Capped: 4,096 * 131,072 = 536,870,912 whatever the context beyond the window.
    assert model.kv_bytes_for_context(4096) == 536_870_912
    assert model.kv_bytes_for_context(100_000) == 536_870_912


def test_gemma_style_local_global_pattern() -> None:
    # Every 6th layer global (1-based 6 and 12), the other 10 local with a 1,024 window.
    config = {
        "hidden_size": 64,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "head_dim": 32,
        "num_hidden_layers": 12,
        "sliding_window": 1024,
        "sliding_window_pattern": 6,
        "vocab_size": 10,
        "intermediate_size": 128,
    }
    model = from_hf_config(config, name="mini-gemma", source="test")
    assert (model.full_attention_layers, model.sliding_attention_layers) == (2, 10)
    # per layer per token: 2 * 1 * 32 * 2 B = 128 B. At 3,000 tokens:
    # 2 full layers * 3,000 * 128 + 10 local layers * 1,024 * 128 = 768,000 + 1,310,720.
    assert model.kv_bytes_for_context(3000) == 2_078_720


def test_qwen2_sliding_window_field_is_ignored_when_disabled() -> None:
    # Qwen2.5's config carries sliding_window but use_sliding_window=false: plain GQA,
    # 2 * 80 * 8 * 128 * 2 = 327,680 B/token and no cap.
    model = load_model("qwen2.5-72b")
    assert model.sliding_attention_layers == 0
    assert model.kv_bytes_for_context(200_000) == 200_000 * 327_680


def test_parameter_counts_from_config_match_published_counts() -> None:
    # Llama-3.1-8B, counted by hand: embeddings 128,256*4,096 = 525,336,576, untied so twice
    # = 1,050,673,152; per layer q 16,777,216 + k 4,194,304 + v 4,194,304 + o 16,777,216
    # + MLP 3*4,096*14,336 = 176,160,768 + norms 8,192 = 218,112,000; * 32 = 6,979,584,000;
    # + final norm 4,096 -> 8,030,261,248 (the figure Meta's checkpoint reports).
    assert load_model("llama-3.1-8b").params_total == 8_030_261_248
    # Llama-3.3-70B: per layer 150,994,944 attention + 704,643,072 MLP + 16,384 norms
    # = 855,654,400; * 80 = 68,452,352,000; + 2 * 1,050,673,152 + 8,192 = 70,553,706,496.
    assert load_model("llama-3.3-70b").params_total == 70_553_706_496
    # Qwen2.5-72B (q/k/v biases): per layer 151,005,184 + 726,663,168 + 16,384
    # = 877,684,736; * 80 = 70,214,778,880; + 2 * 152,064 * 8,192 + 8,192 = 72,706,203,648.
    assert load_model("qwen2.5-72b").params_total == 72_706_203_648


def test_weight_bytes_follow_dtype() -> None:
    model = load_model("llama-3.1-8b")
    assert model.weight_bytes() == 16_060_522_496  # bf16: 2 * 8,030,261,248
    assert model.weight_bytes("fp8") == 8_030_261_248
    assert model.weight_bytes("int4") == 4_015_130_624  # exactly half of the fp8 figure


def test_config_json_file_and_bad_inputs(tmp_path: Path) -> None:
    config = {
        "model_type": "llama",
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "vocab_size": 128256,
        "torch_dtype": "bfloat16",
    }
    (tmp_path / "config.json").write_text(json.dumps(config))
    model = load_model(str(tmp_path))  # a directory holding config.json
    assert model.kv_bytes_per_token() == 131_072  # 2 * 32 * 8 * 128 * 2
    with pytest.raises(GeometryError, match="neither a preset"):
        load_model(str(tmp_path / "missing.json"))
    del config["num_attention_heads"]
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(GeometryError, match="num_attention_heads"):
        load_model(str(tmp_path / "config.json"))
    # MLA and hybrids cannot be counted from their config: the error asks for --params.
    with pytest.raises(GeometryError, match="--params"):
        from_hf_config(
            {
                "hidden_size": 8,
                "num_attention_heads": 1,
                "num_hidden_layers": 1,
                "kv_lora_rank": 4,
                "qk_rope_head_dim": 2,
                "qk_nope_head_dim": 2,
                "v_head_dim": 2,
            },
            name="x",
            source="test",
        )


def test_every_preset_loads() -> None:
    names = preset_names()
    for required in (
        "llama-3.3-70b",
        "llama-3.1-8b",
        "qwen2.5-72b",
        "deepseek-v3",
        "jamba-v0.1",
        "mistral-7b-v0.1",
    ):
        assert required in names
    for name in names:
        assert load_model(name).kv_bytes_per_token() > 0
