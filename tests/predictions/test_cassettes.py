"""``reconcile`` on the real recorded traffic in ../shared/data/recordings/vcr_cassettes.

Expected values come from the recordings themselves (the usage each response carries,
recomputed from the YAML by ``tests.logs.test_http.cassette_usage`` under each provider's
documented convention) and from the documented terms (OpenAI: 1,024-token minimum, then
128-token steps; a 5-minute in-memory lifetime), never from our output.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from cachecast.contracts import ContractStore
from cachecast.core.identity import SCOPE_KEY_ENV, scope_key
from cachecast.passes.log_input import LogInput
from cachecast.simulator.misses import CAUSES, SCOPE_DIFFERS
from cachecast.usecases.reconcile import (
    BEST_EFFORT_MISS,
    TOKENIZER_APPROXIMATION,
    TOLERANCE_TOKENS,
    ReconcileReport,
    ReconcileRequest,
    reconcile,
)
from tests.conftest import REPO_ROOT, shared_data
from tests.logs.test_http import cassette_usage
from tests.service.conftest import make_settings, open_client

FOLDER = "recordings/vcr_cassettes/openllmetry"
APPROXIMATED = [  # Anthropic's tokenizer is not public: o200k_base, calibrated
    "test_anthropic_prompt_caching_legacy.yaml",
    "test_anthropic_prompt_caching_async_legacy.yaml",
    "test_anthropic_prompt_caching_stream_legacy.yaml",
    "test_invoke_model_cache_tokens.yaml",
]
OPENAI = ["test_openai_prompt_caching.yaml", "test_openai_prompt_caching_async.yaml"]
# gpt-4o-mini under OpenAI's documented automatic caching (docs/contracts.md).
MINIMUM, STEP, IN_MEMORY_SECONDS = 1024, 128, 300


def run(paths: list[Path], store: ContractStore) -> ReconcileReport:
    return reconcile(ReconcileRequest(log=LogInput.of_paths(paths)), store)


def by_line(report: ReconcileReport) -> list[Any]:
    return sorted(report.requests, key=lambda row: (row.source, row.line))


@pytest.mark.parametrize("name", APPROXIMATED)
def test_anthropic_and_bedrock_requests_are_within_tolerance(
    name: str, store: ContractStore
) -> None:
    path = shared_data(f"{FOLDER}/{name}")
    expected = cassette_usage(path)
    report = run([path], store)
    rows = by_line(report)
    assert len(rows) == len(expected) == 2
    for row, seen in zip(rows, expected, strict=True):
        assert row.input_tokens == seen["input"]
        assert (row.observed_cache_read_tokens, row.observed_cache_write_tokens) == (
            seen["read"],
            seen["write"],
        )
        error = abs(row.predicted_cache_read_tokens - seen["read"]) + abs(
            row.predicted_cache_write_tokens - seen["write"]
        )
        # Within 8 tokens or 1% of the prompt, the tolerance for an approximated tokenizer.
        assert error <= max(TOLERANCE_TOKENS, seen["input"] / 100), row
        assert row.within_tolerance and not row.exact_tokens
        assert row.classification in (None, TOKENIZER_APPROXIMATION)
    # The first request writes (its breakpoint is past the minimum once calibrated) and the
    # second reads what it wrote: the recorded pattern.
    assert rows[0].predicted_cache_write_tokens > 0 and rows[0].predicted_cache_read_tokens == 0
    assert rows[1].predicted_cache_read_tokens > 0 and rows[1].predicted_cache_write_tokens == 0
    assert report.summary.within_tolerance == 2
    (target,) = report.targets
    assert target.provider == ("bedrock" if "invoke" in name else "anthropic")


def recorded_times(path: Path) -> list[float]:
    """The response Date header of every interaction (what stands for its time)."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    times = []
    for interaction in data["interactions"]:
        headers = {k.lower(): v for k, v in interaction["response"]["headers"].items()}
        times.append(parsedate_to_datetime(headers["date"][0]).timestamp())
    return times


def response_organizations(path: Path) -> list[str]:
    """The ``openai-organization`` header of each recorded response."""
    cassette = yaml.safe_load(path.read_text("utf-8"))
    return [
        interaction["response"]["headers"]["openai-organization"][0]
        for interaction in cassette["interactions"]
    ]


