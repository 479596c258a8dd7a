"""Hand-written minimal recordings of the dialect variants no sample covers: go-vcr v1,
Ruby VCR's ``!binary`` and ``base64_string`` bodies, vcrpy with a gzip ``!!binary`` body of
two gzip members, vcrpy's JSON serializer, HAR with a base64 body and an already decoded
``content-encoding: gzip`` body (Polly.JS), Cohere v1 without streaming; and the usage
rules they exercise: the requested TTL where the response gives no split, Anthropic's
compaction ``iterations`` billed iteration by iteration.

Each expected figure is the usage field written into the recording, by the provider's
documented rule (docs/log-formats.md, "Usage conventions"), with the arithmetic beside it.
"""

from __future__ import annotations

import base64
import datetime as dt
import gzip
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml

from cachecast.contracts import ContractStore
from cachecast.simulator.billing import bill_observed, bill_request, usage_from_observed
from tests.logs.helpers import read, totals

CHAT_URL = "https://api.openai.com/v1/chat/completions"
CHAT_BODY = {"model": "gpt-4o", "messages": [{"role": "user", "content": "Hello there"}]}


def chat_response(prompt: int, cached: int, completion: int) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "model": "gpt-4o-2024-08-06",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi"}}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached},
        },
    }


def test_go_vcr_v1(tmp_path: Path) -> None:
    # go-vcr v1 (recorder/cassette.go): request {body, form, headers, url, method},
    # response {body, headers, status: "200 OK", code, duration}.
    cassette = {
        "version": 1,
        "interactions": [
            {
                "request": {
                    "body": json.dumps(CHAT_BODY),
                    "form": {},
                    "headers": {"Content-Type": ["application/json"]},
                    "url": CHAT_URL,
                    "method": "POST",
                },
                "response": {
                    "body": json.dumps(chat_response(1_200, 1_024, 10)),
                    "headers": {"Content-Type": ["application/json"]},
                    "status": "200 OK",
                    "code": 200,
                    "duration": "1.2s",
                },
            },
            {  # a failed call is not billed
                "request": {"body": json.dumps(CHAT_BODY), "url": CHAT_URL, "method": "POST"},
                "response": {"body": "{}", "status": "429 Too Many Requests", "code": 429},
            },
        ],
    }
    path = tmp_path / "v1.yaml"
    path.write_text("---\n" + yaml.safe_dump(cassette, sort_keys=False))
    result = read(path)
    assert (result.format, result.errors) == ("vcr", [])
    # prompt_tokens includes the cached tokens: input 1,200 of which 1,024 read
    assert totals(result.requests) == {"input": 1_200, "read": 1_024, "write": 0, "output": 10}
    assert result.skipped == {"HTTP 429 response (not billed)": 1}


def test_ruby_vcr_binary_and_base64_string_bodies(tmp_path: Path) -> None:
    # Ruby VCR writes ASCII-8BIT bodies as `string: !binary |-` + base64, and with
    # preserve_exact_body_bytes as `base64_string`; methods are lower case.
    request = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 100,
        "system": [
            {
                "type": "text",
                "text": "Weather at 20 °C. " * 50,
                "cache_control": {"type": "ephemeral", "ttl": "1h"},
            }
        ],
        "messages": [{"role": "user", "content": "And tomorrow?"}],
    }
    usage = {  # no cache_creation split: the request's TTL (1h) says which write it was
        "input_tokens": 5,
        "cache_creation_input_tokens": 1_500,
        "cache_read_input_tokens": 0,
        "output_tokens": 7,
    }
    response = {
        "id": "msg_1",
        "type": "message",
        "model": "claude-sonnet-4-5-20250929",
        "content": [{"type": "text", "text": "About 21 °C."}],
        "usage": usage,
    }
    encoded = base64.b64encode(json.dumps(response, ensure_ascii=False).encode()).decode()
    body = json.dumps(request, ensure_ascii=False).encode()
    text = f"""---
http_interactions:
- request:
    method: post
    uri: https://api.anthropic.com/v1/messages
    body:
      encoding: UTF-8
      base64_string: {base64.b64encode(body).decode()}
    headers:
      X-Api-Key:
      - "<ANTHROPIC_API_KEY>"
  response:
    status:
      code: 200
      message: OK
    headers:
      Content-Type:
      - application/json
    body:
      encoding: ASCII-8BIT
      string: !binary |-
        {encoded}
  recorded_at: Mon, 08 Jun 2026 18:46:05 GMT
recorded_with: VCR 6.4.0
"""
    path = tmp_path / "ruby.yml"
    path.write_text(text, encoding="utf-8")
    result = read(path)
    assert (result.format, result.errors) == ("vcr", [])
    (one,) = result.requests
    assert one.observed is not None
    # input = 5 uncached + 1,500 written + 0 read
    assert (one.observed.input_tokens, one.observed.cache_write_by_ttl) == (1_505, {"1h": 1_500})
    assert one.timestamp == dt.datetime(2026, 6, 8, 18, 46, 5, tzinfo=dt.UTC).timestamp()


