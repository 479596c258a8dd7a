"""Recorded HTTP calls in a dialect no reader knows by name, read by their shape
(``cachecast.logs.structural``, docs/log-formats.md, "Recordings read by their shape").

Each file here is hand-built in a layout no named reader fits (a project's own fetch logger,
a mocking library's fixtures under names of their own); the totals are the usage fields
written here, added by hand (the rule in test_stub_dialects.py's docstring).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from cachecast.logs import open_log
from cachecast.logs.errors import LogFileError, UnknownLogFormatError
from cachecast.passes.log_input import expand_log_paths
from tests.logs.helpers import read, totals
from tests.logs.test_heldout39_h41_heldH import chat_reply
from tests.logs.test_http import sse
from tests.logs.test_more_dialects import ANTHROPIC_REQUEST, anthropic_response, chat_body

OPENAI_URL = "https://api.openai.com/v1/chat/completions"


def write(path: Path, document: Any) -> Path:
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return path


def test_a_fetch_logger_of_its_own_names_is_read(tmp_path: Path) -> None:
    # {calls: [{at, req: {verb, href, json}, res: {statusCode, data}}]}: no recorder we know
    path = write(
        tmp_path / "calls.json",
        {
            "recorder": "our-fetch-log",
            "calls": [
                {
                    "at": "2025-06-01T10:00:00Z",
                    "req": {"verb": "post", "href": OPENAI_URL, "json": chat_body("Hi")},
                    "res": {"statusCode": 200, "data": chat_reply(1_300, 1_280, 9, 1_748_772_000)},
                },
                {  # a search tool's call: not a model call, not taken
                    "req": {"href": "https://api.tavily.com/search", "json": {"query": "q"}},
                    "res": {"statusCode": 200, "data": {"results": []}},
                },
                {
                    "req": {
                        "verb": "POST",
                        "href": "https://api.anthropic.com/v1/messages",
                        "json": ANTHROPIC_REQUEST,
                    },
                    "res": {"statusCode": 200, "data": anthropic_response(10, 2_000, 0, 7)},
                },
            ],
        },
    )
    result = read(path)
    assert result.format == "by-shape"
    assert not result.errors
    assert [r.provider for r in result.requests] == ["openai", "anthropic"]
    # a call's line is its position among the model calls found (errors name its path)
    assert [r.line for r in result.requests] == [1, 2]
    # input 1,300 + (10 + 2,000 + 0); read 1,280; write 2,000; output 9 + 7
    assert totals(result.requests) == {"input": 3_310, "read": 1_280, "write": 2_000, "output": 16}


def test_json_lines_with_a_path_beside_its_host_and_a_streamed_reply(tmp_path: Path) -> None:
    # one call per line; the URL kept as host + path; the body as JSON text; the reply as the
    # server-sent events Anthropic streams (usage in message_start and message_delta)
    events = sse(
        {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "claude-3-5-sonnet-20241022",
                "content": [],
                "usage": {
                    "input_tokens": 5,
                    "cache_creation_input_tokens": 20,
                    "cache_read_input_tokens": 1_100,
                    "output_tokens": 1,
                },
            },
        },
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 12},
        },
        {"type": "message_stop"},
    )
    line = {
        "timestamp": 1_733_050_800_000,  # milliseconds: 2024-12-01T11:00:00Z
        "request": {
            "method": "POST",
            "host": "api.anthropic.com",
            "path": "/v1/messages",
            "headers": {"content-type": "application/json"},
            "body": json.dumps({**ANTHROPIC_REQUEST, "stream": True}),
        },
        "response": {
            "status": 200,
            "headers": [{"name": "content-type", "value": "text/event-stream"}],
            "body": {"string": events},
        },
    }
    path = tmp_path / "calls.jsonl"
    path.write_text(json.dumps(line) + "\n" + json.dumps(line) + "\n", encoding="utf-8")
    result = read(path)
    assert result.format == "by-shape"
    assert not result.errors
    assert [r.line for r in result.requests] == [1, 2]
    assert result.requests[0].timestamp == 1_733_050_800.0
    # per call: input 5 + 20 + 1,100; read 1,100; write 20; output 12 (the final count)
    assert totals(result.requests) == {"input": 2_250, "read": 2_200, "write": 40, "output": 24}


def test_a_named_reader_still_wins_over_the_shape(tmp_path: Path) -> None:
    # moscaFetch's own layout {url, method, body, response} is read by its named reader
    path = write(
        tmp_path / "team.requests.json",
        [
            {
                "url": OPENAI_URL,
                "method": "POST",
                "body": chat_body("Hi"),
                "response": chat_reply(20, 0, 3, 1_747_845_091),
            }
        ],
    )
    assert read(path).format == "moscafetch"
    forced = read(path, format="by-shape")
    assert totals(forced.requests) == {"input": 20, "read": 0, "write": 0, "output": 3}


def test_a_file_holding_no_model_call_is_not_taken(tmp_path: Path) -> None:
    path = write(
        tmp_path / "other.json",
        {"calls": [{"req": {"href": "https://example.com/api"}, "res": {"data": {}}}]},
    )
    with pytest.raises(UnknownLogFormatError) as raised:
        open_log(path)
    assert "by-shape: no object holding a model endpoint's request and its response" in str(
        raised.value
    )


def test_other_lines_are_skipped_and_a_bad_body_is_named_by_its_path(tmp_path: Path) -> None:
    good = {
        "request": {"url": OPENAI_URL, "body": chat_body("Hi")},
        "response": {"status": 200, "body": chat_reply(20, 0, 3, 1_747_845_091)},
    }
    bad = {
        "request": {"url": OPENAI_URL, "body": chat_body("Hi")},
        "response": {"status": 200, "body": "{not json"},
    }
    note = {"event": "tool_call", "tool": "search"}
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(json.dumps(v) for v in (good, note, bad)) + "\n", encoding="utf-8")
    result = read(path)
    assert result.format == "by-shape"
    assert [r.line for r in result.requests] == [1]
    assert result.skipped == {"a line holding no model call": 1}
    (error,) = result.errors
    assert error.line == 3
    assert error.field.startswith("response.body")


def test_a_yaml_fixture_of_its_own_layout_is_read(tmp_path: Path) -> None:
    reply = json.dumps(chat_reply(2_048, 1_920, 5, 1_747_845_091))
    path = tmp_path / "chat.yml"
    path.write_text(
        "recordings:\n"
        "- name: first\n"
        "  request:\n"
        "    method: post\n"
        f"    url: {OPENAI_URL}\n"
        f"    body: '{json.dumps(chat_body('Hi'))}'\n"
        "  response:\n"
        "    status: 200\n"
        f"    body: '{reply}'\n",
        encoding="utf-8",
    )
    result = read(path)
    assert result.format == "by-shape"
    assert not result.errors
    assert totals(result.requests) == {"input": 2_048, "read": 1_920, "write": 0, "output": 5}


def _sse(events: list[tuple[str, dict[str, Any]]]) -> str:
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)


def test_paths_kept_without_a_host_take_the_provider_the_recording_names(tmp_path: Path) -> None:
    # {provenance: {source}, interactions: [{request: {method, path, body}, response}]}: a
    # recorder that keeps each call's path and names the provider once (PostHog's AI
    # harness cassettes). No VCR writes a request without its uri, so the vcr reader does
    # not take it; the path is joined to the named provider's API host.
    streamed = _sse(
        [
            (
                "message_start",
                {
                    "type": "message_start",
                    "message": {
                        "id": "msg_1",
                        "model": "claude-3-5-sonnet-20241022",
                        "usage": {
                            "input_tokens": 11,
                            "cache_creation_input_tokens": 1_501,
                            "cache_read_input_tokens": 9_648,
                            "output_tokens": 1,
                        },
                    },
                },
            ),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn"},
                    "usage": {"output_tokens": 5},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
    )
    cut = streamed.index("cache_read")  # the stream's chunks are cut anywhere, mid-line too
    path = write(
        tmp_path / "anthropic-cache.json",
        {
            "formatVersion": 1,
            "provenance": {"source": "anthropic", "recordedAt": "2026-09-16T04:12:25Z"},
            "interactions": [
                {
                    "request": {
                        "method": "POST",
                        "path": "/v1/messages",
                        "body": ANTHROPIC_REQUEST,
                    },
                    "response": {
                        "status": 200,
                        "body": {"kind": "json", "value": anthropic_response(10, 2_000, 0, 7)},
                    },
                },
                {
                    "request": {
                        "method": "POST",
                        "path": "/v1/messages",
                        "body": {**ANTHROPIC_REQUEST, "stream": True},
                    },
                    "response": {
                        "status": 200,
                        "headers": {"content-type": "text/event-stream"},
                        "body": {"kind": "sse", "chunks": [streamed[:cut], streamed[cut:]]},
                    },
                },
            ],
        },
    )
    result = read(path)
    assert result.format == "by-shape"
    assert not result.errors
    assert [r.provider for r in result.requests] == ["anthropic", "anthropic"]
    # neither call nor Anthropic's reply states a time: the recording's recordedAt
    recorded = datetime(2026, 9, 16, 4, 12, 25, tzinfo=UTC).timestamp()
    assert [r.timestamp for r in result.requests] == [recorded, recorded]
    # input (10 + 2,000 + 0) + (11 + 1,501 + 9,648); read 9,648; write 2,000 + 1,501;
    # output 7 + 5 (the stream's final count)
    assert totals(result.requests) == {
        "input": 13_170,
        "read": 9_648,
        "write": 3_501,
        "output": 12,
    }


def test_a_provider_named_by_an_alias_and_a_path_naming_the_model(tmp_path: Path) -> None:
    # ``source: "gemini"`` (Google's Gemini API); the model is in the path, as Gemini's
    # generateContent URL has it
    path = write(
        tmp_path / "gemini.json",
        {
            "provenance": {"source": "gemini"},
            "interactions": [
                {
                    "request": {
                        "method": "POST",
                        "path": "/v1beta/models/gemini-2.0-flash:generateContent",
                        "body": {"contents": [{"role": "user", "parts": [{"text": "Hi"}]}]},
                    },
                    "response": {
                        "status": 200,
                        "body": {
                            "kind": "json",
                            "value": {
                                "candidates": [
                                    {"content": {"role": "model", "parts": [{"text": "Hello"}]}}
                                ],
                                "usageMetadata": {
                                    "promptTokenCount": 7,
                                    "candidatesTokenCount": 9,
                                    "totalTokenCount": 16,
                                },
                            },
                        },
                    },
                }
            ],
        },
    )
    result = read(path)
    assert result.format == "by-shape"
    assert not result.errors
    (request,) = result.requests
    assert (request.provider, request.model) == ("google", "gemini-2.0-flash")
    assert totals(result.requests) == {"input": 7, "read": 0, "write": 0, "output": 9}


def test_a_path_without_a_host_or_a_named_provider_is_not_a_call(tmp_path: Path) -> None:
    # the same layout naming no provider: where the call went is unknown, nothing is taken
    path = write(
        tmp_path / "unnamed.json",
        {
            "provenance": {"source": "our-tests"},
            "interactions": [
                {
                    "request": {
                        "method": "POST",
                        "path": "/v1/messages",
                        "body": ANTHROPIC_REQUEST,
                    },
                    "response": {"status": 200, "body": anthropic_response(10, 0, 0, 7)},
                }
            ],
        },
    )
    with pytest.raises(UnknownLogFormatError) as raised:
        open_log(path)
    assert "keep a path and no uri" in str(raised.value)
    assert "by-shape: no object holding a model endpoint's request" in str(raised.value)


def test_a_reply_stating_its_time_is_dated_by_it_not_by_the_recording(tmp_path: Path) -> None:
    # an OpenAI reply states ``created``; the recording's recordedAt is a later day
    path = write(
        tmp_path / "openai.json",
        {
            "provenance": {"source": "openai", "recordedAt": "2026-09-20T02:10:04Z"},
            "interactions": [
                {
                    "request": {
                        "method": "POST",
                        "path": "/v1/chat/completions",
                        "body": chat_body("Hi"),
                    },
                    "response": {
                        "status": 200,
                        "body": {
                            "kind": "json",
                            "value": chat_reply(3_082, 2_944, 1, 1_748_772_000),
                        },
                    },
                }
            ],
        },
    )
    result = read(path)
    assert result.format == "by-shape"
    (request,) = result.requests
    assert request.provider == "openai"
    assert request.timestamp == 1_748_772_000.0
    assert totals(result.requests) == {"input": 3_082, "read": 2_944, "write": 0, "output": 1}


def _text_stream(
    message_id: str, *, input_tokens: int, written: int, read: int, output: int
) -> str:
    """An Anthropic Messages stream of one text block (server-sent events): its usage in
    ``message_start`` (output 1 so far) and the final output count in ``message_delta``."""
    return sse(
        {
            "type": "message_start",
            "message": {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-20250514",
                "content": [],
                "usage": {
                    "input_tokens": input_tokens,
                    "cache_creation_input_tokens": written,
                    "cache_read_input_tokens": read,
                    "output_tokens": 1,
                },
            },
        },
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "1"}},
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": output},
        },
        {"type": "message_stop"},
    )


def _flat(request_body: Any, response_body: Any, **beside: Any) -> dict[str, Any]:
    """A call kept flat, as ExLLM's test cache keeps one (``request_metadata`` of a cache
    entry): its bodies side by side, the endpoint a name, no URL, no host."""
    return {
        "cached_at": "2025-06-29T01:43:26.033914Z",
        "cache_version": "1.0",
        "response_data": response_body,
        "request_metadata": {
            "method": "POST",
            "endpoint": "v1_messages",
            "provider": "unknown",
            "status_code": None,
            "request_body": request_body,
            "response_body": response_body,
            **beside,
        },
    }


def test_a_flat_call_without_a_url_is_told_by_its_bodies_shape(tmp_path: Path) -> None:
    # ExLLM's cache entry: no URL ("endpoint" is a name), provider "unknown"; the request
    # body (model, messages) and the reply's own shape (an Anthropic Message with usage) say
    # it was a call to Anthropic's Messages API
    path = write(
        tmp_path / "entry.json", _flat(ANTHROPIC_REQUEST, anthropic_response(12, 1_500, 0, 20))
    )
    found = read(path)
    assert found.format == "by-shape"
    assert not found.errors
    (call,) = found.requests
    assert call.provider == "anthropic"
    # input 12 + 1,500 written; output 20
    assert totals(found.requests) == {"input": 1_512, "read": 0, "write": 1_500, "output": 20}


def test_a_flat_call_whose_reply_is_a_stream_kept_as_text(tmp_path: Path) -> None:
    events = _text_stream("msg_1", input_tokens=15, written=0, read=2_048, output=9)
    body = dict(ANTHROPIC_REQUEST, stream=True)
    path = write(tmp_path / "stream.json", _flat(body, events))
    found = read(path)
    assert found.format == "by-shape"
    assert not found.errors
    # input 15 + 2,048 read; output 9 (message_delta's count)
    assert totals(found.requests) == {"input": 2_063, "read": 2_048, "write": 0, "output": 9}


def test_a_flat_openai_call_on_the_host_of_the_provider_named_beside_it(tmp_path: Path) -> None:
    # the reply's shape names OpenAI's Chat Completions; "provider" beside it names Groq: the
    # call is priced as Groq's (its public host), not OpenAI's
    record = _flat(chat_body("Hi"), chat_reply(1_300, 1_280, 9, 1_751_161_315))
    record["request_metadata"]["provider"] = "groq"
    record["request_metadata"]["endpoint"] = "v1_chat_completions"
    found = read(write(tmp_path / "groq.json", record))
    assert found.format == "by-shape"
    (call,) = found.requests
    assert call.provider == "groq"
    assert totals(found.requests) == {"input": 1_300, "read": 1_280, "write": 0, "output": 9}


def test_a_flat_call_whose_reply_has_no_usage_has_nothing_to_reconcile(tmp_path: Path) -> None:
    # a failed call (the reply an error, status 401 beside it) and a stream recorded as only
    # its end marker: recorded calls, not an unknown format; one error saying so
    failed = _flat(ANTHROPIC_REQUEST, {"error": "Streaming error - status 401", "status": 401})
    failed["request_metadata"]["status_code"] = 401
    ended = _flat(dict(chat_body("Hi"), stream=True), "data: [DONE]\n\n")
    for name, record, said in (
        ("failed.json", failed, "(status 401)"),
        ("ended.json", ended, "reply (response_body)"),
    ):
        with pytest.raises(LogFileError) as raised:
            open_log(write(tmp_path / name, record))
        assert not isinstance(raised.value, UnknownLogFormatError)
        assert said in raised.value.reason
        assert "there is nothing to reconcile" in raised.value.reason


def test_a_flat_call_naming_a_provider_without_a_public_host_is_not_taken(
    tmp_path: Path,
) -> None:
    # Azure has a host per resource: where the call went is unknown, the file fits no format
    azure = _flat(chat_body("Hi"), chat_reply(20, 0, 3, 1_747_845_091))
    azure["request_metadata"]["provider"] = "azure"
    with pytest.raises(UnknownLogFormatError) as raised:
        open_log(write(tmp_path / "azure.json", azure))
    assert "by-shape: no object holding a model endpoint's request" in str(raised.value)


def test_a_request_and_response_kept_without_a_url_stay_cachecasts_records(
    tmp_path: Path,
) -> None:
    # {request, response} with no URL is cachecast's own record (docs/log-formats.md,
    # "cachecast"), not a call told by its shape: only a flat request_body is
    path = write(
        tmp_path / "own.json",
        {"request": chat_body("Hi"), "response": chat_reply(20, 0, 3, 1_747_845_091)},
    )
    assert read(path).format == "cachecast"


def _txtar(comment: str, *files: tuple[str, str]) -> str:
    """A Go txtar archive (golang.org/x/tools/txtar): a comment, then ``-- name --`` file
    markers each followed by the file's lines."""
    return comment + "".join(f"-- {name} --\n{data.rstrip(chr(10))}\n\n" for name, data in files)


