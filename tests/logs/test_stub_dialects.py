"""Hand-built recordings of the stub-server dialects (docs/log-formats.md): WireMock stub
mappings (a ``{"mappings": [...]}`` document, or one mapping per file with its response body
in ``__files/``), Hoverfly simulations and talkback tapes; each picked by detection, with
totals from the usage fields written here, and bad fields refused naming file, line and field.

Expected totals are the usage fields written into each recording, by the provider's rule
(docs/log-formats.md, "Usage conventions"): OpenAI's ``prompt_tokens`` is the whole input
with ``cached_tokens`` read from the cache; Anthropic's input is ``input_tokens`` +
``cache_creation_input_tokens`` + ``cache_read_input_tokens``.
"""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from cachecast.core.errors import LimitExceededError
from cachecast.core.limits import Limits, limits_in_force
from cachecast.logs.errors import LogFileError
from cachecast.logs.formats import detect_format
from tests.logs.helpers import read, totals
from tests.logs.test_more_dialects import (
    ANTHROPIC_REQUEST,
    DATE,
    anthropic_response,
    b64,
    chat_body,
    chat_response,
    write_json,
)
from tests.logs.test_more_dialects_web import ANTHROPIC_STREAM

# --- WireMock ------------------------------------------------------------------------------


def mapping(request_body: Any, response: dict[str, Any], **request: Any) -> dict[str, Any]:
    """A mapping as WireMock's recorder writes it: the body as equalToJson text."""
    return {
        "id": "6b3c1a70-0000-0000-0000-000000000001",
        "request": {
            "url": "/v1/chat/completions",
            "method": "POST",
            "bodyPatterns": [
                {
                    "equalToJson": json.dumps(request_body),
                    "ignoreArrayOrder": True,
                    "ignoreExtraElements": True,
                }
            ],
            **request,
        },
        "response": {
            "status": 200,
            "headers": {"Content-Type": "application/json", "Date": DATE},
            **response,
        },
        "uuid": "6b3c1a70-0000-0000-0000-000000000001",
        "persistent": True,
    }


def test_wiremock_mappings_document(tmp_path: Path) -> None:
    anthropic = mapping(
        {**ANTHROPIC_REQUEST, "stream": True},
        {"body": ANTHROPIC_STREAM, "headers": {"Content-Type": "text/event-stream"}},
        url="/v1/messages",
    )
    document = {
        "mappings": [
            mapping(chat_body("a"), {"body": json.dumps(chat_response(1_000, 0, 4))}),
            # a body pattern holding the JSON value itself, a jsonBody response
            {
                **mapping({}, {"jsonBody": chat_response(700, 512, 6)}),
                "request": {
                    "urlPath": "/v1/chat/completions",
                    "method": "POST",
                    "bodyPatterns": [{"equalToJson": chat_body("b")}],
                },
            },
            # a base64 response body (the recorder's for bytes it cannot keep as text)
            mapping(chat_body("c"), {"base64Body": b64(chat_response(300, 0, 2))}),
            anthropic,
            {"request": {"url": "/v1/models", "method": "GET"}, "response": {"status": 200}},
            mapping(chat_body("d"), {"status": 429, "body": "{}"}),
        ]
    }
    result = read(write_json(tmp_path / "stubs.json", document))
    assert (result.format, result.errors) == ("wiremock", [])
    # OpenAI: input 1,000 + 700 + 300 = 2,000, read 512, output 4 + 6 + 2 = 12; Anthropic
    # stream: input 3 + 0 + 1,024 = 1,027 with 1,024 read, output 15 (message_delta's
    # cumulative count). Input 3,027, read 1,536, output 27.
    assert totals(result.requests) == {"input": 3_027, "read": 1_536, "write": 0, "output": 27}
    assert result.skipped == {
        "recorded call that is not a model endpoint": 1,
        "HTTP 429 response (not billed)": 1,
    }
    assert [r.line for r in result.requests] == [1, 2, 3, 4]


