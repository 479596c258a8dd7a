"""One builder for the hand-made contract versions the store tests write."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from cachecast.contracts import CacheMode, ContractTerms, TtlOption
from cachecast.simulator.billing import bill_request, usage_from_observed
from cachecast.simulator.types import RequestUsage
from cachecast.tokenizers.types import ObservedUsage

JAN = dt.date(2026, 1, 1)


def terms(
    model: str = "acme-1",
    start: dt.date = JAN,
    end: dt.date | None = None,
    *,
    read: str = "0.5",
    aliases: tuple[str, ...] = (),
    provider: str = "acme",
    mode: CacheMode = CacheMode.AUTOMATIC,
    source: str = "https://acme.example/pricing",
) -> ContractTerms:
    """$3 in / $15 out, a 1,024-token minimum and one 5-minute TTL written at x1.25."""
    return ContractTerms(
        provider=provider,
        model=model,
        aliases=aliases,
        effective_from=start,
        effective_to=end,
        verified_on=start,
        source=source,
        mode=mode,
        min_cacheable_tokens=1024,
        ttl_options=(
            TtlOption(
                name="5m", ttl_seconds=300, refresh_on_hit=True, write_multiplier=Decimal("1.25")
            ),
        ),
        read_multiplier=Decimal(read),
        input_per_mtok=Decimal(3),
        output_per_mtok=Decimal(15),
    )


def bill_of(observed: ObservedUsage, contract: ContractTerms) -> Decimal:
    """The bill of one request's observed usage under ``contract`` (one org, no fallbacks)."""
    usage = usage_from_observed(
        observed,
        contract,
        request_id="r1",
        line=1,
        timestamp=0.0,
        scope="org",
        fallback_input_tokens=0,
        fallback_output_tokens=0,
    )
    return bill_request(usage, contract).total


def bill_of_counts(
    input_tokens: int, output_tokens: int, contract: ContractTerms, *, cached: int = 0
) -> Decimal:
    """The bill of one request of ``input_tokens`` in (``cached`` of them read from the
    cache, the rest uncached, none written) and ``output_tokens`` out under ``contract``."""
    usage = RequestUsage(
        request_id="r1",
        line=1,
        timestamp=0.0,
        scope="org",
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cache_read_tokens=cached,
        uncached_input_tokens=input_tokens - cached,
    )
    return bill_request(usage, contract).total


def version_rows(url: str) -> list[tuple[object, ...]]:
    """Every stored version as (provider, model, from, to, mode, origin, alias count)."""
    import sqlalchemy as sa

    from cachecast.core import db

    with db.get_engine(url).connect() as connection:
        return list(
            connection.execute(
                sa.text(
                    "SELECT provider, model, effective_from, effective_to, mode, origin,"
                    " (SELECT count(*) FROM contract_alias a WHERE a.contract_id = v.id)"
                    " FROM contract_version v ORDER BY provider, model, effective_from"
                )
            )
        )


def full_version_rows(url: str) -> list[tuple[object, ...]]:
    """Every stored version with its terms and child rows (aliases, TTL options, inferred
    fields), ids left out: what a revision that deletes and restores rows must give back."""
    import sqlalchemy as sa

    from cachecast.core import db

    with db.get_engine(url).connect() as connection:
        return list(
            connection.execute(
                sa.text(
                    "SELECT provider, model, effective_from, effective_to, verified_on, source,"
                    " notes, mode, min_cacheable_tokens, lookback_blocks, max_breakpoints,"
                    " read_multiplier, reported_input_includes_cached, input_per_mtok,"
                    " output_per_mtok, origin,"
                    " (SELECT group_concat(pattern, ' ') FROM (SELECT pattern FROM contract_alias a"
                    "   WHERE a.contract_id = v.id ORDER BY position)),"
                    " (SELECT group_concat(name || ttl_seconds || write_multiplier, ' ')"
                    "   FROM contract_ttl_option t WHERE t.contract_id = v.id),"
                    " (SELECT group_concat(field, ' ') FROM contract_inferred_field f"
                    "   WHERE f.contract_id = v.id)"
                    " FROM contract_version v ORDER BY provider, model, effective_from"
                )
            )
        )


def full_rows_across(
    sqlite_url: str, revision: str
) -> tuple[str, list[tuple[object, ...]], list[tuple[object, ...]]]:
    """Migrate a fresh database to the revision before ``revision``, then to it: (that
    previous revision, every stored row before, every stored row after; see
    :func:`full_version_rows`), for a revision that deletes and restores rows."""
    from pathlib import Path
    from runpy import run_path

    from cachecast.core import db

    migration = Path(__file__).parents[2] / "migrations" / "versions" / f"{revision}.py"
    previous = str(run_path(str(migration))["down_revision"])
    db.upgrade(sqlite_url, previous)
    before = full_version_rows(sqlite_url)
    db.upgrade(sqlite_url, revision)
    return previous, before, full_version_rows(sqlite_url)


def seed_round_trip(sqlite_url: str, revision: str) -> list[tuple[object, ...]]:
    """Migrate a fresh database to the revision before ``revision``, then to it and back:
    checks that the upgrade removed no row and the downgrade gives back exactly the rows
    before it; the rows the upgrade added."""
    from pathlib import Path
    from runpy import run_path

    from cachecast.core import db

    migration = Path(__file__).parents[2] / "migrations" / "versions" / f"{revision}.py"
    previous = str(run_path(str(migration))["down_revision"])
    db.upgrade(sqlite_url, previous)
    before = version_rows(sqlite_url)
    db.upgrade(sqlite_url, revision)
    after = version_rows(sqlite_url)
    assert [row for row in before if row not in after] == []
    db.downgrade(sqlite_url, previous)
    assert version_rows(sqlite_url) == before
    db.get_engine(sqlite_url).dispose()
    return [row for row in after if row not in before]
