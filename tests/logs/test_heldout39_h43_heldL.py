"""Google Gen AI SDK replay files (the 2026 pseudo-held-out set h43: googleapis/js-genai keeps
its system tests' recordings in the repository), each hand-built on the shape the SDKs' replay
clients write (docs/log-formats.md, "Google Gen AI SDK replays"). Every expected count is the
usage written into the file, added up by hand in the comments."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cachecast.logs import open_log
from cachecast.logs.errors import UnknownLogFormatError
from tests.logs.helpers import read, totals

VERTEX_PATH = (
    "/v1beta1/projects/REDACTED/locations/global/publishers/google/models/"
    "gemini-2.0-flash:generateContent"
)


def _usage(prompt: int, candidates: int, **extra: int) -> dict[str, Any]:
    return {
        "promptTokenCount": prompt,
        "candidatesTokenCount": candidates,
        "totalTokenCount": prompt + candidates + extra.get("thoughtsTokenCount", 0),
        **extra,
    }


def _answer(text: str, usage: dict[str, Any] | None) -> dict[str, Any]:
    segment: dict[str, Any] = {
        "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}}],
        "modelVersion": "gemini-2.0-flash",
    }
    if usage is not None:
        segment["usageMetadata"] = usage
    return segment


def _js_interaction(
    path: str, body: dict[str, Any], segments: list[dict[str, Any]], date: str
) -> dict[str, Any]:
    """An interaction as js-genai's replay client writes it: the URL's path, the host apart."""
    return {
        "request": {
            "method": "POST",
            "url": path,
            "request": f"POST {path} HTTP/1.1",
            "headers": {"Content-Type": "application/json", "Test-Name": "a test"},
            "bodySegments": [body],
            "previousRequest": "0" * 64,
            "serverAddress": "us-central1-aiplatform.googleapis.com",
            "port": 443,
            "protocol": "https",
        },
        "shaSum": "1" * 64,
        "response": {
            "statusCode": 200,
            "headers": {"Content-Type": "application/json; charset=UTF-8", "Date": date},
            "bodySegments": segments,
        },
    }


def _write(path: Path, document: dict[str, Any]) -> Path:
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")
    return path


def _contents(*texts: str) -> dict[str, Any]:
    roles = ["user", "model"]
    return {
        "contents": [
            {"role": roles[index % 2], "parts": [{"text": text}]}
            for index, text in enumerate(texts)
        ],
        "generationConfig": {},
    }


def test_a_js_genai_chat_recording_is_read_with_host_and_date(tmp_path: Path) -> None:
    first = _js_interaction(
        VERTEX_PATH,
        _contents("what is the result of 100/2"),
        [_answer("50", _usage(21, 6))],
        "Thu, 12 Feb 2026 09:06:58 GMT",
    )
    second = _js_interaction(
        VERTEX_PATH,
        _contents("what is the result of 100/2", "50", "and of 50/2?"),
        [_answer("25", _usage(38, 6))],
        "Thu, 12 Feb 2026 09:06:59 GMT",
    )
    path = _write(tmp_path / "chat.json", {"recordID": "Chats", "interactions": [first, second]})
    result = read(path)
    assert result.format == "genai-replay"
    assert result.errors == []
    one, two = result.requests
    # the Vertex host (serverAddress) is provider google; the model is the URL's
    assert (one.provider, one.model) == ("google", "gemini-2.0-flash")
    # input 21 + 38 = 59, output 6 + 6 = 12, no cachedContentTokenCount
    assert totals(result.requests) == {"input": 59, "read": 0, "write": 0, "output": 12}
    # the Date headers: 2026-02-12 09:06:58 UTC is 1770887218 seconds after the epoch
    assert (one.timestamp, two.timestamp) == (1770887218.0, 1770887219.0)
    assert (one.line, two.line) == (1, 2)


def test_a_streamed_replay_takes_the_last_chunk_s_counts(tmp_path: Path) -> None:
    # streamGenerateContent?alt=sse: one body segment per chunk; the first chunks carry
    # usageMetadata without counts (Vertex writes only trafficType there)
    path_ = VERTEX_PATH.replace(":generateContent", ":streamGenerateContent?alt=sse")
    chunks = [
        _answer("Get", {"trafficType": "ON_DEMAND"}),
        _answer("ting", {"trafficType": "ON_DEMAND"}),
        _answer(
            " the weather.",
            _usage(4200, 29, thoughtsTokenCount=193, cachedContentTokenCount=4096, trafficType=0),
        ),
    ]
    interaction = _js_interaction(
        path_, _contents("weather?"), chunks, "Thu, 13 Nov 2025 02:09:10 GMT"
    )
    path = _write(tmp_path / "stream.json", {"recordID": "Stream", "interactions": [interaction]})
    result = read(path)
    assert result.errors == []
    # the last chunk only: 4,200 in of which 4,096 cached; output 29 + 193 thoughts = 222
    assert totals(result.requests) == {"input": 4200, "read": 4096, "write": 0, "output": 222}


def test_a_python_genai_replay_with_its_url_placeholder(tmp_path: Path) -> None:
    # python-genai's ReplayApiClient: snake-case fields, the URL's front redacted to
    # {MLDEV_URL_PREFIX}, no Date header (it drops it), an API error kept with its status
    ok = {
        "request": {
            "method": "post",
            "url": "{MLDEV_URL_PREFIX}/models/gemini-2.0-flash:generateContent",
            "headers": {"Content-Type": "application/json"},
            "body_segments": [_contents("Tell me a story")],
        },
        "response": {
            "status_code": 200,
            "headers": {"Content-Type": "application/json; charset=UTF-8"},
            "body_segments": [_answer("Once", _usage(5, 300))],
            "sdk_response_segments": [],
        },
    }
    refused = {
        "request": {**ok["request"], "body_segments": [_contents("again")]},
        "response": {
            "status_code": 400,
            "headers": {},
            "body_segments": [{"error": {"code": 400, "message": "API key not valid."}}],
            "sdk_response_segments": [],
        },
    }
    document = {"replay_id": "models/generate/mldev", "interactions": [ok, refused]}
    path = _write(tmp_path / "py.json", document)
    result = read(path)
    assert result.format == "genai-replay"
    assert result.errors == []
    (one,) = result.requests  # the 400 is not billed: skipped
    assert (one.provider, one.model) == ("google", "gemini-2.0-flash")
    assert one.timestamp == 0.0  # the replay states no time
    assert totals(result.requests) == {"input": 5, "read": 0, "write": 0, "output": 300}
    assert result.skipped == {"HTTP 400 response (not billed)": 1}


def test_two_request_body_segments_are_named(tmp_path: Path) -> None:
    interaction = _js_interaction(
        VERTEX_PATH, _contents("a"), [_answer("b", _usage(1, 1))], "Thu, 12 Feb 2026 09:06:58 GMT"
    )
    interaction["request"]["bodySegments"].append(_contents("c"))
    path = _write(tmp_path / "two.json", {"recordID": "Two", "interactions": [interaction]})
    result = read(path)
    assert result.requests == []
    (error,) = result.errors
    assert error.field == "interactions[0].request.bodySegments"
    assert "one body segment, got 2" in error.reason


def test_a_port_that_is_no_number_is_named(tmp_path: Path) -> None:
    interaction = _js_interaction(
        VERTEX_PATH, _contents("a"), [_answer("b", _usage(1, 1))], "Thu, 12 Feb 2026 09:06:58 GMT"
    )
    interaction["request"]["port"] = "443"
    path = _write(tmp_path / "port.json", {"recordID": "Port", "interactions": [interaction]})
    result = read(path)
    (error,) = result.errors
    assert error.field == "interactions[0].request.port"


@pytest.mark.parametrize(
    "document",
    [
        # a vcrpy JSON cassette: interactions too, but a request ``uri`` and ``body``
        {
            "interactions": [
                {
                    "request": {"uri": "https://api.openai.com/v1/chat/completions", "body": "{}"},
                    "response": {"status": {"code": 200}, "body": {"string": "{}"}},
                }
            ],
            "version": 1,
        },
        # a replay's shape without its name
        {"interactions": [{"request": {"url": "/x", "bodySegments": []}, "response": {}}]},
    ],
)
def test_other_interaction_documents_are_not_taken_for_replays(
    tmp_path: Path, document: dict[str, Any]
) -> None:
    path = _write(tmp_path / "other.json", document)
    try:
        stream = open_log(path)
    except UnknownLogFormatError:
        return  # no format fits: not a replay either
    assert stream.format != "genai-replay"


def test_a_redacted_model_is_read_as_the_one_the_response_names(tmp_path: Path) -> None:
    # js-genai redacts the model of some recordings' paths; the response's modelVersion
    # names the model that served the call
    path_ = "/v1beta/models/REDACTED:generateContent"
    interaction = _js_interaction(
        path_, _contents("a"), [_answer("b", _usage(9, 4))], "Thu, 12 Feb 2026 09:06:58 GMT"
    )
    interaction["request"]["serverAddress"] = "generativelanguage.googleapis.com"
    path = _write(tmp_path / "redacted.json", {"recordID": "R", "interactions": [interaction]})
    result = read(path)
    assert result.errors == []
    (one,) = result.requests
    assert (one.provider, one.model) == ("google", "gemini-2.0-flash")


def test_python_genai_s_vertex_placeholder_is_read_as_vertex_ai(tmp_path: Path) -> None:
    # python-genai's _redact_request_url cuts a Vertex AI URL up to its location
    interaction = {
        "request": {
            "method": "post",
            "url": "{VERTEX_URL_PREFIX}/publishers/google/models/gemini-2.0-flash:generateContent",
            "headers": {},
            "body_segments": [_contents("hi")],
        },
        "response": {"headers": {}, "body_segments": [_answer("hello", _usage(3, 2))]},
    }
    document = {"replay_id": "models/generate/vertex", "interactions": [interaction]}
    result = read(_write(tmp_path / "vertex.json", document))
    assert result.errors == []
    (one,) = result.requests
    assert (one.provider, one.model) == ("google", "gemini-2.0-flash")
    # no status written: python-genai's ReplayResponse defaults it to 200 (billed)
    assert totals(result.requests) == {"input": 3, "read": 0, "write": 0, "output": 2}
