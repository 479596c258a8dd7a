"""Hand-built recordings modelled on the held-out files cachecast read but left unpriced:
calls to Z.ai (``api.z.ai``) and, through OpenRouter, to models whose slug names the vendor
(docs/log-formats.md, "Recorded HTTP" and "Canonical records": ``gateway``), now priced under
contracts-v22 (docs/contracts.md, "contracts-v22"); a provider's response kept without its
request, which has nothing to reconcile and says so; and a retired model's request dated after
its last version, whose error names the retirement. Each expected figure is a count written into
the recording, with the arithmetic beside it."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from cachecast.contracts import ContractStore
from cachecast.core.errors import BadInputError
from cachecast.logs.errors import LogFileError
from cachecast.passes.log_input import LogInput
from cachecast.usecases.reconcile import ReconcileRequest, reconcile
from tests.logs.helpers import read, totals

# 2026-03-09, the day of the crush cassettes the recordings below are modelled on.
DATE = "Mon, 09 Mar 2026 21:08:55 GMT"


def _interaction(uri: str, request: dict[str, Any], response: dict[str, Any]) -> Any:
    """One vcrpy interaction of an OpenAI-compatible chat completion (bodies as strings)."""
    return {
        "request": {
            "body": json.dumps(request),
            "headers": {"Content-Type": ["application/json"]},
            "method": "POST",
            "uri": uri,
        },
        "response": {
            "body": {"string": json.dumps(response)},
            "headers": {"Content-Type": ["application/json"], "Date": [DATE]},
            "status": {"code": 200, "message": "OK"},
        },
    }


def _cassette(path: Path, *interactions: Any) -> Path:
    path.write_text(yaml.safe_dump({"interactions": list(interactions), "version": 1}))
    return path


def _completion(model: str, usage: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "id": "gen-1",
        "object": "chat.completion",
        "created": 1773090535,  # 2026-03-09T21:08:55Z
        "model": model,
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": "Done"},
            }
        ],
        "usage": usage,
        **extra,
    }


def _chat(model: str, text: str) -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": text}]}


def _priced(path: Path, url: str) -> dict[tuple[str, str], str]:
    """Each target's (provider, model) and the contract version that priced it."""
    report = reconcile(ReconcileRequest(log=LogInput.of_paths([path])), ContractStore(url))
    assert report.unpriced == {}
    return {(t.provider, t.model): t.contract.version for t in report.targets}


def test_z_ai_glm_models_are_priced(tmp_path: Path, migrated_db_url: str) -> None:
    path = _cassette(
        tmp_path / "zai.yaml",
        _interaction(
            "https://api.z.ai/api/coding/paas/v4/chat/completions",
            _chat("glm-4.5-air", "Title for: read go.mod"),
            # usage as Z.ai reports it: prompt_tokens holds the cached ones
            _completion(
                "glm-4.5-air",
                {"prompt_tokens": 124, "completion_tokens": 8, "total_tokens": 132},
            ),
        ),
        _interaction(
            "https://api.z.ai/api/coding/paas/v4/chat/completions",
            _chat("glm-4.6", "Read go.mod"),
            _completion(
                "glm-4.6",
                {
                    "prompt_tokens": 1203,
                    "completion_tokens": 46,
                    "total_tokens": 1249,
                    "prompt_tokens_details": {"cached_tokens": 1024},
                },
            ),
        ),
    )
    got = read(path)
    # input 124 + 1,203 = 1,327; read 1,024 (the second call's cached_tokens); output 8 + 46.
    assert totals(got.requests) == {"input": 1327, "read": 1024, "write": 0, "output": 54}
    assert _priced(path, migrated_db_url) == {
        ("zai", "glm-4.5-air"): "zai/glm-4.5-air@2025-07-28",
        ("zai", "glm-4.6"): "zai/glm-4.6@2025-09-30",
    }


def test_openrouter_slugs_naming_the_vendor_are_priced_as_its_models(
    tmp_path: Path, migrated_db_url: str
) -> None:
    uri = "https://openrouter.ai/api/v1/chat/completions"
    path = _cassette(
        tmp_path / "openrouter.yaml",
        _interaction(
            uri,
            _chat("qwen/qwen3-next-80b-a3b-instruct", "Title for: read go.mod"),
            _completion(
                "qwen/qwen3-next-80b-a3b-instruct-2509",
                {"prompt_tokens": 135, "completion_tokens": 4, "total_tokens": 139},
                provider="Alibaba",
            ),
        ),
        _interaction(
            uri,
            _chat("moonshotai/kimi-k2-0905", "Read go.mod"),
            _completion(
                "moonshotai/kimi-k2-0905",
                {"prompt_tokens": 40, "completion_tokens": 3, "total_tokens": 43},
                provider="DeepInfra",
            ),
        ),
    )
    priced = _priced(path, migrated_db_url)
    # kimi-k2-0905 is an alias of Moonshot's kimi-k2-0905-preview (contracts-v22).
    assert priced == {
        (
            "alibaba",
            "qwen3-next-80b-a3b-instruct",
        ): "alibaba/qwen3-next-80b-a3b-instruct@2025-09-11",
        ("moonshot", "kimi-k2-0905-preview"): "moonshot/kimi-k2-0905-preview@2025-09-04",
    }


