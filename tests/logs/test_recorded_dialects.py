"""Recorded HTTP traffic in every dialect (vcrpy, pydantic-ai's ``parsed_body``, Ruby VCR,
go-vcr v2, HAR 1.2 from Polly.JS), read natively, every provider's usage streamed or not.

Expected figures are written by hand from each recording's documented usage fields, as the
folder's PROVENANCE.md tabulates them (computed there by a reader independent of ours, one
rule per provider, quoted under "How the totals were counted"): billed responses, then
input (every prompt token, cached included), cache read, cache write, output (reasoning
included where billed), and the read/write of each request in file order. Where our
convention differs from the table's, the test says so and gives the arithmetic.
"""

from __future__ import annotations

import glob
from pathlib import Path

import pytest

from tests.conftest import shared_data
from tests.logs.helpers import read, totals

# file -> (requests, (input, read, write, output), per request (read, write))
EXPECTED: dict[str, tuple[int, tuple[int, int, int, int], list[tuple[int, int]]]] = {
    # --- pydantic-ai (parsed_body; Bedrock bodies as strings, header values !!binary)
    "vcr_cassettes/pydantic-ai-parsed-body/test_bedrock_single_tool_choice_pr": (
        4,
        (10_140, 4_590, 4_984, 34),
        [(0, 2_492), (0, 2_492), (2_492, 0), (2_098, 0)],
    ),
    "vcr_cassettes/pydantic-ai-parsed-body/test_bedrock_cache_messages_with_d": (
        2,
        (3_666, 1_712, 1_948, 348),
        [(0, 1_712), (1_712, 236)],
    ),
    "vcr_cassettes/pydantic-ai-parsed-body/test_bedrock_cache_messages_with_i": (
        2,
        (4_451, 2_074, 2_371, 349),
        [(0, 2_074), (2_074, 297)],
    ),
    "vcr_cassettes/pydantic-ai-parsed-body/test_mistral_history_uses_prompt_c": (
        2,
        (521, 224, 0, 10),
        [(0, 0), (224, 0)],
    ),
    # Cohere v2: billed_units 2,406 in / 2 out; cached_tokens 2,928 of the 2,935-token
    # templated prompt, whose template is 2,935 - 2,406 = 529 unbilled tokens: the billed
    # tokens the hit covers are 2,928 - 529 = 2,399 (docs/log-formats.md, Cohere [U]).
    "vcr_cassettes/pydantic-ai-parsed-body/test_request_usage_with_cached_tok": (
        1,
        (2_406, 2_399, 0, 2),
        [(2_399, 0)],
    ),
    # DeepSeek: prompt_cache_hit_tokens and prompt_tokens_details.cached_tokens are one count
    "vcr_cassettes/pydantic-ai-parsed-body/test_deepseek_deferred_capability_": (
        3,
        (2_414, 1_408, 0, 256),
        [(512, 0), (0, 0), (896, 0)],
    ),
    # OpenRouter -> Gemini: request 1 reads 2,161 and writes 2,161 of 2,168 (overlap)
    "vcr_cassettes/pydantic-ai-parsed-body/test_openrouter_cache_instructions": (
        2,
        (4_335, 4_322, 2_161, 199),
        [(2_161, 2_161), (2_161, 0)],
    ),
    # OpenAI Responses: one SSE stream (usage in response.completed), one parsed body
    "vcr_cassettes/pydantic-ai-parsed-body/test_openai_responses_model_web_se": (
        2,
        (19_166, 16_896, 0, 1_220),
        [(8_320, 0), (8_576, 0)],
    ),
    "vcr_cassettes/pydantic-ai-parsed-body/test_google_validated_accepts_what": (
        2,
        (1_635, 594, 0, 271),
        [(0, 0), (594, 0)],
    ),
    "vcr_cassettes/pydantic-ai-parsed-body/test_anthropic_to_google_deferred_": (
        5,
        (4_419, 1_069, 1_154, 384),
        [(0, 0), (0, 1_069), (1_069, 85), (0, 0), (0, 0)],
    ),
    # --- Ruby VCR (http_interactions, lower-case methods, !binary bodies, URL placeholders)
    "vcr_cassettes/ruby-vcr/chat_prompt_cache_round-trip_anthropic_claude-hai": (
        2,
        (14_722, 7_351, 7_351, 8),
        [(0, 7_351), (7_351, 0)],
    ),
    # Gemini explicit cache: the creation is a record of its own whose prompt is the cached
    # content (our convention: a write is part of its request's input), so input is
    # 9,609 (creation) + 9,622 (generateContent) = 19,231 where the table, counting the
    # creation as input 0, has 9,622. PATCH (TTL) and DELETE are not model calls.
    "vcr_cassettes/ruby-vcr/cachedcontent_explicit_caching_round-trip_gemini_": (
        2,
        (19_231, 9_609, 9_609, 171),
        [(0, 9_609), (9_609, 0)],
    ),
    # Cohere v2 stream: billed_units input 44 + 47 + 68 + 71 = 230, output 28 + 8 + 8 + 8 = 52;
    # cached_tokens 1,376, 1,376, 992, 1,440 end inside the templates (tokens - billed =
    # 1,476 - 44 = 1,432, 1,563 - 47 = 1,516, 1,591 - 68 = 1,523, 1,678 - 71 = 1,607): 0 read
    "vcr_cassettes/ruby-vcr/chat_function_calling_cohere_command-a-03-2025_ca": (
        4,
        (230, 0, 0, 52),
        [(0, 0), (0, 0), (0, 0), (0, 0)],
    ),
    # Azure AI Foundry grok: cached_tokens above prompt_tokens (flagged, kept as reported)
    "vcr_cassettes/ruby-vcr/chat_function_calling_azure_grok-4-1-fast-non-rea": (
        4,
        (1_392, 1_940, 0, 114),
        [(416, 0), (492, 0), (493, 0), (539, 0)],
    ),
    # xAI Responses: context_details repeats the usage (an alias, not added)
    "vcr_cassettes/ruby-vcr/chat_with_extended_thinking_xai_grok-3-mini_prese": (
        2,
        (609, 320, 0, 336),
        [(128, 0), (192, 0)],
    ),
    "vcr_cassettes/ruby-vcr/chat_pdf_models_vertexai_gemini-2_5-flash_underst": (
        2,
        (2_638, 1_274, 0, 660),
        [(0, 0), (1_274, 0)],
    ),
    "vcr_cassettes/ruby-vcr/chat_web_search_with_openai_gpt-5_2_searches_and_": (
        2,
        (13_179, 4_352, 0, 100),
        [(0, 0), (4_352, 0)],
    ),
    "vcr_cassettes/ruby-vcr/chat_function_calling_deepseek_deepseek-chat_can_": (
        2,
        (954, 384, 0, 163),
        [(0, 0), (384, 0)],
    ),
    # Bedrock ConverseStream: binary event stream under !binary, usage in `metadata`
    "vcr_cassettes/ruby-vcr/chat_function_calling_bedrock_amazon_nova-2-lite-": (
        4,
        (4_422, 0, 0, 150),
        [(0, 0)] * 4,
    ),
    # --- go-vcr v2 (status strings, code, duration, !!binary event streams)
    # xAI chat: reasoning outside completion_tokens (total = 288 + 27 + 350 = 665)
    "vcr_cassettes/go-vcr/fantasy_TestOpenAICompatibleThinking_xai-grok-3-min": (
        2,
        (619, 290, 0, 720),
        [(7, 0), (283, 0)],
    ),
    "vcr_cassettes/go-vcr/fantasy_TestOpenRouterCommon_glm_multi_tool_streami": (
        2,
        (633, 448, 0, 122),
        [(192, 0), (256, 0)],
    ),
    "vcr_cassettes/go-vcr/fantasy_TestOpenAICompatibleCommon_zai-glm-4-7-flas": (
        2,
        (697, 322, 0, 211),
        [(43, 0), (279, 0)],
    ),
    "vcr_cassettes/go-vcr/fantasy_TestAnthropicCommonWithCacheControl_claude-": (
        2,
        (1_202, 0, 0, 168),
        [(0, 0), (0, 0)],
    ),
    "vcr_cassettes/go-vcr/fantasy_TestBedrockCommon_bedrock-anthropic-claude-": (
        2,
        (1_223, 0, 0, 108),
        [(0, 0), (0, 0)],
    ),
    "vcr_cassettes/go-vcr/fantasy_TestGoogleCommon_vertex-gemini-2-5-flash_mu": (
        2,
        (172, 0, 0, 76),
        [(0, 0), (0, 0)],
    ),
    "vcr_cassettes/go-vcr/fantasy_TestAzureResponsesCommon_azure-gpt-5-mini_t": (
        2,
        (155, 0, 0, 331),
        [(0, 0), (0, 0)],
    ),
    # --- vcrpy from other projects (gzip !!binary, SSE strings)
    "vcr_cassettes/vcrpy-more/mirascope_test_caching_system_message_anthropic": (
        2,
        (8_354, 8_334, 0, 541),
        [(4_167, 0), (4_167, 0)],
    ),
    "vcr_cassettes/vcrpy-more/mirascope_test_caching_multi_turn_conversation_": (
        3,
        (11_236, 7_168, 0, 178),
        [(0, 0), (3_584, 0), (3_584, 0)],
    ),
    "vcr_cassettes/vcrpy-more/crewai_test_anthropic_streaming_cached_prompt_t": (
        2,
        (2_440, 2_434, 0, 10),
        [(1_217, 0), (1_217, 0)],
    ),
    "vcr_cassettes/vcrpy-more/crewai_test_openai_streaming_cached_prompt_toke": (
        2,
        (2_288, 2_048, 0, 5),
        [(1_024, 0), (1_024, 0)],
    ),
    "vcr_cassettes/vcrpy-more/crewai_TestAgentMultimodalGemini.test": (
        2,
        (3_036, 1_122, 0, 656),
        [(0, 0), (1_122, 0)],
    ),
    "vcr_cassettes/vcrpy-more/openinference_openai_test_cached_tokens.yaml": (
        2,
        (2_740, 1_280, 0, 177),
        [(0, 0), (1_280, 0)],
    ),
    "vcr_cassettes/vcrpy-more/openinference_anthropic_test_anthropic_instrume": (
        2,
        (3_508, 1_733, 1_733, 1_129),
        [(0, 1_733), (1_733, 0)],
    ),
    # --- HAR 1.2 (Polly.JS)
    "har/mirascope_caching_anthropic_caches-long-system-message.har": (
        2,
        (6_210, 0, 0, 300),
        [(0, 0), (0, 0)],
    ),
    "har/mirascope_stream_openai_responses_provides-usage-after-str": (
        1,
        (7, 0, 0, 79),
        [(0, 0)],
    ),
    "har/mirascope_tools_google_streams-tool-calls-and-resumes-with": (
        3,
        (496, 0, 0, 164),
        [(0, 0)] * 3,
    ),
    "har/mirascope_tools_openai_completions_streams-tool-calls-and-": (
        2,
        (248, 0, 0, 95),
        [(0, 0), (0, 0)],
    ),
    "har/mirascope_stream_anthropic_streams-thought-content-when-in": (
        1,
        (50, 0, 0, 297),
        [(0, 0)],
    ),
    # Bedrock legacy InvokeModel stream: base64 event stream, invocation metrics only
    "har/openllmetry-js_bedrock_claude-v2_invoke_stream.har": (1, (16, 0, 0, 63), [(0, 0)]),
    # Anthropic server tools, streamed: the final message_delta carries the billed usage,
    # cumulative over the server-side iterations (message_start shows none of the cache)
    "vcr_cassettes/vcrpy-more/mirascope_test_web_search_tool_stream_anthropic": (
        2,
        (77_466, 44_489, 30_879, 1_089),
        [(28_247, 7_621), (16_242, 23_258)],
    ),
}
# Usage that contradicts itself (reads and writes above the prompt): file -> requests flagged
CONTRADICTORY = {
    "vcr_cassettes/pydantic-ai-parsed-body/test_openrouter_cache_instructions": [0],
    "vcr_cassettes/ruby-vcr/chat_function_calling_azure_grok-4-1-fast-non-rea": [
        0,
        1,
        2,
        3,
    ],
}


