"""Shared setup of the economics tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import typer

from cachecast.cli import economics as economics_cli
from cachecast.tokenizers.types import TokenizedRequest
from cachecast.usecases.capacity import ModelReference


def shared_prefix_log() -> list[TokenizedRequest]:
    """Three requests at t = 0, 1, 2 s: the same 64-token prefix, then 16 tokens of their own;
    10 output tokens each."""
    prefix = list(range(1000, 1064))
    requests = []
    for index in range(3):
        tokens = prefix + [5000 + 100 * index + k for k in range(16)]
        requests.append(
            TokenizedRequest(
                source="test",
                line=index + 1,
                request_id=f"r{index}",
                timestamp=float(index),
                scope="org",
                provider=None,
                model=None,
                input_tokens=80,
                output_tokens=10,
                tokens=tokens,
                tokenizer="test",
            )
        )
    return requests


def shared_prefix_records() -> list[dict[str, Any]]:
    """:func:`shared_prefix_log` as log records (pre-tokenized: the same tokens)."""
    return [
        {
            "timestamp": request.timestamp,
            "scope": request.scope,
            "request_id": request.request_id,
            "request": {"tokens": list(request.tokens or [])},
            "output_tokens": request.output_tokens,
        }
        for request in shared_prefix_log()
    ]


def shared_prefix_file(folder: Path) -> Path:
    """:func:`shared_prefix_records` as a JSONL log."""
    path = folder / "shared-prefix.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in shared_prefix_records()))
    return path


def tiny_gqa_config(**changes: Any) -> dict[str, Any]:
    """A small GQA model's config.json: 4 layers, 8 query and 2 KV heads of 64 dims, bf16:
    2 x 4 x 2 x 64 x 2 = 2,048 KV bytes per token."""
    config = {
        "_name_or_path": "tiny-gqa",
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 512,
        "intermediate_size": 1024,
        "num_hidden_layers": 4,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "head_dim": 64,
        "vocab_size": 32000,
        "torch_dtype": "bfloat16",
    }
    return config | changes


def deployment(model: str = "llama-3.1-8b", gpu: str = "h100", **extra: Any) -> dict[str, Any]:
    """The deployment fields of a use case's request: a preset on an accelerator."""
    return {"model": ModelReference(preset=model), "gpu": gpu, **extra}


@pytest.fixture
def economics_app() -> typer.Typer:
    """An app with only the economics commands (capacity, compare, fleet) registered."""
    app = typer.Typer()
    economics_cli.register(app)
    return app
