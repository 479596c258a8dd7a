"""The issue's done-when commands and the CLI's error behaviour, through the real app."""

from __future__ import annotations

import json
from typing import Any

from typer.testing import CliRunner

from cachecast.cli import app

runner = CliRunner()


def contracts_json(url: str, *args: str) -> Any:
    """``cachecast contracts ARGS --json`` on ``url``: must succeed; its parsed stdout."""
    result = runner.invoke(app, ["contracts", *args, "--json", "--database-url", url])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def show_json(url: str, *args: str) -> dict[str, Any]:
    data: dict[str, Any] = contracts_json(url, "show", *args)
    return data


def test_gpt_5_6_terms_on_2026_11_01(seeded_url: str) -> None:
    # Reference section 1 (GPT-5.6+, checked 2026-10-11): 1,024-token minimum, ttl '30m'
    # refreshed by reuse, writes 1.25x base input, reads 0.1x.
    data = show_json(seeded_url, "openai", "gpt-5.6", "--at", "2026-11-01")
    assert data["provider"] == "openai" and data["model"] == "gpt-5.6"
    assert data["min_cacheable_tokens"] == 1024
    assert data["ttl_options"] == [
        {"name": "30m", "ttl_seconds": 1800, "refresh_on_hit": True, "write_multiplier": "1.25"}
    ]
    assert data["read_multiplier"] == "0.1"
    assert data["verified_on"] == "2026-10-11"
    for key in (
        "effective_from",
        "effective_to",
        "source",
        "mode",
        "increment_tokens",
        "input_per_mtok",
        "output_per_mtok",
    ):
        assert key in data


def test_claude_sonnet_4_5_today(seeded_url: str) -> None:
    # Reference section 3: 5 min TTL at 1.25x, 1 h at 2x, reads 0.1x.
    data = show_json(seeded_url, "anthropic", "claude-sonnet-4-5")
    assert [(o["ttl_seconds"], o["write_multiplier"]) for o in data["ttl_options"]] == [
        (300, "1.25"),
        (3600, "2"),
    ]
    assert data["read_multiplier"] == "0.1"


def test_gpt_4o_on_2025_06_01(seeded_url: str) -> None:
    # Reference section 1: gpt-4o reads 0.5x ($2.50 -> $1.25); no write fee before GPT-5.6.
    data = show_json(seeded_url, "openai", "gpt-4o", "--at", "2025-06-01")
    assert data["read_multiplier"] == "0.5"
    assert [o["write_multiplier"] for o in data["ttl_options"]] == ["1"]
    assert (data["input_per_mtok"], data["output_per_mtok"]) == ("2.5", "10")


def test_unmigrated_database_is_one_clear_line(sqlite_url: str) -> None:
    result = runner.invoke(app, ["contracts", "list", "--database-url", sqlite_url])
    assert result.exit_code == 2
    assert result.output.count("\n") == 1
    assert "run `cachecast db upgrade`" in result.output
    assert "Traceback" not in result.output


def test_unknown_model_exits_2_with_close_matches(seeded_url: str) -> None:
    result = runner.invoke(
        app, ["contracts", "show", "anthropic", "claude-sonet-4-5", "--database-url", seeded_url]
    )
    assert result.exit_code == 2
    assert result.output.count("\n") == 1
    assert "close matches: claude-sonnet-4-5" in result.output


def test_bad_date_exits_2(seeded_url: str) -> None:
    result = runner.invoke(
        app, ["contracts", "list", "--at", "2026-13-01", "--database-url", seeded_url]
    )
    assert result.exit_code == 2
    assert "--at: '2026-13-01' is not a date" in result.output
    assert result.output.count("\n") == 1


def test_list_and_history_json(seeded_url: str) -> None:
    listed = contracts_json(seeded_url, "list", "--provider", "google", "--at", "2026-11-01")
    # Seed: four Gemini models, each with one version in force on 2026-11-01, each with a
    # storage price (explicit caches pay per MTok-hour).
    assert len(listed) == 4
    assert all(entry["storage_per_mtok_hour"] is not None for entry in listed)

    history = contracts_json(seeded_url, "history", "google", "gemini-2.5-flash")
    # Reference section 5: 2.5 Flash minimum 1024 on the Feb-2026 page, 2048 later.
    assert [
        (v["effective_from"], v["effective_to"], v["min_cacheable_tokens"]) for v in history
    ] == [
        ("2026-02-26", "2026-10-01", 1024),
        ("2026-10-01", None, 2048),
    ]


def test_list_table_renders(seeded_url: str) -> None:
    result = runner.invoke(
        app, ["contracts", "list", "--at", "2026-11-01", "--database-url", seeded_url]
    )
    assert result.exit_code == 0, result.output
    assert "openai/gpt-5.6" in result.output and "30m x1.25+" in result.output