def documented_reads(lengths: list[int], times: list[float]) -> list[int]:
    """Reads under the documented terms from a cold cache, for a log of repeats of one
    prompt: nothing the first time; then, while the previous request is less than the
    in-memory lifetime ago, 1,024 plus whole 128-token steps."""
    reads = []
    for index, length in enumerate(lengths):
        warm = index > 0 and times[index] - times[index - 1] < IN_MEMORY_SECONDS
        reads.append(MINIMUM + (length - MINIMUM) // STEP * STEP if warm else 0)
    return reads


@pytest.mark.parametrize("name", OPENAI)
def test_openai_predictions_follow_the_terms_and_unread_repeats_are_best_effort(
    name: str, store: ContractStore
) -> None:
    path = shared_data(f"{FOLDER}/{name}")
    expected = cassette_usage(path)
    times = recorded_times(path)
    # The recording: the same prompt four times, twice a year apart, cached 0, 1024, 0, 0.
    assert [seen["read"] for seen in expected] == [0, 1024, 0, 0]
    predicted = documented_reads([seen["input"] for seen in expected], times)
    assert predicted == [0, 1024, 0, 1024]
    report = run([path], store)
    rows = by_line(report)
    assert [row.predicted_cache_read_tokens for row in rows] == predicted
    assert [row.input_tokens for row in rows] == [seen["input"] for seen in expected]
    assert all(row.exact_tokens for row in rows)  # o200k_base is OpenAI's own tokenizer
    assert [row.exact_match for row in rows] == [True, True, True, False]
    # The fourth request repeats the third seven seconds later, yet OpenAI read nothing.
    assert rows[3].classification == BEST_EFFORT_MISS
    # The third came a year after the second, answered for another organization (the first
    # two responses name a personal organization, the last two "traceloop" in their
    # openai-organization header): the prefix the second cached was another organization's
    # (docs/log-formats.md, "Request time and shared caches"), whatever its age.
    assert [response_organizations(path)[i] for i in (1, 2)] == [
        "user-xzaeeoqlanzncr8pomspsknu",
        "traceloop",
    ]
    elsewhere = [span for span in rows[2].miss_causes if span.cause == SCOPE_DIFFERS]
    # the same prompt again: all of it was sent before, under the other organization
    assert [span.tokens for span in elsewhere] == [expected[2]["input"]]
    assert times[2] - times[1] > 300 * 24 * 3600
    summary = report.summary
    assert (summary.requests, summary.exact_matches, summary.within_tolerance) == (4, 3, 3)
    assert summary.classes == {BEST_EFFORT_MISS: 1}
    # mean |error| = 1,024 / 4 tokens; bias +256 (we predict the one read OpenAI skipped)
    assert summary.mean_abs_error_tokens == "256" and summary.read_bias_tokens == "256"


def test_every_request_of_every_cassette_has_its_causes(store: ContractStore) -> None:
    paths = [shared_data(f"{FOLDER}/{name}") for name in APPROXIMATED + OPENAI]
    report = run(paths, store)
    assert report.summary.requests == 16
    assert report.summary.within_tolerance == 14
    assert report.summary.classes[BEST_EFFORT_MISS] == 2
    unexplained = [row for row in report.requests if row.classification == "unexplained"]
    assert unexplained == []
    for row in report.requests:
        # The causes of a request add up to the tokens it did not read from cache.
        not_read = row.input_tokens - row.predicted_cache_read_tokens
        assert sum(span.tokens for span in row.miss_causes) == not_read, row
        assert all(span.cause in CAUSES for span in row.miss_causes)
    for target in report.targets:
        lost = sum(cause.tokens for cause in target.miss_causes)
        assert lost == target.input_tokens - target.cache_read_tokens


def test_cli_and_api_give_the_library_report(store_url: str, tmp_path: Path) -> None:
    path = shared_data(f"{FOLDER}/test_openai_prompt_caching.yaml")
    library = run([path], ContractStore(store_url)).model_dump(mode="json")
    # The cassette's responses name their organizations: scopes are their keyed hashes
    # (core.identity), which a miss cause names, so the CLI hashes with this run's key.
    completed = subprocess.run(
        [sys.executable, "-m", "cachecast", "reconcile", str(path), "--json"],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env={
            "PYTHONPATH": str(REPO_ROOT),
            "CACHECAST_DATABASE_URL": store_url,
            "PATH": "",
            SCOPE_KEY_ENV: scope_key(),
        },
        timeout=300,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout) == library

    import anyio

    async def upload() -> httpx.Response:
        async for client in open_client(make_settings(store_url)):
            return await client.post(
                "/v1/reconciliations",
                files=[("log", ("test_openai_prompt_caching.yaml", path.read_bytes()))],
            )
        raise AssertionError("no client")

    response = anyio.run(upload)
    assert response.status_code == 200, response.text
    answered = response.json()
    assert answered["summary"] == library["summary"]
    assert answered["sources"] == ["test_openai_prompt_caching.yaml"]
    assert [r["predicted_cache_read_tokens"] for r in answered["requests"]] == [
        r["predicted_cache_read_tokens"] for r in library["requests"]
    ]


def test_contracts_of_the_logged_models_are_resolved(store: ContractStore) -> None:
    """The served models are the logged ones, aliases resolved, on the log's own day."""
    paths = [shared_data(f"{FOLDER}/{name}") for name in APPROXIMATED + OPENAI]
    report = run(paths, store)
    names = {target.name: target for target in report.targets}
    assert set(names) == {
        "anthropic:claude-3-5-sonnet",
        "bedrock:anthropic.claude-3-5-haiku-20241022-v1:0",
        "openai:gpt-4o-mini",
    }
    sonnet = names["anthropic:claude-3-5-sonnet"]
    assert sonnet.logged_models == ["claude-3-5-sonnet-20240620"]
    # Claude 3.5 Sonnet was retired before today; the log's day (March 2025) has it.
    assert sonnet.contract.effective_from <= dt.date(2025, 3, 15)
    assert sonnet.contract.effective_to is not None
