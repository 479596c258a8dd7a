"""Dialects and request shapes of the fifth 2026 pseudo-held-out set (non-Python recorders:
Rust's httpmock, Ruby VCR cassettes of the Gemini API and of Anthropic), each hand-built on
the format's documented definition (docs/log-formats.md). Every expected count is the usage
field written into the file, added up by hand in the comments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cachecast.logs.formats import detect_format
from tests.logs.helpers import read, totals

# --- httpmock (Rust): YAML documents of ``when`` / ``then`` (httpmock.rs, "Record and
# Playback"; the static mock definitions of the standalone server) ---------------------------

SYSTEM = "You are terse. " * 120


def _anthropic_body(question: str) -> str:
    return json.dumps(
        {
            "model": "claude-sonnet-4-5",
            "max_tokens": 64,
            "system": [{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": question}],
        }
    )


def _anthropic_reply(written: int, read_tokens: int) -> str:
    return json.dumps(
        {
            "id": "msg_x",
            "type": "message",
            "model": "claude-sonnet-4-5-20250929",
            "content": [{"type": "text", "text": "ok"}],
            "usage": {
                "input_tokens": 9,
                "cache_creation_input_tokens": written,
                "cache_read_input_tokens": read_tokens,
                "output_tokens": 4,
            },
        }
    )


def _quoted(text: str) -> str:
    """A YAML single-quoted scalar."""
    return "'" + text.replace("'", "''") + "'"


def _mock(path: str, body: str, reply: str, *, extra_when: str = "", status: int = 200) -> str:
    return (
        "when:\n"
        f"  path: {path}\n"
        "  method: POST\n"
        "  query_param: []\n"
        "  header:\n"
        "  - name: content-type\n"
        "    value: application/json\n"
        "  - name: anthropic-version\n"
        "    value: 2023-06-01\n"  # unquoted: YAML reads a date
        f"{extra_when}"
        f"  body: {_quoted(body)}\n"
        "then:\n"
        f"  status: {status}\n"
        "  header:\n"
        "  - name: content-type\n"
        "    value: application/json\n"
        f"  body: {_quoted(reply)}\n"
    )


def test_httpmock_documents_are_read_as_exchanges(tmp_path: Path) -> None:
    first = _mock("/v1/messages", _anthropic_body("One?"), _anthropic_reply(1500, 0))
    second = _mock("/v1/messages", _anthropic_body("Two?"), _anthropic_reply(0, 1500))
    path = tmp_path / "multi_turn.yaml"
    path.write_text(first + "---\n" + second, encoding="utf-8")
    result = read(path)
    assert (result.format, result.errors) == ("httpmock", [])
    # input: (9 + 1,500 + 0) + (9 + 0 + 1,500) = 3,018; output 4 + 4
    assert totals(result.requests) == {"input": 3018, "read": 1500, "write": 1500, "output": 8}
    one, two = result.requests
    assert (one.provider, one.model) == ("anthropic", "claude-sonnet-4-5")
    # the first mock's ``when:`` is line 1; the first has 16 lines, then ``---`` on 17
    assert (one.line, two.line) == (1, 18)
    assert one.timestamp == 0.0 and two.timestamp == 0.0  # a recording states no time


def test_httpmock_without_a_host_takes_the_provider_from_the_model(tmp_path: Path) -> None:
    body = json.dumps(
        {"model": "deepseek-chat", "messages": [{"role": "user", "content": "Hello there"}]}
    )
    reply = json.dumps(
        {
            "id": "d1",
            "object": "chat.completion",
            "created": 0,  # scrubbed by the recorder: no time
            "model": "deepseek-chat",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi"}}],
            "usage": {
                "prompt_tokens": 300,
                "completion_tokens": 3,
                "prompt_cache_hit_tokens": 256,
                "prompt_cache_miss_tokens": 44,
            },
        }
    )
    path = tmp_path / "deepseek.yaml"
    path.write_text(_mock("/chat/completions", body, reply), encoding="utf-8")
    result = read(path)
    assert result.errors == []
    (one,) = result.requests
    assert (one.provider, one.model) == ("deepseek", "deepseek-chat")
    # DeepSeek: prompt_tokens 300 = hit 256 + miss 44
    assert totals(result.requests) == {"input": 300, "read": 256, "write": 0, "output": 3}


def test_httpmock_streamed_gemini_with_host_and_query(tmp_path: Path) -> None:
    body = json.dumps({"contents": [{"role": "user", "parts": [{"text": "Hi"}]}]})
    event = {
        "candidates": [{"content": {"role": "model", "parts": [{"text": "Hello"}]}}],
        "usageMetadata": {
            "promptTokenCount": 1300,
            "cachedContentTokenCount": 1024,
            "candidatesTokenCount": 2,
            "totalTokenCount": 1302,
        },
    }
    stream = "data: " + json.dumps(event) + "\r\n\r\n"
    text = (
        "when:\n"
        "  host: generativelanguage.googleapis.com\n"
        "  path: /v1beta/models/gemini-2.5-flash:streamGenerateContent\n"
        "  method: POST\n"
        "  query_param:\n"
        "  - name: alt\n"
        "    value: sse\n"
        "  body: " + _quoted(body) + "\n"
        "then:\n"
        "  status: 200\n"
        "  header:\n"
        "  - name: content-type\n"
        "    value: text/event-stream\n"
        "  - name: date\n"
        "    value: Wed, 23 Sep 2026 06:58:20 GMT\n"
        "  body: " + json.dumps(stream) + "\n"  # a double-quoted YAML scalar
    )
    path = tmp_path / "gemini.yaml"
    path.write_text(text, encoding="utf-8")
    result = read(path)
    assert result.errors == []
    (one,) = result.requests
    assert (one.provider, one.model) == ("google", "gemini-2.5-flash")
    # promptTokenCount 1,300 includes the 1,024 cached; candidates 2
    assert totals(result.requests) == {"input": 1300, "read": 1024, "write": 0, "output": 2}
    assert one.timestamp == 1790146700.0  # the date header: 2026-09-23 06:58:20 UTC


def test_httpmock_bad_documents_name_their_line_and_field(tmp_path: Path) -> None:
    good = _mock("/v1/messages", _anthropic_body("One?"), _anthropic_reply(0, 0))
    no_path = "when:\n  method: POST\n  body: '{}'\nthen:\n  status: 200\n"
    path = tmp_path / "bad.yaml"
    path.write_text(good + "---\n" + no_path, encoding="utf-8")
    result = read(path)
    assert len(result.requests) == 1
    (error,) = result.errors
    assert (error.line, error.field) == (18, "documents[1].when.path")


def test_httpmock_non_model_calls_and_failures_are_skipped(tmp_path: Path) -> None:
    delete = (
        "when:\n  path: /v1beta/cachedContents/abc\n  method: DELETE\n  body: null\n"
        "then:\n  status: 200\n  body: '{}'\n"
    )
    failed = _mock("/v1/messages", _anthropic_body("One?"), '{"type":"error"}', status=529)
    path = tmp_path / "skips.yaml"
    path.write_text(delete + "---\n" + failed, encoding="utf-8")
    result = read(path)
    assert (result.requests, result.errors) == ([], [])
    assert result.skipped == {
        "recorded call that is not a model endpoint": 1,
        "HTTP 529 response (not billed)": 1,
    }


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        ("when:\n  path: /v1/messages\n  method: POST\n", "httpmock"),
        ("---\nwhen:\n  method: POST\n  path: /x\n", "httpmock"),
        ("interactions:\n- request:\n    method: POST\n", "vcr"),
    ],
)
def test_httpmock_detection(tmp_path: Path, head: str, expected: str) -> None:
    path = tmp_path / "head.yaml"
    path.write_text(head, encoding="utf-8")
    fmt, _ = detect_format(path)
    assert fmt.name == expected


# --- Gemini bodies with one-object lists (a Ruby client's ``contents`` and ``parts`` sent as
# single objects, which the API answered as lists of one) ------------------------------------


def _ruby_vcr_gemini(path: Path, body: dict[str, object]) -> Path:
    reply = {
        "candidates": [{"content": {"role": "model", "parts": [{"text": "42"}]}}],
        "usageMetadata": {"promptTokenCount": 61, "candidatesTokenCount": 1},
    }
    text = (
        "---\nhttp_interactions:\n- request:\n    method: post\n"
        "    uri: https://generativelanguage.googleapis.com/v1beta/models/gemini-1.5-flash:"
        "generateContent?key=<GEMINI_API_KEY>\n"
        "    body:\n      encoding: UTF-8\n      string: " + _quoted(json.dumps(body)) + "\n"
        "    headers:\n      Content-Type:\n      - application/json\n"
        "  response:\n    status:\n      code: 200\n      message: OK\n"
        "    headers:\n      Date:\n      - Wed, 01 May 2024 23:15:29 GMT\n"
        "    body:\n      encoding: UTF-8\n      string: " + _quoted(json.dumps(reply)) + "\n"
        "  recorded_at: Wed, 01 May 2024 23:15:29 GMT\nrecorded_with: VCR 6.2.0\n"
    )
    path.write_text(text, encoding="utf-8")
    return path


def test_gemini_one_object_contents_and_parts_read_as_lists_of_one(tmp_path: Path) -> None:
    question = "What is the meaning of life, the universe, and everything?"
    single = {
        "systemInstruction": {"parts": {"text": "Answer with a number."}},
        "contents": {"role": "user", "parts": {"text": question}},
    }
    listed = {
        "systemInstruction": {"parts": [{"text": "Answer with a number."}]},
        "contents": [{"role": "user", "parts": [{"text": question}]}],
    }
    one = read(_ruby_vcr_gemini(tmp_path / "single.yml", single))
    many = read(_ruby_vcr_gemini(tmp_path / "listed.yml", listed))
    assert (one.format, one.errors, many.errors) == ("vcr", [], [])
    (request,) = one.requests
    assert (request.provider, request.model) == ("google", "gemini-1.5-flash")
    # promptTokenCount 61, candidatesTokenCount 1, nothing cached
    assert totals(one.requests) == {"input": 61, "read": 0, "write": 0, "output": 1}
    assert request.tokens == many.requests[0].tokens  # the same prompt either way


def test_anthropic_s_dotted_legacy_id_is_kept(tmp_path: Path) -> None:
    """``claude-2.1`` is Anthropic's own id (its Messages API served it); only the dotted
    versions gateways write for later models become Anthropic's dashed ids."""
    body = {
        "model": "claude-2.1",
        "max_tokens": 5,
        "messages": [{"role": "user", "content": "How high is the sky?"}],
    }
    reply = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-2.1",
        "content": [{"type": "text", "text": "The sky has no"}],
        "usage": {"input_tokens": 15, "output_tokens": 5},
    }
    text = (
        "---\nhttp_interactions:\n- request:\n    method: post\n"
        "    uri: https://api.anthropic.com/v1/messages\n"
        "    body:\n      encoding: UTF-8\n      string: " + _quoted(json.dumps(body)) + "\n"
        "  response:\n    status:\n      code: 200\n      message: OK\n"
        "    body:\n      encoding: UTF-8\n      string: " + _quoted(json.dumps(reply)) + "\n"
        "  recorded_at: Sun, 10 Mar 2024 07:54:21 GMT\nrecorded_with: VCR 6.1.0\n"
    )
    path = tmp_path / "claude-2_1.yml"
    path.write_text(text, encoding="utf-8")
    result = read(path)
    assert result.errors == []
    (one,) = result.requests
    assert (one.provider, one.model) == ("anthropic", "claude-2.1")
    assert totals(result.requests) == {"input": 15, "read": 0, "write": 0, "output": 5}


