"""Go httprr traces (docs/log-formats.md, "httprr"), hand-built on the format's definition
(golang.org/x/oscar ``internal/httprr``: the line ``httprr trace v1``, then per round trip
``<request bytes> <response bytes>\\n``, the request as ``Request.WriteProxy`` writes it and
the response as ``Response.Write`` does). Each expected count is the usage field written into
the trace."""

from __future__ import annotations

import datetime as dt
import gzip
import json
from pathlib import Path
from typing import Any

from cachecast.passes.log_input import expand_log_paths
from tests.logs.helpers import read, totals

MAGIC = b"httprr trace v1\n"


def _request(url: str, body: dict[str, Any], extra: str = "") -> bytes:
    data = json.dumps(body).encode()
    host = url.split("/")[2] if "://" in url else "api.openai.com"
    head = (
        f"POST {url} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: langchaingo-httprr\r\n"
        f"Content-Length: {len(data)}\r\nContent-Type: application/json\r\n{extra}\r\n"
    )
    return head.encode() + data


def _response(body: bytes, headers: str) -> bytes:
    return b"HTTP/2.0 200 OK\r\n" + headers.encode() + b"\r\n" + body


def _trace(path: Path, *records: tuple[bytes, bytes]) -> Path:
    out = bytearray(MAGIC)
    for request, response in records:
        out += f"{len(request)} {len(response)}\n".encode() + request + response
    path.write_bytes(bytes(out))
    return path


ANTHROPIC = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 50,
    "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
    "messages": [{"role": "user", "content": [{"type": "text", "text": "Say hello"}]}],
}


def _anthropic_reply(written: int, read_tokens: int) -> bytes:
    return json.dumps(
        {
            "id": "msg_1",
            "type": "message",
            "model": "claude-sonnet-4-5-20250929",
            "content": [{"type": "text", "text": "Hello"}],
            "usage": {
                "input_tokens": 3,
                "cache_creation_input_tokens": written,
                "cache_read_input_tokens": read_tokens,
                "output_tokens": 12,
            },
        }
    ).encode()


def test_two_round_trips_content_length_then_chunked_gzip(tmp_path: Path) -> None:
    first = _anthropic_reply(1808, 0)
    second_json = _anthropic_reply(0, 1808)
    zipped = gzip.compress(second_json)
    # chunked transfer coding: two chunks (hex sizes), then the last chunk "0"
    half = len(zipped) // 2
    chunked = (
        f"{half:x}\r\n".encode()
        + zipped[:half]
        + f"\r\n{len(zipped) - half:x}\r\n".encode()
        + zipped[half:]
        + b"\r\n0\r\n\r\n"
    )
    path = _trace(
        tmp_path / "TestSystemCaching.httprr",
        (
            _request("https://api.anthropic.com/v1/messages", ANTHROPIC),
            _response(
                first,
                f"Content-Length: {len(first)}\r\nContent-Type: application/json\r\n"
                "Date: Mon, 26 Jan 2026 23:21:27 GMT\r\nRequest-Id: req_1\r\n",
            ),
        ),
        (
            _request("https://api.anthropic.com/v1/messages", ANTHROPIC),
            _response(
                chunked,
                "Transfer-Encoding: chunked\r\nContent-Encoding: gzip\r\n"
                "Content-Type: application/json\r\nDate: Mon, 26 Jan 2026 23:21:29 GMT\r\n",
            ),
        ),
    )
    result = read(path)
    assert (result.format, result.errors) == ("httprr", [])
    # input: (3 + 1,808 + 0) + (3 + 0 + 1,808) = 3,622; output 12 + 12
    assert totals(result.requests) == {"input": 3622, "read": 1808, "write": 1808, "output": 24}
    one, two = result.requests
    assert (one.provider, one.model) == ("anthropic", "claude-sonnet-4-5")
    assert one.line == 2  # the first size pair is line 2
    # Line 1 the magic, 2 the first sizes; the request starts on line 3 and its 6 CRLFs (start
    # line, 4 headers, the blank line) put its body, and the response's start, on line 9; the
    # response's 6 (status, 4 headers, blank) put its body on 15, where the next sizes follow.
    assert two.line == 15
    stamps = [dt.datetime.fromtimestamp(r.timestamp, dt.UTC) for r in result.requests]
    assert stamps == [
        dt.datetime(2026, 1, 26, 23, 21, 27, tzinfo=dt.UTC),
        dt.datetime(2026, 1, 26, 23, 21, 29, tzinfo=dt.UTC),
    ]