def recording(prefix: str) -> Path:
    """The one recording whose path starts with ``prefix`` (names are long: the keys above
    are their unique beginnings)."""
    folder, _, start = prefix.rpartition("/")
    found = sorted(shared_data(f"recordings/{folder}").glob(f"{glob.escape(start)}*"))
    assert len(found) == 1, f"{prefix}: {found}"
    return found[0]


@pytest.mark.parametrize("relative", sorted(EXPECTED))
def test_recording_totals_match_the_documented_usage(relative: str) -> None:
    count, (input_tokens, read_tokens, written, output), per_request = EXPECTED[relative]
    result = read(recording(relative))
    assert result.errors == []
    assert result.format == ("har" if relative.startswith("har/") else "vcr")
    assert len(result.requests) == count
    assert totals(result.requests) == {
        "input": input_tokens,
        "read": read_tokens,
        "write": written,
        "output": output,
    }
    assert [
        (r.observed.cache_read_tokens or 0, r.observed.cache_write_tokens or 0)
        for r in result.requests
        if r.observed is not None
    ] == per_request
    flagged = [
        index
        for index, r in enumerate(result.requests)
        if r.observed is not None and r.observed.contradiction is not None
    ]
    assert flagged == CONTRADICTORY.get(relative, [])


def test_cohere_v1_stream_names_no_model() -> None:
    # Cohere v1 /v1/chat with the default model: neither the request nor the stream names
    # it, so the request is read with no model (the host names its provider); named or not,
    # the stream-end event's billed units are read (23 in, 78 out;
    # token_count.prompt_tokens 1,376 counts connector documents, unbilled).
    path = recording("har/openllmetry-js_cohere_v1_chat_stream.har")
    unnamed = read(path)
    assert unnamed.errors == []
    assert totals(unnamed.requests) == {"input": 23, "read": 0, "write": 0, "output": 78}
    (request,) = unnamed.requests
    assert (request.provider, request.model, request.logged_model) == ("cohere", None, None)
    named = read(path, default_model="command-r")
    assert named.errors == []
    assert totals(named.requests) == {"input": 23, "read": 0, "write": 0, "output": 78}
    (request,) = named.requests
    assert request.provider == "cohere" and not request.prompt_complete  # connectors


