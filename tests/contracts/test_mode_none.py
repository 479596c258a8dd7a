"""Mode 'none': a contract version under which the provider offers no prompt caching.

Validation (TTL options empty exactly then), the store's round trip through a real migrated
SQLite file, migration 0017 up/down/up (the child rows survive SQLite's table copy), import
and show through the CLI, and the audit against a price map that prices no cache."""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from cachecast.cli import app
from cachecast.contracts import CacheMode, ContractStore, ContractTerms, TtlOption
from cachecast.contracts.audit import DisagreementKind, audit_contracts
from cachecast.contracts.history import history_gaps
from cachecast.core import db
from cachecast.core.errors import NotMigratedError
from cachecast.simulator.policies import NoCache, build_policy, policy_for_contract

JUNE = dt.date(2024, 6, 1)
CHILD_TABLES = (
    "contract_ttl_option",
    "contract_alias",
    "contract_price_tier",
    "contract_inferred_field",
    "contract_off_peak",
)


def none_entry(**changes: Any) -> dict[str, Any]:
    """A hand-built version in the JSON shape docs/contracts.md gives for mode none:
    $0.50 in / $1.50 out per MTok from 2024-01-01, nothing cached."""
    entry: dict[str, Any] = {
        "provider": "openai",
        "model": "gpt-4-nocache-test",
        "aliases": ["gpt-4-nocache-test-2024*"],
        "effective_from": "2024-01-01",
        "effective_to": None,
        "verified_on": "2026-12-05",
        "source": "https://example.invalid/pricing",
        "notes": "Hand-built for the tests: no prompt caching offered.",
        "mode": "none",
        "min_cacheable_tokens": 0,
        "increment_tokens": None,
        "lookback_blocks": None,
        "max_breakpoints": None,
        "ttl_options": [],
        "read_multiplier": "1",
        "storage_per_mtok_hour": None,
        "scope": "organization",
        "reported_input_includes_cached": True,
        "input_per_mtok": "0.5",
        "output_per_mtok": "1.5",
        "long_context_tiers": [],
        "off_peak": None,
        "inferred_fields": [],
    }
    entry.update(changes)
    return entry


def none_terms(**changes: Any) -> ContractTerms:
    return ContractTerms.model_validate(none_entry(**changes))


FIVE_MINUTES = {"name": "5m", "ttl_seconds": 300, "refresh_on_hit": True, "write_multiplier": "1"}


def test_ttl_options_are_empty_exactly_when_nothing_is_cached() -> None:
    terms = none_terms()
    assert terms.mode is CacheMode.NONE and terms.ttl_options == ()
    assert not terms.offers_caching and terms.default_ttl is None
    with pytest.raises(KeyError, match="offers no prompt caching"):
        terms.ttl_by_name("5m")
    with pytest.raises(ValidationError, match="ttl_options must be empty when mode is 'none'"):
        none_terms(ttl_options=[FIVE_MINUTES])
    for mode in ("automatic", "explicit", "both"):
        with pytest.raises(ValidationError, match="at least one option"):
            none_terms(mode=mode)
    cached = none_terms(mode="automatic", ttl_options=[FIVE_MINUTES])
    assert cached.offers_caching and cached.default_ttl == TtlOption.model_validate(FIVE_MINUTES)


def test_its_policy_reads_and_writes_nothing() -> None:
    terms = none_terms()
    assert isinstance(policy_for_contract(terms), NoCache)
    assert isinstance(build_policy("none", terms), NoCache)
    with pytest.raises(ValueError, match="offers no prompt caching"):
        build_policy("automatic", terms)


def _counts(path: Path) -> dict[str, int]:
    with sqlite3.connect(path) as connection:
        return {
            table: connection.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table in ("contract_version", *CHILD_TABLES)
        }


def _mode_check(path: Path) -> str:
    with sqlite3.connect(path) as connection:
        sql = connection.execute(
            "SELECT sql FROM sqlite_master WHERE name = 'contract_version'"
        ).fetchone()[0]
    return next(line.strip() for line in sql.splitlines() if "ck_contract_version_mode" in line)


def test_migration_0017_up_down_up_keeps_every_child_row(tmp_path: Path) -> None:
    path = tmp_path / "none.db"
    url = f"sqlite:///{path}"
    db.upgrade(url, "0016_seed_contracts_v9")
    before = _counts(path)
    # The seeds hold rows in every child table, so a cascade from the table copy would show.
    assert all(before[table] > 0 for table in CHILD_TABLES)
    old = "CONSTRAINT ck_contract_version_mode CHECK (mode IN ('automatic', 'explicit', 'both'))"
    assert _mode_check(path).rstrip(", ") == old
    with pytest.raises(NotMigratedError, match="run `cachecast db upgrade` first"):
        ContractStore(url).add_version(none_terms())

    db.upgrade(url, "0017_contract_mode_none")
    assert _counts(path) == before
    assert "'both', 'none')" in _mode_check(path)
    store = ContractStore(url)
    store.add_version(none_terms())
    # Refused while a version the older check cannot hold is stored, naming it.
    with pytest.raises(RuntimeError, match="openai/gpt-4-nocache-test from 2024-01-01"):
        db.downgrade(url, "0016_seed_contracts_v9")
    assert db.current_revision(url) == "0017_contract_mode_none"
    with sqlite3.connect(path) as connection:
        connection.execute("PRAGMA foreign_keys = ON")
        connection.execute("DELETE FROM contract_version WHERE mode = 'none'")

    db.downgrade(url, "0016_seed_contracts_v9")
    assert _counts(path) == before
    assert _mode_check(path).rstrip(", ") == old
    db.upgrade(url, "0017_contract_mode_none")
    assert _counts(path) == before
    db.get_engine(url).dispose()


