"""What the ninth held-out set (Java, .NET, PHP, Ruby recordings) showed missed.

Endpoints: Amazon
Bedrock serves OpenAI's Chat Completions and Responses and Anthropic's Messages beside its own
Converse and InvokeModel, on bedrock-runtime (``/openai/v1/...``, ``/anthropic/v1/messages``)
and on its compatible-APIs host Mantle (``bedrock-mantle.<region>.api.aws``: ``/v1/...``,
``/openai/v1/...``, ``/anthropic/v1/messages``; AWS's "Endpoints supported by Amazon Bedrock",
docs/log-formats.md "Recorded HTTP"). Before, a bedrock-runtime call off ``/model/`` was
skipped as no model endpoint, and a Mantle call was taken for Anthropic's own API (or for no
provider). Cassettes hand-built here in vcrpy's layout; totals are the usage fields written
here, added by hand.

A dialect: azure-core-test's session records (the Azure SDK for Java before the test proxy,
``{"networkCallRecords": [{Method, Uri, Headers, Response, Exception}], "variables": []}``,
its ``NetworkCallRecord`` model: ``Response`` one map of strings holding the response's
headers, ``StatusCode`` and ``Body``). It keeps no request body, so a model call in it is a bad
record that says so; before, the file was "not a log format cachecast reads".

An API: Gemini's Interactions API (``POST /v1beta/interactions``), read as the generateContent
call it stands for; its ``usage`` fields are the generateContent counts under other names
(``total_input_tokens`` the prompt, ``total_cached_tokens`` the cached part of it, thought and
tool-use tokens apart: cachecast.logs.http.interactions). Before, every such call was skipped
as no model endpoint. Totals below are worked by hand from the usage written here with
generateContent's rules (docs/log-formats.md, "Usage conventions": input = prompt + tool-use
prompt, output = output + thoughts).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cachecast.logs.formats import detect_format
from cachecast.logs.http.endpoints import model_endpoint
from tests.logs.helpers import read, totals, vcr_cassette, vcr_interaction

RUNTIME = "https://bedrock-runtime.us-east-1.amazonaws.com"
MANTLE = "https://bedrock-mantle.eu-west-1.api.aws"


def chat_reply(model: str, prompt: int, cached: int, completion: int) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_787_666_509,
        "model": model,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached},
        },
    }


def messages_reply(fresh: int, written: int, read_: int, output: int) -> dict[str, Any]:
    return {
        "id": "msg_bdrk_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-haiku-4-5-20251001",
        "content": [{"type": "text", "text": "ok"}],
        "stop_reason": "end_turn",
        "usage": {
            "input_tokens": fresh,
            "cache_creation_input_tokens": written,
            "cache_read_input_tokens": read_,
            "output_tokens": output,
        },
    }


def responses_reply(model: str, prompt: int, cached: int, output: int) -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 1_787_666_557,
        "status": "completed",
        "model": model,
        "output": [
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "ok", "annotations": []}],
            }
        ],
        "usage": {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": output,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt + output,
        },
    }


@pytest.mark.parametrize(
    ("url", "api"),
    [
        (f"{RUNTIME}/openai/v1/chat/completions", "chat"),
        (f"{RUNTIME}/openai/v1/responses", "responses"),
        (f"{RUNTIME}/anthropic/v1/messages", "anthropic"),
        (f"{MANTLE}/v1/chat/completions", "chat"),
        (f"{MANTLE}/openai/v1/responses", "responses"),
        (f"{MANTLE}/anthropic/v1/messages", "anthropic"),
        (f"{RUNTIME}/model/anthropic.claude-3-haiku-20240307-v1:0/converse", "bedrock-converse"),
    ],
)
def test_bedrock_serves_openai_and_anthropic_apis_under_provider_bedrock(
    url: str, api: str
) -> None:
    endpoint = model_endpoint("POST", url)
    assert endpoint is not None
    assert (endpoint.api, endpoint.provider) == (api, "bedrock")


def test_a_bedrock_call_that_is_no_model_call_is_still_skipped() -> None:
    assert model_endpoint("POST", f"{RUNTIME}/guardrail/g1/version/1/apply") is None
    assert model_endpoint("POST", f"{RUNTIME}/model/m1/count-tokens") is None
    assert model_endpoint("GET", f"{MANTLE}/v1/models") is None


def test_a_cassette_of_bedrock_compatible_api_calls_is_read_whole(tmp_path: Path) -> None:
    system = [{"type": "text", "text": "Be terse.", "cache_control": {"type": "ephemeral"}}]
    path = vcr_cassette(
        tmp_path / "bedrock_compatible.yaml",
        vcr_interaction(
            f"{RUNTIME}/openai/v1/chat/completions",
            {"model": "openai.gpt-oss-120b", "messages": [{"role": "user", "content": "Hi"}]},
            chat_reply("openai.gpt-oss-120b", 86, 0, 1_066),
        ),
        vcr_interaction(
            f"{MANTLE}/anthropic/v1/messages",
            {
                "model": "anthropic.claude-haiku-4-5",
                "max_tokens": 100,
                "system": system,
                "messages": [{"role": "user", "content": "Hi"}],
            },
            messages_reply(26, 1_500, 0, 29),
        ),
        vcr_interaction(
            f"{MANTLE}/openai/v1/responses",
            {"model": "google.gemma-4-31b", "input": "Hi", "instructions": "Be terse."},
            responses_reply("google.gemma-4-31b", 49, 0, 568),
        ),
    )
    result = read(path)
    assert result.errors == []
    assert result.skipped == {}
    assert [(r.provider, r.logged_model) for r in result.requests] == [
        ("bedrock", "openai.gpt-oss-120b"),
        ("bedrock", "anthropic.claude-haiku-4-5"),
        ("bedrock", "google.gemma-4-31b"),
    ]
    # By hand: input 86 + (26 + 1,500 written) + 49; written 1,500; output 1,066 + 29 + 568.
    assert totals(result.requests) == {
        "input": 86 + 26 + 1_500 + 49,
        "read": 0,
        "write": 1_500,
        "output": 1_066 + 29 + 568,
    }


def network_call(method: str, uri: str, status: str, body: str | None) -> dict[str, Any]:
    response: dict[str, str] = {
        "StatusCode": status,
        "Date": "Fri, 28 Apr 2023 17:39:45 GMT",
        "Content-Type": "application/json",
    }
    if body is not None:
        response["Body"] = body
    return {
        "Method": method,
        "Uri": uri,
        "Headers": {"User-Agent": "azsdk-java-azure-ai-openai/1.0.0-beta.1"},
        "Response": response,
        "Exception": None,
    }


def write_session(path: Path, calls: list[dict[str, Any]]) -> Path:
    record = {"networkCallRecords": calls, "variables": []}
    path.write_text(json.dumps(record, indent=2), encoding="utf-8")
    return path


AZURE_CHAT = (
    "https://example.openai.azure.com/openai/deployments/gpt-35-turbo/chat/completions"
    "?api-version=2023-03-15-preview"
)


def test_an_azure_core_test_session_record_is_read_and_its_model_call_named(
    tmp_path: Path,
) -> None:
    reply = json.dumps(chat_reply("gpt-35-turbo", 65, 0, 224))
    path = write_session(
        tmp_path / "OpenAIClientTest.getChatCompletions[1].json",
        [
            network_call("GET", "https://example.openai.azure.com/openai/models", "200", "{}"),
            network_call("POST", AZURE_CHAT, "200", reply),
        ],
    )
    assert detect_format(path)[0].name == "azure-core-test"
    result = read(path)
    assert result.format == "azure-core-test"
    assert result.requests == []
    assert result.skipped == {"recorded call that is not a model endpoint": 1}
    [error] = result.errors
    assert error.location.line == 2
    assert error.location.field == "networkCallRecords[1]"
    assert "no request body" in str(error)


def test_an_azure_core_test_status_that_is_no_status_is_named(tmp_path: Path) -> None:
    path = write_session(
        tmp_path / "bad.json",
        [network_call("GET", "https://example.openai.azure.com/openai/models", "OK", None)],
    )
    [error] = read(path).errors
    assert error.location.field == "networkCallRecords[0].Response.StatusCode"


INTERACTIONS = "https://generativelanguage.googleapis.com/v1beta/interactions"


def interaction_reply(
    prompt: int, cached: int, output: int, thoughts: int, tool_use: int
) -> dict[str, Any]:
    return {
        "status": "completed",
        "object": "interaction",
        "model": "gemini-3-flash-preview",
        "steps": [{"type": "model_output", "content": [{"type": "text", "text": "It is May."}]}],
        "usage": {
            "total_input_tokens": prompt,
            "total_cached_tokens": cached,
            "total_output_tokens": output,
            "total_thought_tokens": thoughts,
            "total_tool_use_tokens": tool_use,
            "total_tokens": prompt + output + thoughts + tool_use,
        },
    }


def test_gemini_interactions_calls_are_read_as_generate_content(tmp_path: Path) -> None:
    tools = [{"type": "function", "name": "today", "description": "The date"}]
    first = {
        "model": "gemini-3-flash-preview",
        "system_instruction": "Be terse.",
        "input": [
            {"type": "user_input", "content": [{"type": "text", "text": "What month is it?"}]},
            {"type": "function_call", "id": "c1", "name": "today", "arguments": {}},
            {"type": "function_result", "call_id": "c1", "name": "today", "result": "May"},
        ],
        "tools": tools,
        "store": False,
    }
    follow_up = {
        "model": "gemini-3-flash-preview",
        "previous_interaction_id": "v1_abc",
        "input": "And the year?",
    }
    path = vcr_cassette(
        tmp_path / "interactions.yaml",
        vcr_interaction(INTERACTIONS, first, interaction_reply(1_300, 1_024, 20, 30, 0)),
        vcr_interaction(INTERACTIONS, follow_up, interaction_reply(1_500, 1_280, 5, 0, 10)),
    )
    result = read(path)
    assert result.errors == []
    assert [(r.provider, r.logged_model) for r in result.requests] == [
        ("google", "gemini-3-flash-preview"),
        ("google", "gemini-3-flash-preview"),
    ]
    # The follow-up's earlier turns are stored on the server: its prompt is not all here.
    assert [r.prompt_complete for r in result.requests] == [True, False]
    # By hand: input (1,300 + 0) + (1,500 + 10); reads 1,024 + 1,280; output (20 + 30) + 5.
    assert totals(result.requests) == {
        "input": 1_300 + 1_500 + 10,
        "read": 1_024 + 1_280,
        "write": 0,
        "output": 20 + 30 + 5,
    }


def test_an_interactions_path_elsewhere_is_no_gemini_call() -> None:
    assert model_endpoint("POST", INTERACTIONS) is not None
    assert model_endpoint("POST", "https://api.example.com/v1/interactions") is None