def test_every_recording_of_http_traffic_is_covered() -> None:
    """Every file of the recorded-traffic folders is in the table above (or the Cohere
    test), and the openllmetry cassettes are in test_recordings."""
    root = shared_data("recordings")
    found = {
        str(p.relative_to(root))
        for folder in ("vcr_cassettes", "har")
        for p in (root / folder).rglob("*")
        if p.suffix in (".yaml", ".yml", ".har")
    }
    prefixes = [*EXPECTED, "har/openllmetry-js_cohere_v1_chat_stream.har"]
    uncovered = sorted(p for p in found if not any(p.startswith(k) for k in prefixes))
    assert uncovered == sorted(p for p in found if p.startswith("vcr_cassettes/openllmetry/"))


def test_a_cohere_v1_har_that_names_no_model_is_read_with_model(migrated_db_url: str) -> None:
    # Cohere's v1 chat body may omit `model` (the endpoint's default that day is not stated
    # in our sources): the request is read all the same, with no model and the totals of the
    # stream's final `billed_units` parsed here; `reconcile` lists it as unpriced, saying
    # why (exit 2: nothing priced), where before the whole file failed.
    import json as _json

    from typer.testing import CliRunner

    from cachecast.cli import app

    path = shared_data("recordings/har/openllmetry-js_cohere_v1_chat_stream.har")
    (entry,) = _json.loads(path.read_text())["log"]["entries"]
    events = [_json.loads(line) for line in entry["response"]["content"]["text"].splitlines()]
    (end,) = [event for event in events if event.get("event_type") == "stream-end"]
    billed = end["response"]["meta"]["billed_units"]
    without = CliRunner().invoke(app, ["inspect", str(path), "--json"])
    assert without.exit_code == 0, without.output
    (unnamed,) = _json.loads(without.stdout)["files"]
    assert unnamed["requests"] == 1
    assert unnamed["observed"]["input_tokens"] == billed["input_tokens"]
    assert "no model in the record" not in without.output
    unpriced = CliRunner().invoke(app, ["reconcile", str(path), "--database-url", migrated_db_url])
    assert unpriced.exit_code == 2
    assert "cohere: the record names no model" in unpriced.output
    assert "no readable record" not in unpriced.output
    read = CliRunner().invoke(app, ["inspect", str(path), "--json", "--model", "command-r"])
    assert read.exit_code == 0, read.output
    (figures,) = _json.loads(read.stdout)["files"]
    assert figures["requests"] == 1
    assert figures["observed"]["input_tokens"] == billed["input_tokens"]
    assert figures["observed"]["output_tokens"] == billed["output_tokens"]
