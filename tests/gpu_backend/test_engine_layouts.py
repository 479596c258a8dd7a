"""``suggest --validate-on-engine`` and ``check --target vllm-engine:URL`` against a real vLLM
server (the CPU build) serving the tiny Qwen2.5 with the real vocabulary and chat template.

On the repository's faulty example log (a timestamp on top of the system prompt, the tools
shuffled per call): the original and the suggestions are replayed in chat mode after a cache
reset; the engine's cached tokens equal the simulator's and vLLM's documented hit rule for
every request, the top suggestion's measured hit rate equals the simulated one, its warm
requests start faster than the original's cold ones, and ``check`` on the engine fails the
faulty candidate and passes the fixed one. One server for the module (shared with
test_real_vocab_server.py when both run); about a dozen replays of the 14-request log.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cachecast.cli import app
from cachecast.core import db
from cachecast.layouts.changes import candidate_changes
from cachecast.layouts.volatile import analyze
from cachecast.passes.prompt_sets import PromptSource, load_prompt_set
from cachecast.tokenizers import read_records
from cachecast.usecases.engine_replay import EngineRun
from cachecast.usecases.suggest import EngineValidation, SuggestRequest, suggest
from tests.conftest import REPO_ROOT
from tests.gpu_backend.conftest import VllmServer
from tests.gpu_backend.real_vocab import QWEN_BLOCK_SIZE, QWEN_MODEL, QWEN_NUM_BLOCKS, vllm_hit_rule

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

FAULTY = REPO_ROOT / "examples" / "faulty-agent-log.jsonl"
TOP = "split_system+pin_tool_order"


@pytest.fixture(scope="module")
def server_url(qwen_server: VllmServer) -> str:
    return qwen_server.wait_healthy()


@pytest.fixture(scope="module")
def logs() -> dict[str, list[dict[str, Any]]]:
    """The faulty log, and the log with the top suggestion's two changes applied."""
    records = list(load_prompt_set(PromptSource(path=FAULTY), "input").records)
    changes = {c.kind: c for c in candidate_changes(analyze(records), explicit_targets=[])}
    split = changes["split_system"].transform(list(records))
    return {
        "faulty": records,
        "split_system": split,
        TOP: changes["pin_tool_order"].transform(split),
    }


def expected_hits(records: list[dict[str, Any]]) -> list[int]:
    """vLLM's documented rule (no eviction: the log's 22,016 tokens fit the 47,968 the engine
    holds) over cachecast's tokens of the requests as the served model."""
    prompts = [list(r.tokens or ()) for r in read_records(records, "log", model=QWEN_MODEL)]
    return vllm_hit_rule(prompts, QWEN_BLOCK_SIZE)


def assert_exact(run: EngineRun, records: list[dict[str, Any]]) -> None:
    measured = [row.measured_cached_tokens for row in run.per_request]
    assert measured == [row.simulated_cached_tokens for row in run.per_request]
    assert measured == expected_hits(records)
    assert run.mismatched_requests == 0 and run.counters_agree
    assert run.cache_isolation == "reset" and run.cached_tokens_source == "per_request"


def test_suggestions_validated_on_the_engine_measure_as_simulated(
    server_url: str, logs: dict[str, list[dict[str, Any]]]
) -> None:
    report = suggest(
        SuggestRequest(
            source=PromptSource(path=FAULTY),
            targets=["vllm:32"],
            top=2,
            validate_on_engine=EngineValidation(url=server_url),
        ),
        None,
    )
    original = report.engine_original
    assert original is not None
    passport = original.passport
    assert (passport.engine_version, passport.model, passport.dtype) == (
        "0.32.0",
        QWEN_MODEL,
        "bfloat16",
    )
    assert (passport.block_size, passport.num_blocks) == (QWEN_BLOCK_SIZE, QWEN_NUM_BLOCKS)
    assert original.tokenized_as == QWEN_MODEL  # the served model, no --model given
    assert_exact(original, logs["faulty"])
    assert original.measured_hit_rate == 0  # the timestamp parts every prompt in block 1
    top, second = report.suggestions
    assert (top.kind, second.kind) == (TOP, "split_system")
    for suggestion in (top, second):
        engine = suggestion.engine
        assert engine is not None
        assert_exact(engine.run, logs[suggestion.kind])
        # Measured equals simulated: with the engine's geometry and with the vllm:32 target.
        (target,) = suggestion.targets
        assert engine.run.measured_hit_rate == engine.run.simulated_hit_rate
        assert engine.run.measured_hit_rate == target.hit_rate_after
        assert engine.measured_gain_pp == engine.simulated_gain_pp == suggestion.hit_rate_gain_pp
        assert not engine.flagged and engine.flag is None
    # The top suggestion: most of the log read from the cache, and the TTFT drop. Its warm
    # requests start faster than the original's cold ones (medians, same run).
    assert top.engine is not None
    run = top.engine.run
    assert run.measured_cached_tokens > run.prompt_tokens // 2
    warm = [row.ttft_s for row in run.per_request if row.measured_cached_tokens]
    cold = [row.ttft_s for row in original.per_request]
    assert len(warm) == len(cold) - 1  # only the first request of the fixed log is cold
    assert statistics.median(warm) < statistics.median(cold)
    assert run.ttft.p50_s is not None and original.ttft.p50_s is not None
    assert run.ttft.p50_s < original.ttft.p50_s
    assert top.engine.ttft_p50_change is not None and top.engine.ttft_p50_change < 0


