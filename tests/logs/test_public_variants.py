"""Hand-written minimal recordings of variants found in public projects' cassettes (the
projects are named in docs/log-formats.md): one interaction a JSON file as the Datadog APM
test agent's proxy records it, vcrpy 4's httpx responses (``content``, ``status_code``),
Gemini parts in the proto field names (``function_call``), and Azure OpenAI requests whose
body names another model than the deployment serves.

Each expected figure is the usage field written into the recording, summed by the
provider's documented rule (docs/log-formats.md, "Usage conventions"), with the arithmetic
beside it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tests.logs.helpers import read, totals
from tests.logs.test_dialect_variants import chat_response

AZURE_URL = (
    "https://example-resource.openai.azure.com/openai/deployments/gpt-4.1-mini"
    "/chat/completions?api-version=2024-12-01-preview"
)


def chat_usage(prompt: int, cached: int, completion: int, model: str | None) -> dict[str, Any]:
    body = chat_response(prompt, cached, completion)
    if model is None:
        del body["model"]
    else:
        body["model"] = model
    return body


def single_interaction(url: str, request: dict[str, Any], response: dict[str, Any]) -> str:
    """One {request, response} a file, bodies as JSON text; the response says gzip while its
    stored body is already plain text (the proxy decodes before it writes)."""
    return json.dumps(
        {
            "request": {
                "method": "POST",
                "url": url,
                "headers": {"Content-Type": "application/json"},
                "body": json.dumps(request),
            },
            "response": {
                "status": {"code": 200, "message": "OK"},
                "headers": {
                    "Content-Encoding": "gzip",
                    "Content-Type": "application/json",
                    "Date": "Fri, 17 Oct 2025 18:00:13 GMT",
                },
                "body": json.dumps(response),
            },
        },
        indent=2,
    )


def test_one_interaction_a_json_file(tmp_path: Path) -> None:
    path = tmp_path / "anthropic_v1_messages_post_1.json"
    request = {
        "model": "claude-sonnet-4-20250514",
        "max_tokens": 10,
        "messages": [{"role": "user", "content": "Hello"}],
    }
    response = {
        "id": "msg_1",
        "type": "message",
        "model": "claude-sonnet-4-20250514",
        "content": [{"type": "text", "text": "Hi"}],
        "usage": {
            "input_tokens": 22,
            "cache_creation_input_tokens": 100,
            "cache_read_input_tokens": 2_000,
            "output_tokens": 15,
        },
    }
    path.write_text(single_interaction("https://api.anthropic.com/v1/messages", request, response))
    result = read(path)
    assert (result.format, result.errors) == ("vcr", [])
    (only,) = result.requests
    assert (only.line, only.model, only.provider) == (1, "claude-sonnet-4-20250514", "anthropic")
    # Anthropic's input_tokens leaves out the cache: input = 22 + 100 + 2,000 = 2,122
    assert totals(result.requests) == {"input": 2_122, "read": 2_000, "write": 100, "output": 15}


def test_azure_serves_the_deployment_not_the_body_model(tmp_path: Path) -> None:
    # The SDK sent "gpt-3.5-turbo"; Azure ran the deployment, and the response names the
    # model it served: that one is priced.
    body = {"model": "gpt-3.5-turbo", "messages": [{"role": "user", "content": "Hello"}]}
    served = tmp_path / "served.json"
    served.write_text(single_interaction(AZURE_URL, body, chat_usage(24, 0, 342, "gpt-4.1-mini")))
    result = read(served)
    assert (result.errors, [r.model for r in result.requests]) == ([], ["gpt-4.1-mini"])
    assert result.requests[0].provider == "azure"
    # A response without a model: the deployment's name stands for it.
    bare = tmp_path / "bare.json"
    bare.write_text(single_interaction(AZURE_URL, body, chat_usage(24, 0, 342, None)))
    assert [r.model for r in read(bare).requests] == ["gpt-4.1-mini"]
    # prompt_tokens includes the cached ones: input 24, none read
    assert totals(read(bare).requests) == {"input": 24, "read": 0, "write": 0, "output": 342}


def test_vcrpy4_httpx_responses(tmp_path: Path) -> None:
    # vcrpy 4's httpx stubs: response {content, headers, http_version, status_code}.
    system = {"role": "system", "content": "You are a careful engineer. " * 300}

    def interaction(question: str, usage: dict[str, Any], code: int) -> dict[str, Any]:
        request = {"model": "gpt-4o", "messages": [system, {"role": "user", "content": question}]}
        return {
            "request": {
                "body": json.dumps(request),
                "headers": {"content-type": ["application/json"]},
                "method": "POST",
                "uri": "https://api.openai.com/v1/chat/completions",
            },
            "response": {
                "content": json.dumps(usage),
                "headers": {"Date": ["Tue, 24 Jun 2025 03:48:37 GMT"]},
                "http_version": "HTTP/1.1",
                "status_code": code,
            },
        }

    cassette = {
        "interactions": [
            interaction("First?", chat_usage(2_621, 0, 100, "gpt-4o-2024-08-06"), 200),
            interaction("Second?", chat_usage(2_620, 2_560, 100, "gpt-4o-2024-08-06"), 200),
            interaction("Third?", {"error": {"message": "rate limited"}}, 429),  # not billed
        ],
        "version": 1,
    }
    path = tmp_path / "httpx.yaml"
    path.write_text(yaml.safe_dump(cassette, sort_keys=False))
    result = read(path)
    assert (result.format, result.errors) == ("vcr", [])
    assert len(result.requests) == 2
    # input 2,621 + 2,620 = 5,241; read 0 + 2,560; output 100 + 100
    assert totals(result.requests) == {"input": 5_241, "read": 2_560, "write": 0, "output": 200}


def test_vcrpy4_status_code_must_be_a_number(tmp_path: Path) -> None:
    cassette = {
        "interactions": [
            {
                "request": {"body": "{}", "method": "POST", "uri": "https://api.openai.com/v1/x"},
                "response": {"content": "{}", "status_code": "fine"},
            }
        ]
    }
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(cassette))
    result = read(path)
    assert [error.field for error in result.errors] == ["interactions[0].response.status_code"]


GEMINI = "https://generativelanguage.googleapis.com/v1beta"


def vcr_interaction(uri: str, request: dict[str, Any], response: dict[str, Any]) -> Any:
    """One vcrpy interaction: JSON request body, ``{string}`` response body, status 200."""
    return {
        "request": {"body": json.dumps(request), "method": "POST", "uri": uri},
        "response": {"body": {"string": json.dumps(response)}, "status": {"code": 200}},
    }


def test_gemini_parts_in_proto_field_names(tmp_path: Path) -> None:
    # The REST API accepts a part's proto field names too: function_call, function_response.
    url = f"{GEMINI}/models/gemini-2.5-flash:generateContent"
    call = {"function_call": {"name": "pelican_name", "args": {}, "id": "call_1"}}
    answer = {"function_response": {"name": "pelican_name", "response": {"output": "Charles"}}}
    turns = [
        [{"role": "user", "parts": [{"text": "Two names for a pet pelican"}]}],
        [
            {"role": "user", "parts": [{"text": "Two names for a pet pelican"}]},
            {"role": "model", "parts": [call]},
            {"role": "user", "parts": [answer]},
        ],
    ]
    usages = [(32, 12, 42), (105, 13, 0)]  # promptTokenCount, candidates, thoughts

    def interaction(contents: list[Any], usage: tuple[int, int, int]) -> dict[str, Any]:
        prompt, candidates, thoughts = usage
        metadata = {"promptTokenCount": prompt, "candidatesTokenCount": candidates}
        if thoughts:
            metadata["thoughtsTokenCount"] = thoughts
        response = {
            "candidates": [{"content": {"role": "model", "parts": [call]}}],
            "usageMetadata": metadata,
            "modelVersion": "gemini-2.5-flash",
        }
        return vcr_interaction(url, {"contents": contents}, response)

    cassette = {"interactions": [interaction(c, u) for c, u in zip(turns, usages, strict=True)]}
    path = tmp_path / "gemini.yaml"
    path.write_text(yaml.safe_dump(cassette))
    result = read(path)
    assert (result.errors, len(result.requests)) == ([], 2)
    # input 32 + 105 = 137; output counts the thoughts: (12 + 42) + 13 = 67
    assert totals(result.requests) == {"input": 137, "read": 0, "write": 0, "output": 67}


def test_gemini_part_of_no_known_kind_is_named(tmp_path: Path) -> None:
    url = f"{GEMINI}/models/gemini-2.5-flash:generateContent"
    body = {"contents": [{"role": "user", "parts": [{"mystery": 1}]}]}
    response = {"usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 1}}
    cassette = {"interactions": [vcr_interaction(url, body, response)]}
    path = tmp_path / "odd.yaml"
    path.write_text(yaml.safe_dump(cassette))
    result = read(path)
    assert [error.field for error in result.errors] == ["contents[0].parts[0]"]


def test_gemini_cached_content_in_proto_field_names(tmp_path: Path) -> None:
    # A cachedContents creation, then a request naming it as ``cached_content`` (the proto
    # field name the REST API accepts beside ``cachedContent``).
    manual = "The manual says: " + "turn the knob slowly. " * 200
    creation = vcr_interaction(
        f"{GEMINI}/cachedContents",
        {
            "model": "models/gemini-2.5-flash",
            "system_instruction": {"parts": [{"text": "Answer from the manual."}]},
            "contents": [{"role": "user", "parts": [{"text": manual}]}],
            "ttl": "3600s",
        },
        {"name": "cachedContents/abc123", "usageMetadata": {"totalTokenCount": 5_000}},
    )
    use = vcr_interaction(
        f"{GEMINI}/models/gemini-2.5-flash:generateContent",
        {
            "cached_content": "cachedContents/abc123",
            "contents": [{"role": "user", "parts": [{"text": "Page 3?"}]}],
        },
        {
            "usageMetadata": {
                "promptTokenCount": 5_100,
                "cachedContentTokenCount": 5_000,
                "candidatesTokenCount": 30,
                "thoughtsTokenCount": 100,
            }
        },
    )
    path = tmp_path / "cached.yaml"
    path.write_text(yaml.safe_dump({"interactions": [creation, use]}))
    result = read(path)
    assert result.errors == []
    using = [r for r in result.requests if r.observed and r.observed.cache_read_tokens]
    (request,) = using
    # The cache's content is put in front with a breakpoint at its end, under its TTL (1h).
    assert [b.ttl for b in request.breakpoints] == ["1h"]
    assert request.prompt_complete
    # input 5,100 (includes the 5,000 read); output 30 + 100 thoughts
    assert totals([request]) == {"input": 5_100, "read": 5_000, "write": 0, "output": 130}


def test_token_counting_calls_are_not_model_calls(tmp_path: Path) -> None:
    # A client that counts tokens before it sends (Anthropic ``/v1/messages/count_tokens``,
    # OpenAI ``/v1/responses/input_tokens``, Gemini ``:countTokens``) records calls whose
    # bodies look like a model request; they return a count, not a usage, so only the real
    # call is a record. Its usage written here: input 3 + cache read 1,111, output 414.
    anthropic = "https://api.anthropic.com/v1/messages"
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 64,
        "system": "You are a helpful assistant.",
        "messages": [{"role": "user", "content": "Please explain Python. " * 300}],
    }
    counting = {k: v for k, v in body.items() if k != "max_tokens"}
    interactions = [
        vcr_interaction(f"{anthropic}/count_tokens?beta=true", counting, {"input_tokens": 1114}),
        vcr_interaction(
            "https://api.openai.com/v1/responses/input_tokens",
            {"model": "gpt-5", "input": "Please explain Python."},
            {"object": "response.input_tokens", "input_tokens": 12},
        ),
        vcr_interaction(
            f"{GEMINI}/models/gemini-2.5-flash:countTokens",
            {"contents": [{"role": "user", "parts": [{"text": "Please explain Python."}]}]},
            {"totalTokens": 5},
        ),
        vcr_interaction(
            f"{anthropic}?beta=true",
            body,
            {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5-20250929",
                "content": [{"type": "text", "text": "Python is a language."}],
                "usage": {
                    "input_tokens": 3,
                    "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": 1_111,
                    "output_tokens": 414,
                },
            },
        ),
    ]
    path = tmp_path / "counted.yaml"
    path.write_text(yaml.safe_dump({"interactions": interactions, "version": 1}))
    result = read(path)
    assert result.errors == []
    (request,) = result.requests
    assert request.line > 1  # the fourth interaction, not the first
    # input 3 + 0 + 1,111 = 1,114 (the count the first call returned); output 414
    assert totals(result.requests) == {"input": 1_114, "read": 1_111, "write": 0, "output": 414}
    assert result.skipped == {"recorded call that is not a model endpoint": 3}
