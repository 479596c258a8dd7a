"""Uploads of every log format: ``POST /v1/estimates`` (and the other endpoints that read
``service.estimating.payload_from_form``) takes any format cachecast reads, compressed or
not, and answers as the CLI does for the same file."""

from __future__ import annotations

import datetime as dt
import gzip
import json

import httpx
import pytest
import yaml

from cachecast.contracts import ContractStore
from cachecast.passes.log_input import LogInput
from cachecast.usecases.estimate import EstimateRequest, estimate
from tests.conftest import shared_data
from tests.service.test_api import assert_problem

pytestmark = pytest.mark.anyio
HAR = (
    "recordings/har/"
    "mirascope_tools_openai_completions_streams-tool-calls-and-resumes-with-results.har"
)
AT = "2026-10-15"
TARGETS = "openai:gpt-4o-mini"


async def test_har_upload_plain_and_gzip_answer_as_the_file_does(
    client: httpx.AsyncClient, service_db_url: str
) -> None:
    path = shared_data(HAR)
    raw = path.read_bytes()
    answers = []
    for name, data in (("tools.har", raw), ("tools.har.gz", gzip.compress(raw))):
        response = await client.post(
            "/v1/estimates", files={"log": (name, data)}, data={"targets": TARGETS, "at": AT}
        )
        assert response.status_code == 200, response.text
        answers.append(response.json())
    plain, packed = answers
    # The HAR holds 2 billed chat completions (its PROVENANCE.md: "2 (2)").
    assert [t["requests"] for t in plain["targets"]] == [2]
    assert plain["targets"] == packed["targets"]
    # The same file through the CLI's reading: the same bill.
    request = EstimateRequest(
        log=LogInput.of_paths([path]), targets=[TARGETS], at=dt.date.fromisoformat(AT)
    )
    direct = estimate(request, ContractStore(service_db_url))
    assert plain["targets"][0]["cost"] == direct.model_dump(mode="json")["targets"][0]["cost"]


async def test_vcr_upload_with_a_bad_interaction_names_it(client: httpx.AsyncClient) -> None:
    chat = "https://api.openai.com/v1/chat/completions"
    cassette = {
        "interactions": [
            {
                "request": {"method": "POST", "uri": chat, "body": "{not json"},
                "response": {"status": {"code": 200}, "body": {"string": "{}"}},
            }
        ]
    }
    response = await client.post(
        "/v1/estimates",
        files={"log": ("c.yaml", yaml.safe_dump(cassette).encode())},
        data={"targets": TARGETS},
    )
    body = assert_problem(response, 422)
    (error,) = body["errors"]
    assert error["field"].startswith("log.interactions[0].request.body")
    assert error["line"] == 2  # the interaction's first line in the YAML


@pytest.mark.parametrize("data", [b"\x00\x01 not a log", json.dumps({"a": 1}).encode()])
async def test_unreadable_upload_is_refused(client: httpx.AsyncClient, data: bytes) -> None:
    response = await client.post(
        "/v1/estimates", files={"log": ("x.bin", data)}, data={"targets": TARGETS}
    )
    assert 400 <= response.status_code < 500, response.text
