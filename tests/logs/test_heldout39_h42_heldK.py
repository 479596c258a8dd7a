"""What the eighth held-out set (providers sampled least: xAI, DeepSeek, Mistral, Together,
Groq, Azure, OpenRouter; Ruby VCR in YAML and JSON, vcrpy) showed read wrong: a call to
OpenRouter's Auto Router (``"model": "openrouter/auto"``) made the whole cassette unreadable
(``unknown model 'auto'``), although its response names the model the router chose and that
model prices the call (https://openrouter.ai/docs/guides/routing/routers/auto-router: "The
response includes the model field showing which model was actually used";
https://openrouter.ai/openrouter/auto: "priced at the same rate as the routed model";
docs/log-formats.md, "Recorded HTTP"). Hand-built cassettes in vcrpy's layout; the expected
totals are the usage fields written here, added by hand.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cachecast.logs.providers import is_router_slug
from tests.logs.helpers import read, totals, vcr_cassette, vcr_interaction

OPENROUTER = "https://openrouter.ai/api/v1/chat/completions"


def routed_reply(model: str, prompt: int, cached: int, completion: int) -> dict[str, Any]:
    """A non-streamed OpenRouter chat completion as its API reference shows one: the routed
    model in ``model``, the upstream in ``provider``, OpenAI's usage fields."""
    return {
        "id": "gen-1761505593-abc",
        "provider": "DeepInfra",
        "model": model,
        "object": "chat.completion",
        "created": 1_761_505_594,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "Hi"}, "finish_reason": "stop"}
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached},
        },
    }


def routed_body(model: str, text: str) -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": text}]}


def test_auto_router_call_is_read_as_the_model_the_response_names(tmp_path: Path) -> None:
    path = vcr_cassette(
        tmp_path / "auto.yaml",
        vcr_interaction(
            OPENROUTER,
            routed_body("openrouter/auto", "Hello!"),
            routed_reply("mistralai/mistral-nemo", 13, 0, 15),
        ),
        vcr_interaction(
            OPENROUTER,
            routed_body("openrouter/auto", "And again?"),
            routed_reply("openai/gpt-4o-mini", 1_100, 1_024, 20),
        ),
    )
    got = read(path)
    assert got.errors == []
    # The model the router chose, the provider its slug names (before: no request, the file
    # refused for the slug's 'auto').
    assert [(r.provider, r.logged_model) for r in got.requests] == [
        ("mistral", "mistral-nemo"),
        ("openai", "gpt-4o-mini"),
    ]
    # 13 + 1,100 prompt tokens, 0 + 1,024 cached, 15 + 20 completion: as written above.
    assert totals(got.requests) == {"input": 1_113, "read": 1_024, "write": 0, "output": 35}


def test_a_named_model_keeps_the_body_s_name(tmp_path: Path) -> None:
    # Not a router: the body's model stands even where the response spells it otherwise
    # (OpenRouter answers ``openai/gpt-4o-mini`` with the dated ``...-2024-07-18``).
    path = vcr_cassette(
        tmp_path / "named.yaml",
        vcr_interaction(
            OPENROUTER,
            routed_body("openai/gpt-4o-mini", "Hello!"),
            routed_reply("openai/gpt-4o-mini-2024-07-18", 9, 0, 3),
        ),
    )
    got = read(path)
    assert [(r.provider, r.logged_model) for r in got.requests] == [("openai", "gpt-4o-mini")]


def test_a_router_slug_without_a_served_model_stays_a_bad_record(tmp_path: Path) -> None:
    # Nothing names the routed model: the slug is all there is, refused at its line.
    reply = routed_reply("x", 13, 0, 15)
    del reply["model"]
    path = vcr_cassette(
        tmp_path / "bare.yaml",
        vcr_interaction(OPENROUTER, routed_body("openrouter/auto", "Hello!"), reply),
    )
    got = read(path)
    assert got.requests == []
    assert len(got.errors) == 1
    assert "auto" in str(got.errors[0])


@pytest.mark.parametrize(
    ("model", "router"),
    [
        ("openrouter/auto", True),
        ("OpenRouter/Auto", True),
        ("openrouter/anthropic/claude-3.5-sonnet", False),  # a model behind the prefix
        ("anthropic/claude-3.5-sonnet", False),
        ("auto", False),
        ("openrouter/", False),
    ],
)
def test_router_slugs(model: str, router: bool) -> None:
    assert is_router_slug(model) is router


@pytest.mark.parametrize(
    ("host", "provider"),
    [
        ("api.sambanova.ai", "sambanova"),
        ("api.hyperbolic.xyz", "hyperbolic"),
        ("api.deepinfra.com", "deepinfra"),
        ("api.cloudflare.com/client/v4/accounts/0123/ai", "cloudflare"),
    ],
)
def test_hosts_of_uncovered_providers_name_them(tmp_path: Path, host: str, provider: str) -> None:
    # An OpenAI-compatible host no contract covers: named, so that its request is reported
    # unpriced for want of that provider's contract, not as a log naming no provider (the
    # SambaNova cassette of the set: ``Meta-Llama-3.3-70B-Instruct`` at api.sambanova.ai).
    path = vcr_cassette(
        tmp_path / "compatible.yaml",
        vcr_interaction(
            f"https://{host}/v1/chat/completions",
            routed_body("Meta-Llama-3.3-70B-Instruct", "Hello!"),
            routed_reply("Meta-Llama-3.3-70B-Instruct", 43, 0, 1),
        ),
    )
    got = read(path)
    assert got.errors == []
    assert [r.provider for r in got.requests] == [provider]
    assert totals(got.requests) == {"input": 43, "read": 0, "write": 0, "output": 1}
