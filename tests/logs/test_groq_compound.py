"""Groq Compound (``groq/compound``, ``groq/compound-mini``): a system, not a model, billed as
the model calls it makes, which the response lists in ``usage_breakdown.models`` (each entry:
the model's id and its own usage; ``usage`` is their sum). Hand-built recordings in that shape
(modelled on maruel/genai's compound-mini cassette of 2025-12-13), priced under each model's
own Groq contract (docs/log-formats.md, "Groq Compound"). Expected bills are worked by hand from
Groq's prices, not from the contracts' code:

- llama-3.3-70b-versatile: $0.59 in / $0.79 out per MTok, no prompt caching (Groq's models page,
  https://console.groq.com/docs/models: "$0.59 input $0.79 output");
- openai/gpt-oss-120b: $0.15 in / $0.60 out per MTok, cache hits $0.075 (Groq's pricing page:
  "$0.15 input and $0.60 output per 1M tokens ... prompt cache hits listed at $0.075 input",
  as tokenmix.ai quotes it, 2026-06-04 [S])."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml

from cachecast.contracts import ContractStore
from cachecast.core.errors import BadInputError
from cachecast.passes.log_input import LogInput
from cachecast.usecases.reconcile import ReconcileRequest, reconcile
from tests.logs.helpers import read, totals

DATE = "Sat, 13 Dec 2025 15:36:29 GMT"
URI = "https://api.groq.com/openai/v1/chat/completions"


def _cassette(path: Path, response: dict[str, Any], model: str = "groq/compound-mini") -> Path:
    request = {"model": model, "messages": [{"role": "user", "content": "Say hello."}]}
    interaction = {
        "request": {
            "body": json.dumps(request),
            "headers": {"Content-Type": ["application/json"]},
            "method": "POST",
            "uri": URI,
        },
        "response": {
            "body": {"string": json.dumps(response)},
            "headers": {"Content-Type": ["application/json"], "Date": [DATE]},
            "status": {"code": 200, "message": "OK"},
        },
    }
    path.write_text(yaml.safe_dump({"interactions": [interaction], "version": 1}))
    return path


def _response(usage: dict[str, Any], breakdown: list[dict[str, Any]] | None) -> dict[str, Any]:
    response: dict[str, Any] = {
        "id": "chatcmpl-compound",
        "object": "chat.completion",
        "created": 1765640189,  # 2025-12-13
        "model": "groq/compound-mini",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": "Hello", "executed_tools": []},
            }
        ],
        "usage": usage,
    }
    if breakdown is not None:
        response["usage_breakdown"] = {"models": breakdown}
    return response


LLAMA_CALL = {
    "model": "llama-3.3-70b-versatile",
    "usage": {"prompt_tokens": 296, "completion_tokens": 2, "total_tokens": 298},
}
GPT_OSS_CALL = {
    "model": "openai/gpt-oss-120b",
    "usage": {
        "prompt_tokens": 155,
        "completion_tokens": 42,
        "total_tokens": 197,
        "prompt_tokens_details": {"cached_tokens": 128},
    },
}
# The sum of the two calls: 296 + 155 = 451 in, 2 + 42 = 44 out.
SUMMED = {"prompt_tokens": 451, "completion_tokens": 44, "total_tokens": 495}


def test_each_model_call_is_a_request_of_its_own(tmp_path: Path) -> None:
    path = _cassette(tmp_path / "compound.yaml", _response(SUMMED, [LLAMA_CALL, GPT_OSS_CALL]))
    got = read(path)
    assert got.errors == []
    assert [(r.provider, r.logged_model) for r in got.requests] == [
        ("groq", "llama-3.3-70b-versatile"),
        ("groq", "gpt-oss-120b"),  # Groq's id openai/gpt-oss-120b, served by Groq
    ]
    assert [r.request_id for r in got.requests] == [
        "chatcmpl-compound call 1",
        "chatcmpl-compound call 2",
    ]
    # The calls' prompts are not in the recording: stand-ins of the reported length.
    assert [(r.input_tokens, r.prompt_complete) for r in got.requests] == [
        (296, False),
        (155, False),
    ]
    assert totals(got.requests) == {"input": 451, "read": 128, "write": 0, "output": 44}


def test_the_request_is_billed_as_the_sum_of_its_calls(
    tmp_path: Path, migrated_db_url: str
) -> None:
    path = _cassette(tmp_path / "compound.yaml", _response(SUMMED, [LLAMA_CALL, GPT_OSS_CALL]))
    report = reconcile(
        ReconcileRequest(log=LogInput.of_paths([path])), ContractStore(migrated_db_url)
    )
    assert report.unpriced == {}
    costs = {t.model: t.cost for t in report.targets}
    # llama-3.3-70b-versatile: 296 x $0.59 / 1e6 = 0.00017464; 2 x $0.79 / 1e6 = 0.00000158;
    # 0.00017622.
    assert costs["llama-3.3-70b-versatile"] == Decimal("0.00017622")
    observed = {row.request_id: Decimal(row.observed_cost) for row in report.requests}
    # gpt-oss-120b: 27 uncached x $0.15 / 1e6 = 0.00000405; 128 cached x $0.075 / 1e6 =
    # 0.0000096; 42 out x $0.60 / 1e6 = 0.0000252; 0.00003885.
    assert observed["chatcmpl-compound call 2"] == Decimal("0.00003885")
    # The Compound request: 0.00017622 + 0.00003885 = 0.00021507.
    assert sum(observed.values()) == Decimal("0.00021507")
    # No read is predicted for a call whose prompt the recording does not hold.
    call = next(row for row in report.requests if row.request_id == "chatcmpl-compound call 2")
    assert (call.predicted_cache_read_tokens, call.observed_cache_read_tokens) == (0, 128)


def test_a_breakdown_that_does_not_add_up_is_refused_with_its_field(tmp_path: Path) -> None:
    # 296 + 155 = 451 prompt tokens in the calls, 460 in the response's usage.
    usage = {**SUMMED, "prompt_tokens": 460}
    path = _cassette(tmp_path / "compound.yaml", _response(usage, [LLAMA_CALL, GPT_OSS_CALL]))
    got = read(path)
    assert got.requests == []
    [error] = got.errors
    assert error.field.endswith("response.body.usage_breakdown.models")
    assert error.reason.startswith("the model calls' prompt tokens sum to 451")


def test_without_a_breakdown_the_system_is_unpriced_and_says_why(
    tmp_path: Path, migrated_db_url: str
) -> None:
    # compound-beta's responses of 2025 may carry no usage_breakdown: nothing says which
    # models it called, so nothing prices it.
    path = _cassette(tmp_path / "compound.yaml", _response(SUMMED, None), model="compound-beta")
    [request] = read(path).requests
    assert (request.provider, request.logged_model) == (
        "groq",
        "compound-beta",
    )  # the body names it
    with pytest.raises(BadInputError) as caught:
        reconcile(ReconcileRequest(log=LogInput.of_paths([path])), ContractStore(migrated_db_url))
    assert "groq:compound-beta: unknown model 'compound-beta'" in caught.value.message
    assert "a Groq Compound system, billed as the model calls" in caught.value.message
