"""Hand-built recordings modelled on what a second set of held-out public cassettes sent us
(docs/log-formats.md, "Usage conventions", "Optional fields", "Provider names"): Cohere's
``cached_tokens`` read onto billed units, an optional usage field of an unexpected shape
(Perplexity's ``cost`` object, a gateway cost of no known shape) that costs the field and
never the request, and hosts whose provider no contract covers (Cerebras, Perplexity)
reported as unpriced by provider. Each expected figure is the usage field written into the
recording, with the arithmetic beside it."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml

from cachecast.contracts import ContractStore
from cachecast.core.errors import RecordFieldError
from cachecast.logs.usage import normalize_usage
from cachecast.passes.log_input import LogInput
from cachecast.usecases.reconcile import ReconcileRequest, reconcile
from tests.logs.helpers import read, totals, vcr_cassette, vcr_interaction


def _chat(model: str, usage: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "c1",
        "object": "chat.completion",
        "created": 1775037600,
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello"}}],
        "usage": usage,
    }


USER = [{"role": "user", "content": "Say hello in one word."}]

# --- Cohere: cached_tokens counted on the templated prompt --------------------------------


def _cohere_v2(billed: int, templated: int, cached: int | None) -> dict[str, Any]:
    usage: dict[str, Any] = {
        "billed_units": {"input_tokens": billed, "output_tokens": 2},
        "tokens": {"input_tokens": templated, "output_tokens": 4},
    }
    if cached is not None:
        usage["cached_tokens"] = cached
    return {
        "id": "co-1",
        "finish_reason": "COMPLETE",
        "message": {"role": "assistant", "content": [{"type": "text", "text": "Hello"}]},
        "usage": usage,
    }


@pytest.mark.parametrize(
    ("billed", "templated", "cached", "read_tokens"),
    [
        # template 530 - 30 = 500 unbilled tokens; the hit covers 512 - 500 = 12 billed ones
        (30, 530, 512, 12),
        # the hit (400) ends inside the 500-token template: no billed token was read
        (30, 530, 400, 0),
        # every templated token cached: all 30 billed ones (512 - 482 = 30)
        (30, 512, 512, 30),
        # no cached_tokens at all: nothing read
        (30, 530, None, 0),
    ],
)
def test_cohere_v2_cached_tokens_read_onto_billed_units(
    tmp_path: Path, billed: int, templated: int, cached: int | None, read_tokens: int
) -> None:
    body = {"model": "command-r7b-12-2024", "messages": USER}
    path = vcr_cassette(
        tmp_path / "cohere.yaml",
        vcr_interaction(
            "https://api.cohere.com/v2/chat", body, _cohere_v2(billed, templated, cached)
        ),
    )
    result = read(path)
    assert result.errors == []
    assert totals(result.requests) == {
        "input": billed,
        "read": read_tokens,
        "write": 0,
        "output": 2,
    }


def test_cohere_v1_meta_cached_tokens_without_templated_count() -> None:
    # v1 ``meta`` without ``tokens``: the template's length is unknown, the read is the
    # cached count, at most the billed input: min(21, 10) = 10; min(21, 40) = 21.
    low = normalize_usage(
        {"billed_units": {"input_tokens": 21, "output_tokens": 3}, "cached_tokens": 10},
        convention="cohere",
    )
    high = normalize_usage(
        {"billed_units": {"input_tokens": 21, "output_tokens": 3}, "cached_tokens": 40},
        convention="cohere",
    )
    assert (low.input_tokens, low.cache_read_tokens) == (21, 10)
    assert (high.input_tokens, high.cache_read_tokens) == (21, 21)


def test_cohere_cached_read_is_disputed_not_counted_within(
    migrated_db_url: str, tmp_path: Path
) -> None:
    # Cohere offers no caching price (its contracts: mode none, or explicit without a
    # control the API accepts): a request that read 12 billed tokens from cache is outside
    # tolerance (predicted 0 read, 12 > 8 tokens) and disputes the contract.
    body = {"model": "command-r7b-12-2024", "messages": USER}
    path = vcr_cassette(
        tmp_path / "cohere.yaml",
        vcr_interaction("https://api.cohere.com/v2/chat", body, _cohere_v2(30, 530, 512)),
    )
    report = reconcile(
        ReconcileRequest(log=LogInput.of_paths([path])), ContractStore(migrated_db_url)
    )
    (row,) = report.requests
    assert (row.predicted_cache_read_tokens, row.observed_cache_read_tokens) == (0, 12)
    assert not row.within_tolerance
    assert row.classification == "contract_disputed"


# --- optional usage fields of an unexpected shape -------------------------------------------


def test_perplexity_cost_object_is_read_and_the_provider_is_named(
    migrated_db_url: str, tmp_path: Path
) -> None:
    # Perplexity's usage.cost is an object: 0.00001 + 0.00006 + 0.005 = 0.00507 = total_cost,
    # its charge for the request. Host api.perplexity.ai: provider perplexity.
    usage = {
        "prompt_tokens": 9,
        "completion_tokens": 59,
        "total_tokens": 68,
        "search_context_size": "low",
        "cost": {
            "input_tokens_cost": 0.00001,
            "output_tokens_cost": 0.00006,
            "request_cost": 0.005,
            "total_cost": 0.00507,
        },
    }
    path = vcr_cassette(
        tmp_path / "perplexity.yaml",
        vcr_interaction(
            "https://api.perplexity.ai/chat/completions",
            {"model": "sonar", "messages": USER},
            _chat("sonar", usage),
        ),
    )
    result = read(path)
    assert result.errors == []
    (one,) = result.requests
    assert (one.provider, one.model) == ("perplexity", "sonar")
    assert one.observed is not None
    assert (one.observed.input_tokens, one.observed.output_tokens) == (9, 59)
    assert one.observed.cost == Decimal("0.00507")
    assert one.observed.ignored == ()
    second = vcr_interaction(
        "https://api.openai.com/v1/chat/completions",
        {"model": "gpt-4o", "messages": USER},
        _chat("gpt-4o-2024-08-06", {"prompt_tokens": 12, "completion_tokens": 2}),
    )
    both = vcr_cassette(
        tmp_path / "both.yaml",
        second,
        vcr_interaction(
            "https://api.perplexity.ai/chat/completions",
            {"model": "sonar", "messages": USER},
            _chat("sonar", usage),
        ),
    )
    report = reconcile(
        ReconcileRequest(log=LogInput.of_paths([both])), ContractStore(migrated_db_url)
    )
    # Both priced: contracts-v15 stores Sonar from its 2025-01-21 launch.
    assert report.unpriced == {}
    assert sorted((t.provider, t.model) for t in report.targets) == [
        ("openai", "gpt-4o"),
        ("perplexity", "sonar"),
    ]


def test_an_optional_field_of_unknown_shape_costs_the_field_not_the_request(
    migrated_db_url: str, tmp_path: Path
) -> None:
    # OpenRouter's cost is a number; a list is no shape any gateway writes: the request is
    # read without it (prompt 1,100 with 1,024 cached, output 3), the field named.
    usage = {
        "prompt_tokens": 1100,
        "completion_tokens": 3,
        "prompt_tokens_details": {"cached_tokens": 1024},
        "cost": [0.001],
    }
    path = vcr_cassette(
        tmp_path / "openrouter.yaml",
        vcr_interaction(
            "https://openrouter.ai/api/v1/chat/completions",
            {"model": "openai/gpt-4o", "messages": USER},
            _chat("openai/gpt-4o", usage),
        ),
    )
    result = read(path)
    assert result.errors == []
    (one,) = result.requests
    assert one.observed is not None
    assert totals(result.requests) == {"input": 1100, "read": 1024, "write": 0, "output": 3}
    assert one.observed.cost is None
    (entry,) = one.observed.ignored
    assert entry.startswith("response.body.usage.cost: expected a number")
    report = reconcile(
        ReconcileRequest(log=LogInput.of_paths([path])), ContractStore(migrated_db_url)
    )
    (target,) = report.targets
    (note,) = [note for note in target.notes if "optional usage field" in note]
    assert note.startswith("response.body.usage.cost: expected a number")
    # line 2: the interaction's ``- request:`` (line 1 is ``interactions:``)
    assert f"first at {path}:2)" in note and note.endswith("(1 requests)")


def test_optional_details_of_unknown_shape_are_left_out_counts_are_not() -> None:
    # Anthropic: server_tool_use (the server tools' call counts, billed per call, not per
    # token) with a negative count is left out; the tokens stay: 10 + 300 + 0 = 310.
    observed = normalize_usage(
        {
            "input_tokens": 10,
            "cache_creation_input_tokens": 300,
            "output_tokens": 2,
            "server_tool_use": {"web_search_requests": -1},
        },
        convention="anthropic",
    )
    assert (observed.input_tokens, observed.cache_write_tokens) == (310, 300)
    assert observed.server_tool_calls == 0
    (entry,) = observed.ignored
    assert entry.startswith("usage.server_tool_use.web_search_requests: ")
    # A count of the wrong shape is no optional field: the usage is refused, field named.
    with pytest.raises(RecordFieldError) as error:
        normalize_usage({"input_tokens": "ten", "output_tokens": 2}, convention="anthropic")
    assert error.value.field == "usage.input_tokens"
    # Nor is the TTL split of the writes (it prices them: 5m 1.25x, 1h 2x), nor the details
    # that hold OpenAI's cache read.
    with pytest.raises(RecordFieldError) as error:
        normalize_usage(
            {"input_tokens": 10, "cache_creation_input_tokens": 300, "output_tokens": 2,
             "cache_creation": "ephemeral"},
            convention="anthropic",
        )  # fmt: skip
    assert error.value.field == "usage.cache_creation"
    with pytest.raises(RecordFieldError) as error:
        normalize_usage(
            {"prompt_tokens": 10, "completion_tokens": 2, "prompt_tokens_details": "x"},
            convention="openai-chat",
        )
    assert error.value.field == "usage.prompt_tokens_details"


# --- hosts whose provider no contract covers ----------------------------------------------


def test_a_host_names_its_provider_and_an_uncovered_one_is_reported_unpriced(
    migrated_db_url: str, tmp_path: Path
) -> None:
    # Hyperbolic: a host named in logs.http.endpoints that no contract covers (Together,
    # the host this test used first, has contracts since contracts-v27).
    usage = {
        "prompt_tokens": 40,
        "completion_tokens": 5,
        "total_tokens": 45,
        "prompt_tokens_details": {"cached_tokens": 0},
    }
    path = vcr_cassette(
        tmp_path / "hyperbolic.yaml",
        vcr_interaction(
            "https://api.openai.com/v1/chat/completions",
            {"model": "gpt-4o", "messages": USER},
            _chat("gpt-4o-2024-08-06", {"prompt_tokens": 12, "completion_tokens": 2}),
        ),
        vcr_interaction(
            "https://api.hyperbolic.xyz/v1/chat/completions",
            {"model": "llama3.1-8b", "messages": USER},
            _chat("llama3.1-8b", usage),
        ),
    )
    result = read(path)
    assert result.errors == []
    assert [(r.provider, r.model) for r in result.requests] == [
        ("openai", "gpt-4o"),
        ("hyperbolic", "llama3.1-8b"),
    ]
    report = reconcile(
        ReconcileRequest(log=LogInput.of_paths([path])), ContractStore(migrated_db_url)
    )
    [(reason, count)] = report.unpriced.items()
    assert count == 1
    assert reason.startswith(
        "hyperbolic:llama3.1-8b: no stored contract covers provider 'hyperbolic',"
        " so model 'llama3.1-8b' is not priced"
    )


# --- pydantic-ai's xAI gRPC cassettes ----------------------------------------------------


def _xai_sample(question: str, usage: dict[str, Any], created: str) -> dict[str, Any]:
    return {
        "request_sample": {
            "json": {
                "messages": [
                    {"content": [{"text": "You are a helpful assistant."}], "role": "ROLE_SYSTEM"},
                    {"content": [{"text": question}], "role": "ROLE_USER"},
                ],
                "model": "grok-4-fast-non-reasoning",
            },
            "raw": b"\x0a\x00",
        },
        "response_sample": {
            "json": {
                "id": "r1",
                "outputs": [
                    {
                        "finish_reason": "REASON_STOP",
                        "message": {"content": "Paris.", "role": "ROLE_ASSISTANT"},
                    }
                ],
                "created": created,
                "model": "grok-4-fast-non-reasoning",
                "usage": usage,
            },
            "raw": b"\x0a\x00",
        },
    }


def test_xai_grpc_cassette_is_read_as_xai_chat_completions(tmp_path: Path) -> None:
    cassette = {
        "version": 1,
        "interactions": [
            _xai_sample(
                "What is the capital of France?",
                {
                    "completion_tokens": 27,
                    "prompt_tokens": 181,
                    "total_tokens": 208,
                    "prompt_text_tokens": 181,
                    "cached_prompt_text_tokens": 162,
                },
                "2026-01-16T17:04:40.247661156Z",
            ),
            {"collections_method": {"method": "delete", "response_raw": b""}},
            {
                "request_stream": {
                    "json": {
                        "messages": [{"content": [{"text": "Hi"}], "role": "ROLE_USER"}],
                        "model": "grok-4-fast-non-reasoning",
                    },
                    "raw": b"\x0a\x00",
                },
                "response_stream": {
                    "chunks_json": [
                        {"id": "r2", "outputs": [{"delta": {"content": "He"}}]},
                        {
                            "id": "r2",
                            "created": "2026-01-16T17:05:00Z",
                            "model": "grok-4-fast-non-reasoning",
                            # MessageToDict writes 64-bit integers as text
                            "usage": {
                                "completion_tokens": "3",
                                "prompt_tokens": "20",
                                "total_tokens": "23",
                            },
                        },
                    ],
                    "chunks_raw": [b"\x0a\x00", b"\x0a\x00"],
                },
            },
        ],
    }
    path = tmp_path / "test_xai_instructions.xai.yaml"
    path.write_text(yaml.safe_dump(cassette, sort_keys=False))
    result = read(path)
    assert (result.format, result.errors) == ("vcr", [])
    # prompt 181 (162 cached) + 20; output 27 + 3
    assert totals(result.requests) == {"input": 201, "read": 162, "write": 0, "output": 30}
    first, second = result.requests
    assert (first.provider, first.model) == ("xai", "grok-4-fast-non-reasoning")
    # 2026-01-16T17:04:40Z and 17:05:00Z (the fraction of a second dropped)
    assert (first.timestamp, second.timestamp) == (1768583080.0, 1768583100.0)
    assert result.skipped == {"recorded call that is not a model endpoint": 1}


def test_xai_grpc_without_the_json_form_is_named(tmp_path: Path) -> None:
    interaction = _xai_sample(
        "Hi", {"prompt_tokens": 5, "completion_tokens": 1}, "2026-01-16T17:04:40Z"
    )
    del interaction["request_sample"]["json"]
    path = tmp_path / "raw_only.xai.yaml"
    path.write_text(yaml.safe_dump({"version": 1, "interactions": [interaction]}))
    result = read(path)
    (error,) = result.errors
    assert error.field == "interactions[0].request_sample.json"
    assert "raw protobuf bytes are not decoded" in error.reason


def test_a_model_on_an_unknown_host_is_named_when_no_provider_is(
    migrated_db_url: str, tmp_path: Path
) -> None:
    # A self-hosted OpenAI-compatible server: the model is named (llama3.1-8b), no host or
    # model family names a provider; the reason names the model and asks for --provider.
    path = vcr_cassette(
        tmp_path / "internal.yaml",
        vcr_interaction(
            "https://api.openai.com/v1/chat/completions",
            {"model": "gpt-4o", "messages": USER},
            _chat("gpt-4o-2024-08-06", {"prompt_tokens": 12, "completion_tokens": 2}),
        ),
        vcr_interaction(
            "https://llm.internal.example/v1/chat/completions",
            {"model": "llama3.1-8b", "messages": USER},
            _chat("llama3.1-8b", {"prompt_tokens": 40, "completion_tokens": 5}),
        ),
    )
    report = reconcile(
        ReconcileRequest(log=LogInput.of_paths([path])), ContractStore(migrated_db_url)
    )
    [(reason, count)] = report.unpriced.items()
    assert count == 1
    assert reason == (
        "model 'llama3.1-8b': the log names no provider for it (no host cachecast knows and"
        " no model family that names one): give --provider"
    )


def test_a_gateway_model_of_no_known_vendor_is_unpriced_naming_the_gateway(
    migrated_db_url: str, tmp_path: Path
) -> None:
    # OpenRouter routes open-weight slugs whose first segment is no vendor we price
    # (``meta-llama/...:free``): the host was known, so the reason names the gateway and never
    # says "no host cachecast knows". (``meta-llama/llama-3.3-8b-instruct:free`` is priced
    # since contracts-v25, under OpenRouter's own contract: another free variant here.)
    model = "meta-llama/llama-3.1-405b-instruct:free"
    path = vcr_cassette(
        tmp_path / "free.yaml",
        vcr_interaction(
            "https://api.openai.com/v1/chat/completions",
            {"model": "gpt-4o", "messages": USER},
            _chat("gpt-4o-2024-08-06", {"prompt_tokens": 12, "completion_tokens": 2}),
        ),
        vcr_interaction(
            "https://openrouter.ai/api/v1/chat/completions",
            {"model": model, "messages": USER},
            _chat(model, {"prompt_tokens": 14, "completion_tokens": 2, "total_tokens": 16}),
        ),
    )
    report = reconcile(
        ReconcileRequest(log=LogInput.of_paths([path])), ContractStore(migrated_db_url)
    )
    [(reason, count)] = report.unpriced.items()
    assert count == 1
    assert reason.startswith(f"openrouter:{model}: sent through openrouter")
    assert "no host cachecast knows" not in reason
