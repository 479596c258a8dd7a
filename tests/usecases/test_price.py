"""``cachecast price`` and ``POST /v1/prices``: one request's usage priced without a log, by
the same billing code as estimates (issue 29, point 13).

Expected bills are worked by hand from the seeded contracts' documented terms:
- anthropic/claude-sonnet-4-5 (as seeded, `contracts show anthropic:claude-sonnet-4-5`):
  $3/MTok input, $15/MTok output, reads 0.1x input, writes 1.25x (5m) and 2x (1h) input.
- openai/gpt-4o@2024-10-01: $2.50/MTok input, $10/MTok output, reads 0.5x.
"""

from __future__ import annotations

import json
from decimal import Decimal

import httpx
import pytest
from typer.testing import CliRunner

from cachecast.cli import app
from cachecast.contracts import ContractStore
from cachecast.core.errors import BadInputError, UnknownContractError
from cachecast.service.problems import Problem, problem_response
from cachecast.usecases.price import PriceRequest, price
from tests.service.conftest import make_settings, open_client

SONNET = "anthropic:claude-sonnet-4-5"
DAY = "2026-11-01"


def test_a_sonnet_request_with_reads_and_writes_of_both_ttls(migrated_db_url: str) -> None:
    request = PriceRequest(
        target=SONNET,
        at=DAY,
        input_tokens=1200,
        cache_read_tokens=50_000,
        cache_write_by_ttl={"5m": 1000, "1h": 4000},
        output_tokens=800,
    )
    report = price(request, ContractStore(migrated_db_url))
    # input  1,200 x $3 / 1e6          = 0.0036
    # read  50,000 x $3 x 0.1 / 1e6    = 0.015
    # write  1,000 x $3 x 1.25 / 1e6   = 0.00375; 4,000 x $3 x 2 / 1e6 = 0.024 -> 0.02775
    # output   800 x $15 / 1e6         = 0.012
    # total                            = 0.05835
    assert report.cost.input == Decimal("0.0036")
    assert report.cost.cache_read == Decimal("0.015")
    assert report.cost.cache_write == Decimal("0.02775")
    assert report.cost.output == Decimal("0.012")
    assert report.cost.total == Decimal("0.05835")
    assert report.prompt_tokens == 1200 + 50_000 + 5000
    # Without the cache: 56,200 x $3 / 1e6 + 0.012 = 0.1686 + 0.012 = 0.1806
    assert report.cost_without_cache == Decimal("0.1806")
    assert report.savings == Decimal("0.1806") - Decimal("0.05835")
    assert report.contract.version.startswith("anthropic/claude-sonnet-4-5@")


def test_default_ttl_writes_and_an_unknown_ttl(migrated_db_url: str) -> None:
    store = ContractStore(migrated_db_url)
    # gpt-4o: 1,000 written at its default (only) TTL, free writes (1x input):
    # 1,000 x $2.50 / 1e6 = 0.0025; read 2,000 x $2.50 x 0.5 / 1e6 = 0.0025
    report = price(
        PriceRequest(
            target="openai:gpt-4o", at=DAY, cache_write_tokens=1000, cache_read_tokens=2000
        ),
        store,
    )
    assert report.cost.cache_write == Decimal("0.0025")
    assert report.cost.cache_read == Decimal("0.0025")
    with pytest.raises(BadInputError) as caught:
        price(PriceRequest(target="openai:gpt-4o", cache_write_by_ttl={"1h": 5}), store)
    assert caught.value.location.field == "cache_write_by_ttl.1h"
    with pytest.raises(UnknownContractError) as unknown:
        price(PriceRequest(target="openai:gpt-4oo"), store)
    assert "gpt-4o" in unknown.value.close_matches


def test_the_command(migrated_db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    args = [
        "price",
        SONNET,
        "--input",
        "1200",
        "--cache-read",
        "50000",
        "--cache-write-5m",
        "1000",
        "--cache-write-1h",
        "4000",
        "--output",
        "800",
        "--at",
        DAY,
        "--database-url",
        migrated_db_url,
    ]
    shown = CliRunner().invoke(app, args)
    assert shown.exit_code == 0, shown.output
    # Money for people (hand values above, rounded half-even for display).
    assert "$0.0584" in shown.output and "$0.0278" in shown.output and "$0.1806" in shown.output
    assert all(len(line) <= 80 for line in shown.output.splitlines()[:-1])
    exact = CliRunner().invoke(app, [*args, "--json"])
    assert json.loads(exact.output)["cost"]["total"] == "0.05835"
    bad = CliRunner().invoke(app, ["price", "openai", "--database-url", migrated_db_url])
    assert bad.exit_code == 2


@pytest.mark.anyio
async def test_the_api(migrated_db_url: str) -> None:
    async for client in open_client(make_settings(migrated_db_url)):
        body = {
            "target": SONNET,
            "at": DAY,
            "input_tokens": 1200,
            "cache_read_tokens": 50_000,
            "cache_write_by_ttl": {"5m": 1000, "1h": 4000},
            "output_tokens": 800,
        }
        response = await client.post("/v1/prices", json=body)
        assert response.status_code == 200, response.text
        assert response.json()["cost"]["total"] == "0.05835"
        unknown = await client.post("/v1/prices", json={"target": "openai:gpt-4oo"})
        assert unknown.status_code == 404
        negative = await client.post("/v1/prices", json={"target": SONNET, "input_tokens": -1})
        assert negative.status_code == 422
        assert isinstance(response, httpx.Response)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_hostile_price_bodies_are_422_naming_the_problem(migrated_db_url: str) -> None:
    """Before: the framework's lenient parser took a lone surrogate in ``target`` (and then
    the 404 naming it could not be encoded: a 500), and answered 10,000 levels of nesting
    or an integer of 5,000 digits with a bare 400. Now the body is read as every JSON body
    is: a 422 invalid-request naming what is wrong."""
    async for client in open_client(make_settings(migrated_db_url)):
        headers = {"content-type": "application/json"}
        bodies = {
            '{"target": "openai:\\ud800", "input_tokens": 1}': "hex escape",
            '{"target": ' + "[" * 10_000 + "]" * 10_000 + "}": "recursion limit",
            '{"target": "openai:gpt-4o", "input_tokens": ' + "9" * 5000 + "}": "out of range",
        }
        for text, reason in bodies.items():
            response = await client.post("/v1/prices", content=text, headers=headers)
            assert response.status_code == 422, response.text
            problem = response.json()
            assert problem["type"] == "https://cachecast.dev/problems/invalid-request"
            assert reason in problem["detail"]


def test_a_problem_repeating_a_lone_surrogate_is_still_sent() -> None:
    """A refused value is repeated in its problem; one UTF-8 cannot encode (a lone
    surrogate a JSON body may escape) is written as its escape, not a 500."""
    response = problem_response(
        Problem(type="about:blank", title="Bad", status=422, detail="target: openai:\ud800")
    )
    assert json.loads(response.body)["detail"] == "target: openai:\\ud800"