def test_a_chat_completion_kept_alone_says_it_has_no_request(tmp_path: Path) -> None:
    # A test fixture keeping only the reply (a bare chat.completion object, pretty-printed).
    path = tmp_path / "completion.json"
    reply = _completion("magistral-small-latest", {"prompt_tokens": 28, "completion_tokens": 4})
    path.write_text(json.dumps(reply, indent=2))
    with pytest.raises(LogFileError) as caught:
        read(path)
    assert caught.value.reason == (
        "a provider's response alone (chat.completion object with usage, no request):"
        " its prompt is not recorded, so there is nothing to reconcile"
    )


def test_a_recorded_http_response_alone_says_it_has_no_request(tmp_path: Path) -> None:
    # {status, headers, body}: a JavaScript fixture's recorded response, the body the
    # Messages API's JSON text (usage 52 in, 211 out).
    message = {
        "model": "claude-sonnet-4-6",
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": "12,231"}],
        "usage": {"input_tokens": 52, "output_tokens": 211},
    }
    path = tmp_path / "thinking.json"
    record = {"status": 200, "headers": {"content-type": "application/json"}}
    path.write_text(json.dumps({**record, "body": json.dumps(message)}, indent=2))
    got = read(path)
    assert got.requests == []
    [error] = got.errors
    assert (error.line, error.field) == (1, "body")
    assert error.reason.startswith("a recorded HTTP response alone ({status, headers, body}")
    assert error.reason.endswith("its prompt is not recorded, so there is nothing to reconcile")


def test_a_body_text_that_is_no_response_keeps_the_type_error(tmp_path: Path) -> None:
    # A string body with no usage in it is no recorded reply: the plain field error stays.
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"status": 200, "body": "hello"}))
    got = read(path)
    [error] = got.errors
    assert error.reason == "expected an object, got str"


def test_a_request_after_the_models_retirement_names_it(
    tmp_path: Path, migrated_db_url: str
) -> None:
    # claude-3-opus-latest's last stored version ends 2026-01-05 (Claude 3 Opus's retirement);
    # this pair is dated 2026-03-06 (a cassette whose recorded_at was rewritten).
    pair = {
        "provider": "anthropic",
        "timestamp": "2026-03-06T12:00:00Z",
        "request": {
            "model": "claude-3-opus-latest",
            "max_tokens": 64,
            "messages": [{"role": "user", "content": "Hi"}],
        },
        "response": {
            "model": "claude-3-opus-20240229",
            "type": "message",
            "content": [{"type": "text", "text": "Hello"}],
            "usage": {"input_tokens": 8, "output_tokens": 2},
        },
    }
    path = tmp_path / "opus.json"
    path.write_text(json.dumps(pair))
    store = ContractStore(migrated_db_url)
    with pytest.raises(BadInputError, match=r"its last version ended on 2026-01-05 \(retired"):
        reconcile(ReconcileRequest(log=LogInput.of_paths([path])), store)
    # Given the day it was made, it is priced.
    report = reconcile(
        ReconcileRequest(log=LogInput.of_paths([path]), at=dt.date(2025, 6, 1)), store
    )
    assert report.unpriced == {}


def test_an_experimental_gemini_id_says_why_it_is_not_priced(
    tmp_path: Path, migrated_db_url: str
) -> None:
    # gemini-2.0-flash-exp on Vertex AI (read as provider google, docs/log-formats.md).
    pair = {
        "provider": "google",
        "model": "gemini-2.0-flash-exp",
        "timestamp": "2026-01-13T19:42:59Z",
        "request": {"contents": [{"role": "user", "parts": [{"text": "Read go.mod"}]}]},
        "response": {
            "candidates": [{"content": {"role": "model", "parts": [{"text": "Okay"}]}}],
            "usageMetadata": {"promptTokenCount": 125, "candidatesTokenCount": 5},
        },
    }
    path = tmp_path / "exp.json"
    path.write_text(json.dumps(pair))
    with pytest.raises(BadInputError, match=r"an experimental Gemini id \('-exp'\)"):
        reconcile(ReconcileRequest(log=LogInput.of_paths([path])), ContractStore(migrated_db_url))


def test_a_response_without_usage_is_named(tmp_path: Path, migrated_db_url: str) -> None:
    # A Gemini API generateContent reply of late 2023 without usageMetadata (gemini-pro).
    pair = {
        "provider": "google",
        "model": "gemini-1.0-pro",
        "timestamp": "2024-06-01T12:00:00Z",
        "request": {"contents": [{"role": "user", "parts": [{"text": "What is 6 x 7?"}]}]},
        "response": {"candidates": [{"content": {"role": "model", "parts": [{"text": "42"}]}}]},
    }
    path = tmp_path / "gemini.json"
    path.write_text(json.dumps(pair))
    with pytest.raises(BadInputError) as caught:
        reconcile(ReconcileRequest(log=LogInput.of_paths([path])), ContractStore(migrated_db_url))
    assert f"1 request(s) carry no usage, first {path}:1: its response reports no token" in str(
        caught.value
    )
