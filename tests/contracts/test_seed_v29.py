"""Revision 0039 (contracts-v29.json): Cohere's legacy Command models from the day their names
existed.

Expected figures are the sources', written here from them, not from the data file:

- https://github.com/cohere-ai/cohere-developer-experience/blob/main/fern/pages/changelog/2023-04-26-model-names-are-changing.mdx
  (2023-04-26): command-xlarge -> command, command-medium -> command-light,
  command-xlarge-nightly -> command-nightly, command-medium-nightly -> command-light-nightly,
  "As of today, you will be able to call Cohere's models ... with the new model names".
- genai-prices 0.2.5 [S]: Command $1 / $2 per MTok; Command Light $0.30 / $0.60 ("Command-light
  pricing is $0.30/1M tokens for input and $0.60/1M tokens for output", quoting
  https://cohere.com/pricing); LiteLLM 1.110.2 [S]: command-nightly 1e-06 / 2e-06 per token.
- https://docs.cohere.com/changelog/2025-09-15-major-command-deprecations: command and
  command-light deprecated, no shutdown day (so no version ends).
- Cohere offers no prompt caching: mode none, every input token at the input price."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import pytest

from cachecast.contracts import ContractStore
from cachecast.contracts.history import history_gaps, read_lifecycle
from cachecast.core.errors import ContractNotYetInForceError
from cachecast.passes.log_input import LogInput
from cachecast.usecases.reconcile import ReconcileRequest, reconcile
from tests.contracts.builders import bill_of_counts, seed_round_trip
from tests.logs.helpers import vcr_cassette, vcr_interaction

TODAY = dt.date(2026, 12, 5)
RENAMED = dt.date(2023, 4, 26)
MODELS = ("command", "command-light", "command-nightly", "command-light-nightly")


@pytest.mark.parametrize(
    ("model", "prices"),
    [
        ("command", ("1", "2")),
        ("command-light", ("0.30", "0.60")),
        ("command-nightly", ("1", "2")),
        ("command-light-nightly", ("0.30", "0.60")),
    ],
)
@pytest.mark.parametrize("day", [RENAMED, dt.date(2024, 4, 26), dt.date(2025, 9, 15), TODAY])
def test_prices_without_caching_from_the_rename_to_today(
    migrated_db_url: str, model: str, prices: tuple[str, str], day: dt.date
) -> None:
    terms = ContractStore(migrated_db_url).as_of("cohere", model, day)
    assert (terms.input_per_mtok, terms.output_per_mtok) == tuple(Decimal(p) for p in prices)
    assert terms.mode.value == "none"
    assert terms.effective_to is None  # deprecated 2025-09-15, no shutdown day


@pytest.mark.parametrize("model", MODELS)
def test_no_gap_and_the_launch_is_the_rename(migrated_db_url: str, model: str) -> None:
    store = ContractStore(migrated_db_url)
    assert history_gaps(store.history("cohere", model), TODAY).gaps == []
    assert read_lifecycle()[("cohere", model)].launched_on == RENAMED
    with pytest.raises(ContractNotYetInForceError):
        store.as_of("cohere", model, RENAMED - dt.timedelta(days=1))


def test_the_bill_of_a_command_request(migrated_db_url: str) -> None:
    terms = ContractStore(migrated_db_url).as_of("cohere", "command", dt.date(2024, 4, 26))
    # 1,000 input + 100 output at $1 / $2 per MTok: 1000 x 1 / 1e6 = 0.001;
    # 100 x 2 / 1e6 = 0.0002; total $0.0012 (nothing cached: Cohere has no caching price).
    assert bill_of_counts(1_000, 100, terms) == Decimal("0.0012")


def test_the_round_trip(sqlite_url: str) -> None:
    added = seed_round_trip(sqlite_url, "0039_seed_contracts_v29")
    assert {row[5] for row in added} == {"seed:contracts-v29"}
    assert sorted(str(row[1]) for row in added) == sorted(MODELS)


def test_a_v1_chat_naming_command_is_priced(migrated_db_url: str, tmp_path: Path) -> None:
    # A hand-built Cohere v1 /chat exchange of 2024-04-26 naming "command": 31 billed input
    # and 85 output tokens at $1 / $2: 31 x 1 / 1e6 + 85 x 2 / 1e6 = 0.000031 + 0.00017.
    body = {"model": "command", "message": "Tell me a story.", "stream": False}
    reply = {
        "text": "Once upon a time.",
        "meta": {
            "api_version": {"version": "1"},
            "billed_units": {"input_tokens": 31, "output_tokens": 85},
            "tokens": {"input_tokens": 49, "output_tokens": 85},
        },
    }
    interaction = vcr_interaction("https://api.cohere.ai/v1/chat", body, reply).replace(
        "Wed, 01 Apr 2026 10:00:00 GMT", "Fri, 26 Apr 2024 13:51:11 GMT"
    )
    path = vcr_cassette(tmp_path / "command.yaml", interaction)
    report = reconcile(
        ReconcileRequest(log=LogInput.of_paths([path])), ContractStore(migrated_db_url)
    )
    assert report.unpriced == {}
    (row,) = report.requests
    assert Decimal(row.predicted_cost) == Decimal("0.000201")
    (target,) = report.targets
    assert target.contract.effective_from == RENAMED
