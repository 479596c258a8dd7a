"""The policy and the bills of a contract version that offers no prompt caching (mode none).

Hand-built terms: $0.50 in / $1.50 out per MTok, and (where said) a long-context tier above
1,000 prompt tokens at $1 / $2. Expected bills are worked by hand in each test."""

from __future__ import annotations

from decimal import Decimal

from cachecast.logs.types import ObservedUsage
from cachecast.simulator.billing import bill_request, bill_without_cache, usage_from_observed
from cachecast.simulator.compact import KeyNeeds, key_needs
from cachecast.simulator.distributed.partition import partition_unit
from cachecast.simulator.misses import NO_CACHING_OFFERED, MissSpan, PromptHistory
from cachecast.simulator.policies import NoCache, policy_for_contract
from cachecast.simulator.reconcile import reconcile_request
from tests.contracts.test_mode_none import none_terms
from tests.simulator.helpers import make_request

PROMPT = list(range(1500))


def test_identical_prompts_read_and_write_nothing() -> None:
    policy = policy_for_contract(none_terms())
    history = PromptHistory()
    for index in range(3):
        request = make_request(PROMPT, at=float(index), request_id=f"r{index}", line=index + 1)
        sight = history.observe(request)
        usage = policy.process(request)
        assert (usage.cache_read_tokens, usage.cache_write_tokens) == (0, {})
        assert usage.uncached_input_tokens == 1500
        # The whole prompt, though the second and third share it with the first.
        assert policy.explain(request, usage, sight) == [MissSpan(NO_CACHING_OFFERED, 0, 1500)]


def test_partitioning_and_compaction_need_nothing_of_the_prompt() -> None:
    assert key_needs([NoCache()]) == KeyNeeds()
    assert partition_unit(NoCache()) == 64  # any unit is exact; the history's default


def test_bill_is_input_plus_output_and_tiers_still_apply() -> None:
    request = make_request(PROMPT)
    usage = NoCache().process(request)
    usage.output_tokens = 20
    # 1500 x 0.50 / 1e6 + 20 x 1.50 / 1e6 = 0.00075 + 0.00003
    plain = none_terms()
    assert bill_request(usage, plain).total == Decimal("0.00078")
    assert bill_without_cache(usage, plain).total == Decimal("0.00078")
    # Above 1,000 prompt tokens: 1500 x 1 / 1e6 + 20 x 2 / 1e6 = 0.0015 + 0.00004
    tier = {"above_input_tokens": 1000, "input_per_mtok": "1", "output_per_mtok": "2"}
    tiered = none_terms(long_context_tiers=[tier])
    assert bill_request(usage, tiered).total == Decimal("0.00154")


def test_observed_cached_tokens_are_billed_as_input() -> None:
    terms = none_terms()
    observed = ObservedUsage(
        input_tokens=1500, cache_read_tokens=200, cache_write_tokens=300, output_tokens=20
    )
    usage = usage_from_observed(
        observed,
        terms,
        request_id="r",
        line=1,
        timestamp=0.0,
        scope="org",
        fallback_input_tokens=1500,
        fallback_output_tokens=20,
    )
    # No write price exists: the 300 written are plain input; reads cost the input price.
    assert (usage.cache_read_tokens, usage.cache_write_tokens) == (200, {})
    assert usage.uncached_input_tokens == 1300
    assert bill_request(usage, terms).total == Decimal("0.00078")
    predicted = NoCache().process(make_request(PROMPT))
    predicted.output_tokens = 20
    reconciled = reconcile_request(predicted, observed, terms)
    # Writes are no quantity of their own here: only the 200 read differ.
    assert (reconciled.predicted_read, reconciled.observed_read) == (0, 200)
    assert reconciled.observed_write is None
    assert reconciled.predicted_cost == reconciled.observed_cost == Decimal("0.00078")
