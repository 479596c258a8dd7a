"""Uploads of the stub-server dialects (WireMock, Hoverfly, talkback): ``POST /v1/estimates``
reads them as the CLI does, and a WireMock mapping whose body is in a ``__files`` folder the
upload cannot carry is a 422 naming the mapping and its field.

Expected request counts are the model calls written into each upload (builders of
tests/logs/test_stub_dialects.py); the bill is the CLI's reading of the same file.
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
from tests.logs.test_more_dialects import chat_body, chat_response
from tests.logs.test_stub_dialects import TAPE, hoverfly_pair, mapping, simulation
from tests.service.test_api import assert_problem

pytestmark = pytest.mark.anyio
AT = "2025-12-02"
TARGETS = "openai:gpt-4o"

UPLOADS = {
    # name: (file name, content, model calls written in it)
    "wiremock": (
        "stubs.json",
        json.dumps(
            {
                "mappings": [
                    mapping(chat_body(t), {"body": json.dumps(chat_response(1_200, 1_024, 5))})
                    for t in "ab"
                ]
            }
        ),
        2,
    ),
    "hoverfly": (
        "simulation.json",
        json.dumps(
            simulation([hoverfly_pair(chat_body("a"), json.dumps(chat_response(900, 512, 4)))])
        ),
        1,
    ),
    "talkback": ("unnamed-1.json5", TAPE, 1),
}


@pytest.mark.parametrize("kind", sorted(UPLOADS))
async def test_stub_uploads_answer_as_the_file_does(
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


async def test_an_uploaded_mapping_cannot_name_body_files(client: httpx.AsyncClient) -> None:
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
