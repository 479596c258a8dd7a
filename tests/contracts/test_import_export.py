"""Import (our format and LiteLLM's price map) and export, all-or-nothing."""

from __future__ import annotations

import copy
import datetime as dt
import json
from decimal import Decimal
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cachecast.cli import app
from cachecast.contracts import ContractStore
from tests.contracts.conftest import dump_rows

# Twelve entries of the price map in the pinned LiteLLM 1.110.2 wheel (a dev dependency),
# read from the installed package: model entries, `sample_spec`, an `alias_of` entry and
# providers the store does not hold.
LITELLM_KEYS = (
    "sample_spec",
    "gpt-4o",
    "claude-sonnet-4-5",
    "claude-sonnet-4-5-20250929",
    "anthropic.claude-sonnet-4-5-20250929-v1:0",
    "amazon.nova-pro-v1:0",
    "dashscope/qwen3.7-max",
    "moonshot/kimi-k3",
    "bedrock/claude-fable-latest",
    "mistral/mistral-large-latest",
    "gemini/gemini-2.5-pro",
    "vertex_ai/gemini-3-pro-preview",
)


def litellm_excerpt() -> dict[str, Any]:
    text = (
        resources.files("litellm")
        .joinpath("model_prices_and_context_window_backup.json")
        .read_text(encoding="utf-8")
    )
    prices = json.loads(text)
    return {key: prices[key] for key in LITELLM_KEYS}


def write_litellm_excerpt(folder: Path) -> Path:
    path = folder / "litellm_1.110.2_excerpt.json"
    path.write_text(json.dumps(litellm_excerpt(), indent=2), encoding="utf-8")
    return path


runner = CliRunner()


def cli(*args: str) -> Any:
    return runner.invoke(app, ["contracts", *args])


def test_export_then_import_reproduces_every_version(
    seeded_url: str, empty_url: str, tmp_path: Path
) -> None:
    exported = tmp_path / "all.json"
    result = cli("export", "--output", str(exported), "--database-url", seeded_url)
    assert result.exit_code == 0, result.output

    result = cli("import", str(exported), "--database-url", empty_url)
    assert result.exit_code == 0, result.output
    assert ContractStore(empty_url).list() == ContractStore(seeded_url).list()

    # Importing the same export again finds every version already there.
    before = dump_rows(empty_url)
    result = cli("import", str(exported), "--database-url", empty_url)
    assert result.exit_code == 0, result.output
    count = len(ContractStore(seeded_url).list())
    assert "imported 0 version(s)" in result.output and f"unchanged {count}" in result.output
    assert dump_rows(empty_url) == before


def test_export_at_a_date_writes_only_versions_in_force(seeded_url: str) -> None:
    result = cli(
        "export", "--at", "2025-06-01", "--provider", "openai", "--database-url", seeded_url
    )
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    # Seed: on 2025-06-01 OpenAI had gpt-4o (from 2024-10-01) and gpt-4.1 (from 2025-04-14);
    # gpt-5 starts 2025-08-07, the rest later.
    assert [(c["model"], c["effective_from"]) for c in document["contracts"]] == [
        ("gpt-4.1", "2025-04-14"),
        ("gpt-4o", "2024-10-01"),
    ]


def _document(seeded_url: str) -> dict[str, Any]:
    result = cli("export", "--provider", "xai", "--database-url", seeded_url)
    document: dict[str, Any] = json.loads(result.stdout)
    for entry in document["contracts"]:
        entry["provider"] = "newco"  # new provider, so the valid entries would import cleanly
    return document


@pytest.mark.parametrize(
    ("break_entry", "field"),
    [
        (lambda e: e["ttl_options"][0].update(ttl_seconds=-5), "ttl_options[0].ttl_seconds"),
        (lambda e: e.update(read_multiplier="cheap"), "read_multiplier"),
        (lambda e: e.update(input_per_mtok=True), "input_per_mtok"),
        (lambda e: e.pop("source"), "source"),
        (lambda e: e.update(colour="red"), "colour"),
    ],
)
def test_malformed_own_format_names_the_field_and_changes_nothing(
    seeded_url: str, tmp_path: Path, break_entry: Any, field: str
) -> None:
    document = _document(seeded_url)
    broken = copy.deepcopy(document)
    break_entry(broken["contracts"][2])  # the first two entries are valid and come first
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(broken), encoding="utf-8")
    before = dump_rows(seeded_url)

    result = cli("import", str(path), "--database-url", seeded_url)

    assert result.exit_code == 2
    message = result.output.strip()
    assert "\n" not in message
    assert str(path) in message and "contracts[2]" in message and f": {field}: " in message
    assert dump_rows(seeded_url) == before