def test_vcrpy_gzip_binary_of_two_members(tmp_path: Path) -> None:
    # A gzip stream may be several members back to back (RFC 1952 2.2); each inflates on
    # its own and the body is their concatenation.
    raw = json.dumps(chat_response(2_000, 1_536, 12)).encode()
    body = gzip.compress(raw[:40]) + gzip.compress(raw[40:])
    cassette = {
        "interactions": [
            {
                "request": {
                    "body": json.dumps(CHAT_BODY),
                    "headers": {"Content-Type": ["application/json"]},
                    "method": "POST",
                    "uri": CHAT_URL,
                },
                "response": {
                    "body": {"string": body},  # PyYAML writes bytes as !!binary (base64)
                    "headers": {"Content-Encoding": ["gzip"]},
                    "status": {"code": 200, "message": "OK"},
                },
            }
        ],
        "version": 1,
    }
    path = tmp_path / "gzip.yaml"
    path.write_text(yaml.safe_dump(cassette))
    assert "!!binary" in path.read_text()
    result = read(path)
    assert result.errors == []
    assert totals(result.requests) == {"input": 2_000, "read": 1_536, "write": 0, "output": 12}


def test_vcrpy_json_serializer(tmp_path: Path) -> None:
    cassette = {
        "interactions": [
            {
                "request": {"body": json.dumps(CHAT_BODY), "method": "POST", "uri": CHAT_URL},
                "response": {
                    "body": {"string": json.dumps(chat_response(300, 0, 4))},
                    "status": {"code": 200, "message": "OK"},
                },
            }
        ],
        "version": 1,
    }
    path = tmp_path / "cassette.json"
    path.write_text(json.dumps(cassette, indent=4))
    result = read(path)
    assert (result.format, result.errors) == ("vcr", [])
    assert totals(result.requests) == {"input": 300, "read": 0, "write": 0, "output": 4}


def test_har_base64_and_decoded_gzip_bodies(tmp_path: Path) -> None:
    # HAR 1.2: content.text is the decoded body, or base64 with encoding "base64"; a
    # content-encoding header describes the transfer, not the stored text (Polly.JS).
    def entry(response: dict[str, Any], *, as_base64: bool) -> dict[str, Any]:
        text = json.dumps(response)
        content: dict[str, Any] = {"mimeType": "application/json", "size": len(text)}
        if as_base64:
            content |= {"text": base64.b64encode(text.encode()).decode(), "encoding": "base64"}
        else:
            content["text"] = text
        return {
            "startedDateTime": "2026-01-12T10:00:00.000Z",
            "request": {
                "method": "POST",
                "url": CHAT_URL,
                "headers": [{"name": "content-type", "value": "application/json"}],
                "postData": {"mimeType": "application/json", "text": json.dumps(CHAT_BODY)},
            },
            "response": {
                "status": 200,
                "headers": [{"name": "content-encoding", "value": "gzip"}],
                "content": content,
            },
        }

    har = {
        "log": {
            "version": "1.2",
            "creator": {"name": "Polly.JS", "version": "6.0.6"},
            "entries": [
                entry(chat_response(1_100, 1_024, 3), as_base64=True),
                entry(chat_response(1_100, 0, 5), as_base64=False),
            ],
        }
    }
    path = tmp_path / "polly.har"
    path.write_text(json.dumps(har))
    result = read(path)
    assert (result.format, result.errors) == ("har", [])
    # 1,100 + 1,100 input; 1,024 + 0 read; 3 + 5 output
    assert totals(result.requests) == {"input": 2_200, "read": 1_024, "write": 0, "output": 8}