def test_wiremock_recorder_folder_with_body_files(tmp_path: Path) -> None:
    """The recorder's layout: root/mappings/<name>.json, the larger bodies in root/__files."""
    (tmp_path / "mappings").mkdir()
    (tmp_path / "__files").mkdir()
    (tmp_path / "__files" / "v1_messages-1.json").write_text(
        json.dumps(anthropic_response(10, 2_048, 0, 30)), encoding="utf-8"
    )
    one = mapping(ANTHROPIC_REQUEST, {"bodyFileName": "v1_messages-1.json"}, url="/v1/messages")
    path = write_json(tmp_path / "mappings" / "v1_messages-1.json", one)
    result = read(path)
    assert (result.format, result.errors) == ("wiremock", [])
    # input 10 + 2,048 written + 0 read = 2,058; output 30
    assert totals(result.requests) == {"input": 2_058, "read": 0, "write": 2_048, "output": 30}
    assert result.requests[0].timestamp is not None  # the Date header


def net_mapping(request_body: Any, response: dict[str, Any]) -> dict[str, Any]:
    """A mapping as WireMock.Net's recorder writes it (its own model, capitalised)."""
    return {
        "Guid": "0f9a6b52-0000-0000-0000-000000000001",
        "Request": {
            "Path": {"Matchers": [{"Name": "ExactMatcher", "Pattern": "/v1/chat/completions"}]},
            "Methods": ["POST"],
            "Body": {"Matcher": {"Name": "JsonMatcher", "Pattern": request_body}},
        },
        "Response": {"StatusCode": 200, "Headers": {"Date": DATE}, **response},
    }


def test_wiremock_net_mappings(tmp_path: Path) -> None:
    mappings = [
        net_mapping(chat_body("a"), {"BodyAsJson": chat_response(1_300, 1_280, 2)}),
        net_mapping(chat_body("b"), {"Body": json.dumps(chat_response(400, 0, 1))}),
        net_mapping(chat_body("c"), {"BodyAsBytes": b64(chat_response(50, 0, 1))}),
        net_mapping(chat_body("d"), {"BodyAsFile": "C:/stubs/answer.json"}),
    ]
    path = write_json(tmp_path / "stubs.json", mappings)
    result = read(path)
    assert result.format == "wiremock"
    # input 1,300 + 400 + 50 = 1,750, read 1,280, output 2 + 1 + 1 = 4
    assert totals(result.requests) == {"input": 1_750, "read": 1_280, "write": 0, "output": 4}
    assert [(e.line, e.field) for e in result.errors] == [(4, "[3].Response.BodyAsFile")]
    one = write_json(tmp_path / "one.json", mappings[0])
    assert totals(read(one).requests) == {"input": 1_300, "read": 1_280, "write": 0, "output": 2}


@pytest.mark.parametrize(
    ("response", "field", "reason"),
    [
        ({"bodyFileName": "../secret.json"}, "mappings[0].response.bodyFileName", "leads out"),
        ({"bodyFileName": "absent.json"}, "mappings[0].response.bodyFileName", "is not in"),
        ({"base64Body": "%%%"}, "mappings[0].response.base64Body", "not base64"),
        ({"status": "200"}, "mappings[0].response.status", "expected an HTTP status"),
    ],
)
def test_wiremock_bad_fields_are_named(
    tmp_path: Path, response: dict[str, Any], field: str, reason: str
) -> None:
    (tmp_path / "secret.json").write_text(json.dumps(chat_response(1, 0, 1)), encoding="utf-8")
    (tmp_path / "__files").mkdir()
    path = write_json(tmp_path / "stubs.json", {"mappings": [mapping(chat_body("a"), response)]})
    result = read(path)
    assert [(e.file, e.line, e.field) for e in result.errors] == [(str(path), 1, field)]
    assert reason in result.errors[0].reason


def test_wiremock_body_files_are_bounded(tmp_path: Path) -> None:
    (tmp_path / "__files").mkdir()
    (tmp_path / "__files" / "big.json").write_text(" " * 3_000, encoding="utf-8")
    stubs = [mapping(chat_body("a"), {"bodyFileName": "big.json"}) for _ in range(3)]
    path = write_json(tmp_path / "stubs.json", {"mappings": stubs})
    # each file is 3,000 bytes; the three together (9,000) pass the 8,000 bytes allowed
    with limits_in_force(Limits(max_document_bytes=8_000)), pytest.raises(LimitExceededError) as e:
        read(path)
    assert (e.value.location.line, e.value.location.field) == (
        3,
        "mappings[2].response.bodyFileName",
    )


