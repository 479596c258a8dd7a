"""``check --target vllm-engine:URL`` and the engine options, where no engine is needed: the
target's form, an engine that does not answer, the TTFT threshold, the measurement database.
(A real vLLM server is exercised in tests/gpu_backend/test_engine_layouts.py.)"""

from __future__ import annotations

import json
import socket
from decimal import Decimal
from pathlib import Path

import pytest

from cachecast.core.errors import ConfigurationError
from cachecast.usecases.thresholds import DEFAULT_THRESHOLDS, load_config
from tests.layouts.conftest import REPO_ROOT, Invoke

FAULTY = REPO_ROOT / "examples" / "faulty-agent-log.jsonl"


def _closed_url() -> str:
    with socket.socket() as probe:  # bound, then released: nothing listens there afterwards
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def _error_line(output: str) -> str:
    (line,) = [line for line in output.splitlines() if line.startswith("error:")]
    return line


@pytest.mark.parametrize("target", ["vllm-engine:127.0.0.1:8000", "vllm-engine:"])
def test_an_engine_target_needs_a_url(invoke: Invoke, target: str) -> None:
    result = invoke("check", FAULTY, FAULTY, "--target", "vllm", "--target", target)
    assert result.exit_code == 2, result.output
    line = _error_line(result.output)
    assert line.startswith("error: targets[1]: ") and "vllm-engine:http://" in line


def test_an_engine_target_that_does_not_answer_exits_2_naming_it(invoke: Invoke) -> None:
    url = _closed_url()
    result = invoke("check", FAULTY, FAULTY, "--target", f"vllm-engine:{url}")
    assert result.exit_code == 2, result.output
    assert _error_line(result.output).startswith(f"error: targets[0]: {url}: GET {url}/")
    assert "Traceback" not in result.output


def test_the_ttft_threshold_is_an_option_and_a_setting(invoke: Invoke, tmp_path: Path) -> None:
    bad = invoke("check", FAULTY, FAULTY, "--target", "vllm", "--max-ttft-increase", "-5%")
    assert bad.exit_code == 2
    assert _error_line(bad.output).startswith("error: --max-ttft-increase: must not be negative")
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool.cachecast]\nmax-ttft-increase = "10%"\n')
    assert load_config(pyproject).thresholds.max_ttft_increase == Decimal("0.10")
    pyproject.write_text("[tool.cachecast]\nmax_ttft_increase = 0.1\n")
    with pytest.raises(ConfigurationError, match="with dashes"):
        load_config(pyproject)


def test_the_defaults_include_a_ttft_limit(invoke: Invoke, tmp_path: Path) -> None:
    # None set anywhere: the defaults, of which the TTFT limit applies to engine targets only.
    assert DEFAULT_THRESHOLDS.max_ttft_increase == Decimal("0.25")
    out = tmp_path / "report.json"
    result = invoke("check", FAULTY, FAULTY, "--target", "vllm:32", "--json-file", out)
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["thresholds"]["max_ttft_increase"] == "0.25"
    assert report["targets"][0]["baseline"]["engine"] is None  # simulated, not measured


def test_storing_measurements_needs_a_migrated_database(invoke: Invoke, tmp_path: Path) -> None:
    empty = f"sqlite:///{tmp_path / 'empty.db'}"
    result = invoke(
        "suggest", FAULTY, "--target", "vllm:32", "--validate-on-engine", _closed_url(),
        "--store-measurements", "--database-url", empty,
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    line = _error_line(result.output)
    assert line.startswith("error: --store-measurements: ") and "cachecast db upgrade" in line
