"""Revision 0027 (contracts-v19.json): Gemini on Vertex AI before 2.5 (1.0 Pro, 1.5 Pro, 1.5
Flash, 2.0 Flash, 2.0 Flash-Lite) and the Gemini API's 2.0 Flash-Lite.

Expected terms are what the sources in docs/contracts.md ("contracts-v19") state, written here
from those sources, not from the data file. Vertex billed Gemini 1.0 and 1.5 per character: a
per-1K-character rate r is r x 1,000 x 4 per MTok at Google's ~4 characters per token (the
equivalence the notes call [U]). Release and retirement days: Vertex's Gemini 2.0 Flash model
page ("Release date: February 5, 2025"), its FAQ ("available as of February 25, 2025 ...
Gemini 2.0 Flash-Lite (GA)"), its model-versions page (gemini-1.5-pro-002 and -flash-002
retired 2025-09-24), its Gemini 1.0 Pro notice ("from February 15, 2025 to April 9, 2025") and
Firebase AI Logic's ("Gemini 2.0 Flash and Flash-Lite models were shut down on June 1, 2026")."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import pytest

from cachecast.contracts import ContractStore
from cachecast.contracts.history import history_gaps
from cachecast.contracts.model import derived_per_mtok
from cachecast.core.errors import ContractNotYetInForceError, UnknownContractError
from cachecast.passes.log_input import LogInput
from cachecast.usecases.reconcile import ReconcileRequest, reconcile
from tests.contracts.builders import bill_of_counts, seed_round_trip

TODAY = dt.date(2026, 12, 5)


@pytest.mark.parametrize(
    ("provider", "name", "day", "prices"),
    [
        # Vertex's Gemini 1.0 Pro: $0.000125 / $0.000375 per 1K characters [S visualfoodie.com]
        # = 0.000125 x 4,000 = $0.50 and 0.000375 x 4,000 = $1.50 per MTok.
        ("vertex", "gemini-1.0-pro", dt.date(2024, 3, 1), ("0.5", "1.5")),
        ("vertex", "gemini-pro", dt.date(2025, 4, 8), ("0.5", "1.5")),
        # 1.5 Pro at stable release: $3.50 / $10.50 per MTok up to 128K [S bigbullcloud.com].
        ("vertex", "gemini-1.5-pro-001", dt.date(2024, 6, 1), ("3.5", "10.5")),
        # 1.5 Pro from 2024-10-01: $1.25 / $5.00 [S genai-prices 0.2.3, rakaihub.com].
        ("vertex", "gemini-1.5-pro-002", dt.date(2024, 11, 1), ("1.25", "5")),
        # 1.5 Flash from 2024-08-12: Vertex's $0.00001875 per 1K characters [S aymeric.fyi]
        # = 0.00001875 x 4,000 = $0.075 per MTok; output $0.30 [S genai-prices 0.2.3].
        ("vertex", "gemini-1.5-flash-002", dt.date(2024, 10, 15), ("0.075", "0.3")),
        # 2.0 Flash-Lite: "input tokens cost $0.075 per 1M tokens and output text tokens cost
        # $0.30 per 1M tokens" (Vertex's pricing page as quoted on 815494.com [S]).
        ("vertex", "gemini-2.0-flash-lite-001", dt.date(2025, 3, 10), ("0.075", "0.3")),
        ("google", "gemini-2.0-flash-lite", dt.date(2025, 3, 10), ("0.075", "0.3")),
    ],
)
def test_prices_the_sources_state(
    migrated_db_url: str, provider: str, name: str, day: dt.date, prices: tuple[str, str]
) -> None:
    terms = ContractStore(migrated_db_url).as_of(provider, name, day)
    assert (terms.input_per_mtok, terms.output_per_mtok) == (
        Decimal(prices[0]),
        Decimal(prices[1]),
    )


@pytest.mark.parametrize(
    ("name", "storage"),
    # Storage per MTok-hour: 1.5 Pro $0.001125 per 1K characters per hour x 4,000 = $4.50;
    # 1.5 Flash $1.00 (the Gemini API's rate [S]).
    [("gemini-1.5-pro", "4.5"), ("gemini-1.5-flash", "1")],
)
def test_gemini_1_5_caches_explicitly_on_vertex_from_2024_06_27_only(
    migrated_db_url: str, name: str, storage: str
) -> None:
    store = ContractStore(migrated_db_url)
    # Before context caching: every prompt token at the input price.
    before = store.as_of("vertex", name, dt.date(2024, 6, 26))
    assert before.mode.value == "none"
    after = store.as_of("vertex", name, dt.date(2024, 6, 27))
    assert after.mode.value == "explicit"
    # "The minimum size of a context cache is 32,768 tokens" (Vertex's overview of 2024).
    assert after.min_cacheable_tokens == 32_768
    assert after.storage_per_mtok_hour == Decimal(storage)
    # Cached tokens at 0.25x the input price: $3.50 -> $0.875 (Pro), $0.35 -> $0.0875 (Flash).
    assert derived_per_mtok(after.input_per_mtok, after.read_multiplier) == (
        Decimal("0.875") if name == "gemini-1.5-pro" else Decimal("0.0875")
    )


@pytest.mark.parametrize(
    ("name", "day"),
    [
        ("gemini-1.0-pro", dt.date(2025, 4, 9)),
        ("gemini-1.5-pro", dt.date(2025, 9, 24)),
        ("gemini-1.5-flash", dt.date(2025, 9, 24)),
        ("gemini-2.0-flash", dt.date(2026, 6, 1)),
        ("gemini-2.0-flash-lite", dt.date(2026, 6, 1)),
    ],
)
def test_no_version_on_the_retirement_day(migrated_db_url: str, name: str, day: dt.date) -> None:
    store = ContractStore(migrated_db_url)
    assert store.as_of("vertex", name, day - dt.timedelta(days=1)).model == name
    with pytest.raises(UnknownContractError):
        store.as_of("vertex", name, day)


@pytest.mark.parametrize(
    ("name", "day", "launch"),
    [
        ("gemini-1.0-pro", dt.date(2023, 12, 12), "2023-12-13"),
        ("gemini-1.5-pro", dt.date(2024, 5, 29), "2024-05-30"),
        ("gemini-2.0-flash", dt.date(2025, 2, 4), "2025-02-05"),
        ("gemini-2.0-flash-lite", dt.date(2025, 2, 24), "2025-02-25"),
    ],
)
def test_before_release_is_refused_with_the_release_day(
    migrated_db_url: str, name: str, day: dt.date, launch: str
) -> None:
    with pytest.raises(ContractNotYetInForceError, match=launch):
        ContractStore(migrated_db_url).as_of("vertex", name, day)


TOUCHED = [
    ("vertex", "gemini-1.0-pro"),
    ("vertex", "gemini-1.5-pro"),
    ("vertex", "gemini-1.5-flash"),
    ("vertex", "gemini-2.0-flash"),
    ("vertex", "gemini-2.0-flash-lite"),
    ("google", "gemini-2.0-flash-lite"),
]


@pytest.mark.parametrize(("provider", "model"), TOUCHED)
def test_no_gap(migrated_db_url: str, provider: str, model: str) -> None:
    summary = history_gaps(ContractStore(migrated_db_url).history(provider, model), TODAY)
    assert summary.gaps == []
    assert summary.launch_known == 1


@pytest.mark.parametrize(
    ("name", "day", "counts", "total"),
    [
        # 1.5 Pro on 2024-11-01, 40,000 in of which 32,768 read from a context cache, 500 out:
        # 7,232 x $1.25 / 1e6 = 0.00904; 32,768 x $0.3125 / 1e6 = 0.01024;
        # 500 x $5 / 1e6 = 0.0025; total 0.02178.
        ("gemini-1.5-pro", dt.date(2024, 11, 1), (40_000, 500, 32_768), "0.02178"),
        # 1.0 Pro, 1,000 in + 100 out: 1,000 x $0.50 / 1e6 = 0.0005; 100 x $1.50 / 1e6 =
        # 0.00015; total 0.00065.
        ("gemini-1.0-pro", dt.date(2024, 3, 1), (1_000, 100, 0), "0.00065"),
    ],
)
def test_a_bill_by_hand(
    migrated_db_url: str,
    name: str,
    day: dt.date,
    counts: tuple[int, int, int],
    total: str,
) -> None:
    terms = ContractStore(migrated_db_url).as_of("vertex", name, day)
    assert bill_of_counts(counts[0], counts[1], terms, cached=counts[2]) == Decimal(total)


def _vertex_cassette(tmp_path: Path, model: str, date: str) -> Path:
    """A vcrpy cassette of one generateContent call to Vertex AI, as Vertex answers it."""
    body = {"contents": [{"role": "user", "parts": [{"text": "Say hello"}]}]}
    answer = {
        "candidates": [
            {"content": {"role": "model", "parts": [{"text": "Hello!"}]}, "finishReason": "STOP"}
        ],
        "usageMetadata": {
            "promptTokenCount": 1000,
            "candidatesTokenCount": 100,
            "totalTokenCount": 1100,
        },
        "modelVersion": model,
    }
    url = (
        "https://us-central1-aiplatform.googleapis.com/v1/projects/test-project/locations/"
        f"us-central1/publishers/google/models/{model}:generateContent"
    )
    cassette = tmp_path / f"{model}.yaml"
    cassette.write_text(
        "interactions:\n- request:\n    body: '" + json.dumps(body) + "'\n"
        "    headers:\n      Content-Type:\n      - application/json\n"
        f"    method: POST\n    uri: {url}\n"
        "  response:\n    body:\n      string: '" + json.dumps(answer) + "'\n"
        "    headers:\n      Content-Type:\n      - application/json; charset=UTF-8\n"
        f"      Date:\n      - {date}\n"
        "    status:\n      code: 200\n      message: OK\nversion: 1\n"
    )
    return cassette


@pytest.mark.parametrize(
    ("model", "date", "target", "cost"),
    [
        # 2.0 Flash-Lite was an unknown model before this revision. 1,000 x $0.075 / 1e6 =
        # 0.000075; 100 x $0.30 / 1e6 = 0.00003; total 0.000105.
        (
            "gemini-2.0-flash-lite-001",
            "Mon, 10 Mar 2025 10:00:00 GMT",
            "google:gemini-2.0-flash-lite",
            "0.000105",
        ),
        # 1.5 Flash after the cut, the same figures: 0.000075 + 0.00003 = 0.000105.
        (
            "gemini-1.5-flash-002",
            "Tue, 15 Oct 2024 10:00:00 GMT",
            "google:gemini-1.5-flash",
            "0.000105",
        ),
        # gemini-pro, 1,000 x $0.50 / 1e6 + 100 x $1.50 / 1e6 = 0.0005 + 0.00015 = 0.00065.
        ("gemini-pro", "Fri, 01 Mar 2024 10:00:00 GMT", "google:gemini-1.0-pro", "0.00065"),
    ],
)
def test_a_hand_built_vertex_cassette_is_priced_as_vertex_prices_it(
    migrated_db_url: str, tmp_path: Path, model: str, date: str, target: str, cost: str
) -> None:
    store = ContractStore(migrated_db_url)
    cassette = _vertex_cassette(tmp_path, model, date)
    report = reconcile(ReconcileRequest(log=LogInput.of_paths([cassette])), store)
    assert report.unpriced == {}
    [request] = report.requests
    # A request to *-aiplatform.googleapis.com is read under provider google
    # (cachecast/logs/http/endpoints.py); its bill is the one the vertex contract gives too.
    assert request.target == target
    assert request.observed_cost == Decimal(cost)
    day = dt.datetime.strptime(date, "%a, %d %b %Y %H:%M:%S GMT").date()
    assert bill_of_counts(1_000, 100, store.as_of("vertex", model, day)) == Decimal(cost)


def test_upgrade_adds_only_these_versions_and_downgrade_gives_back_the_rows(
    sqlite_url: str,
) -> None:
    added = seed_round_trip(sqlite_url, "0027_seed_contracts_v19")
    assert all(row[5] == "seed:contracts-v19" for row in added)
    # 1 (1.0 Pro) + 3 (1.5 Pro) + 3 (1.5 Flash) + 1 (2.0 Flash) + 1 + 1 (2.0 Flash-Lite).
    assert len(added) == 10
    assert sorted({(str(row[0]), str(row[1])) for row in added}) == sorted(TOUCHED)
