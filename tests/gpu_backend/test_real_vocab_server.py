"""A real vLLM OpenAI-compatible server (CPU build) on loopback, serving the model with the
REAL Qwen2.5 vocabulary and chat template: the prompt ids it computes itself from chat
messages and from text equal cachecast's tokenization, and a chat log replayed in chat mode
(the server applies its own template) after a cache reset hits exactly as predicted, with
cached requests starting faster. One server for the module."""

from __future__ import annotations

import statistics
from typing import Any

import httpx
import pytest

from cachecast.gpu_backend.chat_replay import measure_chat_records
from cachecast.gpu_backend.http_backend import HttpBackend
from cachecast.gpu_backend.types import EngineError, ReplayOptions
from cachecast.tokenizers import read_records
from tests.gpu_backend.conftest import VllmServer
from tests.gpu_backend.real_vocab import (
    AGREEMENT_CHATS,
    QWEN_BLOCK_SIZE,
    QWEN_MODEL,
    QWEN_NUM_BLOCKS,
    SERVER_ONLY_CHATS,
    TEXT_PROMPTS,
    shared_prefix_log,
    vllm_hit_rule,
)

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

CHATS = AGREEMENT_CHATS + SERVER_ONLY_CHATS


@pytest.fixture(scope="module")
def server_url(qwen_server: VllmServer) -> str:
    return qwen_server.wait_healthy()


def ours(body: dict[str, Any]) -> list[int]:
    (request,) = read_records([{"model": QWEN_MODEL, "request": body}], "agreement", strict=True)
    assert request.tokens is not None and request.exact
    return list(request.tokens)


def post(url: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    request = {"model": QWEN_MODEL, "max_tokens": 1, "temperature": 0.0, **body}
    response = httpx.post(f"{url}{path}", json={**request, "return_token_ids": True}, timeout=120)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


@pytest.mark.parametrize(("name", "body"), CHATS, ids=[name for name, _ in CHATS])
def test_server_chat_prompt_equals_cachecast_tokenization(
    server_url: str, name: str, body: dict[str, Any]
) -> None:
    answer = post(server_url, "/v1/chat/completions", body)
    expected = ours(body)
    assert answer["prompt_token_ids"] == expected
    assert answer["usage"]["prompt_tokens"] == len(expected)


@pytest.mark.parametrize("text", TEXT_PROMPTS)
def test_server_text_prompt_equals_cachecast_tokenization(server_url: str, text: str) -> None:
    answer = post(server_url, "/v1/completions", {"prompt": text})
    assert answer["choices"][0]["prompt_token_ids"] == ours({"prompt": text})


def test_chat_mode_replay_hits_equal_prediction_and_warm_is_faster(server_url: str) -> None:
    backend = HttpBackend(server_url, prompt_mode="chat")
    assert backend.info().num_blocks == QWEN_NUM_BLOCKS
    report = measure_chat_records(
        shared_prefix_log(),
        backend,
        model=QWEN_MODEL,
        options=ReplayOptions(warmup_requests=2),
        source="shared-prefix-log",
    )
    assert report.cache_isolation == "reset"
    prompts = [
        list(r.tokens or ())
        for r in read_records(shared_prefix_log(), "log", model=QWEN_MODEL, strict=True)
    ]
    expected = vllm_hit_rule(prompts, QWEN_BLOCK_SIZE)
    assert [r.measured_cached_tokens for r in report.requests] == expected
    assert [r.predicted_cached_tokens for r in report.requests] == expected
    assert report.counters_agree
    cold = [r.ttft_s for r in report.requests if r.warm is False]
    warm = [r.ttft_s for r in report.requests if r.warm is True]
    assert (len(cold), len(warm)) == (4, 8)
    assert statistics.median(warm) < statistics.median(cold)


def test_chat_mode_stops_when_the_server_tokenizes_differently(server_url: str) -> None:
    # Read as a Llama 3 model, the same chats are other ids than the Qwen server computes.
    backend = HttpBackend(server_url, model=QWEN_MODEL, prompt_mode="chat")
    with pytest.raises(EngineError, match=r"r00 \(line 1\): the server's chat template gives"):
        measure_chat_records(
            shared_prefix_log()[:2],
            backend,
            model="llama-3-8b-instruct",
            options=ReplayOptions(warmup_requests=0),
        )
