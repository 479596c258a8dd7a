"""A tiny random-weight Qwen2.5 with the REAL vocabulary and chat template, and how to serve it.

The weights are random (built with transformers, no download), but the tokenizer directory is
the one cachecast builds for ``qwen2.5-*`` (``write_tokenizer_directory``): a vLLM engine
serving this model tokenizes chats with the same vocabulary, added tokens and template that
cachecast uses (docs/engine-tokenization.md), so replays on it can be compared with the
simulator token for token. The engine tests serve it, and ``scripts/serve_tiny_qwen.py``
serves it for trying ``suggest --validate-on-engine`` and ``check --target vllm-engine:URL``
on a CPU.

Size: hidden 512, 4 layers, 8 query / 2 KV heads of 64 dims, MLP 1536, tied embeddings:
89.9 M parameters, 77.8 M of them the 151,936-row embedding. Only the layers do prefill work
(about 12 M parameters per token), enough for a 1,000-token cold prefill to take several
times longer than a cached one on a CPU.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from cachecast.tokenizers.hf import QWEN25_CONFIG_VOCAB, write_tokenizer_directory

TINY_QWEN_MODEL = "qwen2.5-cachecast-tiny"  # served name; the registry's qwen2.5-* pattern
TINY_QWEN_BLOCK_SIZE = 32  # vLLM's CPU attention needs a multiple of 32
TINY_QWEN_LAYERS = 4
TINY_QWEN_KV_HEADS = 2
TINY_QWEN_HEAD_DIM = 64
# K and V, 4 layers, 2 KV heads of 64 dims, bf16 (2 bytes), 32 tokens per block.
TINY_QWEN_BLOCK_BYTES = (
    2 * TINY_QWEN_LAYERS * TINY_QWEN_KV_HEADS * TINY_QWEN_HEAD_DIM * 2 * TINY_QWEN_BLOCK_SIZE
)
TINY_QWEN_NUM_BLOCKS = 1500  # 1,499 usable (block 0 is vLLM's null block): 47,968 tokens
TINY_QWEN_MAX_MODEL_LEN = 8192
TINY_QWEN_DTYPE = "bfloat16"


def build_tiny_qwen(directory: Path) -> Path:
    """Write config.json, model.safetensors and the tokenizer files into ``directory``
    (needs torch and transformers, which the vLLM build brings)."""
    # Imported untyped: transformers' stubs do not describe the configs' keyword arguments.
    torch: Any = importlib.import_module("torch")
    transformers: Any = importlib.import_module("transformers")

    config = transformers.Qwen2Config(
        vocab_size=QWEN25_CONFIG_VOCAB,
        hidden_size=512,
        intermediate_size=1536,
        num_hidden_layers=TINY_QWEN_LAYERS,
        num_attention_heads=8,
        num_key_value_heads=TINY_QWEN_KV_HEADS,
        max_position_embeddings=TINY_QWEN_MAX_MODEL_LEN,
        max_window_layers=TINY_QWEN_LAYERS,
        use_sliding_window=False,
        tie_word_embeddings=True,
        rope_theta=1_000_000.0,
        rms_norm_eps=1e-6,
        bos_token_id=151643,  # <|endoftext|>, as Qwen2.5's configs name it
        eos_token_id=151645,  # <|im_end|>
    )
    torch.manual_seed(0)
    transformers.Qwen2ForCausalLM(config).to(torch.bfloat16).save_pretrained(directory)
    write_tokenizer_directory(TINY_QWEN_MODEL, directory)
    return directory


def server_arguments(
    model_dir: Path,
    *,
    port: int,
    host: str = "127.0.0.1",
    served_name: str = TINY_QWEN_MODEL,
    num_blocks: int = TINY_QWEN_NUM_BLOCKS,
) -> list[str]:
    """The arguments of ``python -m vllm.entrypoints.openai.api_server`` that serve the tiny
    model as the validations need it: prefix caching with per-request cached-token counts
    (``--enable-prompt-tokens-details``), a KV cache of exactly ``num_blocks`` blocks, and
    tool calls parsed as Qwen2.5 is deployed for tool use (hermes). Start it with
    ``VLLM_SERVER_DEV_MODE=1`` so that ``POST /reset_prefix_cache`` exists."""
    return [
        "--model", str(model_dir), "--served-model-name", served_name,
        "--host", host, "--port", str(port),
        "--enable-prefix-caching", "--block-size", str(TINY_QWEN_BLOCK_SIZE),
        "--kv-cache-memory-bytes", str(num_blocks * TINY_QWEN_BLOCK_BYTES),
        "--max-model-len", str(TINY_QWEN_MAX_MODEL_LEN), "--dtype", TINY_QWEN_DTYPE,
        "--enforce-eager", "--enable-prompt-tokens-details",
        "--enable-auto-tool-choice", "--tool-call-parser", "hermes",
    ]  # fmt: skip
