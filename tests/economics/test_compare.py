"""``compare`` end to end on a log small enough to work out by hand, plus plots and the CLI."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import matplotlib.image
import pytest
import typer
from typer.testing import CliRunner

from cachecast.cli import economics as economics_cli
from cachecast.cli.plots import render_png, write_comparison_html
from cachecast.contracts import ContractStore
from cachecast.economics.errors import ComparisonError
from cachecast.passes.log_input import LogInput
from cachecast.usecases.compare import BreakEvenVolume, CompareReport, CompareRequest, compare
from tests.economics.conftest import deployment, shared_prefix_file, shared_prefix_records

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
W_8B = 16_060_522_496  # Llama-3.1-8B weights in bf16: 2 * 8,030,261,248
KV_8B = 131_072  # 2 * 32 * 8 * 128 * 2
H100_BW = 3_350 * 10**9


@pytest.fixture(scope="module")
def report() -> CompareReport:
    return compare(
        CompareRequest(
            **deployment(),
            log=LogInput(records=shared_prefix_records()),
            gpu_price=Decimal("2.50"),
            capacity_factors=[Fraction(1, 2), Fraction(1)],
        )
    )


def test_self_hosted_hit_rate_from_the_vllm_policy(report: CompareReport) -> None:
    # vLLM, 16-token blocks, far more blocks than needed: request 1 misses; requests 2 and 3
    # reuse the 4 shared blocks (64 tokens); their 5th block differs. 128 of 240 tokens.
    assert report.self_hosted.hit_tokens == 128
    assert report.self_hosted.hit_rate == pytest.approx(128 / 240)
    assert report.log.block_size == 16
    # A capacity curve point per factor plus the unbounded cache, all with the same hits here.
    assert [point.hit_tokens for point in report.capacity_curve] == [128, 128, 128]


def test_gpu_time_and_cost_by_hand(report: CompareReport) -> None:
    # Every prefill moves the weights + 80 tokens of KV (C read + S written, C + S = 80):
    # 16,060,522,496 + 80 * 131,072 = 16,071,008,256 B at 3.35e12 B/s = 4.797 ms, more than
    # its compute time (request 1: 1.2865e12 FLOPs / 989.4e12 = 1.30 ms): memory-bound.
    prefill_each = Fraction(W_8B + 80 * KV_8B, H100_BW)
    assert report.self_hosted.prefill_ms.max == pytest.approx(float(prefill_each * 1000))
    # Fully used, decode runs at max_num_seqs = 256 (5,020 requests of 85 tokens would fit):
    # decode context = 80 + 10/2 = 85; per token (W + 256 * 85 * 131,072) / BW / 256.
    decode_per_token = Fraction(W_8B + 256 * 85 * KV_8B, H100_BW * 256)
    busy = 3 * prefill_each + 30 * decode_per_token
    assert report.self_hosted.decode_batch_full == 256
    hours = Decimal(float(busy / 3600)).quantize(Decimal("0.000001"))
    assert str(report.self_hosted.full_utilization.gpu_hours) == str(hours)
    cost = report.self_hosted.cost
    assert cost is not None
    assert str(cost.full_utilization) == str(
        (hours * Decimal("2.50")).quantize(Decimal("0.000001"))
    )
    # At the log's rate (3 requests over 2 s) one replica is enough and is paid for the 2 s:
    # 2 / 3600 h = 0.000556 GPU-h (rounded), * $2.50 = $0.001390.
    at_rate = report.self_hosted.at_arrival_rate
    assert at_rate is not None
    assert at_rate.replicas == 1
    assert str(at_rate.gpu_hours) == "0.000556"
    assert str(cost.at_arrival_rate) == "0.001390"
    # Little's law batch: 1.5 req/s * 10 tokens * ~4.8 ms per step = 0.07 -> at least 1.
    assert at_rate.decode_batch == 1.0
    # Busy share: the fully used GPU time over the 2 s the replica is kept.
    assert at_rate.utilization == pytest.approx(float(busy / 2))
    # Inter-token latency at batch 1: (W + 85 * 131,072) / BW = 4.797 ms.
    single_step = Fraction(W_8B + 85 * KV_8B, H100_BW)
    assert at_rate.inter_token_latency_ms == pytest.approx(float(single_step * 1000))
    # The plot's volume projection: whole replicas paid by the month (730 h * $2.50 =
    # $1,825 each). A log busies one for 3 * 4.797 ms + 30 * 0.02205 ms = 15.05 ms, so one
    # carries 2,628,000 s / 15.05 ms = 1.75e8 logs a month: 10 logs need one replica, 2e8
    # need two.
    assert report.monthly_self_hosted_cost(10) == Decimal(1825)
    assert report.monthly_self_hosted_cost(2e8) == Decimal(3650)


def test_model_that_does_not_fit_is_a_clear_error() -> None:
    with pytest.raises(ComparisonError, match="does not fit"):
        compare(
            CompareRequest(
                **deployment("llama-3.3-70b"), log=LogInput(records=shared_prefix_records())
            )
        )


def test_hosted_targets_and_break_even(migrated_db_url: str, tmp_path: Path) -> None:
    store = ContractStore(migrated_db_url)
    result = compare(
        CompareRequest(
            **deployment(),
            log=LogInput.of_paths([shared_prefix_file(tmp_path)]),
            gpu_price=Decimal("2.50"),
            targets=["deepseek:deepseek-chat"],
            capacity_factors=[Fraction(1)],
        ),
        store,
    )
    (line,) = result.hosted
    (versus,) = result.versus
    assert line.contract.source  # every hosted figure names its dated contract
    assert versus.contract_version.startswith("deepseek/deepseek-chat@")
    # One replica costs 1 GPU * 730 h * $2.50 = $1,825 a month; hosted costs h per log, so
    # the first crossing is 1,825 / h logs a month (3 requests each) when one replica can
    # carry that many logs, which it can: a log takes ~15 ms of GPU time.
    even = versus.break_even_monthly
    assert isinstance(even, BreakEvenVolume)
    logs = Decimal(1825) / line.cost.total
    assert str(even.replica_cost_per_month) == "1825.000000"
    assert even.logs == pytest.approx(float(logs))
    assert even.requests == pytest.approx(float(logs) * 3)
    assert versus.self_hosted_full_utilization is not None
    cheaper = "self-hosted" if versus.self_hosted_full_utilization < line.cost.total else "hosted"
    assert versus.cheaper_full_utilization == cheaper
    data = json.loads(json.dumps(result.model_dump(mode="json")))  # JSON throughout
    assert data["hosted"][0]["provider"] == "deepseek"


def test_plot_is_a_readable_png(report: CompareReport, tmp_path: Path) -> None:
    png = render_png(report)
    assert png[:8] == PNG_SIGNATURE
    path = tmp_path / "chart.png"
    path.write_bytes(png)
    image = matplotlib.image.imread(path)
    # 13 x 5 inches at 100 dpi.
    assert image.shape[:2] == (500, 1300)
    # Not a blank canvas: many distinct colours were drawn.
    assert len({tuple(pixel) for pixel in image.reshape(-1, image.shape[2])[::97]}) > 10
    page = tmp_path / "report.html"
    write_comparison_html(report, page, economics_cli.comparison_rows(report))
    text = page.read_text()
    assert "data:image/png;base64,iVBORw0KGgo" in text  # base64 of the PNG signature
    assert "self-hosted, fully used" in text
    # One look for every cachecast page (issue 29, point 11): the estimate's and reconcile's
    # style sheet, verbatim.
    from cachecast.cli import html_report

    style = re.search(r"<style>(.*?)</style>", text, flags=re.S)
    assert style is not None and style.group(1) == html_report._STYLE


def test_capacity_cli_json(economics_app: typer.Typer) -> None:
    result = CliRunner().invoke(
        economics_app,
        [
            "capacity",
            "--model",
            "llama-3.3-70b",
            "--gpu",
            "h100",
            "--gpus",
            "4",
            "--context",
            "8192",
            "--batch",
            "8",
            "--cached",
            "4096",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["kv_bytes_per_token"] == 327_680
    assert data["weight_bytes"] == 141_107_412_992  # 2 * 70,553,706,496
    # 4 * 72e9 = 288e9 usable; - 141,107,412,992 = 146,892,587,008 of KV; blocks of
    # 16 * 327,680 = 5,242,880 B -> 28,017 blocks (28,017 * 5,242,880 = 146,889,768,960).
    assert data["num_blocks"] == 28_017
    assert data["kv_capacity_tokens"] == 28_017 * 16
    # 146,892,587,008 / (8,192 * 327,680 = 2,684,354,560) = 54.7 -> 54.
    assert data["max_concurrent_requests"] == 54
    # B* = W / (N * b_kv) = 141,107,412,992 / 2,684,354,560 = 52.566...
    assert data["b_star"] == pytest.approx(141_107_412_992 / 2_684_354_560)
    # Q(8, 8192) = 8 * 4 * 3.35e12 / (W + 8 * 2,684,354,560).
    assert data["decode_ceiling_tokens_per_s"] == pytest.approx(
        8 * 4 * 3.35e12 / (141_107_412_992 + 8 * 2_684_354_560)
    )
    # Prefill 4,096 new after 4,096 cached: 2*P*S + 2*L*H_q*d_h*((8192*8193) - (4096*4097))
    # = 2 * 70,553,706,496 * 4,096 + 2*80*64*128*(67,117,056 - 16,781,312) FLOPs at 4 x 989.4e12.
    flops = 2 * 70_553_706_496 * 4096 + 2 * 80 * 64 * 128 * (8192 * 8193 - 4096 * 4097)
    assert data["prefill_ms"] == pytest.approx(flops / (4 * 989.4e12) * 1000)
    for key in ("inputs", "formulas"):
        assert key in data


def test_capacity_cli_model_that_does_not_fit_exits_2(economics_app: typer.Typer) -> None:
    result = CliRunner().invoke(
        economics_app, ["capacity", "--model", "llama-3.3-70b", "--gpu", "h100", "--json"]
    )
    # The report is printed (it says by how much), then the failure: bad input, exit 2.
    assert result.exit_code == 2
    data = json.loads(result.stdout)
    assert data["fits"] is False and data["kv_capacity_tokens"] == 0
    assert "does not fit" in data["error"]
    assert result.stderr.startswith("error: llama-3.3-70b does not fit")
    assert len(result.stderr.strip().splitlines()) == 1


def test_capacity_cli_rejects_unknown_names(economics_app: typer.Typer) -> None:
    result = CliRunner().invoke(
        economics_app, ["capacity", "--model", "llama-3.1-8b", "--gpu", "tpu"]
    )
    assert result.exit_code == 2
    assert "unknown accelerator" in result.output


def test_compare_cli_on_a_text_log(economics_app: typer.Typer, tmp_path: Path) -> None:
    system = "You are a careful assistant. " * 40
    lines = [
        {
            "timestamp": f"2026-11-02T09:00:0{index}Z",
            "scope": "org",
            "provider": "openai",
            "model": "gpt-4o",
            "request_id": f"q{index}",
            "request": {
                "model": "gpt-4o",
                "messages": [
                    {"role": "system", "content": system},
                    {"role": "user", "content": f"question number {index}"},
                ],
            },
            "output_tokens": 5,
        }
        for index in range(3)
    ]
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    chart = tmp_path / "chart.png"
    result = CliRunner().invoke(
        economics_app,
        [
            "compare",
            str(log),
            "--model",
            "llama-3.1-8b",
            "--gpu",
            "h100",
            "--json",
            "--plot",
            str(chart),
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["log"]["requests"] == 3
    assert data["gpu_price_per_hour"] is None and data["self_hosted"]["cost"] is None
    # Requests 2 and 3 share the long system prompt with request 1: some full blocks hit.
    assert data["self_hosted"]["hit_tokens"] > 0
    assert chart.read_bytes()[:8] == PNG_SIGNATURE