def test_a_txtar_archive_of_a_request_and_its_replies_is_read(tmp_path: Path) -> None:
    # a Go proxy's test fixture (coder/aibridge's layout): the request body, the reply to it
    # sent streaming, the reply sent blocking, and a reply to a follow-up request the
    # archive does not hold (skipped, not paired with the first request)
    events = _text_stream("msg_s", input_tokens=4, written=1_200, read=0, output=6)
    text = _txtar(
        "A simple request.\n\n",
        ("request", json.dumps(ANTHROPIC_REQUEST, indent=2)),
        ("streaming", events),
        ("non-streaming", json.dumps(anthropic_response(4, 0, 1_200, 11), indent=2)),
        ("streaming/tool-call", events),
    )
    path = tmp_path / "simple.txtar"
    path.write_text(text, encoding="utf-8")
    found = read(path)
    assert found.format == "by-shape"
    assert not found.errors
    assert [call.provider for call in found.requests] == ["anthropic", "anthropic"]
    # each call's line is its reply's file marker: the comment (2 lines) and the request's
    # marker, its 7 lines of JSON and the blank line put "-- streaming --" on line 12
    lines = text.splitlines()
    assert [lines[call.line - 1] for call in found.requests] == [
        "-- streaming --",
        "-- non-streaming --",
    ]
    # streaming: input 4 + 1,200 written, output 6 (message_delta's count);
    # non-streaming: input 4 + 1,200 read, output 11
    assert totals(found.requests) == {"input": 2_408, "read": 1_200, "write": 1_200, "output": 17}
    assert found.skipped == {
        "a txtar file (streaming/tool-call) answering a request the archive does not hold": 1
    }


