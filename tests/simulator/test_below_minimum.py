"""Cache tokens reported on a prompt shorter than the contract's minimum
(docs/log-formats.md, "Observations that contradict themselves"): a documented minimum is
contradicted, an inferred one is not."""

from __future__ import annotations

from cachecast.simulator.pricing import below_minimum_flagged
from cachecast.tokenizers.types import ObservedUsage, TokenizedRequest
from tests.contracts.builders import terms


def _request(total: int, read: int) -> TokenizedRequest:
    observed = ObservedUsage(input_tokens=total, cache_read_tokens=read, cache_write_tokens=0)
    return TokenizedRequest(
        source="log.jsonl",
        line=1,
        request_id="r1",
        timestamp=0.0,
        scope="org",
        provider="acme",
        model="acme-1",
        input_tokens=total,
        output_tokens=1,
        observed=observed,
    )


def test_a_documented_minimum_makes_the_usage_contradictory() -> None:
    # 256 read of a 412-token prompt; the contract's minimum is 1,024 (documented).
    flagged = below_minimum_flagged(_request(412, 256), terms())
    assert flagged.observed is not None
    assert flagged.observed.contradiction == (
        "cache read 256 + write 0 reported on a prompt of 412 input tokens,"
        " below acme/acme-1@2026-01-01 min_cacheable_tokens 1024"
    )


def test_an_inferred_minimum_is_no_term_to_contradict() -> None:
    contract = terms().model_copy(update={"inferred_fields": ("min_cacheable_tokens",)})
    request = _request(412, 256)
    assert below_minimum_flagged(request, contract) is request


def test_a_prompt_at_the_minimum_is_not_flagged() -> None:
    request = _request(1024, 1024)
    assert below_minimum_flagged(request, terms()) is request
