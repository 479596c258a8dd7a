"""The estimate pipeline on a real migrated database and a real small log.

The log is pre-tokenized (``{"tokens": [...]}`` bodies) so that every token count, hit and
bill below can be derived by hand from the seeded gpt-4o contract: automatic prefix caching,
1,024-token minimum, 128-token increments, TTL 300 s refreshed on hit, writes free (x1),
reads x0.5, $2.50 input / $10 output per MTok (``cachecast contracts show openai gpt-4o``).
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from cachecast.contracts import ContractStore
from cachecast.core.errors import UnknownContractError
from cachecast.passes.log_input import LogInput
from cachecast.simulator.pricing import PerRequestRow
from cachecast.usecases.estimate import EstimateReport, EstimateRequest, estimate

AT = dt.date(2026, 11, 1)
TARGET_KEYS = {
    "provider",
    "model",
    "contract",
    "tokenizer",
    "requests",
    "input_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "cache_write_tokens_by_ttl",
    "uncached_input_tokens",
    "output_tokens",
    "hit_rate",
    "exact_tokens",
    "requests_with_breakpoints",
    "assumed_breakpoint",
    "cost",
    "cost_without_cache",
    "savings",
    "reconciliation",
    "miss_causes",
    "calibration",
    "timeline",
    "notes",
}


def run(
    logs: list[Path],
    targets: list[str],
    at: dt.date,
    store: ContractStore,
    rows: list[PerRequestRow] | None = None,
) -> EstimateReport:
    request = EstimateRequest(log=LogInput.of_paths(logs), targets=targets, at=at)
    return estimate(request, store, on_row=rows.append if rows is not None else None)


def record(timestamp: int, length: int, cached: int | None = None) -> dict[str, Any]:
    line: dict[str, Any] = {
        "timestamp": timestamp,
        "scope": "org-1",
        "provider": "openai",
        "model": "gpt-4o",
        "request": {"tokens": list(range(length))},
        "output_tokens": 100,
    }
    if cached is not None:
        line["response"] = {
            "usage": {
                "prompt_tokens": length,
                "completion_tokens": 100,
                "prompt_tokens_details": {"cached_tokens": cached},
            }
        }
    return line


def write_log(path: Path) -> Path:
    lines = [
        json.dumps(record(1_767_000_000, 1_300)),
        json.dumps(record(1_767_000_060, 1_500, cached=1_280)),
        '{"timestamp": 1767000100, "request": {"tokens": "not a list"}}',  # line 3: bad
        json.dumps(record(1_767_001_000, 1_500, cached=1_408)),
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_estimate_json_on_a_migrated_db(migrated_db_url: str, tmp_path: Path) -> None:
    log = write_log(tmp_path / "log.jsonl")
    store = ContractStore(migrated_db_url)
    rows: list[PerRequestRow] = []
    report = run(
        [log], ["openai:gpt-4o", "openai:gpt-5.6", "deepseek:deepseek-chat"], AT, store, rows
    )
    data = report.model_dump(mode="json")
    assert data["at"] == "2026-11-01"
    assert data["hit_rate_definition"].startswith("cache_read_tokens / input_tokens")
    # Line 3 is skipped and reported once, although the log was read in two passes
    # (o200k_base for the OpenAI targets, approx:o200k_base for DeepSeek).
    assert data["skipped_lines"] == 1
    assert [(e["file"], e["line"]) for e in data["errors"]] == [(str(log), 3)]
    assert data["errors"][0]["record"] is None
    assert "tokens" in data["errors"][0]["field"]
    assert [(t["provider"], t["model"]) for t in data["targets"]] == [
        ("openai", "gpt-4o"),
        ("openai", "gpt-5.6"),
        ("deepseek", "deepseek-chat"),
    ]
    gpt4o = data["targets"][0]
    assert set(gpt4o) == TARGET_KEYS
    assert gpt4o["contract"]["effective_from"] == "2024-10-01"
    assert gpt4o["contract"]["version"] == "openai/gpt-4o@2024-10-01"
    assert gpt4o["contract"]["source"].startswith("https://")
    assert gpt4o["contract"]["verified_on"]
    # Request by request (block = increment = 128 tokens):
    #  r1 t=0     1,300 tok: nothing cached; writes 10 full blocks = 1,280; uncached 20.
    #  r2 t=60    1,500 tok: reads r1's 10 blocks = 1,280 (>= 1,024, a multiple of 128);
    #             writes block 11 = 128; uncached 1,500 - 1,280 - 128 = 92.
    #  r4 t=1000  1,500 tok: 940 s after r2's last use > 300 s TTL: all expired; writes 11
    #             blocks = 1,408; uncached 92.
    assert gpt4o["requests"] == 3
    assert gpt4o["input_tokens"] == 1_300 + 1_500 + 1_500
    assert gpt4o["cache_read_tokens"] == 1_280
    assert gpt4o["cache_write_tokens"] == 1_280 + 128 + 1_408
    assert gpt4o["cache_write_tokens_by_ttl"] == {"in_memory": 2_816}
    assert gpt4o["uncached_input_tokens"] == 20 + 92 + 92
    assert gpt4o["output_tokens"] == 300
    assert gpt4o["hit_rate"] == 1_280 / 4_300
    assert gpt4o["exact_tokens"] is True
    # Bills ($ per MTok): uncached 204 * 2.5 = 510e-6; writes 2816 * 2.5 * 1 = 7040e-6;
    # reads 1280 * 2.5 * 0.5 = 1600e-6; output 300 * 10 = 3000e-6.
    assert gpt4o["cost"] == {
        "input": "0.00051",
        "cache_write": "0.00704",
        "cache_read": "0.0016",
        "output": "0.003",
        "storage": "0",
        "total": "0.01215",
    }
    # Caching off: 4300 * 2.5 = 0.01075, plus output 0.003 = 0.01375; saved 0.0016.
    assert gpt4o["cost_without_cache"] == "0.01375"
    assert gpt4o["savings"] == "0.0016"
    # Reconciliation (gpt-4o served the log): r2 observed 1,280 cached = predicted (writes
    # not reported by gpt-4o, so reads alone are compared); r4 observed 1,408, predicted 0.
    # Bills: r2 equal (a free write costs what an uncached token costs); r4 predicted
    # 1408*2.5 + 92*2.5 + 100*10 = 4750e-6, observed 1408*1.25 + 92*2.5 + 1000 = 2990e-6.
    assert gpt4o["reconciliation"] == {
        "requests": 2,
        "exact_matches": 1,
        "exact_match_share": "0.5",
        "mean_abs_error_tokens": "704",
        "mean_abs_error_cost": "0.00088",
        "predicted_cache_read_tokens": 1_280,
        "observed_cache_read_tokens": 1_280 + 1_408,
        "reads_not_reported": 0,  # both usages carry cached_tokens
    }
    # Observed gpt-4o usage says nothing about other models: no reconciliation there.
    assert data["targets"][1]["reconciliation"] is None
    assert data["targets"][2]["reconciliation"] is None

    for target in data["targets"]:
        assert set(target) == TARGET_KEYS
        assert target["requests"] == 3
        assert (
            target["cache_read_tokens"]
            + target["cache_write_tokens"]
            + target["uncached_input_tokens"]
            == target["input_tokens"]
        )
        cost = {name: Decimal(value) for name, value in target["cost"].items()}
        assert cost["total"] == sum(cost[name] for name in cost if name != "total")
        assert Decimal(target["cost_without_cache"]) - cost["total"] == Decimal(target["savings"])
        # Money is a decimal string, never a float.
        assert all(isinstance(value, str) for value in target["cost"].values())

    # The per-request rows add up to the totals, target by target.
    assert len(rows) == 9
    for target in data["targets"]:
        mine = [row for row in rows if str(row.target) == f"{target['provider']}:{target['model']}"]
        assert sum((row.cost.total for row in mine), Decimal(0)) == Decimal(target["cost"]["total"])
    assert [row.usage.cache_read_tokens for row in rows if row.target.model == "gpt-4o"] == [
        0,
        1_280,
        0,
    ]


def test_contract_in_force_on_at_is_used(migrated_db_url: str, tmp_path: Path) -> None:
    # gpt-4.1's seeded history: in_memory only until 2025-11-13, then in_memory + 24h.
    log = write_log(tmp_path / "log.jsonl")
    store = ContractStore(migrated_db_url)
    early = run([log], ["openai:gpt-4.1"], dt.date(2025, 6, 1), store)
    late = run([log], ["openai:gpt-4.1"], dt.date(2026, 8, 1), store)
    assert early.targets[0].contract.effective_from == dt.date(2025, 4, 14)
    assert late.targets[0].contract.effective_from == dt.date(2026, 7, 9)


def test_unknown_target_lists_close_matches(migrated_db_url: str, tmp_path: Path) -> None:
    store = ContractStore(migrated_db_url)
    with pytest.raises(UnknownContractError) as caught:
        run([write_log(tmp_path / "log.jsonl")], ["openai:gpt-4oo"], AT, store)
    assert any("gpt-4o" in match for match in caught.value.close_matches)
    assert caught.value.location.field == "targets[0]"


def test_exclusive_anthropic_usage_is_reconciled_as_a_total(
    migrated_db_url: str, tmp_path: Path
) -> None:
    # Anthropic reports input_tokens WITHOUT cached tokens: 200 uncached + 1,300 read = 1,500.
    usage = {
        "input_tokens": 200,
        "cache_read_input_tokens": 1_300,
        "cache_creation_input_tokens": 0,
        "output_tokens": 100,
    }
    lines = [
        {"timestamp": 0, "provider": "anthropic", "model": "claude-sonnet-4-5",
         "request": {"tokens": list(range(1_300))}, "output_tokens": 100},
        {"timestamp": 60, "provider": "anthropic", "model": "claude-sonnet-4-5",
         "request": {"tokens": list(range(1_500))}, "usage": usage},
    ]  # fmt: skip
    log = tmp_path / "anthropic.jsonl"
    log.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    rows: list[PerRequestRow] = []
    report = run([log], ["anthropic:claude-sonnet-4-5"], AT, ContractStore(migrated_db_url), rows)
    reconciled = rows[1].reconciled
    assert reconciled is not None and rows[0].reconciled is None
    assert rows[1].usage.input_tokens == 1_500  # the prediction's prompt is the whole prompt
    assert (reconciled.observed_read, reconciled.observed_write) == (1_300, 0)
    # Observed bill at $3 in / $15 out, read x0.1: 1300 * 0.3 / 1e6 = 0.00039; uncached
    # 200 * 3 / 1e6 = 0.0006; output 100 * 15 / 1e6 = 0.0015; total 0.00249. (Taking 200 as
    # the whole prompt would make read > prompt and fail.)
    assert reconciled.observed_cost == Decimal("0.00249")
    reconciliation = report.targets[0].reconciliation
    assert reconciliation is not None and reconciliation.requests == 1