def test_a_txtar_archive_of_an_openai_responses_call(tmp_path: Path) -> None:
    # the reply's own shape (object "response") names OpenAI's Responses API
    reply = {
        "id": "resp_1",
        "object": "response",
        "created_at": 1_767_875_133,
        "status": "completed",
        "model": "gpt-4.1-2025-04-14",
        "output": [],
        "usage": {
            "input_tokens": 2_100,
            "input_tokens_details": {"cached_tokens": 1_920},
            "output_tokens": 30,
            "total_tokens": 2_130,
        },
    }
    body = {"model": "gpt-4.1", "input": [{"role": "user", "content": "Hi"}], "stream": False}
    path = tmp_path / "blocking.txtar"
    path.write_text(
        _txtar("", ("request", json.dumps(body)), ("non-streaming", json.dumps(reply))),
        encoding="utf-8",
    )
    found = read(path)
    assert found.format == "by-shape"
    (call,) = found.requests
    assert call.provider == "openai"
    assert totals(found.requests) == {"input": 2_100, "read": 1_920, "write": 0, "output": 30}


def test_a_txtar_archive_holding_no_request_file_is_not_a_recording(tmp_path: Path) -> None:
    # a Go test script archive (files of a module): txtar, but no request and no reply
    path = tmp_path / "script.txtar"
    path.write_text(
        _txtar("go test\n", ("go.mod", "module example.com/m"), ("m.go", "package m")),
        encoding="utf-8",
    )
    with pytest.raises(UnknownLogFormatError):
        read(path)


