"""contracts audit against the installed LiteLLM and genai-prices data (never a committed
copy), plus migrations 0005/0006 and the inferred-field flag."""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from decimal import Decimal
from pathlib import Path
from runpy import run_path
from typing import Any

import pytest
from typer.testing import CliRunner

from cachecast.cli import app
from cachecast.contracts import ContractStore
from cachecast.contracts.audit import (
    DisagreementKind,
    MapName,
    audit_contracts,
)
from cachecast.contracts.price_maps import litellm_bundled_file
from cachecast.core import db
from tests.contracts.conftest import TABLES

NOV = dt.date(2026, 11, 1)
V2_FILE = (
    Path(__file__).resolve().parents[2] / "cachecast" / "contracts" / "data" / "contracts-v2.json"
)
V21_MIGRATION = (
    Path(__file__).resolve().parents[2] / "migrations" / "versions" / "0029_seed_contracts_v21.py"
)


def bundled_litellm() -> dict[str, Any]:
    path, _ = litellm_bundled_file()
    data: dict[str, Any] = json.loads(path.read_text("utf-8"))
    return data


def test_litellm_lacks_the_sonnet_4_5_tier_we_store(migrated_db_url: str) -> None:
    entry = bundled_litellm()["claude-sonnet-4-5"]
    assert not any(key.startswith("input_cost_per_token_above_") for key in entry)
    report = audit_contracts(ContractStore(migrated_db_url), NOV, genai_prices=False)
    found = {
        (item.field, item.ours, item.theirs)
        for item in report.disagreements
        if item.model == "claude-sonnet-4-5" and item.their_source.endswith("'claude-sonnet-4-5'")
    }
    # Anthropic's pricing page: above 200K, $6 in / $22.50 out; the map has no tier.
    assert found == {("tier>200000.input", "6", None), ("tier>200000.output", "22.5", None)}
    (litellm,) = report.maps
    assert litellm.map is MapName.LITELLM and litellm.version == "1.110.2"


def test_stored_bedrock_minimum_disagrees_only_on_its_one_day(migrated_db_url: str) -> None:
    model = "anthropic.claude-sonnet-4-5-20250929-v1:0"
    assert bundled_litellm()[model]["prompt_cache_min_tokens"] == 1024
    store = ContractStore(migrated_db_url)

    def minimums(day: dt.date) -> set[tuple[str | None, str | None]]:
        report = audit_contracts(store, day, genai_prices=False, provider="bedrock")
        return {
            (item.ours, item.theirs)
            for item in report.disagreements
            if item.kind is DisagreementKind.MIN_TOKENS and item.model == model
        }

    assert minimums(dt.date(2026, 10, 1)) == {("4096", "1024")}
    assert minimums(NOV) == set()


def hand_made_litellm_map(tmp_path: Path) -> Path:
    """A map in LiteLLM's format: gpt-4o-mini at other prices, one model we do not store."""
    made = {
        "gpt-4o-mini": {
            "litellm_provider": "openai",
            "mode": "chat",
            "input_cost_per_token": 2e-07,
            "output_cost_per_token": 6e-07,
            "cache_read_input_token_cost": 1e-07,
        },
        "gpt-unknown-9": {
            "litellm_provider": "openai",
            "mode": "chat",
            "input_cost_per_token": 1e-06,
            "output_cost_per_token": 2e-06,
            "cache_read_input_token_cost": 1e-07,
        },
    }
    path = tmp_path / "map.json"
    path.write_text(json.dumps(made))
    return path


def test_a_given_litellm_file_and_models_missing_on_either_side(
    migrated_db_url: str, tmp_path: Path
) -> None:
    path = hand_made_litellm_map(tmp_path)
    report = audit_contracts(
        ContractStore(migrated_db_url),
        NOV,
        litellm_file=path,
        genai_prices=False,
        provider="openai",
    )
    rows = {(d.kind, d.model, d.field, d.ours, d.theirs) for d in report.disagreements}
    # Ours (OpenAI pricing): gpt-4o-mini $0.15 in, $0.075 cached; the file: $0.20 / $0.10.
    assert (DisagreementKind.INPUT_PRICE, "gpt-4o-mini", "input", "0.15", "0.2") in rows
    assert (DisagreementKind.CACHE_READ, "gpt-4o-mini", "cache_read", "0.075", "0.1") in rows
    assert (DisagreementKind.OUTPUT_PRICE, "gpt-4o-mini", "output", "0.6", "0.6") not in rows
    assert any(k is DisagreementKind.MISSING_IN_OURS and m == "gpt-unknown-9" for k, m, *_ in rows)
    # Every other OpenAI contract in force is missing from this two-entry map.
    missing_in_map = {m for k, m, *_ in rows if k is DisagreementKind.MISSING_IN_MAP}
    assert {"gpt-4o", "gpt-5.6"} <= missing_in_map and "gpt-4o-mini" not in missing_in_map