def test_wiremock_detection_needs_wiremock_keys(tmp_path: Path) -> None:
    """A file of one mapping on one line is WireMock by its keys (bodyPatterns, uuid...);
    JSON lines of other {request: {method, url}, response: {status}} records are not."""
    one = tmp_path / "mapping.json"
    one.write_text(json.dumps(mapping(chat_body("a"), {"body": "{}"})), encoding="utf-8")
    assert detect_format(one)[0].name == "wiremock"
    proxy = tmp_path / "proxy.jsonl"
    line = {
        "request": {"method": "POST", "url": "/v1/chat/completions", "body": chat_body("a")},
        "response": {"status": 200, "body": chat_response(10, 0, 1)},
    }
    proxy.write_text(json.dumps(line) + "\n", encoding="utf-8")
    assert detect_format(proxy)[0].name != "wiremock"


# --- Hoverfly ------------------------------------------------------------------------------


def exact(value: str, matcher: str = "exact") -> list[dict[str, str]]:
    return [{"matcher": matcher, "value": value}]


def hoverfly_pair(request_body: Any, response_body: str, **response: Any) -> dict[str, Any]:
    """A pair as Hoverfly's capture writes it in schema v5 (lists of matchers)."""
    return {
        "request": {
            "path": exact("/v1/chat/completions"),
            "method": exact("POST"),
            "destination": exact("api.openai.com"),
            "scheme": exact("https"),
            "body": exact(json.dumps(request_body), "json"),
            "headers": {"Content-Type": exact("application/json")},
            "query": {},
        },
        "response": {
            "status": 200,
            "body": response_body,
            "encodedBody": False,
            "headers": {"Content-Type": ["application/json"], "Date": [DATE]},
            "templated": False,
            **response,
        },
    }


def simulation(pairs: list[Any], version: str = "v5.2") -> dict[str, Any]:
    return {
        "data": {"pairs": pairs, "globalActions": {"delays": []}},
        "meta": {"schemaVersion": version, "hoverflyVersion": "v1.10.0"},
    }


def test_hoverfly_simulation_v5(tmp_path: Path) -> None:
    packed = gzip.compress(json.dumps(chat_response(700, 512, 6)).encode())
    anthropic = hoverfly_pair({**ANTHROPIC_REQUEST, "stream": True}, ANTHROPIC_STREAM)
    anthropic["request"]["destination"] = exact("api.anthropic.com")
    anthropic["request"]["path"] = exact("/v1/messages")
    anthropic["response"]["headers"] = {"Content-Type": ["text/event-stream"]}
    models = hoverfly_pair("", "{}")
    models["request"] |= {"method": exact("GET"), "path": exact("/v1/models"), "body": []}
    pairs = [
        hoverfly_pair(chat_body("a"), json.dumps(chat_response(1_000, 0, 4))),
        # a gzip body Hoverfly could not keep as text: base64, encodedBody true
        hoverfly_pair(
            chat_body("b"),
            base64.b64encode(packed).decode(),
            encodedBody=True,
            headers={"Content-Encoding": ["gzip"], "Date": [DATE]},
        ),
        anthropic,
        models,
    ]
    result = read(write_json(tmp_path / "simulation.json", simulation(pairs)))
    assert (result.format, result.errors) == ("hoverfly", [])
    # OpenAI: input 1,000 + 700 = 1,700, read 512, output 4 + 6 = 10; Anthropic stream:
    # input 3 + 0 + 1,024 = 1,027 with 1,024 read, output 15. Input 2,727, read 1,536,
    # output 25.
    assert totals(result.requests) == {"input": 2_727, "read": 1_536, "write": 0, "output": 25}
    assert result.skipped == {"recorded call that is not a model endpoint": 1}


