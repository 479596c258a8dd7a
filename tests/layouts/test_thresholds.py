"""Every threshold and exit code, on pre-tokenized logs whose bills are worked out by hand.

Worked example (openai:gpt-4o as seeded: automatic caching in 128-token blocks, hits only from
1,024 tokens on, in 128-token steps; input $2.50/MTok, cache writes at 1x, reads at 0.5x):

baseline: r0 = 2,048 tokens A; r1 = the same 2,048 tokens + 100 new ones (2,148), 10 s later.
  r0 reads 0 and writes its 16 full blocks: 2,048 x $2.50/M        = $0.005120
  r1 reads 2,048 (16 blocks, >= 1,024): 2,048 x $1.25/M = $0.002560
     and pays 100 uncached tokens:       100 x $2.50/M  = $0.000250 -> $0.002810
  total $0.007930 for 2 requests = $3.965 per 1,000; hit rate 2,048 / 4,196 = 0.488084
candidate: r1 differs from r0 at token 1,000: 7 whole blocks (896 tokens) match, under the
  1,024 minimum, so nothing is read: all 4,196 tokens at $2.50/M = $0.010490 = $5.245 per 1,000.
  Cost change +$1.280 per 1,000 = +32.28%; hit rate change -48.81pp.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from cachecast.core.errors import ConfigurationError
from cachecast.usecases.thresholds import (
    ThresholdError,
    parse_points,
    parse_rate,
    parse_relative,
)
from tests.layouts.conftest import OPENAI, Invoke, token_log

PREFIX = list(range(1000, 3048))  # 2,048 distinct token ids
TAIL = list(range(5000, 5100))  # 100 more


@pytest.fixture
def logs(tmp_path: Path) -> tuple[Path, Path]:
    baseline = token_log(tmp_path / "baseline.jsonl", [PREFIX, PREFIX + TAIL])
    changed = [*PREFIX[:1000], 9, *PREFIX[1001:]]
    candidate = token_log(tmp_path / "candidate.jsonl", [PREFIX, changed + TAIL])
    return baseline, candidate


def _check(invoke: Invoke, tmp_path: Path, *args: str | Path) -> tuple[int, dict]:
    out = tmp_path / "report.json"
    result = invoke("check", *args, "--target", OPENAI, "--json-file", out)
    report = json.loads(out.read_text()) if out.exists() else {}
    return result.exit_code, report


def test_numbers_in_the_json_report(invoke: Invoke, tmp_path: Path, logs) -> None:
    code, report = _check(
        invoke, tmp_path, *logs, "--max-cost-increase", "100%", "--max-hit-rate-drop", "100pp"
    )
    assert code == 0 and report["passed"] is True
    target = report["targets"][0]
    assert target["target"] == OPENAI
    assert Decimal(target["baseline"]["cost"]) == Decimal("0.007930")
    assert Decimal(target["candidate"]["cost"]) == Decimal("0.010490")
    assert target["baseline"]["hit_rate"] == pytest.approx(0.488084)
    assert target["candidate"]["hit_rate"] == 0.0
    assert Decimal(target["cost_change_per_1k_requests"]) == Decimal("1.280")
    assert target["baseline"]["contract"]["source"]  # every bill names its contract
    divergence = report["divergence"]
    assert divergence["token_position"] == 1000
    assert divergence["request_id"] == "r1"
    assert divergence["compared_requests"] == 2 and divergence["differing_requests"] == 1


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        # +32.28% against the limit: over 32% fails, under 33% passes.
        (("--max-cost-increase", "32%", "--max-hit-rate-drop", "100pp"), 1),
        (("--max-cost-increase", "33%", "--max-hit-rate-drop", "100pp"), 0),
        (("--max-cost-increase", "0.33", "--max-hit-rate-drop", "100pp"), 0),
        # -48.81pp against the limit.
        (("--max-cost-increase", "100%", "--max-hit-rate-drop", "48pp"), 1),
        (("--max-cost-increase", "100%", "--max-hit-rate-drop", "49pp"), 0),
        # The candidate reads nothing: any positive floor fails, a zero floor passes.
        (
            (
                "--max-cost-increase",
                "100%",
                "--max-hit-rate-drop",
                "100pp",
                "--min-hit-rate",
                "0.01",
            ),
            1,
        ),
        (("--max-cost-increase", "100%", "--max-hit-rate-drop", "100pp", "--min-hit-rate", "0"), 0),
        # No threshold anywhere: the defaults (5%, 2pp) apply and this candidate breaks both.
        ((), 1),
    ],
)
def test_each_threshold(invoke: Invoke, tmp_path: Path, logs, args, expected) -> None:
    code, report = _check(invoke, tmp_path, *logs, *args)
    assert code == expected
    assert report["passed"] is (expected == 0)


def test_min_hit_rate_on_the_baseline_itself(invoke: Invoke, tmp_path: Path, logs) -> None:
    baseline, _ = logs
    # Same log on both sides: no change; hit rate 0.488084 against floors either side of it.
    assert _check(invoke, tmp_path, baseline, baseline, "--min-hit-rate", "48%")[0] == 0
    code, report = _check(invoke, tmp_path, baseline, baseline, "--min-hit-rate", "0.49")
    assert code == 1
    assert report["divergence"] is None
    assert "under the minimum" in report["targets"][0]["violations"][0]


def test_pyproject_thresholds_and_command_line_precedence(
    invoke: Invoke, tmp_path: Path, logs, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        '[tool.cachecast]\nmax-cost-increase = "33%"\nmax-hit-rate-drop = "49pp"\n'
        f'targets = ["{OPENAI}"]\n'
    )
    monkeypatch.chdir(project)
    out = tmp_path / "r.json"
    # Thresholds and target from the file: +32.28% <= 33%, -48.81pp <= 49pp.
    assert invoke("check", *logs, "--json-file", out).exit_code == 0
    assert json.loads(out.read_text())["thresholds"]["max_cost_increase"] == "0.33"
    # The command line wins over the file.
    assert invoke("check", *logs, "--max-cost-increase", "32%").exit_code == 1
    (project / "pyproject.toml").write_text(
        '[tool.cachecast]\nmin-hit-rate = 0.6\nmax-cost-increase = "100%"\n'
        f'max-hit-rate-drop = "100pp"\ntargets = ["{OPENAI}"]\n'
    )
    assert invoke("check", *logs).exit_code == 1  # candidate hit rate 0 < 0.6
    assert invoke("check", *logs, "--min-hit-rate", "0").exit_code == 0


def test_bad_input_exits_2(invoke: Invoke, tmp_path: Path, logs) -> None:
    baseline, candidate = logs
    cases = [
        ("check", baseline, candidate, "--target", "openai:no-such-model"),
        ("check", baseline, candidate, "--target", "not-a-target"),
        ("check", baseline, candidate, "--target", OPENAI, "--max-cost-increase", "5 percent"),
        ("check", baseline, candidate, "--target", OPENAI, "--max-hit-rate-drop", "2%"),
        ("check", baseline, candidate, "--target", OPENAI, "--min-hit-rate", "1.5"),
        ("check", baseline, tmp_path / "missing.jsonl", "--target", OPENAI),
        ("check", baseline, candidate, "--target", OPENAI, "--at", "yesterday"),
        ("check", candidate, "--target", OPENAI),  # one path and no --baseline-ref
    ]
    for args in cases:
        result = invoke(*args)
        assert result.exit_code == 2, (args, result.output)
    broken = tmp_path / "broken.jsonl"
    broken.write_text(baseline.read_text() + '{"request": {"tokens": "oops"}}\n')
    result = invoke("check", baseline, broken, "--target", OPENAI)
    assert result.exit_code == 2
    assert "broken.jsonl:3" in result.output and "tokens" in result.output  # file, line, field


def test_no_target_anywhere_exits_2(invoke: Invoke, tmp_path: Path, logs, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # no pyproject.toml above tmp_path
    result = invoke("check", *logs)
    assert result.exit_code == 2 and "no target" in result.output


def test_unmigrated_database_exits_2(sqlite_url: str, tmp_path: Path, logs) -> None:
    from typer.testing import CliRunner

    from cachecast.cli import app

    result = CliRunner().invoke(
        app,
        ["check", str(logs[0]), str(logs[1]), "--target", OPENAI],
        env={"CACHECAST_DATABASE_URL": sqlite_url},
    )
    assert result.exit_code == 2 and "cachecast db upgrade" in result.output


def test_pyproject_misspelling_is_refused(tmp_path: Path) -> None:
    from cachecast.usecases.thresholds import load_config

    path = tmp_path / "pyproject.toml"
    path.write_text('[tool.cachecast]\nmax_cost_increase = "5%"\n')
    with pytest.raises(ConfigurationError, match="dashes"):
        load_config(path)


def test_threshold_parsing() -> None:
    assert parse_relative("5%") == Decimal("0.05")
    assert parse_relative("0.05") == Decimal("0.05")
    assert parse_points("2pp") == Decimal("0.02")
    assert parse_points("2") == Decimal("0.02")
    assert parse_rate("0.6") == Decimal("0.6")
    assert parse_rate("60%") == Decimal("0.6")
    for bad in ("-1%", "five", "nan"):
        with pytest.raises(ThresholdError):
            parse_relative(bad)
    with pytest.raises(ThresholdError):
        parse_points("2%")  # a relative drop is not what the threshold means
    with pytest.raises(ThresholdError):
        parse_rate("1.2")
