"""Hand-built recordings modelled on what held-out public cassettes sent us (docs/log-formats.md,
"Held-out variants"): vcrpy headers dumped as aiohttp ``istr`` calls, Azure's ``gpt-35-turbo``,
Bedrock InvokeModel of Llama 2, and a provider's model no tokenizer pattern knows. Each expected
count is the usage field written into the recording."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cachecast.contracts import ContractStore
from cachecast.passes.log_input import LogInput
from cachecast.usecases.reconcile import ReconcileRequest, reconcile
from tests.logs.helpers import read, vcr_quoted


def _cassette(
    uri: str, request: dict[str, Any], response: dict[str, Any], keys: str, more: str = ""
) -> str:
    return f"""interactions:
- request:
    body: {vcr_quoted(request)}
    headers:
{keys}
    method: POST
    uri: {uri}
  response:
    body:
      string: {vcr_quoted(response)}
    headers:
      Content-Type:
      - application/json
      Date:
      - Tue, 01 Jul 2025 10:00:00 GMT
{more}    status:
      code: 200
      message: OK
version: 1
"""


PLAIN_KEYS = "      Content-Type:\n      - application/json"


def test_vcrpy_header_keys_dumped_as_aiohttp_istr_calls(tmp_path: Path) -> None:
    # vcrpy's YAML of aiohttp CIMultiDict headers: `? !!python/object/apply:...istr [Name]`.
    keys = (
        "      ? !!python/object/apply:multidict._multidict.istr\n"
        "      - Accept\n"
        "      : - application/json\n"
        "      ? !!python/object/apply:multidict._multidict.istr\n"
        "      - Content-Type\n"
        "      : - application/json"
    )
    request = {
        "model": "claude-3-5-sonnet-20241022",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "Hello!"}],
    }
    response = {
        "id": "msg_1",
        "type": "message",
        "model": "claude-3-5-sonnet-20241022",
        "content": [{"type": "text", "text": "Hi"}],
        "usage": {"input_tokens": 9, "output_tokens": 12},
    }
    path = tmp_path / "istr.yaml"
    path.write_text(_cassette("https://api.anthropic.com/v1/messages", request, response, keys))
    result = read(path)
    assert (result.format, result.errors) == ("vcr", [])
    (one,) = result.requests
    assert one.observed is not None
    assert (one.provider, one.model) == ("anthropic", "claude-3-5-sonnet-20241022")
    assert (one.observed.input_tokens, one.observed.output_tokens) == (9, 12)


def test_azure_gpt_35_turbo_is_read_with_cl100k_base(tmp_path: Path) -> None:
    # Azure names gpt-3.5-turbo `gpt-35-turbo`; tiktoken's model map gives it cl100k_base.
    request = {"model": "gpt-35-turbo", "messages": [{"role": "user", "content": "Weather?"}]}
    response = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1695243871,
        "model": "gpt-35-turbo",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "No idea"}}],
        "usage": {"prompt_tokens": 18, "completion_tokens": 20, "total_tokens": 38},
    }
    uri = (
        "https://example.openai.azure.com/openai/deployments/test/chat/completions"
        "?api-version=2023-07-01-preview"
    )
    path = tmp_path / "azure.yaml"
    path.write_text(_cassette(uri, request, response, PLAIN_KEYS))
    result = read(path)
    assert result.errors == []
    (one,) = result.requests
    assert (one.provider, one.model) == ("azure", "gpt-35-turbo")
    assert one.tokenizer.startswith("cl100k_base")
    assert one.observed is not None and one.observed.input_tokens == 18


def test_bedrock_llama_2_is_read_approximated_and_calibrated(tmp_path: Path) -> None:
    # Bedrock InvokeModel of meta.llama2-13b-chat-v1: the counts in the response headers
    # (X-Amzn-Bedrock-Input-Token-Count 10), as Bedrock returns them for InvokeModel.
    request = {"prompt": "What does 'lorem ipsum' mean?", "max_gen_len": 60}
    response = {
        "generation": "A placeholder.",
        "prompt_token_count": 10,
        "generation_token_count": 60,
        "stop_reason": "length",
    }
    uri = "https://bedrock-runtime.us-east-1.amazonaws.com/model/meta.llama2-13b-chat-v1/invoke"
    path = tmp_path / "llama2.yaml"
    counts = (
        "      X-Amzn-Bedrock-Input-Token-Count:\n      - '10'\n"
        "      X-Amzn-Bedrock-Output-Token-Count:\n      - '60'\n"
    )
    path.write_text(_cassette(uri, request, response, PLAIN_KEYS, counts))
    result = read(path)
    assert result.errors == []
    (one,) = result.requests
    assert (one.provider, one.model) == ("bedrock", "meta.llama2-13b-chat-v1")
    assert one.tokenizer.startswith("o200k_base (approximation)") and not one.exact
    assert one.input_tokens == 10  # scaled to the provider's count


def test_a_providers_model_no_pattern_knows_is_read_approximated(tmp_path: Path) -> None:
    # A chat completion on an OpenAI-compatible host for a model no tokenizer pattern
    # matches: the request is read (approximated, fitted to prompt_tokens 25), not dropped.
    request = {"model": "acme-sparrow-7b", "messages": [{"role": "user", "content": "Hi there"}]}
    response = {
        "id": "c1",
        "object": "chat.completion",
        "created": 1751364000,
        "model": "acme-sparrow-7b",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello"}}],
        "usage": {"prompt_tokens": 25, "completion_tokens": 3, "total_tokens": 28},
    }
    path = tmp_path / "acme.yaml"
    path.write_text(
        _cassette("https://api.groq.com/openai/v1/chat/completions", request, response, PLAIN_KEYS)
    )
    result = read(path)
    assert result.errors == []
    (one,) = result.requests
    assert one.model == "acme-sparrow-7b" and not one.exact
    assert one.tokenizer.startswith("o200k_base (approximation)")
    assert one.input_tokens == 25


def test_an_unknown_model_is_reported_unpriced_by_name(
    migrated_db_url: str, tmp_path: Path
) -> None:
    # Two OpenAI chat completions in one cassette: gpt-4o (priced) and a model no tokenizer
    # pattern and no contract knows. The file is read; the second request is listed as
    # unpriced, naming its provider and model.
    def interaction(model: str, prompt: int) -> str:
        request = {"model": model, "messages": [{"role": "user", "content": "Hi there"}]}
        response = {
            "id": "c1",
            "object": "chat.completion",
            "created": 1751364000,
            "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello"}}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": 3, "total_tokens": prompt + 3},
        }
        whole = _cassette(
            "https://api.openai.com/v1/chat/completions", request, response, PLAIN_KEYS
        )
        return whole.removeprefix("interactions:\n").removesuffix("version: 1\n")

    path = tmp_path / "two.yaml"
    path.write_text(
        "interactions:\n"
        + interaction("gpt-4o", 10)
        + interaction("acme-sparrow-7b", 25)
        + "version: 1\n"
    )
    report = reconcile(
        ReconcileRequest(log=LogInput.of_paths([path])), ContractStore(migrated_db_url)
    )
    assert len(report.requests) == 1 and report.requests[0].target.startswith("openai:gpt-4o")
    [(reason, count)] = report.unpriced.items()
    assert count == 1 and reason.startswith("openai:acme-sparrow-7b: unknown model")


def test_an_open_weights_model_through_openrouter_says_so_when_unpriced(
    migrated_db_url: str, tmp_path: Path
) -> None:
    # openrouter.ai, model `openai/gpt-oss-120b` (open weights: third parties host it): the
    # request is the vendor's model as far as pricing goes (provider openai), the gateway is
    # kept, and the unpriced reason says that it went through OpenRouter. A direct OpenAI
    # request beside it keeps the report priced.
    def interaction(uri: str, model: str, served: str) -> str:
        request = {"model": model, "messages": [{"role": "user", "content": "Hi there"}]}
        response = {
            "id": "c1",
            "object": "chat.completion",
            "created": 1784160000,
            "model": served,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello"}}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
        }
        whole = _cassette(uri, request, response, PLAIN_KEYS)
        return whole.removeprefix("interactions:\n").removesuffix("version: 1\n")

    path = tmp_path / "openrouter.yaml"
    path.write_text(
        "interactions:\n"
        + interaction("https://api.openai.com/v1/chat/completions", "gpt-4o", "gpt-4o")
        + interaction(
            "https://openrouter.ai/api/v1/chat/completions",
            "openai/gpt-oss-120b",
            "openai/gpt-oss-120b",
        )
        + "version: 1\n"
    )
    result = read(path)
    direct, routed = result.requests
    assert (direct.provider, direct.gateway) == ("openai", None)
    assert (routed.provider, routed.model, routed.gateway) == (
        "openai",
        "gpt-oss-120b",
        "openrouter",
    )
    report = reconcile(
        ReconcileRequest(log=LogInput.of_paths([path])), ContractStore(migrated_db_url)
    )
    [(reason, count)] = report.unpriced.items()
    assert count == 1 and reason.startswith("openai:gpt-oss-120b: unknown model")
    assert "sent through openrouter" in reason and "open weights" in reason
