"""Contract history on every date (migration 0008, ``contracts audit``'s history part) and
the one error for a day before a model's first version."""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cachecast.cli import app
from cachecast.contracts import ContractStore
from cachecast.contracts.audit import DisagreementKind, audit_contracts
from cachecast.contracts.history import GapKind, Lifecycle, NotServed, history_gaps
from cachecast.contracts.price_maps import litellm_bundled_file
from cachecast.core import db
from cachecast.core.errors import ContractNotYetInForceError
from tests.contracts.test_audit import V2_FILE, _dump

TODAY = dt.date(2026, 12, 3)
EXAMPLE_LOG = Path(__file__).resolve().parents[2] / "examples" / "agent-log.jsonl"


def _terms(model: str, start: str, end: str | None) -> Any:
    """A version read from the packaged v2 document, with our own model id and dates."""
    from cachecast.contracts.serialize import parse_document

    entries = json.loads(V2_FILE.read_text("utf-8"))["contracts"]
    entry = {**entries[0], "model": model, "aliases": [], "effective_from": start}
    entry["effective_to"] = end
    return parse_document({**json.loads(V2_FILE.read_text("utf-8")), "contracts": [entry]}, "t")[0]


def test_the_catalog_has_no_history_gap_and_lacks_no_cache_priced_model(
    migrated_db_url: str,
) -> None:
    # Held against the maps installed with the 'audit' extra (LiteLLM and genai-prices).
    report = audit_contracts(ContractStore(migrated_db_url), TODAY)
    assert report.history is not None
    assert report.history.gaps == []
    missing = [
        f"{item.map.value}: {item.provider}/{item.model}"
        for item in report.disagreements
        if item.kind is DisagreementKind.MISSING_IN_OURS
    ]
    assert missing == []
    # The models the issue named are there now.
    store = ContractStore(migrated_db_url)
    for provider, model in (
        ("openai", "gpt-4.1-nano"),
        ("openai", "o3-mini"),
        ("openai", "o4-mini"),
        ("deepseek", "deepseek-reasoner"),
        ("azure", "eu/gpt-4o"),
    ):
        assert store.history(provider, model)


def test_a_hole_and_a_late_start_are_gaps_a_declared_hole_and_a_retirement_are_not() -> None:
    history = [
        _terms("m", "2025-01-01", "2025-03-01"),
        _terms("m", "2025-04-01", "2025-06-01"),  # hole [03-01, 04-01); retired 06-01
        _terms("n", "2025-05-01", "2025-06-01"),
        _terms("n", "2025-07-01", None),  # hole [06-01, 07-01), declared not served
    ]
    lifecycle = {
        ("anthropic", "m"): Lifecycle(launched_on=dt.date(2024, 12, 1), launch_source="page"),
        ("anthropic", "n"): Lifecycle(
            not_served=(NotServed(start=dt.date(2025, 6, 1), end=None, source="notice"),)
        ),
    }
    summary = history_gaps(history, TODAY, lifecycle)
    found = {
        (gap.kind, gap.model, gap.start.isoformat(), gap.end.isoformat()) for gap in summary.gaps
    }
    assert found == {
        (GapKind.LATE_START, "m", "2024-12-01", "2025-01-01"),
        (GapKind.HOLE, "m", "2025-03-01", "2025-04-01"),
    }
    assert summary.retired == 1
    assert summary.launch_known == 1
    assert summary.launch_unknown == ["anthropic/n"]


def test_a_day_before_the_first_version_names_the_launch(migrated_db_url: str) -> None:
    store = ContractStore(migrated_db_url)
    # Claude Haiku 4.5 launched on 2025-10-15 (anthropic.com/news/claude-haiku-4-5).
    with pytest.raises(ContractNotYetInForceError) as raised:
        store.as_of("anthropic", "claude-haiku-4-5", dt.date(2025, 10, 14))
    assert "no contract before 2025-10-15, its first version" in raised.value.message
    assert store.as_of("anthropic", "claude-haiku-4-5", dt.date(2025, 10, 15)).input_per_mtok == 1

    result = CliRunner().invoke(
        app,
        [
            "estimate",
            str(EXAMPLE_LOG),
            "-t",
            "anthropic:claude-haiku-4-5",
            "--at",
            "2023-01-01",
            "--database-url",
            migrated_db_url,
        ],
    )
    assert result.exit_code == 2
    assert "no contract before 2025-10-15, its first version" in result.output
    assert "close matches" not in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("provider", "model", "day", "expected"),
    [
        # Gemini 2.5 Flash GA (developers.googleblog.com, 2025-06-17): $0.30 in, $2.50 out,
        # cache reads a tenth of the input price.
        ("google", "gemini-2.5-flash", "2025-07-01", ("0.3", "2.5", "0.1")),
        # DeepSeek-V3.1 price list from 2025-09-05 (api-docs.deepseek.com/news/news250821):
        # $0.56 miss, $0.07 hit (0.07 / 0.56 = 0.125), $1.68 out.
        ("deepseek", "deepseek-reasoner", "2025-09-10", ("0.56", "1.68", "0.125")),
        # Then V3.2-Exp from 2025-09-29 (stored since contracts-v2): $0.28 / $0.028 / $0.42.
        ("deepseek", "deepseek-reasoner", "2025-09-29", ("0.28", "0.42", "0.1")),
        # DeepSeek-R1 at release (news250120): $0.55 miss, $0.14 hit, $2.19 out; 0.14 / 0.55
        # = 0.254545... is stored to the column's 10 places.
        ("deepseek", "deepseek-reasoner", "2025-02-01", ("0.55", "2.19", "0.2545454545")),
    ],
)
def test_versions_back_to_launch_carry_the_published_prices(
    migrated_db_url: str, provider: str, model: str, day: str, expected: tuple[str, ...]
) -> None:
    terms = ContractStore(migrated_db_url).as_of(provider, model, dt.date.fromisoformat(day))
    assert (terms.input_per_mtok, terms.output_per_mtok, terms.read_multiplier) == tuple(
        Decimal(value) for value in expected
    )


