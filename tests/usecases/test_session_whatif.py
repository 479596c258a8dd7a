"""What-ifs on agent sessions: ``compare`` and ``usage --self-hosted`` replay sessions from
their observed prompt lengths and lineages (docs/economics.md, "Agent sessions"), and
``estimate`` prices a session's observed usage (docs/predictions.md).

Expected values: self-hosted hits derived by hand from the documented vLLM model (full 16-token
blocks, a lookup of at most ``(len - 1) // 16`` blocks, nothing evicted at this size) and the
documented sharing rule; bills from the list prices (written out, $ per million tokens) and
token totals from the shared recordings parsed with plain ``json`` in ``test_usage``.
"""

from __future__ import annotations

import csv
import io
import json
from decimal import Decimal
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from cachecast.cli import app
from cachecast.contracts import ContractStore
from cachecast.core.errors import BadInputError, CachecastError
from cachecast.economics.gpu_hours import round_dollars
from cachecast.passes.log_input import LogInput
from cachecast.service.app import create_app
from cachecast.usecases.capacity import ModelReference
from cachecast.usecases.compare import CompareRequest, compare
from cachecast.usecases.estimate import EstimateRequest, estimate
from cachecast.usecases.session_prompts import SHARING
from cachecast.usecases.usage_self_hosted import SelfHostedOption
from tests.conftest import shared_data
from tests.service.conftest import make_settings
from tests.usecases.test_usage import (
    CLAUDE,
    MILLION,
    assistant,
    claude_sums,
    claude_usage,
    report_of,
    write_lines,
)

SESSION = f"{CLAUDE}/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"
DEPLOYMENT = "llama-3.3-70b@h200x4:2.50"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def gap_session(folder: Path) -> Path:
    # One lineage on claude-sonnet-4 (2025-09-01), 3 tokens after each breakpoint:
    # 1. writes 4,000 (prompt 4,003);
    # 2. a minute later reads those 4,000 and writes 1,000 (prompt 5,003);
    # 3. ten minutes later (the 5m cache expired) writes 6,000 (prompt 6,003): the provider
    #    read nothing, but the 5,000 tokens request 2 cached were in its prompt.
    return write_lines(
        folder / "gap.jsonl",
        [
            assistant("m1", "2025-09-01T10:00:00Z", five=4_000),
            assistant("m2", "2025-09-01T10:01:00Z", read=4_000, five=1_000),
            assistant("m3", "2025-09-01T10:11:00Z", five=6_000),
        ],
    )


# Self-hosted, by hand: request 1 hits nothing; request 2 shares the 4,000 tokens it read, all
# 250 full blocks of request 1 (4,003 // 16 = 250; its lookup allows (5,003 - 1) // 16 = 312)
# = 4,000 tokens; request 3 shares the 5,000 request 2 had cached (vLLM keeps it: nothing is
# evicted at this size), 5,000 // 16 = 312 full blocks = 4,992 tokens. Hits 4,000 + 4,992 =
# 8,992 of 4,003 + 5,003 + 6,003 = 15,009 prompt tokens.
SELF_HOSTED_HITS = 8_992
PROMPT_TOKENS = 15_009
# Observed bill, sonnet-4 (2025-09): $3 input, $3.75 5m writes, $0.30 reads, $15 output:
# 1. 3 x 3 + 4,000 x 3.75 + 10 x 15 = 15,159; 2. 9 + 4,000 x 0.3 + 1,000 x 3.75 + 150 =
# 5,109; 3. 9 + 6,000 x 3.75 + 150 = 22,659; sum 42,927 -> $0.042927.
OBSERVED_COST = Decimal("0.042927")


def test_compare_replays_a_session_from_its_observed_lengths(
    migrated_db_url: str, tmp_path: Path
) -> None:
    path = gap_session(tmp_path)
    request = CompareRequest(
        log=LogInput.of_paths([path]),
        model=ModelReference(preset="llama-3.3-70b"),
        gpu="h200",
        gpus=4,
        gpu_price=Decimal("2.50"),
    )
    report = compare(request)
    assert (report.log.requests, report.log.input_tokens) == (3, PROMPT_TOKENS)
    assert report.log.output_tokens == 30
    assert report.self_hosted.hit_tokens == SELF_HOSTED_HITS
    assert report.log.tokenizer is None and report.log.exact_tokens
    assert SHARING in report.assumptions
    with pytest.raises(BadInputError, match="not tokenized"):
        compare(request.model_copy(update={"tokenizer": "gpt-4o"}))