# --- an Anthropic message batch's results, downloaded in a recording (Anthropic's "Retrieve
# Message Batch results": GET /v1/messages/batches/{id}/results, JSON lines of results) ---


def test_downloaded_batch_results_are_read_as_results(tmp_path: Path) -> None:
    def result(custom_id: str, kind: str, usage: dict[str, int] | None = None) -> str:
        body: dict[str, object] = {"type": kind}
        if usage is not None:
            body["message"] = {
                "id": f"msg_{custom_id}",
                "type": "message",
                "model": "claude-3-5-haiku-20241022",
                "content": [{"type": "text", "text": "ok"}],
                "usage": usage,
            }
        return json.dumps({"custom_id": custom_id, "result": body})

    lines = "\n".join(
        [
            result("a", "succeeded", {"input_tokens": 20, "output_tokens": 80}),
            result("b", "errored"),
            result(
                "c",
                "succeeded",
                {
                    "input_tokens": 12,
                    "cache_read_input_tokens": 2048,
                    "cache_creation_input_tokens": 0,
                    "output_tokens": 61,
                },
            ),
        ]
    )
    url = "https://api.anthropic.com/v1/messages/batches/msgbatch_1/results"
    text = (
        "---\nhttp_interactions:\n"
        f"- request:\n    method: get\n    uri: {url}\n"
        "    body:\n      encoding: US-ASCII\n      string: ''\n"
        "  response:\n    status:\n      code: 404\n      message: Not Found\n"
        '    body:\n      encoding: UTF-8\n      string: \'{"type":"error"}\'\n'
        f"- request:\n    method: get\n    uri: {url}\n"
        "    body:\n      encoding: US-ASCII\n      string: ''\n"
        "  response:\n    status:\n      code: 200\n      message: OK\n"
        "    headers:\n      Content-Type:\n      - text/html\n"
        "    body:\n      encoding: UTF-8\n      string: " + json.dumps(lines) + "\n"
        "recorded_with: VCR 6.1.0\n"
    )
    path = tmp_path / "batch_results.yml"
    path.write_text(text, encoding="utf-8")
    result_read = read(path)
    assert result_read.errors == []
    first, second = result_read.requests
    # a: 20 in, 80 out; c: 12 + 2,048 read + 0 written = 2,060 in, 61 out
    assert totals(result_read.requests) == {"input": 2080, "read": 2048, "write": 0, "output": 141}
    assert (first.provider, first.model) == ("anthropic", "claude-3-5-haiku-20241022")
    assert not first.prompt_complete and not second.prompt_complete
    assert first.tokens[:8] != second.tokens[:8]  # stand-in prompts of their own
    assert result_read.skipped == {
        "HTTP 404 response (not billed)": 1,
        "request errored in the batch (not billed)": 1,
    }