def _check(url: str, baseline: Path, candidate: Path, *options: str) -> Any:
    return CliRunner().invoke(
        app,
        [
            "check", str(baseline), str(candidate), "--target", f"vllm-engine:{url}",
            "--max-hit-rate-drop", "2pp", "--max-ttft-increase", "25%", *options,
        ],
        catch_exceptions=False,
    )  # fmt: skip


def test_check_on_the_engine_fails_the_faulty_candidate_and_passes_the_fixed_one(
    server_url: str, logs: dict[str, list[dict[str, Any]]], tmp_path: Path
) -> None:
    fixed = tmp_path / "fixed.jsonl"
    fixed.write_text("".join(json.dumps(record) + "\n" for record in logs[TOP]))
    regression = _check(server_url, fixed, FAULTY)
    assert regression.exit_code == 1, regression.output
    # 15,488 of 22,016 tokens read (README) -> none: a 70.35pp drop, measured.
    assert "hit rate fell 70.35pp (70.35% -> 0.00%), more than 2.00pp" in regression.output
    # Every request recomputed from scratch: the median TTFT rises well over 25%.
    assert "median TTFT +" in regression.output and "exceeds +25.00%" in regression.output
    assert "(measured)" in regression.output
    database = f"sqlite:///{tmp_path / 'measurements.db'}"
    db.upgrade(database)
    improvement = _check(
        server_url, FAULTY, fixed, "--store-measurements", "--database-url", database
    )
    assert improvement.exit_code == 0, improvement.output
    assert "PASS" in improvement.output and "(+70.35pp)" in improvement.output
    # The two replays are the first rows of a fresh database, and the output names them.
    assert "stored as measurements #1 (baseline) and #2 (candidate)" in improvement.output


def test_suggest_cli_validates_stores_and_compare_reads_the_measurement(
    server_url: str, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'measurements.db'}"
    db.upgrade(url)
    command = [
        sys.executable, "-m", "cachecast", "suggest", str(FAULTY), "--target", "vllm:32",
        "--validate-on-engine", server_url, "--top", "1", "--json",
        "--store-measurements", "--database-url", url,
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    (top,) = document["suggestions"]
    assert top["kind"] == TOP
    run = top["engine"]["run"]
    assert run["measured_hit_rate"] == top["targets"][0]["hit_rate_after"]
    assert top["engine"]["flagged"] is False
    identifiers = [document["engine_original"]["measurement_id"], run["measurement_id"]]
    assert all(isinstance(identifier, int) for identifier in identifiers)
    compared = subprocess.run(
        [
            sys.executable, "-m", "cachecast", "compare", str(FAULTY), "--model", "llama-3.1-8b",
            "--gpu", "h100", "--block-size", "32", "--measurement-id", str(identifiers[1]),
            "--database-url", url, "--json",
        ],
        capture_output=True, text=True, check=False, cwd=REPO_ROOT,
    )  # fmt: skip
    assert compared.returncode == 0, compared.stderr
    facts = json.loads(compared.stdout)["measurement"]
    assert facts["passport"]["dtype"] == "bfloat16"
    assert facts["passport"]["model"] == QWEN_MODEL
    assert facts["passport"]["source"] == f"{FAULTY} with {TOP}"
    assert facts["against_roofline"]["measured_requests"] == 14
    assert any("compared on h100" in warning for warning in facts["warnings"])


def test_an_engine_that_tokenizes_differently_is_bad_input(server_url: str) -> None:
    # Tokenized as Llama 3, the log is other ids than the Qwen server computes from it.
    done = subprocess.run(
        [
            sys.executable, "-m", "cachecast", "suggest", str(FAULTY), "--target", "vllm:32",
            "--validate-on-engine", server_url, "--model", "llama-3-8b-instruct", "--top", "1",
        ],
        capture_output=True, text=True, check=False, cwd=REPO_ROOT,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    (line,) = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    # The first request (the warm-up sends it first) is named by its place in the log.
    assert line.startswith(f"error: {FAULTY}: record 0: messages: the engine at {server_url}")
    assert "tokenizes this request differently" in line
    assert "the first differing token is at position 0" in line
    assert "Traceback" not in done.stderr