def test_usage_self_hosted_is_compare_on_the_same_requests(
    migrated_db_url: str, tmp_path: Path
) -> None:
    path = gap_session(tmp_path)
    option = SelfHostedOption.of_text(DEPLOYMENT)
    assert (option.model, option.gpu, option.gpus, option.gpu_price) == (
        "llama-3.3-70b",
        "h200",
        4,
        Decimal("2.50"),
    )
    report = report_of(migrated_db_url, path, self_hosted=option)
    shown = report.self_hosted_what_if
    assert shown is not None
    assert report.totals.cost == shown.observed_cost == OBSERVED_COST
    assert (shown.requests, shown.prompt_tokens) == (3, PROMPT_TOKENS)
    assert shown.hit_rate == pytest.approx(SELF_HOSTED_HITS / PROMPT_TOKENS)
    # The hosted cache read 4,000 of them (the gap cost request 3 its 5,000).
    assert report.totals.cache_read_tokens == 4_000
    # docs/economics.md: dollars are the GPU-hours (rounded to 1e-6 h) times the price,
    # rounded to 1e-6 $.
    assert shown.cost_full_utilization == round_dollars(
        shown.gpu_hours_full_utilization * Decimal("2.50")
    )
    assert shown.difference_full_utilization == shown.cost_full_utilization - OBSERVED_COST
    # The same figures as compare gives for the same file.
    compared = compare(
        option.compare_request().model_copy(update={"log": LogInput.of_paths([path])})
    )
    assert compared.self_hosted.full_utilization.gpu_hours == shown.gpu_hours_full_utilization
    assert compared.self_hosted.hit_rate == shown.hit_rate
    # --since/--until: only the requests in range are served.
    none = report_of(migrated_db_url, path, self_hosted=option, since="2025-09-02")
    assert none.self_hosted_what_if is None and none.totals.requests == 0


@pytest.mark.parametrize(
    ("text", "field"),
    [("llama-3.3-70b", "self_hosted"), ("llama-3.3-70b@h200:free", "self_hosted")],
)
def test_self_hosted_option_refuses_what_it_cannot_read(text: str, field: str) -> None:
    with pytest.raises(BadInputError) as raised:
        SelfHostedOption.of_text(text)
    assert raised.value.location.field == field


def test_usage_refuses_an_unknown_gpu_before_reading(migrated_db_url: str, tmp_path: Path) -> None:
    option = SelfHostedOption.of_text("llama-3.3-70b@no-such-gpu")
    with pytest.raises(CachecastError, match="no-such-gpu"):
        report_of(migrated_db_url, tmp_path / "never-read.jsonl", self_hosted=option)


def test_estimate_prices_a_session_from_its_observed_usage(migrated_db_url: str) -> None:
    path = shared_data(SESSION)
    sums = claude_sums([path])
    usages = list(claude_usage(path).values())
    # Every prompt under the 200K long-context threshold: one price per token kind.
    assert (
        max(
            u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"]
            for u in usages
        )
        < 200_000
    )
    request = EstimateRequest(
        log=LogInput.of_paths([path]),
        targets=["anthropic:claude-sonnet-4", "openai:gpt-5"],
        at="2025-10-01",
    )
    report = estimate(request, ContractStore(migrated_db_url))
    sonnet, other = report.targets
    assert report.client is not None and report.client.name == "claude-code"
    assert sonnet.requests == sums["requests"]
    assert sonnet.input_tokens == sums["prompt"]
    assert sonnet.cache_read_tokens == sums["read"]
    assert sonnet.cache_write_tokens_by_ttl == {
        name: tokens for name, tokens in (("1h", sums["w1"]), ("5m", sums["w5"])) if tokens
    }
    assert sonnet.hit_rate == pytest.approx(sums["read"] / sums["prompt"])
    assert sonnet.hit_rate > 0.9  # the recorded usage: not the flat 0% of a tokenizer guess
    # sonnet-4 on 2025-10-01: $3 input, $3.75 5m writes, $6 1h writes, $0.30 reads, $15 out.
    uncached = sums["prompt"] - sums["read"] - sums["w5"] - sums["w1"]
    expected = (
        uncached * 3
        + sums["w5"] * Decimal("3.75")
        + sums["w1"] * 6
        + sums["read"] * Decimal("0.3")
        + sums["output"] * 15
    ) / MILLION
    assert sonnet.cost.total == expected
    assert sonnet.cost_without_cache == (sums["prompt"] * 3 + sums["output"] * 15) / MILLION
    assert sonnet.reconciliation is not None
    assert sonnet.reconciliation.observed_cache_read_tokens == sums["read"]
    assert "observed" in sonnet.notes[0]
    assert sonnet.exact_tokens and not any("carried over" in n for n in sonnet.notes)
    # Another provider: the same observed split under its contract, said to be a what-if.
    assert other.cache_read_tokens == sums["read"]
    assert any("carried over" in note for note in other.notes)