def test_import_conflicting_with_stored_history_writes_nothing(
    seeded_url: str, tmp_path: Path
) -> None:
    document = _document(seeded_url)
    clash = copy.deepcopy(document["contracts"][0])
    # Same start as the stored grok version but other terms: an overlap, not a duplicate.
    clash.update(provider="xai", read_multiplier="0.3")
    document["contracts"].append(clash)
    path = tmp_path / "clash.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    before = dump_rows(seeded_url)

    result = cli("import", str(path), "--database-url", seeded_url)

    assert result.exit_code == 2
    assert "overlaps" in result.output and "nothing was written" in result.output
    assert dump_rows(seeded_url) == before


def test_litellm_import_creates_dated_versions_from_prices(seeded_url: str, tmp_path: Path) -> None:
    data = litellm_excerpt()
    # A price change for Sonnet 4.5: $4 in, $20 out, reads $0.40, 5m writes $5, 1h $8,
    # minimum 2048. Hand-derived: 4e-6 * 1e6 = 4 $/M; 4e-7/4e-6 = 0.1; 5e-6/4e-6 = 1.25;
    # 8e-6/4e-6 = 2.
    data["claude-sonnet-4-5"].update(
        input_cost_per_token=4e-06,
        output_cost_per_token=2e-05,
        cache_read_input_token_cost=4e-07,
        cache_creation_input_token_cost=5e-06,
        cache_creation_input_token_cost_above_1hr=8e-06,
        prompt_cache_min_tokens=2048,
    )
    path = tmp_path / "model_prices_and_context_window.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    url = "https://example.test/litellm/model_prices_and_context_window.json"

    result = cli(
        "import",
        str(path),
        "--effective-from",
        "2026-11-15",
        "--source",
        url,
        "--database-url",
        seeded_url,
    )
    assert result.exit_code == 0, result.output

    store = ContractStore(seeded_url)
    old = store.as_of("anthropic", "claude-sonnet-4-5", dt.date(2026, 11, 14))
    new = store.as_of("anthropic", "claude-sonnet-4-5", dt.date(2026, 11, 15))
    assert old.effective_to == dt.date(2026, 11, 15) and old.input_per_mtok == Decimal(3)
    assert (new.input_per_mtok, new.output_per_mtok) == (Decimal(4), Decimal(20))
    assert new.read_multiplier == Decimal("0.1")
    assert [(o.name, o.ttl_seconds, o.write_multiplier) for o in new.ttl_options] == [
        ("5m", 300, Decimal("1.25")),
        ("1h", 3600, Decimal(2)),
    ]
    assert new.min_cacheable_tokens == 2048
    assert new.source == url and new.verified_on == dt.date(2026, 11, 15)
    # Mechanics the price map does not carry come from the version it replaces.
    assert (new.mode, new.lookback_blocks, new.max_breakpoints) == (old.mode, 20, 4)
    assert new.reported_input_includes_cached is False

    # The dated alias entry 'claude-sonnet-4-5-20250929' maps onto the same contract and
    # must not create a second version; the Bedrock entry differs from our seed only in
    # its minimum (LiteLLM 1024 against the Bedrock table's 4096), so it adds a version.
    assert "imported 2 version(s)" in result.output
    bedrock = store.as_of(
        "bedrock", "anthropic.claude-sonnet-4-5-20250929-v1:0", dt.date(2026, 11, 15)
    )
    assert bedrock.min_cacheable_tokens == 1024
    # Qwen's price map splits implicit/explicit reads: the implicit contract keeps 0.2x
    # reads and 1x writes (creation at $3.125 = 1.25x prices explicit writes only).
    qwen = store.as_of("alibaba", "qwen3.7-max", dt.date(2026, 11, 15))
    assert qwen.effective_from == dt.date(2026, 10, 1)


def test_malformed_litellm_entry_changes_nothing(seeded_url: str, tmp_path: Path) -> None:
    data = litellm_excerpt()
    data["claude-sonnet-4-5"]["input_cost_per_token"] = 4e-06  # a valid change...
    data["moonshot/kimi-k3"]["output_cost_per_token"] = "cheap"  # ...and a broken entry
    path = tmp_path / "prices.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    before = dump_rows(seeded_url)

    result = cli(
        "import", str(path), "--effective-from", "2026-11-15", "--database-url", seeded_url
    )

    assert result.exit_code == 2
    message = result.output.strip()
    assert "\n" not in message
    assert (
        str(path) in message
        and "moonshot/kimi-k3" in message
        and ": output_cost_per_token: " in message
    )
    assert dump_rows(seeded_url) == before


def test_litellm_import_needs_an_effective_date(seeded_url: str, tmp_path: Path) -> None:
    result = cli("import", str(write_litellm_excerpt(tmp_path)), "--database-url", seeded_url)
    assert result.exit_code == 2
    assert "--effective-from" in result.output


def test_invalid_json_names_the_file_and_line(seeded_url: str, tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"format": "cachecast-contracts",\n "contracts": [,]}', encoding="utf-8")
    result = cli("import", str(path), "--database-url", seeded_url)
    assert result.exit_code == 2
    assert str(path) in result.output and "line 2" in result.output
