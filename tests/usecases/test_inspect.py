"""``cachecast inspect`` and ``POST /v1/inspections`` give ``inspect``'s report, on real
recordings written by other projects (../shared/data/recordings)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from cachecast.cli import app
from cachecast.passes.log_input import LogFile, LogInput
from cachecast.service.app import create_app
from cachecast.usecases.inspect import InspectRequest, inspect
from tests.conftest import shared_data
from tests.service.conftest import make_settings

SHORT = "recordings/claude_code/spotter/short.jsonl"
BATCH = "recordings/openai_batch/langbatch_chat_completion_batch.jsonl"
BATCH_RESULTS = "recordings/openai_batch/langbatch_chat_completion_batch_results.jsonl"
CASSETTE = "recordings/vcr_cassettes/openllmetry/test_anthropic_prompt_caching_legacy.yaml"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def cli_json(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(app, ["inspect", *args, "--json"])
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_cli_json_is_the_library_report() -> None:
    paths = [
        shared_data(SHORT),
        shared_data(CASSETTE),
        shared_data(BATCH),
        shared_data(BATCH_RESULTS),
    ]
    expected = inspect(InspectRequest(files=LogInput.of_paths(paths).files))
    assert cli_json(*map(str, paths)) == expected.model_dump(mode="json")
    short, cassette, batch = expected.files
    # From the recording itself (its PROVENANCE.md): one response, 1-hour cache, 13,835
    # tokens written and 11,515 read; the transcript lacks the system prompt.
    assert (short.format, short.requests) == ("claude-code", 1)
    assert (short.observed.cache_write_tokens, short.observed.cache_read_tokens) == (13_835, 11_515)
    assert short.prompt_complete is False
    # Two Anthropic calls: the first writes 1,163 tokens, the second reads them.
    assert (cassette.requests, cassette.observed.cache_write_tokens) == (2, 1_163)
    assert cassette.observed.cache_read_tokens == 1_163
    # The batch input and its results file are read as one log: 2 of 8 requests succeeded.
    assert batch.results_path is not None and batch.requests == 2


@pytest.mark.anyio
async def test_the_api_answers_the_same_report(migrated_db_url: str) -> None:
    paths = [shared_data(SHORT), shared_data(CASSETTE)]
    expected = inspect(
        InspectRequest(files=[LogFile(path=path, name=path.name) for path in paths])
    ).model_dump(mode="json")
    service = create_app(make_settings(migrated_db_url))
    transport = httpx.ASGITransport(app=service)
    async with httpx.AsyncClient(transport=transport, base_url="http://cachecast") as client:
        files = [("log", (path.name, path.read_bytes(), "text/plain")) for path in paths]
        response = await client.post("/v1/inspections", files=files)
        assert response.status_code == 200, response.text
        assert response.json() == expected
        unknown = await client.post(
            "/v1/inspections", files=[("log", ("notes.txt", b"just some notes\n", "text/plain"))]
        )
    assert unknown.status_code == 422
    problem = unknown.json()
    assert problem["errors"][0]["field"].startswith("notes.txt")
    assert "not a log format cachecast reads" in problem["detail"]
    assert "cachecast-inspect-" not in unknown.text  # never the server's temporary path


def test_unknown_files_and_directories_exit_2(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("just some notes\n")
    for target in (notes, tmp_path, tmp_path / "missing.jsonl"):
        result = CliRunner().invoke(app, ["inspect", str(target)])
        assert result.exit_code == 2, result.output
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith(f"error: {target}")


def test_a_batch_requests_file_alone_says_what_is_missing() -> None:
    # Issue 29, point 12: the requests half of a batch carries no times (it showed
    # 1970-01-01) and no usage; inspect says so and how to give the results.
    from cachecast.usecases.inspect import inspect_file
    from tests.conftest import shared_data

    requests = shared_data("recordings/openai_batch/langbatch_chat_completion_batch.jsonl")
    alone = inspect_file(requests)
    assert alone.first_timestamp is None and alone.last_timestamp is None
    assert any("--results" in hint for hint in alone.hints)
    results = requests.with_name("langbatch_chat_completion_batch_results.jsonl")
    paired = inspect_file(requests, results=results)
    # Nothing missing now; the one hint left says how the batch is billed (2 succeeded).
    assert not any("--results" in hint for hint in paired.hints)
    assert [hint for hint in paired.hints if "on-demand prices" in hint] == [
        hint for hint in paired.hints if hint.startswith("2 request(s) read from a batch file")
    ]
    assert len(paired.hints) == 1 and paired.first_timestamp is not None
    assert paired.first_timestamp.year == 2024  # the results' "created" times (Sep 2024)