def test_a_path_request_line_takes_its_host(tmp_path: Path) -> None:
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "Hi"}]}
    reply = json.dumps(
        {
            "id": "c1",
            "object": "chat.completion",
            "created": 1769469687,
            "model": "gpt-4o-2024-08-06",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello"}}],
            "usage": {
                "prompt_tokens": 1100,
                "completion_tokens": 2,
                "prompt_tokens_details": {"cached_tokens": 1024},
            },
        }
    ).encode()
    path = _trace(
        tmp_path / "openai.httprr",
        (
            _request("/v1/chat/completions", body),
            _response(reply, f"Content-Length: {len(reply)}\r\n"),
        ),
    )
    result = read(path)
    assert result.errors == []
    (one,) = result.requests
    assert (one.provider, one.model) == ("openai", "gpt-4o")
    assert totals(result.requests) == {"input": 1100, "read": 1024, "write": 0, "output": 2}


def test_bad_records_are_named_by_line_and_field(tmp_path: Path) -> None:
    good = _anthropic_reply(0, 0)
    request = _request("https://api.anthropic.com/v1/messages", ANTHROPIC)
    bad_status = b"HTTP/1.1 two hundred\r\n\r\n" + good
    path = tmp_path / "bad.httprr"
    path.write_bytes(
        MAGIC + f"{len(request)} {len(bad_status)}\n".encode() + request + bad_status + b"12 x\n"
    )
    result = read(path)
    assert result.requests == []
    first, second = result.errors
    assert (first.line, first.field) == (2, "records[0].response")
    assert "status line" in first.reason
    second_line = 3 + request.count(b"\n") + bad_status.count(b"\n")
    assert (second.line, second.field) == (second_line, "records[1].sizes")
    assert "cannot be found" in second.reason


def test_a_truncated_trace_says_so(tmp_path: Path) -> None:
    request = _request("https://api.anthropic.com/v1/messages", ANTHROPIC)
    path = tmp_path / "cut.httprr"
    path.write_bytes(MAGIC + f"{len(request)} 500\n".encode() + request + b"HTTP/1.1 200 OK\r\n")
    result = read(path)
    (error,) = result.errors
    assert (error.line, error.field) == (2, "records[0].sizes")
    assert "truncated" in error.reason


def test_a_gzip_trace_is_read(tmp_path: Path) -> None:
    reply = _anthropic_reply(1808, 0)
    plain = _trace(
        tmp_path / "plain.httprr",
        (
            _request("https://api.anthropic.com/v1/messages", ANTHROPIC),
            _response(reply, f"Content-Length: {len(reply)}\r\n"),
        ),
    )
    zipped = tmp_path / "TestCall.httprr.gz"
    zipped.write_bytes(gzip.compress(plain.read_bytes()))
    result = read(zipped)
    assert (result.format, result.errors) == ("httprr", [])
    assert totals(result.requests) == {"input": 1811, "read": 0, "write": 1808, "output": 12}


def test_a_folder_of_traces_is_read_whole(tmp_path: Path) -> None:
    """langchaingo keeps one trace per test under testdata/, plain or gzip-compressed: a
    folder given as a log holds both (docs/log-formats.md, "Files, folders, globs")."""
    reply = _anthropic_reply(1808, 0)
    plain = _trace(
        tmp_path / "TestA.httprr",
        (
            _request("https://api.anthropic.com/v1/messages", ANTHROPIC),
            _response(reply, f"Content-Length: {len(reply)}\r\n"),
        ),
    )
    zipped = tmp_path / "TestB.httprr.gz"
    zipped.write_bytes(gzip.compress(plain.read_bytes()))
    assert expand_log_paths([tmp_path]) == [plain, zipped]
