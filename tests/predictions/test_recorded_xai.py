"""xAI's recorded reads predicted under revision 0013's token-exact cache counts.

Observed figures are the recordings' usage fields (``prompt_tokens_details.cached_tokens``,
Responses' ``input_tokens_details.cached_tokens``); the tolerance is the reconciliation's for
an approximated tokenizer: max(8 tokens, 1% of the prompt) (docs/predictions.md)."""

from __future__ import annotations

from cachecast.contracts import ContractStore
from tests.conftest import shared_data
from tests.predictions.test_served_recordings import rows, run

VCR = "recordings/vcr_cassettes"


def test_go_vcr_grok_3_mini_reads_its_previous_prompt_token_by_token(
    store: ContractStore,
) -> None:
    # Request 1: prompt_tokens 288, cached_tokens 7; request 2 extends it: prompt_tokens 331,
    # cached_tokens 283 (not 256 + a multiple of 128: under the old step we predicted 256,
    # 27 tokens off, a "contract dispute"). Tolerance for request 2: max(8, 331 // 100) = 8.
    path = shared_data(
        f"{VCR}/go-vcr/fantasy_TestOpenAICompatibleThinking_xai-grok-3-mini_thinking.yaml"
    )
    report = run(path, store)
    (target,) = report.targets
    # The cassette is of 2026-03-12: priced under Grok 3 Mini's version from its launch
    # (revision 0019), with the token-exact caching terms revision 0013 set.
    assert target.contract.version == "xai/grok-3-mini@2025-04-09"
    second = rows(report)[1]
    assert second[2] == 283
    assert abs(second[1] - 283) <= 8
    assert report.summary.within_tolerance == 2


def test_rubyllm_grok_4_3_second_turn(store: ContractStore) -> None:
    # Responses API, 2026-08-10: input_tokens 200 (cached 128: from an earlier run, before the
    # log), then 409 (cached 192). Request 2 extends request 1's 200-token prompt: a
    # token-exact cache predicts close to 200; tolerance max(8, 409 // 100) = 8, and
    # |200 - 192| = 8 is within it. Under the 128-token step it predicted 128 (64 off).
    path = shared_data(
        f"{VCR}/ruby-vcr/chat_with_extended_thinking_xai_grok-3-mini_preserves_thinking"
        "_signatures_between_turns_when_provided.yml"
    )
    report = run(path, store)
    (first, second) = rows(report)
    assert (first[2], second[2]) == (128, 192)
    assert abs(second[1] - 192) <= 8
    assert report.summary.within_tolerance == 1  # the first: a cache warm before the log