def test_compare_on_a_shared_session_bills_the_hosted_side_from_observed_usage(
    migrated_db_url: str,
) -> None:
    path = shared_data(SESSION)
    sums = claude_sums([path])
    report = compare(
        CompareRequest(
            log=LogInput.of_paths([path]),
            model=ModelReference(preset="llama-3.3-70b"),
            gpu="h200",
            gpus=4,
            targets=["anthropic:claude-sonnet-4"],
            at="2025-10-01",
        ),
        ContractStore(migrated_db_url),
    )
    assert (report.log.requests, report.log.input_tokens) == (sums["requests"], sums["prompt"])
    (hosted,) = report.hosted
    assert hosted.hit_rate == pytest.approx(sums["read"] / sums["prompt"])
    # The self-hosted cache starts cold (docs/economics.md): the session's first request read
    # a prefix cached before the log began, which it cannot. Otherwise it keeps what the
    # hosted one read (and what it let expire), less the part block of each prefix (< 16).
    warm = next(iter(claude_usage(path).values()))["cache_read_input_tokens"]
    assert warm > 0
    assert report.self_hosted.hit_tokens >= sums["read"] - warm - 16 * sums["requests"]


def cli(*args: str, database: str) -> object:
    return CliRunner().invoke(app, ["usage", *args, "--database-url", database])


def test_cli_and_api_show_the_self_hosted_what_if(
    migrated_db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = gap_session(tmp_path)
    runner = CliRunner()
    base = ["usage", str(path), "--database-url", migrated_db_url, "--self-hosted", DEPLOYMENT]
    result = runner.invoke(app, [*base, "--json"])
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)["self_hosted_what_if"]
    assert shown["prompt_tokens"] == PROMPT_TOKENS and shown["observed_cost"] == "0.042927"
    result = runner.invoke(app, [*base, "--csv"])
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert rows[-1]["day"].startswith("what-if self-hosted llama-3.3-70b")
    assert rows[-1]["cost"] == shown["cost_full_utilization"]
    result = runner.invoke(app, [*base, "--html", str(tmp_path / "u.html")])
    assert result.exit_code == 0, result.output
    assert "what-if self-hosted llama-3.3-70b" in result.stdout
    assert "What if: self-hosted" in (tmp_path / "u.html").read_text()
    bad = runner.invoke(
        app, ["usage", str(path), "--database-url", migrated_db_url, "--self-hosted", "x"]
    )
    assert bad.exit_code == 2 and "MODEL@GPU" in bad.output


@pytest.mark.anyio
async def test_api_usage_report_accepts_self_hosted(migrated_db_url: str, tmp_path: Path) -> None:
    path = gap_session(tmp_path)
    app_ = create_app(make_settings(migrated_db_url))
    transport = httpx.ASGITransport(app=app_)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        response = await client.post(
            "/v1/usage-reports",
            json={
                "sessions": [{"name": "gap.jsonl", "content": path.read_text()}],
                "self_hosted": DEPLOYMENT,
            },
        )
        assert response.status_code == 200, response.text
        shown = response.json()["self_hosted_what_if"]
        assert shown["prompt_tokens"] == PROMPT_TOKENS
        assert shown["hit_rate"] == pytest.approx(SELF_HOSTED_HITS / PROMPT_TOKENS)
        response = await client.post(
            "/v1/usage-reports",
            files={"log": ("gap.jsonl", path.read_bytes())},
            data={"self_hosted": DEPLOYMENT},
        )
        assert response.status_code == 200, response.text
        assert response.json()["self_hosted_what_if"]["prompt_tokens"] == PROMPT_TOKENS
        # A server reads no model file of its own: presets only.
        refused = await client.post(
            "/v1/usage-reports",
            json={
                "sessions": [{"name": "gap.jsonl", "content": path.read_text()}],
                "self_hosted": "/etc/config.json@h200",
            },
        )
        assert refused.status_code in (400, 422), refused.text
        assert "preset" in refused.text


def test_no_difference_against_an_incomplete_bill(migrated_db_url: str, tmp_path: Path) -> None:
    # The second request's model has no contract: it is served self-hosted but left out of the
    # observed bill, so no difference is given (it would set 2 requests against 1).
    path = write_lines(
        tmp_path / "mixed.jsonl",
        [
            assistant("m1", "2025-09-01T10:00:00Z", five=4_000),
            assistant("m2", "2025-09-01T10:01:00Z", model="no-such-model", five=2_000),
        ],
    )
    report = report_of(migrated_db_url, path, self_hosted=SelfHostedOption.of_text(DEPLOYMENT))
    shown = report.self_hosted_what_if
    assert shown is not None and not report.complete_bill
    assert (shown.requests, shown.complete_bill) == (2, False)
    assert shown.cost_full_utilization is not None and shown.difference_full_utilization is None
    # The first request alone is billed: 3 x 3 + 4,000 x 3.75 + 10 x 15 = 15,159 -> $0.015159.
    assert shown.observed_cost == Decimal("0.015159")