def test_hoverfly_older_schemas(tmp_path: Path) -> None:
    # v3/v4: {"exactMatch": ...}; v1/v2 (and the records export, data as a list): strings
    v4 = {
        "request": {
            "path": {"exactMatch": "/v1/chat/completions"},
            "method": {"exactMatch": "POST"},
            "destination": {"exactMatch": "api.openai.com"},
            "scheme": {"exactMatch": "https"},
            "body": {"jsonMatch": json.dumps(chat_body("a"))},
        },
        "response": {
            "status": 200,
            "body": json.dumps(chat_response(900, 0, 3)),
            "encodedBody": False,
        },
    }
    result = read(write_json(tmp_path / "v4.json", simulation([v4], "v4")))
    assert (result.format, result.errors) == ("hoverfly", [])
    assert totals(result.requests) == {"input": 900, "read": 0, "write": 0, "output": 3}
    v1 = {
        "request": {
            "requestType": "recording",
            "path": "/v1/chat/completions",
            "method": "POST",
            "destination": "api.openai.com",
            "scheme": "https",
            "query": "",
            "body": json.dumps(chat_body("a")),
            "headers": {"Content-Type": ["application/json"]},
        },
        "response": {
            "status": 200,
            "body": json.dumps(chat_response(400, 256, 2)),
            "encodedBody": False,
            "headers": {"Date": [DATE]},
        },
    }
    result = read(write_json(tmp_path / "records.json", {"data": [v1]}))
    assert (result.format, result.errors) == ("hoverfly", [])
    assert totals(result.requests) == {"input": 400, "read": 256, "write": 0, "output": 2}


@pytest.mark.parametrize(
    ("change", "field", "reason"),
    [
        ({"status": "200"}, "data.pairs[0].response.status", "expected an HTTP status"),
        ({"body": "%%", "encodedBody": True}, "data.pairs[0].response.body", "not base64"),
        ({"body": 5}, "data.pairs[0].response.body", "expected text"),
    ],
)
def test_hoverfly_bad_fields_are_named(
    tmp_path: Path, change: dict[str, Any], field: str, reason: str
) -> None:
    pair = hoverfly_pair(chat_body("a"), "{}", **change)
    path = write_json(tmp_path / "bad.json", simulation([pair]))
    result = read(path)
    assert [(e.file, e.line, e.field) for e in result.errors] == [(str(path), 1, field)]
    assert reason in result.errors[0].reason


# --- talkback ------------------------------------------------------------------------------

# A tape as JSON5.stringify(tape, null, 4) writes it: keys unquoted where they are
# identifiers, strings in single quotes (double quotes where the text holds more single
# quotes), no trailing commas. Written by hand here, with a comment and a trailing comma
# that JSON5 allows too.
TAPE = """{
    // recorded against the live API
    meta: {
        createdAt: '2025-06-01T10:00:00.000Z',
        host: 'https://api.openai.com',
        reqHumanReadable: true,
        resHumanReadable: true,
        resUncompressed: true,
    },
    req: {
        url: '/v1/chat/completions',
        method: 'POST',
        headers: {
            'content-type': 'application/json',
        },
        body: {
            model: 'gpt-4o',
            messages: [
                {
                    role: 'user',
                    content: "it's a test",
                },
            ],
        },
    },
    res: {
        status: 200,
        headers: {
            'content-type': [
                'application/json',
            ],
            'content-encoding': [
                'gzip',
            ],
        },
        body: {
            id: 'chatcmpl-1',
            model: 'gpt-4o-2024-08-06',
            usage: {
                prompt_tokens: 1200,
                completion_tokens: 7,
                total_tokens: 1207,
                prompt_tokens_details: {
                    cached_tokens: 1024,
                },
            },
        },
    },
}
"""


def test_talkback_json5_tape(tmp_path: Path) -> None:
    path = tmp_path / "unnamed-1.json5"
    path.write_text(TAPE, encoding="utf-8")
    result = read(path)
    assert (result.format, result.errors) == ("talkback", [])
    # prompt_tokens 1,200 with 1,024 cached; completion 7
    assert totals(result.requests) == {"input": 1_200, "read": 1_024, "write": 0, "output": 7}
    # meta.createdAt, 2025-06-01T10:00:00Z, is 1,748,772,000 s after the epoch
    assert result.requests[0].timestamp == 1_748_772_000