def test_cohere_v1_chat_not_streamed(tmp_path: Path) -> None:
    # Cohere v1: usage under meta.billed_units (meta.tokens counts the templated prompt).
    cassette = {
        "interactions": [
            {
                "request": {
                    "body": json.dumps(
                        {
                            "model": "command-r",
                            "preamble": "Be brief.",
                            "chat_history": [
                                {"role": "USER", "message": "Hi"},
                                {"role": "CHATBOT", "message": "Hello"},
                            ],
                            "message": "What is a cache?",
                        }
                    ),
                    "method": "POST",
                    "uri": "https://api.cohere.com/v1/chat",
                },
                "response": {
                    "body": {
                        "string": json.dumps(
                            {
                                "text": "A store.",
                                "meta": {
                                    "billed_units": {"input_tokens": 21, "output_tokens": 3},
                                    "tokens": {"input_tokens": 90, "output_tokens": 3},
                                },
                            }
                        )
                    },
                    "status": {"code": 200, "message": "OK"},
                },
            }
        ]
    }
    path = tmp_path / "cohere.yaml"
    path.write_text(yaml.safe_dump(cassette))
    result = read(path)
    assert result.errors == []
    assert totals(result.requests) == {"input": 21, "read": 0, "write": 0, "output": 3}
    (request,) = result.requests
    assert (request.provider, request.model, request.prompt_complete) == (
        "cohere",
        "command-r",
        True,
    )


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> ContractStore:
    from cachecast.core import db

    url = f"sqlite:///{tmp_path_factory.mktemp('store') / 'cachecast.db'}"
    db.upgrade(url)
    return ContractStore(url)


def test_compaction_iterations_are_billed_one_by_one(tmp_path: Path, store: ContractStore) -> None:
    # Anthropic compaction: usage.iterations lists the compaction sampling (180,000 in,
    # 3,500 out) and the message sampling (23,000 in, 1,000 out); the top level repeats the
    # last one only. Each iteration is a request to the model, billed on its own.
    usage = {
        "input_tokens": 23_000,
        "output_tokens": 1_000,
        "iterations": [
            {"type": "compaction", "input_tokens": 180_000, "output_tokens": 3_500},
            {"type": "message", "input_tokens": 23_000, "output_tokens": 1_000},
        ],
    }
    cassette = {
        "interactions": [
            {
                "request": {
                    "body": json.dumps(
                        {
                            "model": "claude-sonnet-4-5",
                            "max_tokens": 2_000,
                            "messages": [{"role": "user", "content": "Continue."}],
                        }
                    ),
                    "method": "POST",
                    "uri": "https://api.anthropic.com/v1/messages",
                },
                "response": {
                    "body": {
                        "string": json.dumps(
                            {"id": "msg_2", "model": "claude-sonnet-4-5", "usage": usage}
                        )
                    },
                    "status": {"code": 200, "message": "OK"},
                },
            }
        ]
    }
    path = tmp_path / "compaction.yaml"
    path.write_text(yaml.safe_dump(cassette))
    result = read(path)
    (request,) = result.requests
    observed = request.observed
    assert observed is not None and len(observed.iterations) == 2
    # Sums: 180,000 + 23,000 = 203,000 in; 3,500 + 1,000 = 4,500 out.
    assert (observed.input_tokens, observed.output_tokens) == (203_000, 4_500)
    contract = store.as_of("anthropic", "claude-sonnet-4-5", dt.date(2026, 10, 15))
    # Anthropic's pricing page: Sonnet 4.5 $3 in / $15 out per MTok up to 200K input, a
    # request above 200K input pays $6 / $22.50 for all its tokens.
    assert (contract.input_per_mtok, contract.output_per_mtok) == (Decimal(3), Decimal(15))
    whole = usage_from_observed(
        observed,
        contract,
        request_id="r",
        line=1,
        timestamp=0.0,
        scope="s",
        fallback_input_tokens=0,
        fallback_output_tokens=0,
    )
    # Per iteration (each under 200K): 180,000 x 3 + 3,500 x 15 = 540,000 + 52,500 and
    # 23,000 x 3 + 1,000 x 15 = 69,000 + 15,000 -> 676,500 / 1e6 = $0.6765.
    assert bill_observed(observed, contract, whole).total == Decimal("0.6765")
    # Billed as one 203,000-token request it would cross the tier: 203,000 x 6 + 4,500 x
    # 22.5 = 1,218,000 + 101,250 -> $1.31925 (the wrong bill this rule avoids).
    assert bill_request(whole, contract).total == Decimal("1.31925")