def test_genai_prices_values_are_reported_as_the_package_gives_them(
    migrated_db_url: str,
) -> None:
    from genai_prices.data import providers

    (deepseek,) = [provider for provider in providers if provider.id == "deepseek"]
    model = deepseek.find_model("deepseek-chat", all_providers=providers)
    assert model is not None
    theirs = model.get_prices(dt.datetime(2026, 11, 1, 12, tzinfo=dt.UTC)).input_mtok
    report = audit_contracts(ContractStore(migrated_db_url), NOV, litellm=False)
    (summary,) = report.maps
    assert summary.map is MapName.GENAI_PRICES and summary.version == "0.2.5"
    inputs = [
        d
        for d in report.disagreements
        if d.model == "deepseek-chat" and d.kind is DisagreementKind.INPUT_PRICE
    ]
    # Ours: $0.28 (the stored 2026-10-01 version); genai-prices 0.2.5 still has the V3
    # price, so the audit must show both values.
    assert Decimal(theirs) != Decimal("0.28")
    assert [(d.ours, Decimal(d.theirs or "nan")) for d in inputs] == [("0.28", theirs)]


def _dump(path: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as connection:
        rows: list[tuple[Any, ...]] = []
        for table in (*TABLES, "contract_inferred_field"):
            rows += [(table, *r) for r in connection.execute(f"SELECT * FROM {table} ORDER BY id")]
        return rows


def test_v2_upgrade_downgrade_upgrade(tmp_path: Path) -> None:
    before, after = tmp_path / "before.db", tmp_path / "after.db"
    for path in (before, after):
        db.upgrade(f"sqlite:///{path}", "0005_contract_inferred_fields")
    url = f"sqlite:///{after}"
    db.upgrade(url)
    entries = json.loads(V2_FILE.read_text("utf-8"))["contracts"]
    with sqlite3.connect(after) as connection:
        (added,) = connection.execute(
            "SELECT count(*) FROM contract_version WHERE origin = 'seed:contracts-v2'"
        ).fetchone()
        (inferred,) = connection.execute(
            "SELECT count(*) FROM contract_inferred_field WHERE contract_id IN"
            " (SELECT id FROM contract_version WHERE origin = 'seed:contracts-v2')"
        ).fetchone()
    # Revision 0029 deletes six of them (Bedrock Claude rows that claimed caching AWS did not
    # offer, docs/contracts.md "contracts-v21"); its downgrade writes them back.
    deleted = [
        entry
        for entry in entries
        if (entry["provider"], entry["model"], entry["effective_from"])
        in {
            (row[0], row[1], row[2].isoformat())
            for row in run_path(str(V21_MIGRATION))["WRONGLY_CACHED"]
            if row[3] == "seed:contracts-v2"
        }
    ]
    assert len(deleted) == 6
    assert added == len(entries) - len(deleted)
    assert inferred == sum(len(entry["inferred_fields"]) for entry in entries) - sum(
        len(entry["inferred_fields"]) for entry in deleted
    )
    db.downgrade(url, "0005_contract_inferred_fields")
    assert _dump(after) == _dump(before)  # exactly what it added is gone, closures undone
    db.upgrade(url)
    assert db.current_revision(url) == db.head_revision()  # 0006 and every later revision
    for path in (before, after):
        db.get_engine(f"sqlite:///{path}").dispose()


def test_inferred_rules_are_visible_in_show(migrated_db_url: str) -> None:
    runner = CliRunner()
    args = ["contracts", "show", "openai", "gpt-4o-mini", "--at", "2026-11-01"]
    shown = runner.invoke(app, [*args, "--json", "--database-url", migrated_db_url])
    assert shown.exit_code == 0, shown.output
    # gpt-4o-mini's retention and increments are those of the OpenAI family guide.
    assert "ttl_options" in json.loads(shown.stdout)["inferred_fields"]
    table = runner.invoke(app, [*args, "--database-url", migrated_db_url])
    assert "inherited from the model family" in table.stdout


@pytest.mark.parametrize("inferred", [["colour"], ["mode", "mode"]])
def test_bad_inferred_fields_are_refused(inferred: list[str]) -> None:
    from cachecast.contracts import ContractFormatError
    from cachecast.contracts.serialize import terms_from_json

    entry = json.loads(V2_FILE.read_text("utf-8"))["contracts"][0]
    entry["inferred_fields"] = inferred
    with pytest.raises(ContractFormatError, match="inferred_fields"):
        terms_from_json(entry, file="x.json", entry="contracts[0]")