def test_store_round_trip_with_no_ttl_rows(migrated_db_url: str) -> None:
    store = ContractStore(migrated_db_url)
    written = none_terms()
    store.add_version(written)
    assert store.as_of("openai", "gpt-4-nocache-test", JUNE) == written
    # An alias resolves to it too; the version has no row among the TTL options.
    assert store.as_of("openai", "gpt-4-nocache-test-2024-04-09", JUNE) == written
    path = Path(migrated_db_url.removeprefix("sqlite:///"))
    with sqlite3.connect(path) as connection:
        rows = connection.execute(
            "SELECT count(*) FROM contract_ttl_option JOIN contract_version v"
            " ON v.id = contract_id WHERE v.mode = 'none'"
        ).fetchone()[0]
    assert rows == 0


def test_import_then_show_through_the_cli(migrated_db_url: str, tmp_path: Path) -> None:
    document = {"format": "cachecast-contracts", "format_version": 1, "contracts": [none_entry()]}
    path = tmp_path / "none.json"
    path.write_text(json.dumps(document))
    db_args = ["--database-url", migrated_db_url]
    imported = CliRunner().invoke(app, ["contracts", "import", str(path), *db_args])
    assert imported.exit_code == 0, imported.output
    assert "+ openai/gpt-4-nocache-test from 2024-01-01" in imported.stdout
    show = ["contracts", "show", "openai", "gpt-4-nocache-test", "--at", "2024-06-01", *db_args]
    shown = CliRunner().invoke(app, [*show, "--json"])
    assert shown.exit_code == 0, shown.output
    data = json.loads(shown.stdout)
    assert (data["mode"], data["ttl_options"], data["read_multiplier"]) == ("none", [], "1")
    text = CliRunner().invoke(app, show, env={"COLUMNS": "160"})
    assert "none (no prompt caching offered)" in text.stdout
    # Exported, it is the document imported.
    exported = CliRunner().invoke(
        app, ["contracts", "export", "--at", "2024-06-01", "--provider", "openai", *db_args]
    )
    assert exported.exit_code == 0, exported.output
    entries = json.loads(exported.stdout)["contracts"]
    assert [e for e in entries if e["model"] == "gpt-4-nocache-test"] == [none_entry()]


def test_import_with_ttl_options_names_the_field(migrated_db_url: str, tmp_path: Path) -> None:
    document = {
        "format": "cachecast-contracts",
        "format_version": 1,
        "contracts": [none_entry(ttl_options=[FIVE_MINUTES])],
    }
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(document))
    result = CliRunner().invoke(
        app, ["contracts", "import", str(path), "--database-url", migrated_db_url]
    )
    assert result.exit_code == 2
    assert "ttl_options must be empty when mode is 'none'" in result.output
    assert "Traceback" not in result.output


def _litellm_map(tmp_path: Path, **cache_keys: float) -> Path:
    entry = {
        "litellm_provider": "openai",
        "mode": "chat",
        "input_cost_per_token": 5e-07,
        "output_cost_per_token": 1.5e-06,
        **cache_keys,
    }
    path = tmp_path / "map.json"
    path.write_text(json.dumps({"gpt-4-nocache-test": entry}))
    return path


def test_audit_a_map_without_cache_prices_agrees(migrated_db_url: str, tmp_path: Path) -> None:
    store = ContractStore(migrated_db_url)
    store.add_version(none_terms())

    def ours(path: Path) -> set[tuple[DisagreementKind, str, str | None, str | None]]:
        report = audit_contracts(
            store, JUNE, litellm_file=path, genai_prices=False, provider="openai"
        )
        return {
            (d.kind, d.field, d.ours, d.theirs)
            for d in report.disagreements
            if d.model == "gpt-4-nocache-test"
        }

    # Same prices ($0.50 / $1.50 per MTok), no cache price: nothing to report.
    assert ours(_litellm_map(tmp_path)) == set()
    # A map that prices cache reads ($0.25 per MTok) says caching existed: reported.
    priced = _litellm_map(tmp_path, cache_read_input_token_cost=2.5e-07)
    assert ours(priced) == {(DisagreementKind.CACHE_READ, "cache_read", None, "0.25")}


def test_a_none_version_is_coverage_in_the_history() -> None:
    # No prompt caching until 2024-10-01, automatic caching from then: no day uncovered.
    first = none_terms(effective_to="2024-10-01")
    second = none_terms(
        effective_from="2024-10-01",
        mode="automatic",
        min_cacheable_tokens=1024,
        ttl_options=[FIVE_MINUTES],
        read_multiplier="0.5",
    )
    assert history_gaps([first, second], dt.date(2025, 1, 1), lifecycle={}).gaps == []
    # The same history with the first version ending a day early has a one-day hole.
    early = first.model_copy(update={"effective_to": dt.date(2024, 9, 30)})
    holes = history_gaps([early, second], dt.date(2025, 1, 1), lifecycle={}).gaps
    assert [(gap.start, gap.end) for gap in holes] == [(dt.date(2024, 9, 30), dt.date(2024, 10, 1))]