def test_an_imported_model_names_its_map_entry_and_what_it_inferred(
    migrated_db_url: str,
) -> None:
    path, version = litellm_bundled_file()
    entry = json.loads(path.read_text("utf-8"))["azure/eu/gpt-4o"]
    terms = ContractStore(migrated_db_url).as_of("azure", "eu/gpt-4o", TODAY)
    # The entry's per-token prices times a million, read with the plain json module.
    assert terms.input_per_mtok == Decimal(str(entry["input_cost_per_token"])) * 1_000_000
    assert terms.output_per_mtok == Decimal(str(entry["output_cost_per_token"])) * 1_000_000
    assert f"LiteLLM {version} entry 'azure/eu/gpt-4o'" in terms.notes
    assert "mode" in terms.inferred_fields and "min_cacheable_tokens" in terms.inferred_fields


def test_v3_upgrade_downgrade_upgrade(tmp_path: Path) -> None:
    before, after = tmp_path / "before.db", tmp_path / "after.db"
    for path in (before, after):
        db.upgrade(f"sqlite:///{path}", "0008_contract_off_peak")
    url = f"sqlite:///{after}"
    db.upgrade(url, "0009_seed_contracts_v3")
    v3 = V2_FILE.with_name("contracts-v3.json")
    entries = json.loads(v3.read_text("utf-8"))["contracts"]
    with sqlite3.connect(after) as connection:
        (added,) = connection.execute(
            "SELECT count(*) FROM contract_version WHERE origin = 'seed:contracts-v3'"
        ).fetchone()
    assert added == len(entries)
    db.downgrade(url, "0008_contract_off_peak")
    assert _dump(after) == _dump(before)
    db.upgrade(url)
    assert db.current_revision(url) == db.head_revision()
    for path in (before, after):
        db.get_engine(f"sqlite:///{path}").dispose()


def test_openai_12h_retention_is_priced_from_the_day_the_map_was_read(
    migrated_db_url: str,
) -> None:
    store = ContractStore(migrated_db_url)
    # LiteLLM 1.110.2 'gpt-6-sol': input 2e-6, cache_creation_input_token_cost_above_12hr
    # 5e-6 per token, so a 12-hour write costs 5 / 2 = 2.5 times the $2 input price.
    terms = store.as_of("openai", "gpt-6-sol", TODAY)
    option = terms.ttl_by_name("12h")
    assert (option.ttl_seconds, option.write_multiplier) == (43_200, Decimal("2.5"))
    assert terms.ttl_by_name("30m").write_multiplier == Decimal("1.25")
    # Before that day no source prices it: the previous version has only 30m.
    earlier = store.as_of("openai", "gpt-6-sol", TODAY - dt.timedelta(days=1))
    assert [o.name for o in earlier.ttl_options] == ["30m"]


def _import(url: str, path: Path) -> Any:
    return CliRunner().invoke(
        app,
        ["contracts", "import", str(path), "--effective-from", "2026-12-10", "--database-url", url],
    )


def test_a_litellm_import_takes_the_entrys_off_peak_prices(
    migrated_db_url: str, tmp_path: Path
) -> None:
    # Peak prices as stored ($0.30 in, $0.006 read, $1.20 out); off-peak now $0.10 in,
    # $0.002 read (0.002 / 0.10 = 0.02), $0.40 out, weekends only.
    entry = {
        "litellm_provider": "deepseek",
        "mode": "chat",
        "input_cost_per_token": 3e-07,
        "output_cost_per_token": 1.2e-06,
        "cache_read_input_token_cost": 6e-09,
        "off_peak_pricing": {
            "input_cost_per_token": 1e-07,
            "output_cost_per_token": 4e-07,
            "cache_read_input_token_cost": 2e-09,
            "windows": [{"hours_utc": "00:00-00:00", "weekdays": [6, 7]}],
        },
    }
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"deepseek-v4-flash": entry}), encoding="utf-8")
    result = _import(migrated_db_url, path)
    assert result.exit_code == 0, result.output
    terms = ContractStore(migrated_db_url).as_of(
        "deepseek", "deepseek-v4-flash", dt.date(2026, 12, 10)
    )
    assert terms.off_peak is not None
    assert (terms.off_peak.input_per_mtok, terms.off_peak.output_per_mtok) == (
        Decimal("0.1"),
        Decimal("0.4"),
    )
    assert terms.off_peak.read_multiplier == Decimal("0.02")
    assert [window.text() for window in terms.off_peak.windows] == ["6,7 00:00-24:00"]


def test_a_malformed_off_peak_block_names_its_entry_and_field(
    migrated_db_url: str, tmp_path: Path
) -> None:
    entry = {
        "litellm_provider": "deepseek",
        "input_cost_per_token": 3e-07,
        "output_cost_per_token": 1.2e-06,
        "off_peak_pricing": {"input_cost_per_token": 1e-07, "windows": "weekends"},
    }
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"deepseek-v4-flash": entry}), encoding="utf-8")
    result = _import(migrated_db_url, path)
    assert result.exit_code == 2
    assert "deepseek-v4-flash" in result.output and "off_peak_pricing" in result.output
    assert "Traceback" not in result.output
