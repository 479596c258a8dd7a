"""Google's ``<model>-latest`` names the newest version of ``<model>`` ("Model version name
patterns", https://ai.google.dev/gemini-api/docs/models): a log that names
``gemini-1.5-flash-latest`` (llm-gemini's cassettes) is priced as ``gemini-1.5-flash`` where
the catalog holds no ``-latest`` id of its own; any other ``-latest`` is left as written."""

from __future__ import annotations

import datetime as dt

import pytest

from cachecast.contracts import ContractStore
from cachecast.contracts.rules import fallback_names
from cachecast.core.errors import UnknownContractError

DAY = dt.date(2026, 12, 4)


def test_gemini_latest_is_priced_as_its_stem(migrated_db_url: str) -> None:
    # The day of llm-gemini's cassette; gemini-1.5-flash served until 2025-09-24 (contracts-v11).
    day = dt.date(2025, 2, 17)
    store = ContractStore(migrated_db_url)
    latest = store.as_of("google", "gemini-1.5-flash-latest", day)
    assert latest == store.as_of("google", "gemini-1.5-flash", day)
    assert latest.model == "gemini-1.5-flash"


def test_a_stored_latest_id_wins_over_its_stem(migrated_db_url: str) -> None:
    # gemini-flash-latest is a model of its own in the catalog (contracts-v2).
    store = ContractStore(migrated_db_url)
    assert store.as_of("google", "gemini-flash-latest", DAY).model == "gemini-flash-latest"


def test_only_gemini_names_lose_latest(migrated_db_url: str) -> None:
    assert fallback_names("gemini-1.5-pro-latest") == ("gemini-1.5-pro",)
    assert fallback_names("gpt-4o-latest") == ()  # OpenAI's -latest ids are models of their own
    assert fallback_names("gemini-latest") == ()
    with pytest.raises(UnknownContractError, match=r"gemini-0\.1-flash-latest"):
        ContractStore(migrated_db_url).as_of("google", "gemini-0.1-flash-latest", DAY)


def test_an_anthropic_snapshot_falls_back_to_its_family(migrated_db_url: str) -> None:
    # claude-3-opus-20240229 (dd-trace-py's cassettes) is stored under its -latest alias only.
    # A day both snapshots served: Claude 3 Sonnet retired 2025-07-21, Opus 2026-01-05.
    served = dt.date(2025, 6, 1)
    store = ContractStore(migrated_db_url)
    assert fallback_names("claude-3-opus-20240229") == ("claude-3-opus", "claude-3-opus-latest")
    opus = store.as_of("anthropic", "claude-3-opus-20240229", served)
    assert opus.model == "claude-3-opus-latest"
    # claude-3-sonnet-20240229 -> the stored claude-3-sonnet
    assert store.as_of("anthropic", "claude-3-sonnet-20240229", served).model == "claude-3-sonnet"
    assert fallback_names("claude-3-opus") == ()
