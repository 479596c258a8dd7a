"""A Cohere v1 ``/chat`` request that names no model is priced as the default model Cohere's
API reference stated on its day (docs/contracts.md, "contracts-v29"); a named model wins.

The statements are those of Cohere's Python SDK, whose client is generated from the API
reference (its ``chat`` method's ``model`` parameter): 5.3.3, files dated 2024-04-23,
"Defaults to `command-r-plus`."; 5.13.8 (2025-01-14) and 5.14.2 (2025-04-02), "Defaults to
`command-r-plus-08-2024`."; 5.3.2 (2024-04-17), "Defaults to `command-r`."; 5.15.0
(2025-04-15) states none. The recording below is built by hand: one v1 body without
``model``, its reply's ``meta`` (no model named, as every v1 reply)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import pytest

from cachecast.contracts import ContractStore
from cachecast.contracts.defaults import DocumentedDefault, documented_default
from cachecast.core.errors import BadInputError
from cachecast.passes.log_input import LogInput
from cachecast.usecases.reconcile import ReconcileRequest, reconcile
from tests.logs.helpers import vcr_cassette, vcr_interaction

LAUNCHES = {
    "command": dt.date(2023, 4, 26),
    "command-r": dt.date(2024, 3, 11),
    "command-r-plus": dt.date(2024, 4, 4),
    "command-r-plus-08-2024": dt.date(2024, 8, 30),
}


def _launched(model: str) -> dt.date | None:
    return LAUNCHES.get(model)


def _v1_chat(tmp_path: Path, date_header: str, model: str | None = None) -> Path:
    body: dict[str, object] = {"message": "Say hello in French.", "stream": False}
    if model is not None:
        body["model"] = model
    reply = {
        "response_id": "r-1",
        "text": "Bonjour.",
        "generation_id": "g-1",
        "finish_reason": "COMPLETE",
        "meta": {
            "api_version": {"version": "1"},
            "billed_units": {"input_tokens": 1_000, "output_tokens": 100},
            "tokens": {"input_tokens": 1_200, "output_tokens": 100},
        },
    }
    interaction = vcr_interaction("https://api.cohere.com/v1/chat", body, reply)
    interaction = interaction.replace("Wed, 01 Apr 2026 10:00:00 GMT", date_header)
    assert date_header in interaction  # the recording's day is the one the test names
    return vcr_cassette(tmp_path / "cohere_v1.yaml", interaction)


@pytest.mark.parametrize(
    ("day", "model"),
    [
        (dt.date(2024, 3, 20), "command"),  # 5.0.0's own day
        (dt.date(2024, 4, 10), "command-r"),  # between 5.2.0 and 5.3.0, both command-r
        (dt.date(2024, 5, 1), "command-r-plus"),  # between 5.3.3 and 5.4.0
        # After 5.5.0 (command-r-plus) and before command-r-plus-08-2024 launched: the
        # later default could not yet be served.
        (dt.date(2024, 7, 1), "command-r-plus"),
        (dt.date(2025, 1, 14), "command-r-plus-08-2024"),
        (dt.date(2025, 3, 1), "command-r-plus-08-2024"),
        (dt.date(2025, 4, 2), "command-r-plus-08-2024"),
    ],
)
def test_the_default_stated_on_the_day(day: dt.date, model: str) -> None:
    found = documented_default("cohere", day, _launched)
    assert isinstance(found, DocumentedDefault)
    assert found.model == model
    assert "assumed, not observed" in found.note


@pytest.mark.parametrize(
    ("day", "why"),
    [
        # Before the first statement (5.0.0, 2024-03-20): the 4.x clients state none.
        (dt.date(2024, 2, 14), "first seen stating one on 2024-03-20"),
        # Between command (5.1.0, 2024-03-21) and command-r (5.2.0, 2024-04-03), both served.
        (dt.date(2024, 3, 25), "command or command-r"),
        (dt.date(2024, 4, 20), "command-r or command-r-plus"),
        # command-r-plus-08-2024 served from 2024-08-30; first dated statement 2025-01-14.
        (dt.date(2024, 10, 1), "command-r-plus or command-r-plus-08-2024"),
        # 5.14.2 (2025-04-02) states it, 5.15.0 (2025-04-15) states none.
        (dt.date(2025, 4, 10), "stopped stating one"),
        (dt.date(2025, 9, 1), "states none on 2025-09-01"),
    ],
)
def test_undated_or_unstated_days_name_no_model(day: dt.date, why: str) -> None:
    found = documented_default("cohere", day, _launched)
    assert isinstance(found, str)
    assert found.startswith("cohere: the record names no model")
    assert why in found
    assert "give --model" in found


def test_a_provider_without_statements_names_none() -> None:
    found = documented_default("mistral", dt.date(2025, 1, 14), _launched)
    assert isinstance(found, str) and "in none of our sources" in found


def test_a_v1_body_without_model_is_priced_as_the_default_of_its_day(
    migrated_db_url: str, tmp_path: Path
) -> None:
    path = _v1_chat(tmp_path, "Tue, 14 Jan 2025 22:01:37 GMT")
    report = reconcile(
        ReconcileRequest(log=LogInput.of_paths([path])), ContractStore(migrated_db_url)
    )
    assert report.unpriced == {}
    (target,) = report.targets
    assert (target.provider, target.model) == ("cohere", "command-r-plus-08-2024")
    # command-r-plus-08-2024 at $2.50 in / $10.00 out per MTok (Cohere's changelog of
    # 2024-08-30), no caching: 1,000 x 2.50 / 1e6 = 0.0025; 100 x 10 / 1e6 = 0.001;
    # $0.0035, billed as the reply's billed_units state.
    (row,) = report.requests
    assert Decimal(row.predicted_cost) == Decimal("0.0035")
    assert Decimal(row.observed_cost) == Decimal("0.0035")
    (note,) = [n for n in target.notes if "without 'model'" in n]
    assert "5.13.8 of 2025-01-14" in note and "assumed, not observed" in note


def test_a_named_model_wins_over_the_default(migrated_db_url: str, tmp_path: Path) -> None:
    path = _v1_chat(tmp_path, "Tue, 14 Jan 2025 22:01:37 GMT", model="command-r")
    report = reconcile(
        ReconcileRequest(log=LogInput.of_paths([path])), ContractStore(migrated_db_url)
    )
    (target,) = report.targets
    assert target.model == "command-r"
    # command-r at $0.50 / $1.50: 1,000 x 0.50 / 1e6 + 100 x 1.50 / 1e6 = 0.0005 + 0.00015.
    (row,) = report.requests
    assert Decimal(row.predicted_cost) == Decimal("0.00065")
    assert not any("without 'model'" in n for n in target.notes)


def test_an_undated_day_stays_unpriced_with_its_reason(
    migrated_db_url: str, tmp_path: Path
) -> None:
    path = _v1_chat(tmp_path, "Tue, 01 Oct 2024 12:00:00 GMT")
    with pytest.raises(BadInputError) as raised:
        reconcile(ReconcileRequest(log=LogInput.of_paths([path])), ContractStore(migrated_db_url))
    assert "command-r-plus or command-r-plus-08-2024" in str(raised.value)
