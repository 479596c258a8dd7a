"""Revision 0013 (contracts-v6.json): xAI's cache counts single tokens, not 128-token steps.

Expected terms are what xAI's prompt caching pages state (docs/contracts.md, contracts-v6):
the Chat Completions example reports ``cached_tokens`` 98 of ``prompt_tokens`` 125, the
multi-turn example 50 of 120 and 120 of 200; none is a multiple of 128 (or 64), so cached
counts step by 1 token."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from cachecast.contracts import ContractStore
from cachecast.contracts.served import served_contract

TODAY = dt.date(2026, 12, 4)


def test_every_xai_version_in_force_today_counts_single_tokens(migrated_db_url: str) -> None:
    store = ContractStore(migrated_db_url)
    for model in ("grok-3-mini", "grok-4.3", "grok-4.20-reasoning", "grok-4-1-fast-reasoning"):
        terms = store.as_of("xai", model, TODAY)
        assert terms.increment_tokens == 1, model
        assert terms.min_cacheable_tokens == 0, model  # no minimum documented: unchanged


def test_a_correction_keeps_the_corrected_versions_first_day_and_its_prices(
    migrated_db_url: str,
) -> None:
    store = ContractStore(migrated_db_url)
    # grok-4.3's launch version [2026-04-30, 2026-10-01) (revision 0011): its first day keeps
    # the 128-token step; the correction runs from 2026-05-01 to the same end.
    assert store.as_of("xai", "grok-4.3", dt.date(2026, 4, 30)).increment_tokens == 128
    corrected = store.as_of("xai", "grok-4.3", dt.date(2026, 8, 10))
    assert (corrected.effective_from, corrected.effective_to) == (
        dt.date(2026, 5, 1),
        dt.date(2026, 10, 1),
    )
    assert corrected.increment_tokens == 1
    # The stored prices unchanged: $1.25 in, $2.50 out (revision 0011's launch version).
    assert (corrected.input_per_mtok, corrected.output_per_mtok) == (
        Decimal("1.25"),
        Decimal("2.5"),
    )
    assert store.as_of("xai", "grok-4.3", dt.date(2026, 10, 1)).increment_tokens == 128
    assert store.as_of("xai", "grok-4.3", dt.date(2026, 10, 2)).increment_tokens == 1


def test_before_a_one_day_first_version_its_correction_prices(migrated_db_url: str) -> None:
    # xai/grok-4.20-reasoning's first stored version starts 2026-10-01 (the day a price map
    # was read, no launch date known) and lasts one day: revision 0013 corrects it from
    # 2026-10-02. A request of 2026-03-12 is priced under the correction. (grok-3-mini and
    # grok-code-fast-1-0825, this test's models before revisions 0019 and 0022, are now priced
    # from their launches.)
    store = ContractStore(migrated_db_url)
    found = served_contract(store, "xai", "grok-4.20-reasoning", dt.date(2026, 3, 12), TODAY)
    assert found.terms.effective_from == dt.date(2026, 10, 2)
    assert found.terms.increment_tokens == 1
    assert found.note is not None
    assert found.note.startswith("[U] price unverified on 2026-03-12")
    assert "which correct that one-day version" in found.note
