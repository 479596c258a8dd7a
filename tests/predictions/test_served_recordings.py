"""Recorded traffic of other projects priced on the day it was served, predicted and classified.

Observed figures are the usage fields of each recording (its folder's PROVENANCE.md tabulates
them per request: read/write); dates are the recording's own (a Date header, ``recorded_at``
or a response body's ``created``), or none.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from cachecast.contracts import ContractStore
from cachecast.passes.log_input import LogInput
from cachecast.simulator.reconcile import writes_billed_apart
from cachecast.usecases.reconcile import ReconcileReport, ReconcileRequest, reconcile
from tests.conftest import shared_data

VCR = "recordings/vcr_cassettes"


def run(path: Path, store: ContractStore) -> ReconcileReport:
    return reconcile(ReconcileRequest(log=LogInput.of_paths([path])), store)


def rows(report: ReconcileReport) -> list[tuple[int, int, int, int | None, int | None]]:
    """(line, predicted read, observed read, predicted write, observed write), in file order."""
    return [
        (
            row.line,
            row.predicted_cache_read_tokens,
            row.observed_cache_read_tokens,
            row.predicted_cache_write_tokens,
            row.observed_cache_write_tokens,
        )
        for row in sorted(report.requests, key=lambda row: row.line)
    ]


def test_a_dateless_cassette_of_a_retired_model_is_priced_under_its_last_version(
    store: ContractStore,
) -> None:
    # go-vcr keeps no headers and Anthropic's bodies no time: the log's times are not dates.
    # claude-sonnet-4's only stored version is [2025-05-22, 2026-06-15).
    path = shared_data(
        f"{VCR}/go-vcr/fantasy_TestAnthropicCommonWithCacheControl_claude-sonnet-4_multi_tool"
        "_streaming.yaml"
    )
    report = run(path, store)
    assert report.unpriced == {}
    (target,) = report.targets
    assert target.contract.version == "anthropic/claude-sonnet-4@2025-05-22"
    assert any("last version [2025-05-22, 2026-06-15)" in note for note in target.notes)
    # Both prompts (502 and 700 tokens) are under the 1,024 minimum: nothing read or written,
    # as the recording's usage says (cache_read 0, cache_creation 0).
    assert [(r[2], r[4]) for r in rows(report)] == [(0, 0), (0, 0)]
    assert report.summary.within_tolerance == 2


def test_a_model_served_before_our_first_version_of_it(store: ContractStore) -> None:
    # RubyLLM's xAI cassette, recorded_at 2026-08-10: grok-4.3 answers; its launch version
    # (2026-04-30, revision 0011) as corrected from 2026-05-01 (revision 0013) is in force.
    path = shared_data(
        f"{VCR}/ruby-vcr/chat_with_extended_thinking_xai_grok-3-mini_preserves_thinking"
        "_signatures_between_turns_when_provided.yml"
    )
    report = run(path, store)
    assert report.unpriced == {}
    assert [t.contract.version for t in report.targets] == ["xai/grok-4.3@2026-05-01"]
    # The Bedrock Nova 2 Lite cassette of 2026-08-19: revision 0012's correction of the launch
    # version (explicit caching), from 2025-12-03.
    path = shared_data(
        f"{VCR}/ruby-vcr/chat_function_calling_bedrock_amazon_nova-2-lite-v1_0_can_use_tools"
        "_with_multi-turn_streaming_conversations.yml"
    )
    report = run(path, store)
    assert report.unpriced == {}
    assert [t.contract.version for t in report.targets] == [
        "bedrock/us.amazon.nova-2-lite-v1:0@2025-12-03"
    ]


def test_a_batch_output_before_openais_caching_is_priced_without_a_note(
    store: ContractStore,
) -> None:
    # The Batch output of 2024-09-03 (gpt-4o-mini-2024-07-18): gpt-4o-mini's version from its
    # launch (2024-07-18, contracts-v10) to OpenAI's caching launch (2024-10-01) prices it,
    # no caching offered then; before contracts-v10 it met the [U] unverified-price note.
    path = shared_data("recordings/openai_batch/langbatch_chat_completion_batch_results.jsonl")
    report = run(path, store)
    assert report.unpriced == {}
    (target,) = report.targets
    assert target.contract.version == "openai/gpt-4o-mini@2024-07-18"
    assert not any(note.startswith("[U] price unverified") for note in target.notes)


def test_a_deepseek_cassette_without_headers_is_dated_by_created(store: ContractStore) -> None:
    # created 1781082253 = 2026-06-10: deepseek-reasoner's version of 2026-04-25 (revision
    # 0012's correction of 2026-04-24's, with the 64-token unit) is in force (its versions end
    # on 2026-07-24; today none is).
    path = shared_data(
        f"{VCR}/pydantic-ai-parsed-body/test_deepseek_deferred_capability_with_thinking.yaml"
    )
    report = run(path, store)
    assert report.unpriced == {}
    assert [t.contract.version for t in report.targets] == ["deepseek/deepseek-reasoner@2026-04-25"]
    # Observed reads 512, 0, 896 (prompt_cache_hit_tokens).
    assert [r[2] for r in rows(report)] == [512, 0, 896]


def test_an_inline_image_sized_from_its_bytes_predicts_bedrock_exactly(
    store: ContractStore,
) -> None:
    # A 597 x 566 JPEG (451 tokens, not the 1,600 estimate) after the cached text; observed:
    # request 1 writes 2,074, request 2 reads those 2,074 and writes 297 more.
    path = shared_data(
        f"{VCR}/pydantic-ai-parsed-body/test_bedrock_cache_messages_with_image_as_last_content.yaml"
    )
    report = run(path, store)
    assert [r[1:] for r in rows(report)] == [(0, 0, 2_074, 2_074), (2_074, 2_074, 297, 297)]


def test_reads_no_log_entry_could_serve_are_a_warm_cache(store: ContractStore) -> None:
    # crewAI's Anthropic cassette: both requests read 1,217 tokens (observed). The first shows
    # its prompt for the first time; the second diverges from the first inside the user
    # message that carries the only breakpoint: neither read can come from the log's entries.
    path = shared_data(
        f"{VCR}/vcrpy-more/crewai_test_anthropic_streaming_cached_prompt_tokens.yaml"
    )
    report = run(path, store)
    assert [r[2] for r in rows(report)] == [1_217, 1_217]
    assert [row.classification for row in report.requests] == ["warm_cache_at_log_start"] * 2


def test_openai_automatic_writes_reported_as_zero_are_not_compared(store: ContractStore) -> None:
    # RubyLLM's gpt-5.2 Responses cassette: usage.input_tokens_details says
    # cache_write_tokens 0 and cached_tokens 0 for the first request (8,614 tokens). Under
    # OpenAI's automatic cache nothing is billed at a write price (write multiplier 1): the
    # 0 is no count of the tokens the cache took in, and is not compared with them.
    path = shared_data(
        f"{VCR}/ruby-vcr/chat_web_search_with_openai_gpt-5_2_searches_and_records_the_tool"
        "_call_items.yml"
    )
    report = run(path, store)
    first = min(report.requests, key=lambda row: row.line)
    assert (first.observed_cache_read_tokens, first.observed_cache_write_tokens) == (0, None)
    assert first.predicted_cache_read_tokens == 0
    assert first.within_tolerance
    assert not writes_billed_apart(store.as_of("openai", "gpt-5.2", dt.date(2026, 8, 1)))
    # Anthropic's writes cost 1.25x the input price: compared.
    assert writes_billed_apart(store.as_of("anthropic", "claude-haiku-4-5", dt.date(2026, 8, 1)))
