"""Hand-built recordings modelled on what a third set of held-out public recordings sent us
(docs/log-formats.md, "Recorded HTTP"): OpenAI's legacy Completions endpoint read like its
batch form, Anthropic's legacy Text Completions and vLLM's native ``/generate`` named as
carrying no usage, Bedrock InvokeModel bodies of Amazon Titan Text, AI21 Jamba and Cohere
Command, a file that holds no model call saying what it holds, close matches kept to the
model's vendor, and cache tokens on a prompt shorter than the contract's minimum listed as
contradictory usage. Each expected figure is the usage field written into the recording."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from cachecast.contracts import ContractStore
from cachecast.contracts.store import close_models, model_vendor
from cachecast.core.errors import BadInputError, UnknownContractError
from cachecast.passes.log_input import LogInput
from cachecast.usecases.reconcile import ReconcileRequest, reconcile
from tests.logs.helpers import read, totals, vcr_cassette, vcr_interaction, write_jsonl

# --- OpenAI legacy Completions --------------------------------------------------------------

COMPLETIONS = "https://api.openai.com/v1/completions"
INSTRUCT = "gpt-3.5-turbo-instruct"


def _text_completion(usage: dict[str, int] | None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "cmpl-1",
        "object": "text_completion",
        "created": 1775037600,
        "model": INSTRUCT,
        "choices": [{"text": "Foo", "index": 0, "finish_reason": "stop"}],
    }
    if usage is not None:
        body["usage"] = usage
    return body


def test_openai_legacy_completions_are_read_from_a_cassette(tmp_path: Path) -> None:
    # ``prompt`` a string, then a list of one string (what the Python SDK sends): the same
    # plain prompt; usage prompt_tokens / completion_tokens as OpenAI reports them.
    path = vcr_cassette(
        tmp_path / "completions.yaml",
        vcr_interaction(
            COMPLETIONS,
            {"model": INSTRUCT, "prompt": "Say 'Foo' then stop.", "max_tokens": 5},
            _text_completion({"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9}),
        ),
        vcr_interaction(
            COMPLETIONS,
            {"model": INSTRUCT, "prompt": ["Say 'Foo' then stop."], "max_tokens": 5},
            _text_completion({"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9}),
        ),
    )
    got = read(path)
    assert got.errors == []
    assert [request.model for request in got.requests] == [INSTRUCT, INSTRUCT]
    assert totals(got.requests) == {"input": 7 + 7, "read": 0, "write": 0, "output": 2 + 2}
    # One prompt, one text: both requests tokenize alike.
    assert got.requests[0].input_tokens == got.requests[1].input_tokens


def test_several_prompts_in_one_completions_call_are_refused_naming_the_field(
    tmp_path: Path,
) -> None:
    # Two prompts are two completions whose usage OpenAI reports summed: no prompt stands for it.
    path = vcr_cassette(
        tmp_path / "two_prompts.yaml",
        vcr_interaction(
            COMPLETIONS,
            {"model": INSTRUCT, "prompt": ["one", "two"]},
            _text_completion({"prompt_tokens": 2, "completion_tokens": 2, "total_tokens": 4}),
        ),
    )
    got = read(path)
    assert got.requests == []
    [error] = got.errors
    assert error.field == "interactions[0].request.body.prompt"
    assert "2 prompts in one call" in error.reason


def test_openai_batch_completions_line_with_a_list_of_one_prompt(tmp_path: Path) -> None:
    # The batch reader knows the same endpoint (``/v1/completions``) and reads it alike.
    line = {
        "custom_id": "req-1",
        "method": "POST",
        "url": "/v1/completions",
        "body": {"model": INSTRUCT, "prompt": ["Say 'Foo' then stop."]},
    }
    got = read(write_jsonl(tmp_path / "batch_input.jsonl", [line]))
    assert got.errors == []
    [request] = got.requests
    assert request.request_id == "req-1"


# --- endpoints whose responses carry no usage -----------------------------------------------


@pytest.mark.parametrize(
    ("uri", "request_body", "response", "named"),
    [
        (
            "https://api.anthropic.com/v1/complete",
            {
                "model": "claude-2.1",
                "prompt": "\n\nHuman: Hi\n\nAssistant:",
                "max_tokens_to_sample": 9,
            },
            # Anthropic's Completion object: id, type, completion, stop_reason, model.
            {
                "type": "completion",
                "id": "compl_1",
                "completion": " Hello",
                "stop_reason": "stop_sequence",
                "model": "claude-2.1",
            },
            "Anthropic's legacy Text Completions (/v1/complete)",
        ),
        (
            "http://localhost:8000/generate",
            {"prompt": "Hello", "max_tokens": 8},
            {"text": ["Hello there"]},
            "vLLM's native /generate",
        ),
    ],
)
def test_a_response_without_usage_is_named_as_nothing_to_reconcile(
    tmp_path: Path,
    uri: str,
    request_body: dict[str, Any],
    response: dict[str, Any],
    named: str,
) -> None:
    path = vcr_cassette(tmp_path / "no_usage.yaml", vcr_interaction(uri, request_body, response))
    got = read(path)
    assert got.requests == []
    [error] = got.errors
    assert (error.line, error.field) == (2, "interactions[0].response.body.usage")
    assert named in error.reason
    assert "carries no usage" in error.reason


def test_a_file_with_no_model_call_says_what_it_holds(tmp_path: Path, migrated_db_url: str) -> None:
    path = tmp_path / "models_only.yaml"
    path.write_text(
        """interactions:
- request:
    body: null
    headers: {}
    method: GET
    uri: https://api.openai.com/v1/models
  response:
    body:
      string: '{"data": []}'
    headers: {}
    status:
      code: 200
      message: OK
version: 1
"""
    )
    with pytest.raises(BadInputError) as raised:
        reconcile(ReconcileRequest(log=LogInput.of_paths([path])), ContractStore(migrated_db_url))
    message = raised.value.one_line()
    assert "no readable record" in message
    assert "no request among 1 recorded call that is not a model endpoint" in message


# --- Bedrock InvokeModel bodies --------------------------------------------------------------


def _nock(path: Path, model: str, body: dict[str, Any], response: Any, headers: list[str]) -> Path:
    definition = {
        "scope": "https://bedrock-runtime.us-east-1.amazonaws.com:443",
        "method": "POST",
        "path": f"/model/{model}/invoke",
        "body": body,
        "status": 200,
        "response": response,
        "rawHeaders": ["Date", "Tue, 29 Jul 2025 03:32:15 GMT", *headers],
    }
    path.write_text(json.dumps([definition]))
    return path


TITAN_BODY = {"inputText": "User: Hello\nBot:", "textGenerationConfig": {"maxTokenCount": 50}}
# AWS's "Amazon Titan Text models" page: inputTextTokenCount, results[].tokenCount.
TITAN_RESPONSE = {
    "inputTextTokenCount": 6,
    "results": [{"tokenCount": 42, "outputText": "\nHi.", "completionReason": "FINISH"}],
}


def test_titan_text_body_and_its_own_counts(tmp_path: Path) -> None:
    path = _nock(
        tmp_path / "titan.json", "amazon.titan-text-express-v1", TITAN_BODY, TITAN_RESPONSE, []
    )
    got = read(path)
    assert got.errors == []
    [request] = got.requests
    assert request.model == "amazon.titan-text-express-v1"
    assert totals(got.requests) == {"input": 6, "read": 0, "write": 0, "output": 42}


def test_titan_text_counts_from_bedrock_headers(tmp_path: Path) -> None:
    # Without the body's counts, Bedrock's X-Amzn-Bedrock-*-Token-Count headers say them.
    headers = ["X-Amzn-Bedrock-Input-Token-Count", "6", "X-Amzn-Bedrock-Output-Token-Count", "42"]
    response = {"results": [{"outputText": "\nHi.", "completionReason": "FINISH"}]}
    path = _nock(
        tmp_path / "titan.json", "amazon.titan-text-lite-v1", TITAN_BODY, response, headers
    )
    got = read(path)
    assert got.errors == []
    assert totals(got.requests) == {"input": 6, "read": 0, "write": 0, "output": 42}


def test_jamba_messages_body_with_openai_usage(tmp_path: Path) -> None:
    body = {"messages": [{"role": "user", "content": "Hello, how are you?"}], "max_tokens": 100}
    response = {
        "id": "chatcmpl-1",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi"}}],
        "usage": {"prompt_tokens": 16, "completion_tokens": 19, "total_tokens": 35},
        "model": "jamba-1.5-mini",
    }
    path = _nock(tmp_path / "jamba.json", "ai21.jamba-1-5-mini-v1%3A0", body, response, [])
    got = read(path)
    assert got.errors == []
    [request] = got.requests
    assert request.model == "ai21.jamba-1-5-mini-v1:0"
    assert totals(got.requests) == {"input": 16, "read": 0, "write": 0, "output": 19}


def test_cohere_command_text_prompt_with_header_counts(tmp_path: Path) -> None:
    body = {"prompt": "Hello, how are you?", "max_tokens": 100, "temperature": 0.7}
    response = {"id": "g1", "generations": [{"id": "g2", "text": " Hi!"}], "prompt": body["prompt"]}
    headers = ["X-Amzn-Bedrock-Input-Token-Count", "6", "X-Amzn-Bedrock-Output-Token-Count", "43"]
    path = _nock(tmp_path / "cohere.json", "cohere.command-text-v14", body, response, headers)
    got = read(path)
    assert got.errors == []
    assert totals(got.requests) == {"input": 6, "read": 0, "write": 0, "output": 43}


# --- close matches keep to the vendor --------------------------------------------------------


def test_model_vendor_reads_the_bedrock_prefix_only() -> None:
    assert model_vendor("mistral.mistral-7b-instruct-v0:2") == "mistral"
    assert model_vendor("us.meta.llama3-70b-instruct-v1:0") == "meta"
    assert model_vendor("us-gov.anthropic.claude-3-haiku-20240307-v1:0") == "anthropic"
    assert model_vendor("gpt-3.5-turbo") is None  # the dot is a version's


def test_close_matches_list_no_other_vendor() -> None:
    names = [
        "regional.meta.llama3-70b-instruct-v1:0",
        "meta.llama3-8b-instruct-v1:0",
        "mistral.mixtral-8x7b-instruct-v0:1",
    ]
    assert close_models("mistral.mistral-7b-instruct-v0:2", names) == [
        "mistral.mixtral-8x7b-instruct-v0:1"
    ]
    assert close_models("mistral.mistral-7b-instruct-v0:2", names[:2]) == []
    # An id naming no vendor: its family first, then any close name.
    assert close_models("gpt-4o-minii", ["gpt-4o-mini", "o4-mini"])[0] == "gpt-4o-mini"


def test_stored_bedrock_contracts_suggest_no_meta_model_for_mistral(migrated_db_url: str) -> None:
    # A Mistral id on Bedrock the catalog does not store (Mistral 7B is stored since
    # contracts-v16): its close matches are Mistral's, never Meta's Llama ids.
    with pytest.raises(UnknownContractError) as raised:
        ContractStore(migrated_db_url).as_of(
            "bedrock", "mistral.mistral-large-2411-v1:0", dt.date(2025, 7, 18)
        )
    assert raised.value.close_matches
    assert not any(
        ".meta." in name or name.startswith("meta.") for name in raised.value.close_matches
    )
    assert "meta." not in raised.value.message


# --- cache tokens below the minimum ------------------------------------------------------


def test_cache_tokens_on_a_prompt_below_the_minimum_are_contradictory(
    tmp_path: Path, migrated_db_url: str
) -> None:
    # 107 input tokens (100 new + 5 written + 2 read), far below any Anthropic minimum
    # (contracts: 1,024 or 2,048 tokens for Claude 3.5 Haiku): no prefix could be cached.
    record = {
        "timestamp": "2025-03-01T10:00:00Z",
        "provider": "anthropic",
        "model": "claude-3-5-haiku-20241022",
        "request": {
            "model": "claude-3-5-haiku-20241022",
            "max_tokens": 10,
            "messages": [{"role": "user", "content": "Hello!"}],
        },
        "observed": {
            "input_tokens": 107,
            "cache_read_tokens": 2,
            "cache_write_tokens": 5,
            "output_tokens": 3,
        },
    }
    path = write_jsonl(tmp_path / "edited.jsonl", [record])
    store = ContractStore(migrated_db_url)
    day = dt.date(2025, 3, 1)
    minimum = store.as_of("anthropic", "claude-3-5-haiku-20241022", day).min_cacheable_tokens
    assert minimum > 107
    with pytest.raises(BadInputError) as raised:
        reconcile(ReconcileRequest(log=LogInput.of_paths([path])), store)
    message = raised.value.one_line()
    assert "1 request(s) report contradictory usage" in message
    assert f"{path}:1: cache read 2 + write 5 reported on a prompt of 107 input tokens" in message
    assert f"min_cacheable_tokens {minimum}" in message


def test_a_fill_in_the_middle_completion_is_marked_incomplete(tmp_path: Path) -> None:
    # ``suffix`` is text the provider places after the prompt in its own template: the prompt
    # alone is not what was counted, so the request is approximate, fitted to its usage.
    path = vcr_cassette(
        tmp_path / "fim.yaml",
        vcr_interaction(
            "https://api.mistral.ai/v1/fim/completions",
            {"model": "codestral-latest", "prompt": "def add(a, b):", "suffix": "    return c"},
            _text_completion({"prompt_tokens": 12, "completion_tokens": 6, "total_tokens": 18}),
        ),
    )
    got = read(path)
    assert got.errors == []
    [request] = got.requests
    assert request.prompt_complete is False
    assert totals(got.requests)["input"] == 12
