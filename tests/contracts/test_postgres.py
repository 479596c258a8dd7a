"""The same migrations and store on PostgreSQL, when CACHECAST_TEST_POSTGRES_URL names a server.

Skipped (and reported as skipped, with the reason) where no server is configured.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from decimal import Decimal

import pytest
import sqlalchemy as sa

from cachecast.contracts import ContractConflictError, ContractStore
from cachecast.core import db
from tests.contracts.conftest import SCHEMA_REVISION, SEED_REVISION

pytestmark = pytest.mark.postgres


def test_migrations_and_store_on_postgres(
    new_postgres_database: Callable[[], str], seed_entries: list[dict[str, object]]
) -> None:
    url = new_postgres_database()
    db.upgrade(url, SEED_REVISION)
    store = ContractStore(url)
    assert len(store.list()) == len(seed_entries)
    gpt = store.as_of("openai", "gpt-5.6", dt.date(2026, 11, 1))
    # Reference section 1: 30m TTL, 1.25x writes, 0.1x reads for GPT-5.6+.
    assert (gpt.ttl_options[0].ttl_seconds, gpt.ttl_options[0].write_multiplier) == (
        1800,
        Decimal("1.25"),
    )

    later = gpt.model_copy(
        update={"effective_from": dt.date(2026, 12, 1), "read_multiplier": Decimal("0.0000000001")}
    )
    store.add_version(later)
    assert store.as_of("openai", "gpt-5.6", dt.date(2026, 12, 1)).read_multiplier == Decimal(
        "0.0000000001"
    )
    assert store.as_of("openai", "gpt-5.6", dt.date(2026, 11, 30)).effective_to == dt.date(
        2026, 12, 1
    )
    with pytest.raises(ContractConflictError):
        store.add_version(
            gpt.model_copy(
                update={
                    "effective_from": dt.date(2026, 11, 15),
                    "effective_to": dt.date(2026, 12, 15),
                }
            )
        )

    db.downgrade(url, SCHEMA_REVISION)
    assert [(v.model, v.effective_from) for v in store.list()] == [
        ("gpt-5.6", dt.date(2026, 12, 1))
    ]
    db.downgrade(url, "base")
    assert "contract_version" not in sa.inspect(db.get_engine(url)).get_table_names()
    db.upgrade(url, SEED_REVISION)
    assert len(store.list()) == len(seed_entries)
