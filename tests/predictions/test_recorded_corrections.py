"""Recorded traffic the contracts of revision 0012 price and predict (contracts-v5.json), and
how a cache warm before the log began is reported.

Observed figures are the recordings' usage fields; bills are worked by hand from the stored
prices (docs/contracts.md, contracts-v5)."""

from __future__ import annotations

from decimal import Decimal

from cachecast.contracts import ContractStore
from cachecast.usecases.reconcile import ReconcileReport
from tests.conftest import shared_data
from tests.predictions.test_served_recordings import rows, run

VCR = "recordings/vcr_cassettes"


def by_line(report: ReconcileReport) -> list[tuple[int, int, int | None, int | None]]:
    """(predicted read, observed read, predicted write, observed write), in file order."""
    return [row[1:] for row in rows(report)]


def test_nova_without_a_cache_point_caches_nothing(store: ContractStore) -> None:
    # RubyLLM's ConverseStream cassette (2026-08-19): four requests of one conversation, each
    # over the 1,000-token minimum, no cachePoint; no response's metadata carries
    # cacheReadInputTokens or cacheWriteInputTokens (Converse leaves them out where the request
    # marks no cache point: read as 0). Under 'both' we predicted writes of
    # 1,075, 1,130 and 1,222 tokens for the last three.
    path = shared_data(
        f"{VCR}/ruby-vcr/chat_function_calling_bedrock_amazon_nova-2-lite-v1_0_can_use_tools"
        "_with_multi-turn_streaming_conversations.yml"
    )
    report = run(path, store)
    assert by_line(report) == [(0, 0, 0, 0)] * 4
    assert report.summary.within_tolerance == 4


def test_cohere_is_priced_at_its_input_price(store: ContractStore) -> None:
    # RubyLLM's Cohere v2 stream (2026-08-13): billed_units (input, output) = (44, 28),
    # (47, 8), (68, 8), (71, 8); command-a-03-2025 at $2.50 in / $10 out per MTok, nothing
    # cached. Request 1: 44 x 2.5 / 1e6 + 28 x 10 / 1e6 = 0.00011 + 0.00028 = 0.00039;
    # 2: 0.0001175 + 0.00008 = 0.0001975; 3: 0.00017 + 0.00008 = 0.00025;
    # 4: 0.0001775 + 0.00008 = 0.0002575.
    path = shared_data(
        f"{VCR}/ruby-vcr/chat_function_calling_cohere_command-a-03-2025_can_use_tools_without"
        "_parameters_in_multi-turn_streaming_conversations.yml"
    )
    report = run(path, store)
    assert report.contradictory_observations == []
    ordered = sorted(report.requests, key=lambda row: row.line)
    assert [row.observed_cost for row in ordered] == [
        Decimal("0.00039"),
        Decimal("0.0001975"),
        Decimal("0.00025"),
        Decimal("0.0002575"),
    ]
    assert [row.predicted_cost for row in ordered] == [row.observed_cost for row in ordered]
    assert [
        (row.predicted_cache_read_tokens, row.observed_cache_read_tokens) for row in ordered
    ] == [(0, 0)] * 4
    (target,) = report.targets
    # Recorded inside the version from Command A's release (revision 0019, mode none: Cohere
    # offers no prompt caching), before the stored price-map version of 2026-12-03.
    assert target.contract.version == "cohere/command-a-03-2025@2025-03-13"
    assert not any(note.startswith("[U] price unverified") for note in target.notes)


def test_mistral_and_zai_are_priced(store: ContractStore) -> None:
    # pydantic-ai's Mistral cassette: cached_tokens 0, then 224 (prompt_tokens 253, 268).
    mistral = run(
        shared_data(f"{VCR}/pydantic-ai-parsed-body/test_mistral_history_uses_prompt_cache.yaml"),
        store,
    )
    assert mistral.unpriced == {}
    assert [row[1] for row in by_line(mistral)] == [0, 224]
    # $0.50 in, reads 0.1x ($0.05), $1.50 out; completion_tokens 5 and 5. Request 1:
    # 253 x 0.5 / 1e6 + 5 x 1.5 / 1e6 = 0.0001265 + 0.0000075 = 0.000134. Request 2:
    # (268 - 224) x 0.5 / 1e6 + 224 x 0.05 / 1e6 + 0.0000075 = 0.000022 + 0.0000112 +
    # 0.0000075 = 0.0000407.
    assert [row.observed_cost for row in sorted(mistral.requests, key=lambda r: r.line)] == [
        Decimal("0.000134"),
        Decimal("0.0000407"),
    ]
    # go-vcr's Z.ai cassette (api.z.ai coding endpoint): cached_tokens 43, then 279; GLM-4.7-
    # Flash is free, so every bill is $0.
    zai = run(
        shared_data(
            f"{VCR}/go-vcr/fantasy_TestOpenAICompatibleCommon_zai-glm-4-7-flash_multi_tool.yaml"
        ),
        store,
    )
    assert zai.unpriced == {}
    assert [row[1] for row in by_line(zai)] == [43, 279]
    assert {row.observed_cost for row in zai.requests} == {Decimal(0)}


def test_a_cache_warm_before_the_log_began_is_said_with_its_figures(
    store: ContractStore,
) -> None:
    # crewAI's OpenAI cassette: request 1 (1,144 tokens) reads 1,024 that no earlier request
    # of the log could have cached; request 2 is predicted within tolerance.
    path = shared_data(f"{VCR}/vcrpy-more/crewai_test_openai_streaming_cached_prompt_tokens.yaml")
    report = run(path, store)
    first = min(report.requests, key=lambda row: row.line)
    assert first.classification == "warm_cache_at_log_start"
    assert first.explanation == (
        "the cache was warm before the log began: the provider read 1024 tokens (predicted 0)"
        " of a prefix no earlier request of the log cached"
    )
    summary = report.summary
    # Counted outside tolerance (1 of 2), and the share of the others given beside it: 1 / 1.
    assert (summary.requests, summary.within_tolerance, summary.warm_at_log_start) == (2, 1, 1)
    assert Decimal(summary.within_tolerance_share) == Decimal("0.5")
    assert Decimal(summary.within_tolerance_share_after_warm_start) == 1
