"""Provider names as logs write them -> the contract store's provider ids."""

from __future__ import annotations

from pathlib import Path

import pytest

from cachecast.logs.providers import infer_provider, normalize_provider_name, resolve_provider
from cachecast.tokenizers import read_records


@pytest.mark.parametrize(
    ("written", "stored"),
    [
        ("google", "google"),
        ("gemini", "google"),
        ("vertex_ai", "google"),
        ("gcp.vertex_ai", "google"),  # OpenTelemetry's gen_ai.provider.name
        ("google_genai", "google"),  # LangChain's ls_provider
        ("bedrock", "bedrock"),
        ("aws", "bedrock"),
        ("aws.bedrock", "bedrock"),
        ("azure", "azure"),
        ("azure_openai", "azure"),
        ("azure.ai.openai", "azure"),
        ("ANTHROPIC", "anthropic"),  # Helicone's enum
        ("x_ai", "xai"),
        ("OpenAI", "openai"),
    ],
)
def test_names_as_users_write_them(written: str, stored: str) -> None:
    assert normalize_provider_name(written) == stored


@pytest.mark.parametrize(
    ("provider", "model", "expected"),
    [
        (None, "vertex_ai/gemini-2.5-pro", ("google", "gemini-2.5-pro")),  # LiteLLM
        (
            None,
            "bedrock/anthropic.claude-3-5-haiku-20241022-v1:0",
            ("bedrock", "anthropic.claude-3-5-haiku-20241022-v1:0"),
        ),
        # Gateways' dotted Anthropic versions are Anthropic's dashed ids
        (None, "openrouter/anthropic/claude-3.5-sonnet", ("anthropic", "claude-3-5-sonnet")),
        ("openrouter", "anthropic/claude-sonnet-4.6", ("anthropic", "claude-sonnet-4-6")),
        # ... but Anthropic's own ids before Claude 3 are dotted, and stay so
        ("anthropic", "claude-2.1", ("anthropic", "claude-2.1")),
        (None, "claude-instant-1.2", ("anthropic", "claude-instant-1.2")),
        ("openrouter", "anthropic/claude-2.0", ("anthropic", "claude-2.0")),
        ("openrouter", "google/gemini-2.5-flash", ("google", "gemini-2.5-flash")),  # its slug
        ("openrouter", "gpt-4o", ("openai", "gpt-4o")),  # a slug without provider: the family
        # OpenRouter's slug for Z.ai (go-vcr's OpenRouter GLM cassette: the response names
        # "provider": "Z.AI"); a bare GLM name is Z.ai's family
        ("openrouter", "z-ai/glm-5-turbo", ("zai", "glm-5-turbo")),
        (None, "glm-4.7-flash", ("zai", "glm-4.7-flash")),
        (None, "models/gemini-2.5-flash", ("google", "gemini-2.5-flash")),  # Gemini's name
        (
            None,
            "projects/p/locations/us-central1/publishers/google/models/gemini-2.5-pro",
            ("google", "gemini-2.5-pro"),
        ),
        (None, "meta-llama/Llama-3.1-8B-Instruct", (None, "meta-llama/Llama-3.1-8B-Instruct")),
        # Hugging Face's router: a Hub id and, after a colon, the provider that serves it
        # (its Cerebras page: model="openai/gpt-oss-120b:cerebras"), whose own model name has
        # no Hub organization; the suffix wins over the maker a span names
        ("openai", "openai/gpt-oss-20b:fireworks-ai", ("fireworks_ai", "gpt-oss-20b")),
        (None, "openai/gpt-oss-120b:cerebras", ("cerebras", "gpt-oss-120b")),
        (None, "moonshotai/Kimi-K2-Instruct:together", ("together_ai", "Kimi-K2-Instruct")),
        (None, "deepseek-ai/DeepSeek-R1:novita", ("novita", "DeepSeek-R1")),  # no contract
        # ... and no other colon names a provider: OpenRouter's variants, Ollama's tags
        (
            "openrouter",
            "meta-llama/llama-3.3-8b-instruct:free",
            (None, "meta-llama/llama-3.3-8b-instruct:free"),
        ),
        (None, "llama3:8b", (None, "llama3:8b")),
        # no Hub organization, no router id: the family names the maker, the tag stays
        (None, "qwen2.5:groq", ("alibaba", "qwen2.5:groq")),
        ("azure", "gpt-4o", ("azure", "gpt-4o")),
        (None, "claude-sonnet-4-5", ("anthropic", "claude-sonnet-4-5")),
        (
            None,
            "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
            ("bedrock", "us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
        ),
    ],
)
def test_provider_and_model_strings(
    provider: str | None, model: str, expected: tuple[str | None, str]
) -> None:
    assert resolve_provider(provider, model) == expected


def test_unknown_families_stay_unknown() -> None:
    assert infer_provider("my-finetune-7b") is None


def test_the_reader_normalizes_record_providers(tmp_path: Path) -> None:
    records = [
        {
            "provider": "gemini",
            "model": "gemini-2.5-flash",
            "request": {"contents": [{"parts": [{"text": "hi"}]}]},
        },
        {
            "provider": "claude",
            "model": "claude-sonnet-4-5",
            "request": {"messages": [{"role": "user", "content": "hi"}]},
        },
    ]
    requests = list(read_records(records, "mem.jsonl"))
    assert [r.provider for r in requests] == ["google", "anthropic"]