def test_a_txtar_archive_of_compact_json_is_no_json_lines_log(tmp_path: Path) -> None:
    # the request and the reply each one compact JSON line: the archive is one recording,
    # not JSON lines of a log (no reader of JSON lines takes its files as records)
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "Hi"}]}
    path = tmp_path / "compact.txtar"
    path.write_text(
        _txtar(
            "",
            ("request", json.dumps(body)),
            ("response", json.dumps(chat_reply(1_300, 1_280, 9, 1_753_343_173))),
        ),
        encoding="utf-8",
    )
    found = read(path)
    assert found.format == "by-shape"
    (call,) = found.requests
    # "-- request --", its line of JSON and a blank line: the reply's marker is line 4
    assert (call.provider, call.line) == ("openai", 4)
    assert totals(found.requests) == {"input": 1_300, "read": 1_280, "write": 0, "output": 9}


def test_a_folder_of_txtar_fixtures_is_read_whole(tmp_path: Path) -> None:
    kept = tmp_path / "fixtures" / "simple.txtar"
    kept.parent.mkdir()
    kept.write_text(_txtar("", ("request", "{}")), encoding="utf-8")
    (tmp_path / "fixtures" / "fixtures.go").write_text("package fixtures\n", encoding="utf-8")
    assert expand_log_paths([tmp_path]) == [kept]


def test_a_txtar_archive_of_replies_without_a_request_file_says_so(tmp_path: Path) -> None:
    # the request body left above the first marker is the archive's comment: no call
    reply = chat_reply(42, 0, 150, 1_767_875_200)
    path = tmp_path / "web_search.txtar"
    comment = json.dumps(chat_body("Hi"), indent=2) + "\n\n"
    path.write_text(
        _txtar(comment, ("non-streaming", json.dumps(reply, indent=2))), encoding="utf-8"
    )
    with pytest.raises(UnknownLogFormatError) as raised:
        read(path)
    assert "a txtar archive of replies (non-streaming) with no 'request' file" in str(raised.value)