def test_talkback_compact_json_tape(tmp_path: Path) -> None:
    """A tape written as compact JSON (one line) is a tape too, not a line of JSON lines."""
    tape = {
        "meta": {"createdAt": "2025-06-01T10:00:00.000Z", "host": "https://api.openai.com"},
        "req": {"url": "/v1/chat/completions", "method": "POST", "body": chat_body("a")},
        "res": {"status": 200, "headers": {}, "body": chat_response(640, 512, 2)},
    }
    path = tmp_path / "tape.json"
    path.write_text(json.dumps(tape), encoding="utf-8")
    result = read(path)
    assert (result.format, result.errors) == ("talkback", [])
    # prompt 640 with 512 cached, completion 2
    assert totals(result.requests) == {"input": 640, "read": 512, "write": 0, "output": 2}


def test_talkback_base64_and_stream_bodies(tmp_path: Path) -> None:
    """Bodies talkback could not keep readable are base64 (a gzip response with no
    resUncompressed); an event stream is readable text. talkback 1.x wrote plain JSON."""
    packed = gzip.compress(json.dumps(chat_response(800, 0, 5)).encode())
    tape = {
        "meta": {"createdAt": "2025-06-01T10:00:00.000Z", "host": "https://api.openai.com"},
        "req": {
            "url": "/v1/chat/completions",
            "method": "POST",
            "headers": {"content-type": "application/json"},
            "body": b64(chat_body("a")),
        },
        "res": {
            "status": 200,
            "headers": {"content-encoding": "gzip", "content-type": "application/json"},
            "body": base64.b64encode(packed).decode(),
        },
    }
    result = read(write_json(tmp_path / "unnamed-2.json", tape))
    assert (result.format, result.errors) == ("talkback", [])
    assert totals(result.requests) == {"input": 800, "read": 0, "write": 0, "output": 5}
    stream = {
        "meta": {
            "createdAt": "2025-06-01T10:00:00.000Z",
            "host": "https://api.anthropic.com",
            "reqHumanReadable": True,
            "resHumanReadable": True,
        },
        "req": {"url": "/v1/messages", "method": "POST", "headers": {}, "body": ANTHROPIC_REQUEST},
        "res": {
            "status": 200,
            "headers": {"content-type": "text/event-stream"},
            "body": ANTHROPIC_STREAM,
        },
    }
    result = read(write_json(tmp_path / "unnamed-3.json", stream))
    # input 3 + 0 + 1,024 = 1,027 with 1,024 read; output 15 (message_delta's count)
    assert totals(result.requests) == {"input": 1_027, "read": 1_024, "write": 0, "output": 15}


NOT_READABLE = {
    "resHumanReadable: true": "resHumanReadable: false",
    "body: {\n            id:": "body: 'not base64!',\n        was: {\n            id:",
}


@pytest.mark.parametrize(
    ("changes", "field", "reason"),
    [
        ({"status: 200": "status: '200'"}, "res.status", "expected an HTTP status"),
        (
            {"body: {\n            id:": "body: 5,\n        was: {\n            id:"},
            "res.body",
            "expected text",
        ),
        (NOT_READABLE, "res.body", "not base64"),
    ],
)
def test_talkback_bad_fields_are_named(
    tmp_path: Path, changes: dict[str, str], field: str, reason: str
) -> None:
    text = TAPE
    for old, new in changes.items():
        assert old in text
        text = text.replace(old, new)
    path = tmp_path / "bad.json5"
    path.write_text(text, encoding="utf-8")
    result = read(path)
    assert [(e.file, e.line, e.field) for e in result.errors] == [(str(path), 1, field)]
    assert reason in result.errors[0].reason


def test_talkback_not_json5_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "cut.json5"
    path.write_text(TAPE.replace("status: 200,", "status: 200 201,"), encoding="utf-8")
    with pytest.raises(LogFileError) as error:
        read(path)
    line = TAPE.splitlines().index("        status: 200,") + 1
    assert f"line {line}:" in str(error.value)
    assert str(path) in str(error.value)
