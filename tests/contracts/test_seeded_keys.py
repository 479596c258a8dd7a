"""Every seeded contract version obeys the rules a contract written through the API or an
import must obey (``contracts.rules``: ids are URL path segments, aliases are ids or bounded
patterns, no control characters), so that a catalog exported from a migrated database
imports into another (the export test found an OpenRouter slug stored as a model id, its
``/`` refused on import). Seeds are written by migrations, which do not pass through the
store's write checks: this holds them to the same rules."""

from __future__ import annotations

from cachecast.contracts import ContractStore
from cachecast.contracts.rules import key_problems


def test_every_seeded_version_passes_the_write_rules(migrated_db_url: str) -> None:
    versions = ContractStore(migrated_db_url).list()
    assert len(versions) > 700  # the whole catalog, not an empty store
    broken = [
        (f"{terms.provider}/{terms.model}@{terms.effective_from}", field, why)
        for terms in versions
        for field, why in key_problems(terms)
    ]
    assert broken == []
