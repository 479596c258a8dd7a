"""Uploads of the recording dialects read since issue 26 (govcr, Ruby VCR 1.x, nock, HAR
entries as JSON lines, WireMock, Hoverfly, talkback, EasyVCR, the Azure SDK test proxy's):
``POST /v1/estimates`` reads them as the CLI does, and a hostile variant is a 4xx naming the
upload, the record's line and its field.

Expected request counts are the model calls written into each upload (builders of
tests/logs/test_more_dialects*.py); the bill is the CLI's reading of the same file.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import httpx
import pytest

from cachecast.contracts import ContractStore
from cachecast.passes.log_input import LogInput
from cachecast.usecases.estimate import EstimateRequest, estimate
from tests.logs.test_batch_bedrock_azure import HAIKU, OUTPUTS, azure_output
from tests.logs.test_heldout39_h40_heldG import entry
from tests.logs.test_more_dialects import RUBY_VCR_1, chat_body, chat_response, track
from tests.logs.test_more_dialects_web import har_entry, nock_definition
from tests.logs.test_stub_dialects import TAPE, hoverfly_pair, mapping, simulation
from tests.logs.test_stub_dialects_more import easyvcr_csharp
from tests.service.test_api import assert_problem

pytestmark = pytest.mark.anyio
AT = "2025-12-02"
TARGETS = "openai:gpt-4o"
URL = "https://api.openai.com/v1/chat/completions"

GOVCR = json.dumps(
    {"Tracks": [track(chat_body(t), chat_response(1_200, 1_024, 5)) for t in "ab"]}, indent=2
)
UPLOADS = {
    # name: (file name, content, model calls written in it)
    "govcr": ("chat.cassette", GOVCR, 2),
    "ruby-vcr-1": ("old.yml", RUBY_VCR_1, 2),  # an Anthropic and an OpenAI call
    "nock": ("nock.json", json.dumps([nock_definition(chat_response(900, 512, 4))]), 1),
    "har-lines": ("e.jsonl", "".join(json.dumps(har_entry(i, 100, 1)) + "\n" for i in (1, 2)), 2),
    "wiremock": (
        "stubs.json",
        json.dumps(
            {"mappings": [mapping(chat_body("a"), {"jsonBody": chat_response(1_200, 1_024, 5)})]}
        ),
        1,
    ),
    "hoverfly": (
        "simulation.json",
        json.dumps(simulation([hoverfly_pair(chat_body("a"), json.dumps(chat_response(9, 0, 4)))])),
        1,
    ),
    "talkback": ("unnamed-1.json5", TAPE, 1),
    "azure-batch-output": (
        "batch_output.jsonl",
        "".join(json.dumps(azure_output(f"task-{i}", 1_500, 1_024, 9)) + "\n" for i in (0, 1)),
        2,
    ),
    "easyvcr": (
        "chat.json",
        json.dumps([easyvcr_csharp(chat_body("a"), chat_response(8, 0, 2))]),
        1,
    ),
    "test-proxy": (
        "TwoTurnChat.json",
        json.dumps(
            {
                "Entries": [
                    entry("POST", URL, chat_body(t), chat_response(1_200, 1_024, 5)) for t in "ab"
                ],
                "Variables": {},
            }
        ),
        2,
    ),
}


@pytest.mark.parametrize("kind", sorted(UPLOADS))
async def test_dialect_uploads_answer_as_the_file_does(
    client: httpx.AsyncClient, service_db_url: str, tmp_path: Path, kind: str
) -> None:
    name, text, calls = UPLOADS[kind]
    response = await client.post(
        "/v1/estimates",
        files={"log": (name, text.encode())},
        data={"targets": TARGETS, "at": AT},
    )
    assert response.status_code == 200, response.text
    answer = response.json()
    assert [target["requests"] for target in answer["targets"]] == [calls]
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    request = EstimateRequest(
        log=LogInput.of_paths([path]), targets=[TARGETS], at=dt.date.fromisoformat(AT)
    )
    direct = estimate(request, ContractStore(service_db_url)).model_dump(mode="json")
    assert answer["targets"][0]["cost"] == direct["targets"][0]["cost"]


async def test_a_bedrock_batch_output_upload_reads_with_its_model(
    client: httpx.AsyncClient, service_db_url: str, tmp_path: Path
) -> None:
    # Bedrock batch records name no model (it is the job's): the form's model names it; the
    # failed record (OUTPUTS[2]) is not billed, the other two are the calls.
    text = "".join(json.dumps(line) + "\n" for line in OUTPUTS)
    upload = {"log": ("questions.jsonl.out", text.encode())}
    response = await client.post(
        "/v1/estimates", files=upload, data={"targets": TARGETS, "at": AT, "model": HAIKU}
    )
    assert response.status_code == 200, response.text
    answer = response.json()
    assert [target["requests"] for target in answer["targets"]] == [2]
    path = tmp_path / "questions.jsonl.out"
    path.write_text(text, encoding="utf-8")
    request = EstimateRequest(
        log=LogInput.of_paths([path], default_model=HAIKU),
        targets=[TARGETS],
        at=dt.date.fromisoformat(AT),
    )
    direct = estimate(request, ContractStore(service_db_url)).model_dump(mode="json")
    assert answer["targets"][0]["cost"] == direct["targets"][0]["cost"]


async def test_a_hostile_govcr_upload_names_its_track_and_field(
    client: httpx.AsyncClient,
) -> None:
    bad = track(chat_body("a"), chat_response(1, 0, 1))
    bad["Response"]["StatusCode"] = "two hundred"
    response = await client.post(
        "/v1/estimates",
        files={"log": ("bad.cassette", json.dumps({"Tracks": [bad]}).encode())},
        data={"targets": TARGETS},
    )
    body = assert_problem(response, 422)
    (error,) = body["errors"]
    assert error["field"].endswith("Tracks[0].Response.StatusCode")
    assert error["line"] == 1  # the track's position


async def test_an_uploaded_wiremock_mapping_cannot_name_body_files(
    client: httpx.AsyncClient,
) -> None:
    stub = mapping(chat_body("a"), {"bodyFileName": "../../etc/passwd"})
    stub2 = mapping(chat_body("b"), {"bodyFileName": "v1_chat-1.json"})
    response = await client.post(
        "/v1/estimates",
        files={"log": ("stubs.json", json.dumps({"mappings": [stub, stub2]}).encode())},
        data={"targets": TARGETS},
    )
    body = assert_problem(response, 422)
    # the upload is compact JSON, one line: both mappings are on line 1, told apart by path
    assert [(e["line"], e["field"]) for e in body["errors"]] == [
        (1, "log.mappings[0].response.bodyFileName"),
        (1, "log.mappings[1].response.bodyFileName"),
    ]
    assert "leads out of the __files folder" in body["errors"][0]["message"]
    assert "an upload carries no body files" in body["errors"][1]["message"]
